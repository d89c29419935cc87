"""Scripted opponents: the five bots of `pools.SCRIPTED_NAMES` and their mixture.

Each builds a probability distribution over the legal actions from the observation
(category probabilities first, spread uniformly within a category), then takes the
log.  Shared definitions:

* *bluff action*: a legal main action that claims a role (tax: duke, exchange:
  ambassador, assassinate: assassin, steal: captain) absent from the actor's own hand.
  At a main-action decision where at least one bluff action is legal, a bot bluffs
  (picks a bluff action) with exactly its ``bluff`` probability; otherwise it picks
  among its honest options.  Forced coups (10+ coins) never allow a bluff.
* *honest options*: first available of coup (7+ coins) > assassinate (holds
  assassin, 3+ coins) > tax (holds duke) > steal (holds captain and an opponent has
  coins) > exchange (holds ambassador) > foreign aid, with probability 0.8; the other
  0.2 is spread uniformly over the other legal honest action kinds (income, foreign
  aid, and claims of held roles).  Targets: uniform over live opponents (steal:
  over those with coins, if any), or the *leader* for the aggressive bot.
* *leader*: the live opponent with the most coins, ties -> most hidden cards,
  remaining ties uniform.
* *impossible claim*: a claim (main action or block) of a role whose 3 copies are
  all visible to the observer (revealed cards + own hand + own drawn cards).
* *challenge*: at every decision where ``challenge`` is legal (reaction to a claimed
  action, or the actor answering a block) the bot challenges with its challenge
  probability; the rest of the mass goes to: a truthful block (a legal block role it
  holds) if any, else a bluff block with its ``bluff_block`` probability (uniform over
  legal block roles it lacks), else pass.
* *losing influence*: reveals the card it values least (duke 5 > assassin 4 >
  captain 3 > contessa 2 > ambassador 1; equal cards: uniform).
* *exchange*: keeps the legal multiset with the highest value total, a pair of equal
  cards counting 1 less (ties uniform).

`pools.SCRIPTED_RATES` holds each bot's bluff and challenge rate;
`coupjax.seat_tables.measure_rates` measures them.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.game.tables import tables
from coupjax.policies.common import Policy, masked_logits, uniform_over
from coupjax.policies.pools import MIX_NAMES, SCRIPTED_PARAMS
from coupjax.observation import ObsView, parse

CARD_VALUE = np.array([5.0, 4.0, 3.0, 1.0, 2.0], np.float32)  # duke, assassin, captain, ambassador, contessa
PAIR_PENALTY = 1.0
HONEST_TOP = 0.8
# value of each keep multiset (`rules.KEEPS`): its cards' values, a pair of equal cards 1 less
KEEP_SCORE = (rules.KEEP_COUNTS @ CARD_VALUE - PAIR_PENALTY * (rules.KEEP_COUNTS.max(axis=1) >= 2)).astype(np.float32)


def _spread(T, kind_w, avail, t):
    """Probabilities over main action ids: kind weights (renormalised over available kinds),
    then within a kind proportional to the target weights ``t`` (1 for untargeted ids)."""
    at = jnp.where(avail, t, 0.0)
    ksum = at @ jnp.asarray(T.kind_onehot)  # [7]
    w = jnp.where(ksum > 0, kind_w, 0.0)
    w = w / jnp.maximum(w.sum(), 1e-12)
    kind = jnp.clip(jnp.asarray(T.main_kind), 0)
    return jnp.where(jnp.asarray(T.is_main), at / jnp.maximum(ksum[kind], 1e-12) * w[kind], 0.0)


def _target_weights(T, v: ObsView, leader: bool):
    """Per action id weight of its target: leader, or uniform (steal: opponents with coins)."""
    n = T.num_players
    opp = v.alive & (jnp.arange(n) > 0)
    score = v.coins * 4 + v.hidden
    best = jnp.max(jnp.where(opp, score, -1))
    lead = opp & (score == best)
    rich = opp & (v.coins > 0)
    rich = jnp.where(rich.any(), rich, opp)
    hit = lead if leader else opp
    steal = lead if leader else rich
    lay = T.layout
    t = jnp.ones(T.num_actions, jnp.float32)
    t = t.at[lay.coup:lay.coup + n].set(hit.astype(jnp.float32))
    t = t.at[lay.assassinate:lay.assassinate + n].set(hit.astype(jnp.float32))
    return t.at[lay.steal:lay.steal + n].set(steal.astype(jnp.float32))


def _honest_main(T, v: ObsView, avail, t):
    """The honest-options distribution (see the module doc) over ``avail`` main ids."""
    own = v.own_counts
    kind_avail = (jnp.where(avail, 1.0, 0.0) @ jnp.asarray(T.kind_onehot)) > 0
    opp_coins = (v.alive & (jnp.arange(T.num_players) > 0) & (v.coins > 0)).any()
    prefs = jnp.stack([
        kind_avail[rules.COUP],
        kind_avail[rules.ASSASSINATE] & (own[rules.ASSASSIN] > 0),
        kind_avail[rules.TAX] & (own[rules.DUKE] > 0),
        kind_avail[rules.STEAL] & (own[rules.CAPTAIN] > 0) & opp_coins,
        kind_avail[rules.EXCHANGE] & (own[rules.AMBASSADOR] > 0),
        kind_avail[rules.FOREIGN_AID],
        kind_avail[rules.INCOME],
    ])
    order = jnp.array([rules.COUP, rules.ASSASSINATE, rules.TAX, rules.STEAL, rules.EXCHANGE, rules.FOREIGN_AID, rules.INCOME])
    top_kind = order[jnp.argmax(prefs)]
    top = (jnp.arange(rules.NUM_MAIN_ACTIONS) == top_kind) & prefs.any()
    others = kind_avail & ~top
    kind_w = HONEST_TOP * top + (1.0 - HONEST_TOP) * others / jnp.maximum(others.sum(), 1)
    return _spread(T, kind_w, avail, t)


def scripted_policy(env, *, bluff: float, challenge: float, challenge_impossible: float,
                    bluff_block: float, target_leader: bool) -> Policy:
    """A scripted bot (see the module doc) with the given rates.

    bluff: P(bluff | a bluff action is legal) at main-action decisions; challenge:
    P(challenge) at a challenge opportunity when the claim is possible;
    challenge_impossible: the same when the claim is impossible; bluff_block:
    P(bluff block | no truthful block, a block is legal, no challenge); target_leader:
    aim coup/assassinate/steal at the leader instead of uniformly.
    """
    params = dict(bluff=bluff, challenge=challenge, challenge_impossible=challenge_impossible,
                  bluff_block=bluff_block, target_leader=target_leader)
    return scripted_mixture(env, [(1.0, params)])


def scripted_mixture(env, bots, random_weight: float = 0.0) -> Policy:
    """The weighted average of the action distributions of scripted bots and the uniform
    policy, in one pass.  ``bots``: ``[(weight, params)]`` with `scripted_policy`'s
    keyword arguments as params; ``random_weight``: the uniform policy's weight (the
    weights should sum to 1).  The bots share every vector of the computation and differ
    only in scalar rates, so a mixture costs about one bot."""
    n = env.num_players
    T = tables(n)
    bots = [(float(w), dict(prm)) for w, prm in bots if w > 0]

    def policy(key, state):
        del key  # the distribution is the output; sampling is the caller's
        mask = state.legal_action_mask
        maskf = mask.astype(jnp.float32)
        probs = random_weight * maskf / jnp.maximum(maskf.sum(), 1.0)
        if bots:
            probs = probs + _scripted_probs(T, parse(state.observation, n), mask, bots)
        probs = jnp.where((probs * maskf).sum() > 0, probs, maskf)  # defensive: never all-zero
        return masked_logits(probs, mask)

    return policy


def reveal_and_keep(T, hand, mask):
    """(p_lose, p_keep) f32[A]: reveal the least valued card of ``hand`` (int32[2], -1:
    none; `CARD_VALUE`, ties uniform) and keep the best legal multiset in an exchange
    (`KEEP_SCORE`, ties uniform) -- what the scripted bots and belief_ev play there."""
    val = jnp.where(hand >= 0, jnp.asarray(CARD_VALUE)[jnp.clip(hand, 0)], jnp.inf)
    lay = T.layout
    p_lose = jnp.zeros(T.num_actions).at[lay.reveal + jnp.arange(2)].set(uniform_over(val == val.min()))
    keep_mask = mask[lay.keep:]
    score = jnp.where(keep_mask, jnp.asarray(KEEP_SCORE), -jnp.inf)
    p_keep = jnp.zeros(T.num_actions).at[lay.keep:].set(uniform_over(keep_mask & (score == score.max())))
    return p_lose, p_keep


def _scripted_probs(T, v: ObsView, mask, bots):
    """Sum over ``bots`` of weight x the bot's action distribution (see the module doc)."""
    own, phase = v.own_counts, v.phase
    w_scripted = sum(w for w, _ in bots)
    main_claim = jnp.asarray(T.action_claim)
    block_role = jnp.asarray(T.action_block_role)

    # ---- main action: each bot bluffs with its rate, else its honest options
    main = mask & jnp.asarray(T.is_main)
    bluffs = main & (main_claim >= 0) & (own[jnp.clip(main_claim, 0)] == 0)
    honest = main & ~bluffs
    parts = {}
    for lead in sorted({prm["target_leader"] for _, prm in bots}):
        t = _target_weights(T, v, lead)
        parts[lead] = (_honest_main(T, v, honest, t), _spread(T, jnp.ones(rules.NUM_MAIN_ACTIONS), bluffs, t))
    p_main = 0.0
    for w, prm in bots:
        p_honest, p_bluff = parts[prm["target_leader"]]
        b = jnp.where(bluffs.any(), prm["bluff"], 0.0)
        p_main = p_main + w * (b * p_bluff + (1.0 - b) * p_honest)

    # ---- reactions and answers to a block: per-bot scalars times shared vectors
    ids = jnp.arange(T.num_actions)
    role = jnp.where(phase == rules.PH_ANSWER_BLOCK, v.block_role, v.claim)
    impossible = (role >= 0) & (v.unseen[jnp.clip(role, 0)] <= 0)
    can_challenge = mask[T.challenge_id]
    blocks = mask & (block_role >= 0)
    true_blocks = blocks & (own[jnp.clip(block_role, 0)] > 0)
    fake_blocks = blocks & ~true_blocks
    c_sum = t_sum = f_sum = pass_sum = 0.0
    for w, prm in bots:
        c = jnp.where(can_challenge, jnp.where(impossible, prm["challenge_impossible"], prm["challenge"]), 0.0)
        rest = 1.0 - c
        p_true = jnp.where(true_blocks.any(), rest, 0.0)
        p_fake = jnp.where(true_blocks.any() | ~fake_blocks.any(), 0.0, rest * prm["bluff_block"])
        c_sum, t_sum, f_sum = c_sum + w * c, t_sum + w * p_true, f_sum + w * p_fake
        pass_sum = pass_sum + w * (rest - p_true - p_fake)
    p_react = (c_sum * (ids == T.challenge_id) + pass_sum * (ids == T.pass_id)
               + t_sum * uniform_over(true_blocks) + f_sum * uniform_over(fake_blocks))

    # ---- losing influence and exchanges: the same choice for every scripted bot
    p_lose, p_keep = reveal_and_keep(T, v.own_cards, mask)

    return jnp.select(
        [phase == rules.PH_ACTION, (phase == rules.PH_REACT) | (phase == rules.PH_ANSWER_BLOCK), phase == rules.PH_LOSE],
        [p_main, p_react, w_scripted * p_lose], w_scripted * p_keep)


