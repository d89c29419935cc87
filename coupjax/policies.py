"""Policies: a registry of pure ``policy(key, state) -> logits`` functions, scripted
opponents with documented rates, and a jitted table runner.

The policy interface
--------------------
A policy acts for ``state.current_player`` and returns float32[num_actions] logits:
``-inf`` exactly on the illegal actions, finite on every legal one (a legal action a
bot never takes gets ``log(1e-30)`` ~ -69, which `jax.random.categorical` never
samples: its Gumbel noise spans less than 22 nats).  Policies are jit/vmap-able and
read only ``state.observation`` and ``state.legal_action_mask`` -- what the acting
seat can see (tests/test_policies.py checks this by re-dealing every unseen card).

Registry: ``@register_policy(name, doc)`` on a factory ``make(env, **kwargs) ->
policy``; `make_policy`, `policy_names`, `describe_policies`.

Scripted opponents
------------------
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

``SCRIPTED_RATES`` holds each bot's bluff and challenge rate; `make_table_runner`
measures them (bluffs / bluff opportunities, challenges / challenge opportunities).
"""
from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules as R
from coupjax.engine import Env

Policy = Callable[[jax.Array, object], jax.Array]

NEVER = 1e-30  # probability floor for legal actions a policy never takes (log ~ -69)
CARD_VALUE = np.array([5.0, 4.0, 3.0, 1.0, 2.0], np.float32)  # duke, assassin, captain, ambassador, contessa
PAIR_PENALTY = 1.0
HONEST_TOP = 0.8

# ------------------------------------------------------------------ registry
_REGISTRY: dict[str, tuple[Callable[..., Policy], str]] = {}


def register_policy(name: str, doc: str):
    """Decorator: register ``make(env, **kwargs) -> policy`` under ``name`` with a one-sentence doc."""
    def deco(factory):
        if name in _REGISTRY:
            raise ValueError(f"policy {name!r} is already registered")
        _REGISTRY[name] = (factory, doc)
        return factory
    return deco


def make_policy(name: str, env: Env, **kwargs) -> Policy:
    """The policy registered as ``name`` for ``env``; KeyError lists the known names."""
    if name not in _REGISTRY:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(policy_names())}")
    return _REGISTRY[name][0](env, **kwargs)


def policy_names() -> list[str]:
    return list(_REGISTRY)


def describe_policies() -> dict[str, str]:
    return {name: doc for name, (_, doc) in _REGISTRY.items()}


# ------------------------------------------------------------------ helpers
def masked_logits(probs_or_scores, mask) -> jax.Array:
    """Probabilities (>= 0, any scale) -> log, floored at log(1e-30) on legal actions, -inf on illegal ones."""
    p = jnp.asarray(probs_or_scores, jnp.float32)
    return jnp.where(mask, jnp.log(jnp.maximum(p, NEVER)), -jnp.inf).astype(jnp.float32)


def sample_action(key, logits) -> jax.Array:
    """One action id (int32) sampled from ``logits``."""
    return jax.random.categorical(key, logits).astype(jnp.int32)


class _Tables:
    """Static per-table-size arrays derived from `rules.ActionLayout`."""

    def __init__(self, env: Env):
        lay, n, A = env.layout, env.num_players, env.num_actions
        self.n, self.A, self.lay = n, A, lay
        self.obs = env.obs_layout
        kind = lay.main_kind
        self.main_kind = jnp.asarray(kind)
        self.target_offset = jnp.asarray(np.maximum(lay.target_offset, 0))
        self.targeted = jnp.asarray(lay.target_offset >= 0)
        claim = np.full(A, -1, np.int32)
        claim[kind >= 0] = R.ACTION_CLAIM[kind[kind >= 0]]
        self.main_claim = jnp.asarray(claim)  # role claimed by each main action id, -1 none
        block_role = np.full(A, -1, np.int32)
        block_role[lay.block:lay.block + 4] = R.BLOCK_ROLES
        self.block_role = jnp.asarray(block_role)
        onehot = np.zeros((A, R.NUM_MAIN_ACTIONS), np.float32)
        onehot[kind >= 0, kind[kind >= 0]] = 1.0
        self.kind_onehot = jnp.asarray(onehot)
        self.is_main = jnp.asarray(kind >= 0)
        self.pass_id = lay.reaction + R.PASS
        self.challenge_id = lay.reaction + R.CHALLENGE
        keep_score = R.KEEP_COUNTS @ CARD_VALUE - PAIR_PENALTY * (R.KEEP_COUNTS.max(axis=1) >= 2)
        self.keep_score = jnp.asarray(keep_score, jnp.float32)


