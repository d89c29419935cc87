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
Those counts are at most 3 per role and sum to exactly the hidden cards of the first k
opponents, so an exact forward-backward pass (log space, so extreme claim counts cannot
underflow) over those count vectors (`BY_SUM`: at most 1, 15, 65, 135, 155, 155 after
k = 0..5 opponents), each opponent's hand among the 15 of its hidden count, gives the
exact marginals for EVERY table size (2..6 players), with no enumeration of the 15**(n-1)
joint hand combinations and no importance sampling.  (Counting all vectors of sum up to
2k and all 21 hands, 1, 21, 121, 357, 667, 903 of them, gave the same messages at about
twice the cost: the policy reading the posterior computes it at every decision.)  The
same backward messages give exact ancestral sampling of joint worlds (`sample_worlds`).  For n <= 4
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
# The running count vector S after opponents 1..k (cards they hold, per role; S_r <= 3)
# always sums to their hidden cards H_k, so only the count vectors of that exact sum carry
# weight: BY_SUM[s] holds those of sum s (1, 5, 15, 35, 65, 101, 135, 155, 155, 135, 101 for
# s = 0..10).  Step k's messages live on BY_SUM[H_k], padded to WIDTHS[k], the largest of
# them for any H_k <= 2k (1, 15, 65, 135, 155, 155), and each opponent's hand on the 15
# options of its hidden count (`OPTION_HAND`): the hands of another size weigh nothing.
_LOG_FACT = np.array([math.lgamma(k + 1) for k in range(rules.COPIES_PER_ROLE + 1)], np.float32)
_ALL_COUNTS = np.array(list(itertools.product(range(rules.COPIES_PER_ROLE + 1), repeat=rules.NUM_ROLES)), np.int32)
MAX_SUM = 2 * (rules.MAX_PLAYERS - 1)
BY_SUM = tuple(_ALL_COUNTS[_ALL_COUNTS.sum(axis=1) == s] for s in range(MAX_SUM + 1))
WIDTHS = tuple(max(len(BY_SUM[s]) for s in range(2 * k + 1)) for k in range(rules.MAX_PLAYERS))


def _sum_tables():
    """Static tables over (sum s, hidden count z, option o, position i):

    states[s, i]: BY_SUM[s][i] (count rows of 9 past its end: no deal fits them);
    up[s, z, o, i]: position in BY_SUM[s + z] of BY_SUM[s][i] + (cards of option o of a
      z-card hand), or -1 (no such option, no such vector, or a count above 3);
    down[s, z, o, j]: position in BY_SUM[s - z] of BY_SUM[s][j] - (those cards), or -1.
    """
    width = max(WIDTHS)
    where = [{tuple(v): i for i, v in enumerate(b)} for b in BY_SUM]
    states = np.full((MAX_SUM + 1, width, rules.NUM_ROLES), 9, np.int32)
    up = np.full((MAX_SUM + 1,) + OPTION_HAND.shape + (width,), -1, np.int32)
    down = np.full(up.shape, -1, np.int32)
    for s, vectors in enumerate(BY_SUM):
        states[s, :len(vectors)] = vectors
        for z in range(3):
            for o, h in enumerate(OPTION_HAND[z]):
                if h < 0:
                    continue
                for i, v in enumerate(vectors):
                    if s + z <= MAX_SUM:
                        up[s, z, o, i] = where[s + z].get(tuple(v + HAND_COUNTS[h]), -1)
                    if s - z >= 0:
                        down[s, z, o, i] = where[s - z].get(tuple(v - HAND_COUNTS[h]), -1)
    return states, up, down


SUM_STATES, SUM_UP, SUM_DOWN = _sum_tables()

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


class Messages(NamedTuple):
    """`_messages`' result: the seats' hidden counts ``z`` int32[n] (clipped to 0..2),
    the running sums ``total`` (``total[k]`` = H_k, int32[n]), the option log weights
    ``optw`` f32[n, 15] (row 0 unused), the forward and backward messages, and the
    backward pass's terms ``paths[k]`` f32[15, WIDTHS[k-1]]: the log weight of opponent
    k taking option o from count vector i of step k-1 and of completing the deal from
    there (``paths[0]`` is None), which the marginals and the sampler read again."""

    z: jax.Array
    total: jax.Array
    optw: jax.Array
    alpha: list
    beta: list
    paths: list


def _rest_log_weight(v: ObsView, total, k):
    """f32[WIDTHS[k]]: log 1/prod_r (u_r - S_r)! for the unseen cards outside the
    opponents' hands, S in BY_SUM[total] (-inf where S uses more copies than are unseen)."""
    d = v.unseen[None, :] - jnp.asarray(SUM_STATES[:, :WIDTHS[k]])[total]
    lf = jnp.asarray(_LOG_FACT)[jnp.clip(d, 0, rules.COPIES_PER_ROLE)].sum(axis=1)
    return jnp.where(jnp.all(d >= 0, axis=1), -lf, -jnp.inf)


