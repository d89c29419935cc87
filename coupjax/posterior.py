"""Exact posterior over the opponents' hidden hands, from one seat's observation.

Model (all from the observation of the observer; seats relative, row 0 = observer):

* Prior: the ``U`` cards the observer cannot see (15 minus all revealed cards, its own
  hidden cards and its own drawn exchange cards; ``u_r`` of role r) are dealt uniformly
  at random into the opponents' hidden slots (``h_k`` each, from the observation) and
  the rest (the deck, plus the 2 cards another seat has drawn in its exchange choice).
  The probability of hand multisets ``c_k`` (rest ``d = u - sum_k c_k``) is the
  multivariate hypergeometric ``prod_r C(u_r; c_1r, .., c_mr, d_r) / C(U; h_1, .., h_m,
  D)`` i.e. proportional to ``prod_k h_k! / prod_{k,r} c_kr! / prod_r d_r!``.
* Likelihood of the public record given a hand: each claim counted since the seat's
  hand was renewed (observation ``claims``/``blocks``) of role r contributes
  ``q_honest`` if the hand holds r, else ``q_bluff`` (separate values for action and
  block claims).  Hands are independent given the counts, so the posterior is
  ``prior(c) * prod_k L_k(c_k)``.

Hands are multisets indexed by ``HANDS`` (H = 21): 0 = empty, 1..5 = one card of role
0..4, 6..20 = the 15 pairs in `itertools.combinations_with_replacement` order (so index
``6 + j`` is `rules.KEEPS[5 + j]`).

Computation: the weight factorises over opponents except for the shared term
``1 / prod_r d_r!``, which depends only on the running role counts of the hands so far.
Those counts are bounded by 3 per role, so an exact forward-backward pass over the
4**5 = 1024 count vectors (log space) gives the exact marginals for EVERY table size
(2..6 players) in O(opponents * 21 * 1024) per observation, with no enumeration of the
15**(n-1) joint hand combinations and no importance sampling.  The same backward
messages give exact ancestral sampling of joint worlds (`sample_worlds`).  For n <= 4
`joint_posterior` also enumerates the joint table explicitly (15**(n-1) <= 3375 rows,
static NumPy tables), which the tests use as a cross-check.

All functions are pure and jit/vmap-able with ``num_players`` static.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.scipy.special import logsumexp

from coupjax import rules as R
from coupjax.belief import parse_observation

# ---------------------------------------------------------------- hand index table
HANDS = ((),) + tuple((r,) for r in range(R.NUM_ROLES)) + tuple(
    itertools.combinations_with_replacement(range(R.NUM_ROLES), 2))
NUM_HANDS = len(HANDS)  # 21
HAND_COUNTS = np.zeros((NUM_HANDS, R.NUM_ROLES), np.int32)
for _h, _cards in enumerate(HANDS):
    for _r in _cards:
        HAND_COUNTS[_h, _r] += 1
HAND_SIZES = HAND_COUNTS.sum(axis=1).astype(np.int32)
HAND_HAS = (HAND_COUNTS > 0).astype(np.float32)
HAND_CARDS = np.full((NUM_HANDS, 2), -1, np.int32)
for _h, _cards in enumerate(HANDS):
    HAND_CARDS[_h, : len(_cards)] = _cards
# log of the multinomial factor 1 / prod_r c_r!  (h! is constant per seat)
HAND_LOG_MULT = -np.array([sum(math.lgamma(c + 1) for c in row) for row in HAND_COUNTS], np.float32)
# the 15 "options" of a slot pair by hidden size: option -> hand index or -1
OPTION_HAND = np.full((3, 15), -1, np.int32)
OPTION_HAND[0, 0] = 0
OPTION_HAND[1, :5] = np.arange(1, 6)
OPTION_HAND[2, :] = np.arange(6, 21)

# ---------------------------------------------------------------- count-vector state space
_BASE = R.COPIES_PER_ROLE + 1  # running counts 0..3 per role
NUM_STATES = _BASE ** R.NUM_ROLES  # 1024
STATE_COUNTS = np.array(
    [[(s // _BASE ** r) % _BASE for r in range(R.NUM_ROLES)] for s in range(NUM_STATES)], np.int32)
_HAND_OFFSET = (HAND_COUNTS * (_BASE ** np.arange(R.NUM_ROLES))).sum(axis=1)
# S -> S + c_h (valid when every count stays <= 3) and S' -> S' - c_h (valid when >= 0)
_UP_OK = np.all(STATE_COUNTS[None, :, :] + HAND_COUNTS[:, None, :] < _BASE, axis=2)  # [H, S]
_UP_IDX = np.where(_UP_OK, np.arange(NUM_STATES)[None, :] + _HAND_OFFSET[:, None], 0).astype(np.int32)
_DOWN_OK = np.all(STATE_COUNTS[None, :, :] >= HAND_COUNTS[:, None, :], axis=2)
_DOWN_IDX = np.where(_DOWN_OK, np.arange(NUM_STATES)[None, :] - _HAND_OFFSET[:, None], 0).astype(np.int32)
_UP_LOGMASK = np.where(_UP_OK, 0.0, -np.inf).astype(np.float32)
_DOWN_LOGMASK = np.where(_DOWN_OK, 0.0, -np.inf).astype(np.float32)
_LOG_FACT = np.array([math.lgamma(k + 1) for k in range(R.COPIES_PER_ROLE + 1)], np.float32)

EXACT_JOINT_MAX_PLAYERS = 4


@struct.dataclass
class PosteriorParams:
    """Claim likelihoods: a counted claim of role r has probability ``q_honest_*`` if the
    claimant's current hand holds r and ``q_bluff_*`` otherwise (action / block claims)."""

    q_honest_action: float = 0.85
    q_bluff_action: float = 0.15
    q_honest_block: float = 0.85
    q_bluff_block: float = 0.15


