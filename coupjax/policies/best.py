"""``best``: the policy coupjax ships for play, a trained network that acts on the public facts.

    best            # the committed weights (coupjax/policies/weights/best, see its README)
    best:DIR        # the same recipe on another self-play or DQN export (a run or export dir)

The network is the main job's self-play agent (`training.config.QUICKSTART`, one of the
training seeds of ``configs/experiments.yaml``).  It plays well, but on its own it almost
never challenges (a "claim Duke every turn" bluffer would feed on it), passes a block it
could make truthfully, and ignores facts that settle a decision.  The layer on top takes
over exactly where the public record or the agent's own hand decides, and nowhere else:

* **Reactions and answers to a block:** the advice's challenge (a claim the claimant
  provably cannot hold, or the advisor fitted to win games:
  `coupjax.advice.recommend.advisor_action`, the constants the page shows) and its true
  blocks are played; where the advice would pass, the network's own choice stands (its
  bluff-blocks included: the advice never bluffs, the network has learned when it pays).
* **Main actions:** the network's, except where one action dominates its choice in
  every hidden world: a coup forced at 10 coins goes to the seat the one-step values
  rank first; an assassination nobody can block (the agent holds an Assassin and every
  Contessa is in sight) replaces a choice that kills no one; a truthful tax (the agent
  holds a Duke) replaces income or foreign aid; foreign aid that no one can block
  (every Duke in sight) replaces income.
* **Losing a card and keeping cards in an exchange:** the card-value rule of the
  scripted bots (`coupjax.policies.scripted.reveal_and_keep`), which the network plays
  worse (it reveals a useful card and drops its Duke late in the game).

Why these and not more: on development seed 7 (400 tables per opponent), tilting every
main action towards the one-step values, or letting them choose every kill, cost 10-15
points of win rate against ``honest`` and the DQN reference, while the layer above cost
nothing measurable and adds the challenges and the scenario answers
(docs/experiments/2026-12-02-best.md lists what was looked at).

Everything reads the acting seat's observation only, so the leak test
(`coupjax.testing.check_policy`) covers it like every registered policy.
"""
from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp

from coupjax import rules
from coupjax.advice.recommend import advisor_action
from coupjax.game.tables import tables
from coupjax.inference import load_policy
from coupjax.observation import parse
from coupjax.policies.common import Policy, masked_logits
from coupjax.policies.scripted import reveal_and_keep

WEIGHTS = Path(__file__).resolve().parent / "weights" / "best"


def make_best(env, export: str | Path | None = None) -> Policy:
    """`best` for ``env`` (module doc) on the committed weights, or on ``export`` (a run
    or export directory of a learned policy for ``env.num_players`` players)."""
    n = env.num_players
    net = load_policy(WEIGHTS if export is None else Path(export), num_players=n)
    T = tables(n)
    kind = jnp.asarray(T.main_kind)
    block_role = jnp.asarray(T.action_block_role)
    num_actions = T.num_actions

    def one_hot(a):
        return jax.nn.one_hot(a, num_actions)

    def policy(key, state):
        mask = state.legal_action_mask
        obs = state.observation
        own = net(key, state)
        v = parse(obs, n)
        advice = advisor_action(obs, mask, n)

        # reactions: the advice's challenges and true blocks; otherwise the network
        a = advice["action"]
        reacting = (v.phase == rules.PH_REACT) | (v.phase == rules.PH_ANSWER_BLOCK)
        acts = (a >= 0) & ((a == T.challenge_id) | (block_role[jnp.clip(a, 0)] >= 0))
        out = jnp.where(reacting & acts, masked_logits(one_hot(jnp.clip(a, 0)), mask), own)

        # main actions: the network's, unless another action dominates it
        ev = advice["values"]["ev"]
        chosen = jnp.argmax(own)
        chosen_kind = kind[chosen]

        def legal(k):
            return mask & (kind == k)

        def ev_best(sel):
            return jnp.argmax(jnp.where(sel, ev, -jnp.inf))

        coups = legal(rules.COUP)
        forced = coups.any() & ~(mask & (kind >= 0) & (kind != rules.COUP)).any()
        sure_kill = legal(rules.ASSASSINATE) & (v.own_counts[rules.ASSASSIN] > 0) & (v.unseen[rules.CONTESSA] == 0)
        kills = (chosen_kind == rules.COUP) | (chosen_kind == rules.ASSASSINATE)
        tax = legal(rules.TAX)
        tax_dominates = (((chosen_kind == rules.INCOME) | (chosen_kind == rules.FOREIGN_AID))
                         & (v.own_counts[rules.DUKE] > 0) & tax.any())
        aid = legal(rules.FOREIGN_AID)
        aid_dominates = ((chosen_kind == rules.INCOME) & (v.unseen[rules.DUKE] == 0)
                         & (v.own_counts[rules.DUKE] == 0) & aid.any())
        main = jnp.select([forced, sure_kill.any() & ~kills, tax_dominates, aid_dominates],
                          [ev_best(coups), ev_best(sure_kill), jnp.argmax(tax), jnp.argmax(aid)], chosen)
        out = jnp.where((v.phase == rules.PH_ACTION) & (main != chosen), masked_logits(one_hot(main), mask), out)

        # losing a card and exchanges: the card-value rule
        p_lose, p_keep = reveal_and_keep(T, v.own_cards, mask)
        out = jnp.where(v.phase == rules.PH_LOSE, masked_logits(p_lose, mask), out)
        out = jnp.where(v.phase == rules.PH_EXCHANGE, masked_logits(p_keep, mask), out)
        return out.astype(jnp.float32)

    policy.__name__ = "best"
    policy.network = net
    return policy
