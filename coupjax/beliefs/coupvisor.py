"""CoupVisor belief model (arXiv:2608.15868, sections II.C-D, IV.C and Appendix A).

Every function reads ONE seat's observation (float32[obs], `coupjax.game.views.observation_layout`)
plus the static ``num_players``; nothing else.  Seats are relative: row 0 is the
observer, row k the seat k places clockwise.  All functions are pure, fixed-shape and
jit/vmap-able (vmap over observations; ``num_players`` stays static).

Per-card belief (`coupvisor_belief`), for an opponent seat s and role r::

    evidence[s, r] = min(cap, claims[s, r] * log LR_claim[r] + blocks[s, r] * log LR_block[r])
    remaining[r]   = max(0, 3 - visible[r])      visible: every revealed card, the observer's
                                                 own hidden cards and its drawn exchange cards
    damp[r]        = (remaining[r] / 3) ** 0.7   (0 when nothing remains)
    score[s, r]    = prior * exp(evidence[s, r]) * damp[r]     (0 where r is disproven for s)
    b[s, r]        = score[s, r] / sum_r' score[s, r']   (the distribution of ONE card)

LR_claim is 5.7 for the role an action claims (tax->duke, assassinate->assassin,
steal->captain, exchange->ambassador); LR_block is 5.7 for block:duke (foreign aid)
and block:contessa, 4.5 for the steal blocks (captain, ambassador).  The evidence is
capped (default 2 log 5.7), so repeated claims cannot drive a belief to ~1e-34
(CoupVisor error cases E1/E4).

Evidence reset: the observation's ``claims``/``blocks`` counts are those made since the
seat's hand was last renewed (the engine zeroes them after a redraw following a proven
claim and after an exchange), so evidence about a hand that no longer exists vanishes
automatically; the belief of that seat returns to the (deck-damped) prior.

Caught bluffs (an extension of the paper): a claim that a challenge proved false stays
in the counts until the renewal, where it would read as support; so a role the seat is
proven not to hold (observation ``disproven``) gets belief 0 and p_truth exactly 0 for
that seat until its hand is renewed.

Per-hand claim probability (`claim_truth_probability`), Appendix A.4::

    p_truth = 0.7 * p_hyper + 0.3 * p_indep
    p_hyper = 1 - C(N - k, h) / C(N, h)      k = remaining[r], h = max(1, hidden[s]),
                                             N = max(h, cards unseen by the observer)
    p_indep = 1 - (1 - b[s, r]) ** h

"Unseen" cards are the opponents' hidden cards, the deck and another seat's drawn
exchange cards.  When all 3 copies of r are visible (`hard_impossible`), or r is
disproven for the seat, p_truth is exactly 0.
"""
from __future__ import annotations

import math

import jax.numpy as jnp
from flax import struct

from coupjax import rules
from coupjax.observation import ObsView, parse

# ---------------------------------------------------------------- parameters
@struct.dataclass
class CoupVisorParams:
    """CoupVisor constants (Appendix A).  Per-role tuples are in `rules.ROLES` order."""

    prior: float = 0.20
    # action-claim LR for the implicated role (contessa is never an action claim)
    claim_lr: tuple = (5.7, 5.7, 5.7, 5.7, 5.7)
    # block-claim LR: duke (vs foreign aid) 5.7, captain/ambassador (vs steal) 4.5,
    # contessa (vs assassinate) 5.7; assassin never blocks
    block_lr: tuple = (5.7, 1.0, 4.5, 4.5, 5.7)
    evidence_cap: float = 2.0 * math.log(5.7)  # bound on the log-evidence per (seat, role)
    damp_power: float = 0.7
    hyper_weight: float = 0.7  # p_truth = w * p_hyper + (1 - w) * p_indep


def _log_evidence(v: ObsView, params: CoupVisorParams):
    """Bounded log-evidence f32[n, 5] from the claim/block counts since renewal."""
    log_claim = jnp.log(jnp.asarray(params.claim_lr, jnp.float32))
    log_block = jnp.log(jnp.asarray(params.block_lr, jnp.float32))
    ev = v.claims.astype(jnp.float32) * log_claim + v.blocks.astype(jnp.float32) * log_block
    return jnp.minimum(ev, params.evidence_cap)