@functools.lru_cache(maxsize=None)
def _tables(num_players: int) -> _Tables:
    # Built eagerly even when first called inside a trace, so the cache never holds tracers.
    with jax.ensure_compile_time_eval():
        return _Tables(Env(num_players))


def parse_observation(env: Env, obs) -> dict:
    """Named parts of one observation (see `engine.observation_layout`), plus derived counts.

    own [5] int counts of the observer's hidden roles; hand [2] role per hand index
    (-1 empty); drawn [5]; coins/hidden [n] int and alive [n] bool per relative seat;
    revealed [n, 5]; phase int; claim / block_role int (-1 none); unseen [5] copies of
    each role the observer cannot see (3 - revealed - own - drawn).
    """
    lay = env.obs_layout
    obs = jnp.asarray(obs, jnp.float32)

    def part(name):
        start, shape = lay[name]
        return obs[start:start + int(np.prod(shape))].reshape(shape)

    ints = lambda x: jnp.round(x).astype(jnp.int32)  # noqa: E731
    own_hand = part("own_hand")
    seats = part("seats")
    own = ints(own_hand.sum(axis=0))
    drawn = ints(part("drawn"))
    revealed = ints(seats[:, 3:3 + R.NUM_ROLES])
    claim_oh, block_oh = part("claim"), part("block_role")
    return dict(
        own=own, drawn=drawn, revealed=revealed,
        hand=jnp.where(own_hand.sum(axis=1) > 0, jnp.argmax(own_hand, axis=1), -1).astype(jnp.int32),
        coins=ints(seats[:, 0]), hidden=ints(seats[:, 1]), alive=seats[:, 2] > 0.5,
        phase=jnp.argmax(part("phase")).astype(jnp.int32),
        claim=jnp.where(claim_oh.sum() > 0, jnp.argmax(claim_oh), -1).astype(jnp.int32),
        block_role=jnp.where(block_oh.sum() > 0, jnp.argmax(block_oh), -1).astype(jnp.int32),
        unseen=R.COPIES_PER_ROLE - revealed.sum(axis=0) - own - drawn,
    )


def bluff_actions(env: Env, obs, mask) -> jax.Array:
    """bool[A]: legal main actions claiming a role absent from the observer's own hand."""
    T = _tables(env.num_players)
    own = parse_observation(env, obs)["own"]
    return mask & (T.main_claim >= 0) & (own[jnp.clip(T.main_claim, 0)] == 0)


def _uniform_over(sel) -> jax.Array:
    sel = sel.astype(jnp.float32)
    return sel / jnp.maximum(sel.sum(), 1.0)


def _spread(T: _Tables, kind_w, avail, t):
    """Probabilities over main action ids: kind weights (renormalised over available kinds),
    then within a kind proportional to the target weights ``t`` (1 for untargeted ids)."""
    at = jnp.where(avail, t, 0.0)
    ksum = at @ T.kind_onehot  # [7]
    w = jnp.where(ksum > 0, kind_w, 0.0)
    w = w / jnp.maximum(w.sum(), 1e-12)
    kind = jnp.clip(T.main_kind, 0)
    return jnp.where(T.is_main, at / jnp.maximum(ksum[kind], 1e-12) * w[kind], 0.0)


def _target_weights(T: _Tables, v, leader: bool):
    """Per action id weight of its target: leader, or uniform (steal: opponents with coins)."""
    n = T.n
    opp = v["alive"] & (jnp.arange(n) > 0)
    score = v["coins"] * 4 + v["hidden"]
    best = jnp.max(jnp.where(opp, score, -1))
    lead = opp & (score == best)
    rich = opp & (v["coins"] > 0)
    rich = jnp.where(rich.any(), rich, opp)
    hit = lead if leader else opp
    steal = lead if leader else rich
    lay = T.lay
    t = jnp.ones(T.A, jnp.float32)
    t = t.at[lay.coup:lay.coup + n].set(hit.astype(jnp.float32))
    t = t.at[lay.assassinate:lay.assassinate + n].set(hit.astype(jnp.float32))
    return t.at[lay.steal:lay.steal + n].set(steal.astype(jnp.float32))