class Worlds(NamedTuple):
    """Complete hidden worlds (K of them), relative seats (row 0 = the observer).

    hands: int32[K, n, 2] hidden cards, -1 padded (the observer's row is its real hand in
      hand-index order; a sampled 2-card hand is in random order);
    deck: int32[K, 15] the deck in draw order (next first), -1 padded;
    drawn: int32[K, 2] the exchanging actor's drawn cards in the exchange phase (the
      observer's own, in role order, or sampled when another seat exchanges), else -1.
    """

    hands: jax.Array
    deck: jax.Array
    drawn: jax.Array


# ---------------------------------------------------------------- weights and messages
def _seat_log_weights(p, params: PosteriorParams):
    """f32[n, H]: log(1/prod c_r! * L(record | hand)), -inf for impossible hands.

    A hand is possible for a seat when its size equals the seat's hidden count and it
    uses no more copies of a role than are unseen.  Row 0 (the observer) is unused.
    """
    has = jnp.asarray(HAND_HAS)  # [H, 5]
    claims = p["claims"].astype(jnp.float32)  # [n, 5]
    blocks = p["blocks"].astype(jnp.float32)
    la_h, la_b = jnp.log(params.q_honest_action), jnp.log(params.q_bluff_action)
    lb_h, lb_b = jnp.log(params.q_honest_block), jnp.log(params.q_bluff_block)
    per_role_h = claims * la_h + blocks * lb_h  # [n, 5] contribution if held
    per_role_b = claims * la_b + blocks * lb_b  # ... if not held
    loglik = per_role_h @ has.T + per_role_b @ (1.0 - has).T  # [n, H]
    size_ok = jnp.asarray(HAND_SIZES)[None, :] == p["hidden"][:, None]
    count_ok = jnp.all(jnp.asarray(HAND_COUNTS)[None, :, :] <= p["unseen"][None, None, :], axis=2)
    return jnp.where(size_ok & count_ok, jnp.asarray(HAND_LOG_MULT)[None, :] + loglik, -jnp.inf)


def _rest_log_weight(p):
    """f32[S]: log 1/prod_r (u_r - S_r)! for the cards left outside opponents' hands."""
    d = p["unseen"][None, :] - jnp.asarray(STATE_COUNTS)  # [S, 5]
    ok = jnp.all(d >= 0, axis=1)
    lf = jnp.asarray(_LOG_FACT)[jnp.clip(d, 0, R.COPIES_PER_ROLE)].sum(axis=1)
    return jnp.where(ok, -lf, -jnp.inf)


_GRID = (_BASE,) * R.NUM_ROLES


def _shift(x, counts, up: bool):
    """x[..., S] (flat count vector S) -> x[..., S + c] (up) or x[..., S - c] (down),
    -inf where that leaves 0..3.  Static slicing and padding: cheap under vmap."""
    g = x.reshape(x.shape[:-1] + _GRID)  # C order: grid axis i is role 4 - i
    counts = np.asarray(counts)[::-1]
    lead = [(0, 0)] * (x.ndim - 1)
    if up:
        sl = tuple(slice(int(c), None) for c in counts)
        pad = [(0, int(c)) for c in counts]
    else:
        sl = tuple(slice(0, _BASE - int(c)) for c in counts)
        pad = [(int(c), 0) for c in counts]
    g = jnp.pad(g[(Ellipsis,) + sl], lead + pad, constant_values=-jnp.inf)
    return g.reshape(x.shape)