def deck_damping(obs, num_players: int, params: CoupVisorParams = CoupVisorParams()):
    """f32[5]: (remaining / 3) ** damp_power, exactly 0 where no copy remains unseen."""
    return _damp(parse(obs, num_players), params)


def _damp(v: ObsView, params):
    frac = v.unseen.astype(jnp.float32) / rules.COPIES_PER_ROLE
    return jnp.where(v.unseen > 0, jnp.power(jnp.maximum(frac, 1e-12), params.damp_power), 0.0)


def _belief(v: ObsView, params):
    score = params.prior * jnp.exp(_log_evidence(v, params)) * _damp(v, params)[None, :]
    score = jnp.where(v.disproven, 0.0, score)
    total = score.sum(axis=1, keepdims=True)
    b = jnp.where(total > 0, score / jnp.where(total > 0, total, 1.0), 0.0)
    own = v.own_counts.astype(jnp.float32)
    own = own / jnp.maximum(own.sum(), 1.0)
    b = b.at[0].set(own)
    return jnp.where((v.hidden > 0)[:, None], b, 0.0)


def coupvisor_belief(obs, num_players: int, params: CoupVisorParams = CoupVisorParams()):
    """Per-card role belief f32[n, 5] (rows sum to 1).

    Opponent rows: normalised ``prior * exp(capped evidence) * damp``, 0 for a role
    the seat is proven not to hold (module doc).
    Row 0 (the observer) is its known hand as a distribution of one of its cards
    (own counts / hidden count).  Seats with no hidden card (eliminated) are all zero.
    """
    return _belief(parse(obs, num_players), params)


def _truth_all(v: ObsView, params):
    b = _belief(v, params)
    h = jnp.maximum(v.hidden, 1).astype(jnp.float32)[:, None]  # [n, 1]
    k = v.unseen.astype(jnp.float32)[None, :]  # [1, 5]
    big_n = jnp.maximum(v.num_unseen.astype(jnp.float32), h)  # [n, 1]
    # C(N - k, h) / C(N, h) = prod_{j < h} (N - k - j) / (N - j); 0 once a factor hits 0
    ratio = jnp.ones(b.shape, jnp.float32)
    for j in range(rules.HAND_SIZE):
        factor = jnp.maximum(big_n - k - j, 0.0) / jnp.maximum(big_n - j, 1.0)
        ratio = ratio * jnp.where(j < h, factor, 1.0)
    p_hyper = 1.0 - ratio
    p_indep = 1.0 - jnp.power(1.0 - b, h)
    w = params.hyper_weight
    pt = w * p_hyper + (1.0 - w) * p_indep
    pt = jnp.where((v.unseen[None, :] > 0) & ~v.disproven, pt, 0.0)  # hard impossibility: exactly 0
    own = (v.own_counts > 0).astype(jnp.float32)
    pt = pt.at[0].set(own)
    return jnp.where((v.hidden > 0)[:, None], jnp.clip(pt, 0.0, 1.0), 0.0)


def claim_truth_probabilities(obs, num_players: int, params: CoupVisorParams = CoupVisorParams()):
    """p_truth f32[n, 5] for every (relative seat, role).

    Row 0 is the observer's certain answer (1 if it holds the role, else 0); seats with
    no hidden card get 0; a role whose 3 copies are all visible, or that the seat is
    proven not to hold, gets exactly 0.
    """
    return _truth_all(parse(obs, num_players), params)


def claim_truth_probability(obs, num_players: int, seat_rel, role, params: CoupVisorParams = CoupVisorParams()):
    """p_truth f32[] that relative seat ``seat_rel`` holds ``role`` (may be traced ints)."""
    return claim_truth_probabilities(obs, num_players, params)[seat_rel, role]


def hard_impossible(obs, num_players: int, role):
    """bool[]: all 3 copies of ``role`` are visible to the observer (revealed cards,
    its own hand, its drawn cards), so no opponent can hold it."""
    return parse(obs, num_players).visible[role] >= rules.COPIES_PER_ROLE