def _honest_main(T: _Tables, v, avail, t):
    """The honest-options distribution (see the module doc) over ``avail`` main ids."""
    own = v["own"]
    kind_avail = (jnp.where(avail, 1.0, 0.0) @ T.kind_onehot) > 0
    opp_coins = (v["alive"] & (jnp.arange(T.n) > 0) & (v["coins"] > 0)).any()
    prefs = jnp.stack([
        kind_avail[R.COUP],
        kind_avail[R.ASSASSINATE] & (own[R.ASSASSIN] > 0),
        kind_avail[R.TAX] & (own[R.DUKE] > 0),
        kind_avail[R.STEAL] & (own[R.CAPTAIN] > 0) & opp_coins,
        kind_avail[R.EXCHANGE] & (own[R.AMBASSADOR] > 0),
        kind_avail[R.FOREIGN_AID],
        kind_avail[R.INCOME],
    ])
    order = jnp.array([R.COUP, R.ASSASSINATE, R.TAX, R.STEAL, R.EXCHANGE, R.FOREIGN_AID, R.INCOME])
    top_kind = order[jnp.argmax(prefs)]
    top = (jnp.arange(R.NUM_MAIN_ACTIONS) == top_kind) & prefs.any()
    others = kind_avail & ~top
    kind_w = HONEST_TOP * top + (1.0 - HONEST_TOP) * others / jnp.maximum(others.sum(), 1)
    return _spread(T, kind_w, avail, t)


def scripted_policy(env: Env, *, bluff: float, challenge: float, challenge_impossible: float,
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


def scripted_mixture(env: Env, bots, random_weight: float = 0.0) -> Policy:
    """The weighted average of the action distributions of scripted bots and the uniform
    policy, in one pass.  ``bots``: ``[(weight, params)]`` with `scripted_policy`'s
    keyword arguments as params; ``random_weight``: the uniform policy's weight (the
    weights should sum to 1).  The bots share every vector of the computation and differ
    only in scalar rates, so a mixture costs about one bot."""
    T = _tables(env.num_players)
    bots = [(float(w), dict(prm)) for w, prm in bots if w > 0]

    def policy(key, state):
        del key  # the distribution is the output; sampling is the caller's
        mask = state.legal_action_mask
        maskf = mask.astype(jnp.float32)
        probs = random_weight * maskf / jnp.maximum(maskf.sum(), 1.0)
        if bots:
            probs = probs + _scripted_probs(T, parse_observation(env, state.observation), mask, bots)
        probs = jnp.where((probs * maskf).sum() > 0, probs, maskf)  # defensive: never all-zero
        return masked_logits(probs, mask)

    return policy


def reveal_and_keep(T, hand, mask):
    """(p_lose, p_keep) f32[A]: reveal the least valued card of ``hand`` (int32[2], -1:
    none; `CARD_VALUE`, ties uniform) and keep the best legal multiset in an exchange
    (``T.keep_score``, ties uniform) -- what the scripted bots and belief_ev play there."""
    val = jnp.where(hand >= 0, jnp.asarray(CARD_VALUE)[jnp.clip(hand, 0)], jnp.inf)
    p_lose = jnp.zeros(T.A).at[T.lay.reveal + jnp.arange(2)].set(_uniform_over(val == val.min()))
    keep_mask = mask[T.lay.keep:]
    score = jnp.where(keep_mask, T.keep_score, -jnp.inf)
    p_keep = jnp.zeros(T.A).at[T.lay.keep:].set(_uniform_over(keep_mask & (score == score.max())))
    return p_lose, p_keep


def _scripted_probs(T, v, mask, bots):
    """Sum over ``bots`` of weight x the bot's action distribution (see the module doc)."""
    own, phase = v["own"], v["phase"]
    w_scripted = sum(w for w, _ in bots)

    # ---- main action: each bot bluffs with its rate, else its honest options
    main = mask & T.is_main
    bluffs = main & (T.main_claim >= 0) & (own[jnp.clip(T.main_claim, 0)] == 0)
    honest = main & ~bluffs
    parts = {}
    for lead in sorted({prm["target_leader"] for _, prm in bots}):
        t = _target_weights(T, v, lead)
        parts[lead] = (_honest_main(T, v, honest, t), _spread(T, jnp.ones(R.NUM_MAIN_ACTIONS), bluffs, t))
    p_main = 0.0
    for w, prm in bots:
        p_honest, p_bluff = parts[prm["target_leader"]]
        b = jnp.where(bluffs.any(), prm["bluff"], 0.0)
        p_main = p_main + w * (b * p_bluff + (1.0 - b) * p_honest)

    # ---- reactions and answers to a block: per-bot scalars times shared vectors
    ids = jnp.arange(T.A)
    role = jnp.where(phase == R.PH_ANSWER_BLOCK, v["block_role"], v["claim"])
    impossible = (role >= 0) & (v["unseen"][jnp.clip(role, 0)] <= 0)
    can_challenge = mask[T.challenge_id]
    blocks = mask & (T.block_role >= 0)
    true_blocks = blocks & (own[jnp.clip(T.block_role, 0)] > 0)
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
               + t_sum * _uniform_over(true_blocks) + f_sum * _uniform_over(fake_blocks))

    # ---- losing influence and exchanges: the same choice for every scripted bot
    p_lose, p_keep = reveal_and_keep(T, v["hand"], mask)

    return jnp.select(
        [phase == R.PH_ACTION, (phase == R.PH_REACT) | (phase == R.PH_ANSWER_BLOCK), phase == R.PH_LOSE],
        [p_main, p_react, w_scripted * p_lose], w_scripted * p_keep)