def _combine(logw_k, msg, up: bool):
    """f32[H, S]: logw_k[h] + msg[S + c_h] (up) or msg[S - c_h] (down)."""
    shifted = jnp.stack([_shift(msg, HAND_COUNTS[h], up) for h in range(NUM_HANDS)])
    return logw_k[:, None] + shifted


def _messages(p, params, num_players):
    """Forward/backward log messages over running count vectors.

    alpha[k][S]: log weight of opponents 1..k holding S in total (alpha[0] = delta_0);
    beta[k][S]: log weight of completing opponents k+1..m and the rest from S.
    Returns (logw [n, H], alpha list, beta list), both lists indexed 0..m.
    """
    m = num_players - 1
    logw = _seat_log_weights(p, params)
    beta = [None] * (m + 1)
    beta[m] = _rest_log_weight(p)
    for k in range(m, 0, -1):
        beta[k - 1] = logsumexp(_combine(logw[k], beta[k], up=True), axis=0)
    alpha = [jnp.where(jnp.arange(NUM_STATES) == 0, 0.0, -jnp.inf).astype(jnp.float32)]
    for k in range(1, m):
        alpha.append(logsumexp(_combine(logw[k], alpha[k - 1], up=False), axis=0))
    return logw, alpha, beta


def _own_hand_index(p):
    """int32[]: the observer's hand index (`HANDS`) from its own counts."""
    match = jnp.all(jnp.asarray(HAND_COUNTS) == p["own_counts"][None, :], axis=1)
    return jnp.argmax(match).astype(jnp.int32)


def _hand_probs(p, params, num_players):
    logw, alpha, beta = _messages(p, params, num_players)
    rows = [jax.nn.one_hot(_own_hand_index(p), NUM_HANDS, dtype=jnp.float32)]
    for k in range(1, num_players):
        lm = logsumexp(alpha[k - 1][None, :] + _combine(logw[k], beta[k], up=True), axis=1)
        z = logsumexp(lm)
        rows.append(jnp.where(jnp.isfinite(z), jnp.exp(lm - jnp.where(jnp.isfinite(z), z, 0.0)), 0.0))
    return jnp.stack(rows), beta[0][0]


# ---------------------------------------------------------------- public API
def exact_posterior(obs, num_players: int, params: PosteriorParams = PosteriorParams()) -> dict:
    """Exact posterior marginals from one seat's observation.

    Returns ``hand_probs`` f32[n, 21] (P(relative seat holds hand multiset `HANDS[h]`);
    row 0 is the observer's own hand, one-hot), ``role_marginals`` f32[n, 5] (P(seat
    holds at least one card of role r)), ``expected_counts`` f32[n, 5] (expected copies
    of r in the seat's hand) and ``log_evidence`` f32[] (log of the unnormalised total
    weight; -inf if the observation is inconsistent with the model, all probs then 0).
    """
    p = parse_observation(obs, num_players)
    hand_probs, log_z = _hand_probs(p, params, num_players)
    return {
        "hand_probs": hand_probs,
        "role_marginals": hand_probs @ jnp.asarray(HAND_HAS),
        "expected_counts": hand_probs @ jnp.asarray(HAND_COUNTS, jnp.float32),
        "log_evidence": log_z,
    }


def claim_truth_probabilities(obs, num_players: int, params: PosteriorParams = PosteriorParams()):
    """f32[n, 5]: P(relative seat's hand contains role) under the exact posterior."""
    return exact_posterior(obs, num_players, params)["role_marginals"]


def claim_truth_probability(obs, num_players: int, seat_rel, role, params: PosteriorParams = PosteriorParams()):
    """f32[]: P(relative seat ``seat_rel``'s hand contains ``role``); traced ints allowed."""
    return claim_truth_probabilities(obs, num_players, params)[seat_rel, role]