def _take(msg, idx):
    """msg[idx], -inf where idx is -1."""
    return jnp.where(idx >= 0, msg[jnp.maximum(idx, 0)], -jnp.inf)


def _up_links(msgs: Messages, k):
    """int32[15, WIDTHS[k-1]]: where each count vector of step k-1 goes with each option
    of opponent k's hand (positions in step k's vectors, or -1)."""
    return jnp.asarray(SUM_UP[:, :, :, :WIDTHS[k - 1]])[msgs.total[k - 1], msgs.z[k]]


def _messages(v: ObsView, params, num_players) -> Messages:
    """Forward/backward log messages over running count vectors (module doc).

    alpha[k][i]: log weight of opponents 1..k holding BY_SUM[H_k][i] in total
    (alpha[0] = [0]); beta[k][i]: log weight of completing opponents k+1..m and the rest
    from it (beta[0][0] is the log of the total weight); both -inf on the padding.  The
    lists are indexed 0..m (alpha[m] is not computed).
    """
    m = num_players - 1
    logw = _seat_log_weights(v, params)
    z = jnp.clip(v.hidden, 0, 2).astype(jnp.int32)
    total = jnp.cumsum(z.at[0].set(0))
    hands = jnp.asarray(OPTION_HAND)[z]  # [n, 15]
    optw = jnp.where(hands >= 0, jnp.take_along_axis(logw, jnp.maximum(hands, 0), axis=1), -jnp.inf)
    msgs = Messages(z, total, optw, [jnp.zeros(1, jnp.float32)], [None] * (m + 1), [None] * (m + 1))
    msgs.beta[m] = _rest_log_weight(v, total[m], m)
    for k in range(m, 0, -1):
        msgs.paths[k] = optw[k][:, None] + _take(msgs.beta[k], _up_links(msgs, k))
        msgs.beta[k - 1] = logsumexp(msgs.paths[k], axis=0)
    for k in range(1, m):
        down = jnp.asarray(SUM_DOWN[:, :, :, :WIDTHS[k]])[total[k], z[k]]
        msgs.alpha.append(logsumexp(optw[k][:, None] + _take(msgs.alpha[k - 1], down), axis=0))
    return msgs


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
    msgs = _messages(v, params, num_players)
    rows = [jax.nn.one_hot(_own_hand_index(v), NUM_HANDS, dtype=jnp.float32)]
    for k in range(1, num_players):
        lm = logsumexp(msgs.alpha[k - 1][None, :] + msgs.paths[k], axis=1)  # [15] options
        to_hand = jax.nn.one_hot(jnp.asarray(OPTION_HAND)[msgs.z[k]], NUM_HANDS, dtype=jnp.float32)  # -1: a zero row
        rows.append(_normalise(lm) @ to_hand)
    return jnp.stack(rows), jnp.isfinite(msgs.beta[0][0])


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
    msgs = _messages(v, params, n)
    own_drawn = _cards_from_counts(v.drawn, 2)
    exchanger_draws = v.other_drawn > 0

    width = (n - 1) * (NUM_HANDS + 1)
    # one uniform draw for everything (a single threefry kernel): per world, Gumbel noise
    # for the n-1 hand choices, n-1 pair-order coins, and 15 sort keys for the deck order
    uniforms = jax.random.uniform(key, (num_worlds, width + rules.DECK_SIZE), minval=1e-12, maxval=1.0)

    def one(row):
        u = row[:width].reshape(n - 1, NUM_HANDS + 1)
        state = jnp.int32(0)  # position of the running counts in BY_SUM[H_{s-1}]
        rows = [v.own_cards]
        for s in range(1, n):
            up_col = _up_links(msgs, s)[:, state]  # [15] options
            hands = jnp.asarray(OPTION_HAND)[msgs.z[s]]
            logits = msgs.paths[s][:, state]
            # Gumbel-max with each hand's own noise u[hand]: the draw of the 21-hand version
            o = jnp.argmax(logits - jnp.log(-jnp.log(u[s - 1, jnp.maximum(hands, 0)])))
            h, state = jnp.maximum(hands[o], 0), jnp.maximum(up_col[o], 0)
            cards = jnp.asarray(HAND_CARDS)[h]
            swap = (jnp.asarray(HAND_SIZES)[h] == 2) & (u[s - 1, NUM_HANDS] < 0.5)
            rows.append(jnp.where(swap, cards[::-1], cards))
        left = v.unseen - jnp.asarray(SUM_STATES)[msgs.total[n - 1], state]
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