# ------------------------------------------------------------------ registered policies
@register_policy("random", "Uniform over the legal actions (bluff and challenge rates are whatever the legal sets give).")
def make_random(env: Env) -> Policy:
    def policy(key, state):
        del key
        return masked_logits(jnp.ones(env.num_actions), state.legal_action_mask)
    return policy


_SCRIPTED_PARAMS = {
    "honest": dict(bluff=0.0, challenge=0.0, challenge_impossible=1.0, bluff_block=0.0, target_leader=False),
    "cautious": dict(bluff=0.05, challenge=0.0, challenge_impossible=1.0, bluff_block=0.05, target_leader=False),
    "aggressive": dict(bluff=0.25, challenge=0.35, challenge_impossible=1.0, bluff_block=0.25, target_leader=True),
    "bluffer": dict(bluff=0.5, challenge=0.10, challenge_impossible=0.10, bluff_block=0.5, target_leader=False),
}

_DOCS = {
    "honest": "Never claims a role it lacks (bluff rate 0, bluff-blocks 0), blocks whenever it can truthfully, "
              "challenges only impossible claims (all 3 copies visible to it, probability 1, else 0), and otherwise "
              "takes its top honest option (coup at 7+ > assassinate > tax > steal > exchange > foreign aid) with "
              "probability 0.8.",
    "cautious": "Bluffs on 5% of main-action decisions where a bluff is possible, bluff-blocks with probability 0.05 "
                "when it cannot block truthfully, blocks truthfully whenever it can, and challenges only claims with "
                "0 unseen copies (probability 1, else 0).",
    "aggressive": "Bluffs on 25% of main-action decisions where a bluff is possible, challenges with probability 0.35 "
                  "at every opportunity (1.0 for impossible claims), bluff-blocks with probability 0.25, and aims "
                  "coup/assassinate/steal at the leader (most coins, then most hidden cards).",
    "bluffer": "Bluffs on 50% of main-action decisions where a bluff is possible, challenges with probability 0.10 at "
               "every opportunity, and bluff-blocks with probability 0.5 when a block is legal and it cannot block "
               "truthfully.",
}


def _register_scripted(name):
    @register_policy(name, _DOCS[name])
    def make(env: Env, **overrides) -> Policy:
        unknown = set(overrides) - set(_SCRIPTED_PARAMS[name])
        if unknown:
            raise TypeError(f"unknown parameters for {name!r}: {sorted(unknown)}")
        return scripted_policy(env, **{**_SCRIPTED_PARAMS[name], **overrides})
    make.__name__ = make.__qualname__ = f"make_{name}"
    return make


for _name in _SCRIPTED_PARAMS:
    _register_scripted(_name)

SCRIPTED_NAMES = ("random", "honest", "cautious", "aggressive", "bluffer")

