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
* Hard facts: a hand is impossible (weight 0) if its size differs from the seat's
  hidden count, if it uses more copies of a role than are unseen (revealed cards, the
  observer's own hand and draw), or if it holds a role the seat is proven not to hold
  (observation ``disproven``: a caught bluff since the seat's hand was last renewed).
  A caught bluff stays in the claim counts, but the hard fact outweighs any claim.

Facts of the public record this model still ignores (`tests/test_public_facts.py`
measures how often the hard ones would bind):

(a) a proven claim shows where one copy of its role was; the card goes to the deck and
    the claimant redraws, but the seats whose hands have not changed since still hold
    (with what they revealed since) at most 2 - (copies revealed then) of the role.  Dealing the unseen cards uniformly
    forgets this, and sampled worlds do break it.
(b) a redraw after a proven claim keeps the claimant's other card, whose facts are
    dropped with the hand's.  This never binds a proven-absent role: a caught bluff
    costs the claimant a card, so a seat with one holds a single card, which a redraw
    replaces.
(c) an exchange's new hand is drawn from the old hand plus two cards, not uniformly
    from the unseen cards (the proven-absent roles are lifted: the drawn cards may
    hold them), and claims made before a renewal bore on the kept cards too; both are
    evidence, not hard facts.

Hands are multisets indexed by ``HANDS`` (H = 21): 0 = empty, 1..5 = one card of role
0..4, 6..20 = the 15 pairs in `itertools.combinations_with_replacement` order (so index
``6 + j`` is `rules.KEEPS[5 + j]`).

Computation: the weight factorises over opponents except for the shared term
``1 / prod_r d_r!``, which depends only on the running role counts of the hands so far.
Those counts are at most 3 per role and sum to at most 2k after k opponents, so an
exact forward-backward pass (log space, so extreme claim counts cannot underflow) over
those count vectors (static layers of 1, 21, 121, 357, 667, 903 vectors) gives the exact
marginals for EVERY table size (2..6 players), with no enumeration of the 15**(n-1)
joint hand combinations and no importance sampling.  The same backward
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

from coupjax import rules
from coupjax.observation import ObsView, parse

# ---------------------------------------------------------------- hand index table
HANDS = ((),) + tuple((r,) for r in range(rules.NUM_ROLES)) + tuple(
    itertools.combinations_with_replacement(range(rules.NUM_ROLES), 2))
NUM_HANDS = len(HANDS)  # 21
HAND_COUNTS = np.zeros((NUM_HANDS, rules.NUM_ROLES), np.int32)
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
# Layer k holds every running count vector S (cards held by opponents 1..k, per role)
# with S_r <= 3 and sum(S) <= 2k: sizes 1, 21, 121, 357, 667, 903 for k = 0..5.
_LOG_FACT = np.array([math.lgamma(k + 1) for k in range(rules.COPIES_PER_ROLE + 1)], np.float32)
_ALL_COUNTS = np.array(list(itertools.product(range(rules.COPIES_PER_ROLE + 1), repeat=rules.NUM_ROLES)), np.int32)
LAYERS = tuple(_ALL_COUNTS[_ALL_COUNTS.sum(axis=1) <= 2 * k] for k in range(rules.MAX_PLAYERS))


def _layer_links(k):
    """Static links between layers k-1 and k (k >= 1).

    up[h, i]: index in layer k of LAYERS[k-1][i] + c_h (up_mask 0, or -inf if a count
    would exceed 3); down[h, j]: index in layer k-1 of LAYERS[k][j] - c_h (down_mask 0,
    or -inf if negative or outside layer k-1).
    """
    lo, hi = LAYERS[k - 1], LAYERS[k]
    where_hi = {tuple(s): j for j, s in enumerate(hi)}
    where_lo = {tuple(s): i for i, s in enumerate(lo)}
    up = np.zeros((NUM_HANDS, len(lo)), np.int32)
    up_mask = np.full((NUM_HANDS, len(lo)), -np.inf, np.float32)
    down = np.zeros((NUM_HANDS, len(hi)), np.int32)
    down_mask = np.full((NUM_HANDS, len(hi)), -np.inf, np.float32)
    for h in range(NUM_HANDS):
        for i, s in enumerate(lo):
            j = where_hi.get(tuple(s + HAND_COUNTS[h]))
            if j is not None:
                up[h, i], up_mask[h, i] = j, 0.0
        for j, s in enumerate(hi):
            i = where_lo.get(tuple(s - HAND_COUNTS[h]))
            if i is not None:
                down[h, j], down_mask[h, j] = i, 0.0
    return up, up_mask, down, down_mask


LINKS = (None,) + tuple(_layer_links(k) for k in range(1, rules.MAX_PLAYERS))

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
def _seat_log_weights(v: ObsView, params: PosteriorParams):
    """f32[n, H]: log(1/prod c_r! * L(record | hand)), -inf for impossible hands.

    A hand is possible for a seat when its size equals the seat's hidden count, it
    uses no more copies of a role than are unseen and it holds no role the seat is
    proven not to hold.  Row 0 (the observer) is unused.
    """
    has = jnp.asarray(HAND_HAS)  # [H, 5]
    claims = v.claims.astype(jnp.float32)  # [n, 5]
    blocks = v.blocks.astype(jnp.float32)
    la_h, la_b = jnp.log(params.q_honest_action), jnp.log(params.q_bluff_action)
    lb_h, lb_b = jnp.log(params.q_honest_block), jnp.log(params.q_bluff_block)
    per_role_h = claims * la_h + blocks * lb_h  # [n, 5] contribution if held
    per_role_b = claims * la_b + blocks * lb_b  # ... if not held
    loglik = per_role_h @ has.T + per_role_b @ (1.0 - has).T  # [n, H]
    size_ok = jnp.asarray(HAND_SIZES)[None, :] == v.hidden[:, None]
    count_ok = jnp.all(jnp.asarray(HAND_COUNTS)[None, :, :] <= v.unseen[None, None, :], axis=2)
    fact_ok = ~jnp.any((jnp.asarray(HAND_COUNTS)[None, :, :] > 0) & v.disproven[:, None, :], axis=2)
    logw = jnp.where(size_ok & count_ok & fact_ok, jnp.asarray(HAND_LOG_MULT)[None, :] + loglik, -jnp.inf)
    top = jnp.max(logw, axis=1, keepdims=True)  # a constant per seat: keeps magnitudes small
    return logw - jnp.where(jnp.isfinite(top), top, 0.0)


def _rest_log_weight(v: ObsView, k):
    """f32[|layer k|]: log 1/prod_r (u_r - S_r)! for the unseen cards outside the
    opponents' hands (-inf where S uses more copies than are unseen)."""
    d = v.unseen[None, :] - jnp.asarray(LAYERS[k])
    lf = jnp.asarray(_LOG_FACT)[jnp.clip(d, 0, rules.COPIES_PER_ROLE)].sum(axis=1)
    return jnp.where(jnp.all(d >= 0, axis=1), -lf, -jnp.inf)


def _up(logw_k, msg_k, k):
    """f32[H, |layer k-1|]: logw_k[h] + msg_k[S + c_h] for S in layer k-1."""
    up, up_mask, _, _ = LINKS[k]
    return logw_k[:, None] + msg_k[jnp.asarray(up)] + jnp.asarray(up_mask)


def _messages(v: ObsView, params, num_players):
    """Forward/backward log messages over running count vectors (layer k for step k).

    alpha[k][S]: log weight of opponents 1..k holding S in total (alpha[0] = [0]);
    beta[k][S]: log weight of completing opponents k+1..m and the rest from S
    (beta[0][0] is the log of the total weight).  Returns (logw [n, H], alpha, beta),
    the lists indexed 0..m (alpha[m] is not computed).
    """
    m = num_players - 1
    logw = _seat_log_weights(v, params)
    beta = [None] * (m + 1)
    beta[m] = _rest_log_weight(v, m)
    for k in range(m, 0, -1):
        beta[k - 1] = logsumexp(_up(logw[k], beta[k], k), axis=0)
    alpha = [jnp.zeros(1, jnp.float32)]
    for k in range(1, m):
        _, _, down, down_mask = LINKS[k]
        alpha.append(logsumexp(logw[k][:, None] + alpha[k - 1][jnp.asarray(down)] + jnp.asarray(down_mask), axis=0))
    return logw, alpha, beta


def _normalise(logits):
    """exp-normalise log weights to probabilities summing to 1 (all 0 if all are -inf)."""
    top = jnp.max(logits)
    ok = jnp.isfinite(top)
    e = jnp.exp(logits - jnp.where(ok, top, 0.0))
    return jnp.where(ok, e / jnp.where(ok, e.sum(), 1.0), 0.0)


def _own_hand_index(v: ObsView):
    """int32[]: the observer's hand index (`HANDS`) from its own counts."""
    match = jnp.all(jnp.asarray(HAND_COUNTS) == v.own_counts[None, :], axis=1)
    return jnp.argmax(match).astype(jnp.int32)


def _hand_probs(v: ObsView, params, num_players):
    logw, alpha, beta = _messages(v, params, num_players)
    rows = [jax.nn.one_hot(_own_hand_index(v), NUM_HANDS, dtype=jnp.float32)]
    for k in range(1, num_players):
        lm = logsumexp(alpha[k - 1][None, :] + _up(logw[k], beta[k], k), axis=1)
        rows.append(_normalise(lm))
    return jnp.stack(rows), jnp.isfinite(beta[0][0])


# ---------------------------------------------------------------- public API
def exact_posterior(obs, num_players: int, params: PosteriorParams = PosteriorParams()) -> dict:
    """Exact posterior marginals from one seat's observation.

    Returns ``hand_probs`` f32[n, 21] (P(relative seat holds hand multiset `HANDS[h]`);
    row 0 is the observer's own hand, one-hot), ``role_marginals`` f32[n, 5] (P(seat
    holds at least one card of role r; row 0 is then 1 for the observer's own roles and
    0 otherwise)), ``expected_counts`` f32[n, 5] (expected copies of r in the seat's
    hand) and ``consistent`` bool[] (False if no deal fits the observation, which an
    engine observation never does; the opponent rows are then all 0).
    """
    v = parse(obs, num_players)
    hand_probs, consistent = _hand_probs(v, params, num_players)
    return {
        "hand_probs": hand_probs,
        "role_marginals": hand_probs @ jnp.asarray(HAND_HAS),
        "expected_counts": hand_probs @ jnp.asarray(HAND_COUNTS, jnp.float32),
        "consistent": consistent,
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
    v = parse(obs, n)
    m = n - 1
    combos = jnp.asarray(np.array(list(itertools.product(range(15), repeat=m)), np.int32).reshape(-1, m))
    logw = _seat_log_weights(v, params)
    opt_hand = jnp.asarray(OPTION_HAND)[jnp.clip(v.hidden[1:], 0, 2)]  # [m, 15]
    hidx = jnp.stack([opt_hand[k, combos[:, k]] for k in range(m)], axis=1)  # [C, m]
    valid = jnp.all(hidx >= 0, axis=1)
    safe = jnp.maximum(hidx, 0)
    lw = sum(logw[k + 1][safe[:, k]] for k in range(m))
    counts = jnp.asarray(HAND_COUNTS)[safe].sum(axis=1)  # [C, 5]
    d = v.unseen[None, :] - counts
    rest = jnp.where(jnp.all(d >= 0, axis=1),
                     -jnp.asarray(_LOG_FACT)[jnp.clip(d, 0, rules.COPIES_PER_ROLE)].sum(axis=1), -jnp.inf)
    probs = _normalise(jnp.where(valid, lw + rest, -jnp.inf))
    own = jnp.broadcast_to(_own_hand_index(v), (combos.shape[0], 1))
    return {"hands": jnp.concatenate([own, safe], axis=1).astype(jnp.int32), "probs": probs}


def _cards_from_counts(counts, size):
    """int32[size]: the cards of a count vector in role order, -1 padded."""
    cum = jnp.cumsum(counts)
    j = jnp.arange(size)
    role = (j[:, None] >= cum[None, :]).sum(axis=1)
    return jnp.where(j < cum[-1], role, -1).astype(jnp.int32)


def _shuffle(cards, keys):
    """The valid cards (>= 0) in the uniformly random order given by ``keys`` (iid
    uniforms), -1 padding kept at the end.  Ranks by pairwise comparison (no sort)."""
    i = jnp.arange(cards.shape[0])
    keys = jnp.where(cards >= 0, keys, 2.0 + i)
    before = (keys[None, :] < keys[:, None]) | ((keys[None, :] == keys[:, None]) & (i[None, :] < i[:, None]))
    rank = before.sum(axis=1)
    return jnp.where(rank[:, None] == i[None, :], cards[:, None], 0).sum(axis=0).astype(jnp.int32)


def sample_worlds(key, obs, num_players: int, num_worlds: int, params: PosteriorParams = PosteriorParams()) -> Worlds:
    """``num_worlds`` complete hidden worlds drawn from the exact posterior (`Worlds`).

    Opponent hands are drawn jointly and exactly (ancestral sampling with the backward
    messages: seat 1, then seat 2 given seat 1, ...); the cards left over are put in a
    uniformly random order, the first two going to another seat's exchange draw when it
    is choosing an exchange, the rest forming the deck.  Every world holds, together
    with the observer's visible cards, exactly 3 of each role.
    """
    n = num_players
    v = parse(obs, n)
    logw, _, beta = _messages(v, params, n)
    own_drawn = _cards_from_counts(v.drawn, 2)
    exchanger_draws = v.other_drawn > 0

    width = (n - 1) * (NUM_HANDS + 1)
    # one uniform draw for everything (a single threefry kernel): per world, Gumbel noise
    # for the n-1 hand choices, n-1 pair-order coins, and 15 sort keys for the deck order
    uniforms = jax.random.uniform(key, (num_worlds, width + rules.DECK_SIZE), minval=1e-12, maxval=1.0)

    def one(row):
        u = row[:width].reshape(n - 1, NUM_HANDS + 1)
        state = jnp.int32(0)  # index of the running counts in layer s - 1
        rows = [v.own_cards]
        for s in range(1, n):
            up, up_mask, _, _ = LINKS[s]
            up_col = jnp.asarray(up)[:, state]
            logits = logw[s] + beta[s][up_col] + jnp.asarray(up_mask)[:, state]
            h = jnp.argmax(logits - jnp.log(-jnp.log(u[s - 1, :NUM_HANDS])))  # Gumbel-max
            state = up_col[h]
            cards = jnp.asarray(HAND_CARDS)[h]
            swap = (jnp.asarray(HAND_SIZES)[h] == 2) & (u[s - 1, NUM_HANDS] < 0.5)
            rows.append(jnp.where(swap, cards[::-1], cards))
        left = v.unseen - jnp.asarray(LAYERS[n - 1])[state]
        shuffled = _shuffle(_cards_from_counts(left, rules.DECK_SIZE), row[width:])
        pad = jnp.full(2, -1, jnp.int32)
        deck = jnp.where(exchanger_draws, jnp.concatenate([shuffled[2:], pad]), shuffled)
        drawn = jnp.where(exchanger_draws, shuffled[:2], jnp.where(v.exchanger == 0, own_drawn, pad))
        return jnp.stack(rows).astype(jnp.int32), deck.astype(jnp.int32), drawn.astype(jnp.int32)

    hands, deck, drawn = jax.vmap(one)(uniforms)
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