# ------------------------------------------------------------------ factories (see the registry)
def make_random(env) -> Policy:
    def policy(key, state):
        del key
        return masked_logits(jnp.ones(env.num_actions), state.legal_action_mask)
    return policy


def _scripted_factory(name):
    def make(env, **overrides) -> Policy:
        unknown = set(overrides) - set(SCRIPTED_PARAMS[name])
        if unknown:
            raise TypeError(f"unknown parameters for {name!r}: {sorted(unknown)}")
        return scripted_policy(env, **{**SCRIPTED_PARAMS[name], **overrides})
    make.__name__ = make.__qualname__ = f"make_{name}"
    return make


make_honest = _scripted_factory("honest")
make_cautious = _scripted_factory("cautious")
make_aggressive = _scripted_factory("aggressive")
make_bluffer = _scripted_factory("bluffer")


def mix_weights(weights) -> tuple[float, ...]:
    """``weights`` of `make_scripted_mix` as floats, one per bot of `pools.MIX_NAMES`;
    ValueError unless they are that many finite numbers >= 0 with a positive sum."""
    if isinstance(weights, np.ndarray):
        weights = weights.tolist()
    numbers = isinstance(weights, (list, tuple)) and all(
        isinstance(w, (int, float)) and not isinstance(w, bool) and np.isfinite(w) for w in weights)
    if not (numbers and len(weights) == len(MIX_NAMES) and min(weights) >= 0 and sum(weights) > 0):
        raise ValueError(f"must be {len(MIX_NAMES)} weights >= 0 with a positive sum, one per bot of "
                         f"{', '.join(MIX_NAMES)}, got {list(weights) if isinstance(weights, tuple) else weights!r}")
    return tuple(float(w) for w in weights)


def make_scripted_mix(env, weights=(1.0, 1.0, 1.0, 1.0, 1.0)) -> Policy:
    """``scripted_mix``: at every decision the weighted average of the action
    distributions of the scripted bots `pools.MIX_NAMES` (default equal weights) -- a
    cheap model of an unknown opponent from the scripted pool, computed in one pass
    (`scripted_mixture`: it costs about one scripted bot)."""
    try:
        w = np.asarray(mix_weights(weights), np.float64)
    except ValueError as err:
        raise ValueError(f"weights {err}") from None
    w = w / w.sum()
    assert MIX_NAMES[0] == "random"
    bots = [(float(wb), SCRIPTED_PARAMS[name]) for wb, name in zip(w[1:], MIX_NAMES[1:])]
    return scripted_mixture(env, bots, random_weight=float(w[0]))