# Bluff / challenge rate per bot (bluffs / bluff opportunities, challenges / challenge
# opportunities).  Exact by construction unless noted; "measured" values come from
# 2,000 4-player games with seats drawn uniformly from SCRIPTED_NAMES (seed 0,
# `measure_rates`), rounded to 2 decimals.
SCRIPTED_RATES = {
    "random": {"bluff": 0.50, "challenge": 0.46},  # both measured (0.4928, 0.4583)
    "honest": {"bluff": 0.0, "challenge": 0.01},  # challenge measured (0.0065: impossible claims only)
    "cautious": {"bluff": 0.05, "challenge": 0.01},  # challenge measured (0.0052: impossible claims only)
    "aggressive": {"bluff": 0.25, "challenge": 0.35},  # 0.35 per opportunity, 1.0 on the rare impossible claim
    "bluffer": {"bluff": 0.5, "challenge": 0.10},
}

CONDITIONS = {
    "aggressive_heavy": {"aggressive": 0.4, "bluffer": 0.3, "honest": 0.1, "cautious": 0.1, "random": 0.1},
    "honest_heavy": {"honest": 0.4, "cautious": 0.3, "aggressive": 0.1, "bluffer": 0.1, "random": 0.1},
}


def draw_seats(key, condition, num_games: int, num_players: int, names=SCRIPTED_NAMES) -> jax.Array:
    """int32[num_games, num_players]: each seat drawn independently from ``condition``.

    ``condition``: a key of `CONDITIONS` or a dict name -> weight; the result indexes
    ``names`` (default `SCRIPTED_NAMES`), e.g. ``make_table_runner(env, [make_policy(x, env)
    for x in names])``.
    """
    mix = CONDITIONS[condition] if isinstance(condition, str) else dict(condition)
    names = list(names)
    missing = set(mix) - set(names)
    if missing:
        raise ValueError(f"condition names {sorted(missing)} are not in names {names}")
    w = np.zeros(len(names), np.float64)
    for name, weight in mix.items():
        w[names.index(name)] = weight
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"condition weights must be non-negative with a positive sum, got {mix}")
    logits = jnp.log(jnp.asarray(w / w.sum(), jnp.float32))
    return jax.random.categorical(key, logits, shape=(num_games, num_players)).astype(jnp.int32)


# ------------------------------------------------------------------ running games
STAT_NAMES = ("decisions", "bluff_opportunities", "bluffs", "challenge_opportunities", "challenges", "wins")


def policy_entropy(logits):
    """Entropy in nats of the distribution ``softmax(logits)`` (-inf entries excluded)."""
    logp = jax.nn.log_softmax(logits)
    p = jnp.exp(logp)
    return -jnp.sum(jnp.where(p > 0, p * logp, 0.0))