def joint_posterior(obs, num_players: int, params: PosteriorParams = PosteriorParams()) -> dict:
    """The explicit joint table, for n <= 4 (15**(n-1) <= 3375 rows; static NumPy table).

    Returns ``hands`` int32[C, n] (hand index per relative seat; column 0 the observer's
    own) and ``probs`` f32[C] (0 for impossible rows).  Same model as `exact_posterior`.
    """
    n = num_players
    if n > EXACT_JOINT_MAX_PLAYERS:
        raise ValueError(f"joint_posterior enumerates 15**(n-1) rows; use n <= {EXACT_JOINT_MAX_PLAYERS}")
    p = parse_observation(obs, n)
    m = n - 1
    combos = jnp.asarray(np.array(list(itertools.product(range(15), repeat=m)), np.int32).reshape(-1, m))
    logw = _seat_log_weights(p, params)
    opt_hand = jnp.asarray(OPTION_HAND)[jnp.clip(p["hidden"][1:], 0, 2)]  # [m, 15]
    hidx = jnp.stack([opt_hand[k, combos[:, k]] for k in range(m)], axis=1)  # [C, m]
    valid = jnp.all(hidx >= 0, axis=1)
    safe = jnp.maximum(hidx, 0)
    lw = sum(logw[k + 1][safe[:, k]] for k in range(m))
    counts = jnp.asarray(HAND_COUNTS)[safe].sum(axis=1)  # [C, 5]
    d = p["unseen"][None, :] - counts
    rest = jnp.where(jnp.all(d >= 0, axis=1),
                     -jnp.asarray(_LOG_FACT)[jnp.clip(d, 0, R.COPIES_PER_ROLE)].sum(axis=1), -jnp.inf)
    logits = jnp.where(valid, lw + rest, -jnp.inf)
    z = logsumexp(logits)
    probs = jnp.where(jnp.isfinite(z), jnp.exp(logits - jnp.where(jnp.isfinite(z), z, 0.0)), 0.0)
    own = jnp.broadcast_to(_own_hand_index(p), (combos.shape[0], 1))
    return {"hands": jnp.concatenate([own, safe], axis=1).astype(jnp.int32), "probs": probs}


def _cards_from_counts(counts, size):
    """int32[size]: the cards of a count vector in role order, -1 padded."""
    cum = jnp.cumsum(counts)
    j = jnp.arange(size)
    role = (j[:, None] >= cum[None, :]).sum(axis=1)
    return jnp.where(j < cum[-1], role, -1).astype(jnp.int32)


def sample_worlds(key, obs, num_players: int, num_worlds: int, params: PosteriorParams = PosteriorParams()) -> Worlds:
    """``num_worlds`` complete hidden worlds drawn from the exact posterior (`Worlds`).

    Opponent hands are drawn jointly and exactly (ancestral sampling with the backward
    messages: seat 1, then seat 2 given seat 1, ...); the cards left over are put in a
    uniformly random order, the first two going to another seat's exchange draw when it
    is choosing an exchange, the rest forming the deck.  Every world holds, together
    with the observer's visible cards, exactly 3 of each role.
    """
    n = num_players
    p = parse_observation(obs, n)
    logw, _, beta = _messages(p, params, n)
    up_idx, up_mask = jnp.asarray(_UP_IDX), jnp.asarray(_UP_LOGMASK)
    own_drawn = _cards_from_counts(p["drawn"], 2)
    exchanger_draws = p["other_drawn"] > 0

    def one(k):
        keys = jax.random.split(k, 2 * n + 1)
        state = jnp.int32(0)
        rows = [p["own_cards"]]
        for s in range(1, n):
            logits = logw[s] + beta[s][up_idx[:, state]] + up_mask[:, state]
            h = jax.random.categorical(keys[2 * s], logits)
            state = up_idx[h, state]
            cards = jnp.asarray(HAND_CARDS)[h]
            swap = (jnp.asarray(HAND_SIZES)[h] == 2) & jax.random.bernoulli(keys[2 * s + 1])
            rows.append(jnp.where(swap, cards[::-1], cards))
        left = p["unseen"] - jnp.asarray(STATE_COUNTS)[state]
        ordered = _cards_from_counts(left, R.DECK_SIZE)
        u = jax.random.uniform(keys[0], (R.DECK_SIZE,))
        shuffled = ordered[jnp.argsort(jnp.where(ordered >= 0, u, 2.0))]
        pad = jnp.full(2, -1, jnp.int32)
        deck = jnp.where(exchanger_draws, jnp.concatenate([shuffled[2:], pad]), shuffled)
        drawn = jnp.where(exchanger_draws, shuffled[:2], jnp.where(p["exchanger"] == 0, own_drawn, pad))
        return jnp.stack(rows).astype(jnp.int32), deck.astype(jnp.int32), drawn.astype(jnp.int32)

    hands, deck, drawn = jax.vmap(one)(jax.random.split(key, num_worlds))
    return Worlds(hands, deck, drawn)


def to_absolute(rows_rel, observer_seat):
    """Reorder relative seat rows (axis -2 for [..., n, X] arrays) to absolute seats.

    Absolute seat s is relative row (s - observer_seat) mod n; ``observer_seat`` may be
    traced.  E.g. ``to_absolute(worlds.hands, seat)`` -> int32[K, n, 2].
    """
    rows_rel = jnp.asarray(rows_rel)
    n = rows_rel.shape[-2]
    idx = (jnp.arange(n) - observer_seat) % n
    return jnp.take(rows_rel, idx, axis=-2)