def make_table_runner(env: Env, policy_list, max_steps: int = 3000):
    """A jitted ``run(key, seat_policy_index int32[B, n]) -> (final_state, stats)``.

    Plays B complete games under vmap, each in one `lax.while_loop` (at most
    ``max_steps`` decisions); seat s of game b is played by
    ``policy_list[seat_policy_index[b, s]]`` (chosen with `lax.switch`).  ``stats`` is a
    dict of [B, n] per seat: ``entropy`` (float32: the summed entropy in nats of the
    acting policy's action distribution at that seat's decisions), ``decisions``, ``bluff_opportunities`` (main-action
    decisions with a legal bluff action), ``bluffs``, ``challenge_opportunities``
    (decisions with ``challenge`` legal), ``challenges``, ``wins`` (1 for the winner of a
    finished game); plus ``steps`` int32[B] and ``finished`` bool[B].

    ``run(key, seat_policy_index, step_limit)`` with ``step_limit`` int32[B] stops game b
    after that many decisions (mid-game positions for tests and analysis).  Passing it
    always, or never, keeps to one compilation.
    """
    policies = list(policy_list)
    if not policies:
        raise ValueError("policy_list is empty")
    n = env.num_players
    T = _tables(n)

    def one(key, seat_idx, limit):
        k_init, key = jax.random.split(key)
        state = env.init(k_init)
        stats = {name: jnp.zeros(n, jnp.int32) for name in STAT_NAMES[:-1]}
        stats["entropy"] = jnp.zeros(n, jnp.float32)

        def cond(carry):
            s, t, _, _ = carry
            return ~s.terminated & (t < limit)

        def body(carry):
            s, t, st, k = carry
            k, k_pol, k_act, k_step = jax.random.split(k, 4)
            p = s.current_player
            logits = jax.lax.switch(seat_idx[p], policies, k_pol, s)
            a = jax.random.categorical(k_act, logits).astype(jnp.int32)
            bl = bluff_actions(env, s.observation, s.legal_action_mask)
            seat = jnp.arange(n) == p
            chal_legal = s.legal_action_mask[T.challenge_id]
            st = {
                "decisions": st["decisions"] + seat,
                "bluff_opportunities": st["bluff_opportunities"] + (seat & bl.any()),
                "bluffs": st["bluffs"] + (seat & bl[a]),
                "challenge_opportunities": st["challenge_opportunities"] + (seat & chal_legal),
                "challenges": st["challenges"] + (seat & chal_legal & (a == T.challenge_id)),
                "entropy": st["entropy"] + jnp.where(seat, policy_entropy(logits), 0.0),
            }
            return env.step(s, a, k_step), t + 1, st, k

        state, steps, stats, _ = jax.lax.while_loop(cond, body, (state, jnp.int32(0), stats, key))
        winner = env.placements(state)[0]
        stats = {k: v if k == "entropy" else v.astype(jnp.int32) for k, v in stats.items()}
        stats["wins"] = ((jnp.arange(n) == winner) & state.terminated).astype(jnp.int32)
        stats["steps"] = steps
        stats["finished"] = state.terminated
        return state, stats

    batched = jax.vmap(one)

    @jax.jit
    def run(key, seat_policy_index, step_limit=None):
        idx = jnp.asarray(seat_policy_index, jnp.int32)
        limit = jnp.full(idx.shape[0], max_steps, jnp.int32)
        if step_limit is not None:
            limit = jnp.minimum(limit, jnp.asarray(step_limit, jnp.int32))
        keys = jax.random.split(key, idx.shape[0])
        return batched(keys, idx, limit)

    return run


def run_games(env: Env, seat_policies, key, num_games: int, max_steps: int = 3000):
    """Play ``num_games`` complete games with a fixed policy per seat.

    ``seat_policies``: a list of n policies (functions or registered names), or a
    function ``seat -> policy or name``.  Returns `make_table_runner`'s (final_state, stats).
    """
    n = env.num_players
    if isinstance(seat_policies, (list, tuple)):
        chosen = list(seat_policies)
    elif callable(seat_policies):
        chosen = [seat_policies(s) for s in range(n)]
    else:
        raise TypeError("seat_policies must be a list of policies/names or a function seat -> policy")
    if len(chosen) != n:
        raise ValueError(f"need {n} seat policies, got {len(chosen)}")
    chosen = [make_policy(p, env) if isinstance(p, str) else p for p in chosen]
    run = make_table_runner(env, chosen, max_steps)
    idx = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), (num_games, n))
    return run(key, idx)


def measure_rates(env: Env, key, num_games: int = 2000, names=SCRIPTED_NAMES, condition=None, max_steps: int = 3000):
    """Per bot: pooled bluff and challenge rates and win rate over ``num_games`` games.

    Seats are drawn from ``condition`` (default: uniform over ``names``).  Returns
    (rates dict name -> {"bluff", "challenge", "win", counts...}, stats, seat index).
    """
    names = list(names)
    condition = {x: 1.0 for x in names} if condition is None else condition
    k_seats, k_run = jax.random.split(key)
    idx = draw_seats(k_seats, condition, num_games, env.num_players, names)
    run = make_table_runner(env, [make_policy(x, env) for x in names], max_steps)
    _, stats = run(k_run, idx)
    idx = np.asarray(idx)
    st = {k: np.asarray(v) for k, v in stats.items()}
    rates = {}
    for i, name in enumerate(names):
        sel = idx == i
        tot = {k: int(st[k][sel].sum()) for k in STAT_NAMES}
        rates[name] = {
            "bluff": tot["bluffs"] / max(tot["bluff_opportunities"], 1),
            "challenge": tot["challenges"] / max(tot["challenge_opportunities"], 1),
            "win": tot["wins"] / max(int(sel.sum()), 1),
            "seats": int(sel.sum()), **tot,
        }
    return rates, stats, idx
from coupjax import advisor as _advisor  # noqa: E402,F401  (registers belief_ev)
from coupjax import search as _search  # noqa: E402,F401  (registers thompson, expected, regularized)
