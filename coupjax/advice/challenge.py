"""Challenge advice and one-step action values from ONE seat's observation.

Everything numeric here is pure, fixed-shape and jit/vmap-able (``num_players`` is
static); the explanation strings are built in Python from the jitted numbers.  The
advisor reads nothing but the observation (`coupjax.observation`) and,
for `recommend_action`, the legal mask.

Challenge decisions
-------------------
A challenge decision is the react phase of a main action that claims a role (tax,
assassinate, steal, exchange; the observer is a responder) or the answer_block phase
(the observer is the actor answering a block).  The *claimant* is the actor (react) or
the blocker (answer_block); the claim *kind* is one of `KINDS`.  ``p_truth`` is the
probability that the claimant's hand holds the claimed role, from the chosen belief

* ``"exact"``: `coupjax.beliefs.posterior` (the exact posterior over the hidden deal) with the
  fitted claim likelihoods ``q_*`` (`AdvisorParams.posterior_params`), or
* ``"coupvisor"``: `coupjax.beliefs.coupvisor` (CoupVisor's Appendix A belief, its own constants),

each followed by its calibration map (``calibrated=True``, the default)::

    logit p_truth = scale[kind] * logit p_belief + shift[kind] + w . features

with the 11 public `CAL_FEATURES` of `calibration_features` (the table's challenges
and reveals, the claimant's challenge record, renewals, coins and spread of claims,
turn, who is on a last card), fitted by weighted logistic regression on games never
scored (the conditions weighted to balance their calibration errors).  The threshold below is an expected-value
rule, so it needs probabilities that mean what they say: uncalibrated, CoupVisor's
belief puts a turn-one tax at 0.55 and its advisor challenges 45-60 % of all claims.

A *hard impossibility* (`beliefs.coupvisor.hard_impossible`: all 3 copies of the role are
revealed or in the observer's own hand / drawn cards; or the claimant was caught
bluffing that role since its hand last changed, observation ``disproven``) gives
p_truth 0 and always a challenge; the explanation says "impossible: all 3 dukes are
accounted for" or "seat 2 was caught bluffing duke since its hand last changed"
instead of quoting a probability.

Threshold: the expected-value rule
----------------------------------
Challenge when ``p_truth < theta`` with ``theta = G / (G + L)``: challenging beats
passing iff ``(1 - p) G > p L``, where G is the value (relative to passing) of
challenging a bluff and L the loss of challenging a true claim.  Values come from a
small model in "card" units:

* losing one of two cards costs ``v_one`` (1.0); losing the last card (elimination)
  costs ``v_last``; a coin is worth ``coin`` = 1/7 (a coup costs 7 coins);
* harm done to an opponent is worth ``alpha`` times the harm to oneself (in a
  free-for-all it helps the observer only partly); effects on third parties are
  ignored (they are zero-sum between opponents to first order);
* ``vc`` = value of the claimant losing a card (``v_one``, or ``v_last`` when it has
  one card left), ``vm`` = the observer's loss of a card (``v_one`` / ``v_last``),
  ``s`` = coins a steal moves (min(2, victim's coins)).

=================  ==========================================  ==========================
context            G (challenge a bluff)                        L (challenge a true claim)
=================  ==========================================  ==========================
tax                alpha (vc + 3 coin)                          vm
exchange           alpha (vc + exchange_value)                  vm
steal (other)      alpha (vc + s coin)                          vm
steal (me)         alpha (vc + s coin) + s coin                 vm
assassinate (oth)  alpha (vc - 3 coin)   (the actor is refunded) vm
assassinate (me)   vm + alpha (vc - 3 coin)  (my card is saved) v_last with 2 cards (a
                                                                double loss); 0 with one
block_duke         alpha vc + 2 coin  (my foreign aid goes on)  vm
block_contessa     alpha (v_one + v_last) (2 cards: challenge   vm
                   loss, then the assassination); alpha v_last
                   with one card
block_captain/amb  alpha (vc + s coin) + s coin (my steal goes) vm
=================  ==========================================  ==========================

The *base* of a context is theta at a neutral table (everyone holds 2 cards, no coin
threat; steals at their actual stake); `context_bases` lists them.  With the fitted
constants: tax 0.588, exchange 0.533, steal 0.562, steal targeting me 0.611,
assassinate 0.364, assassinate targeting me 0.557, block_duke 0.562, block_contessa
0.692, block_captain / block_ambassador 0.611.  Three table-state adjustments are
applied in order, each reported as the change of theta it causes:

(a) the observer has one influence left: ``vm = v_last`` (L grows, theta falls) -- as
    the target of an assassination, instead, L = 0 (it dies either way) so theta
    becomes ``theta_max`` = 0.99 (CoupVisor's ``base = 0.99`` case);
(b) the claimant has one influence left: ``vc = v_last`` (catching it eliminates it:
    G grows);
(c) coin threat: the claim would take the claimant from under 7 to 7+ coins (a coup
    next turn): G grows by ``coin_threat``.

Then the style delta (`STYLES`: conservative -0.05, balanced 0, aggressive +0.07) is
added and theta is clipped to [theta_min, theta_max].  A margin band (``band``) makes
a close call (|p_truth - theta| <= band) a "don't challenge": the advice is to
challenge iff the claim is impossible or ``p_truth < theta - band`` (CoupVisor's cases
E2/E3 sat within 0.0003 of their threshold).

Fitting (``python -m evals.advisor_quality --fit --seed 1000``; it runs only on a
tuning seed of `coupjax.seeds.TUNING_SEEDS`, which every evaluation refuses): the likelihood ratios
q_honest/q_bluff of action and block claims (grid; calibrated log loss), both
calibration maps, then ``alpha, v_last, coin_threat`` (grid; the highest mean F1 of the
exact advisor over the two conditions with a false-challenge share <= 0.15 in each;
alpha <= 1) and the band (the widest band whose mean F1 is within one bootstrap
standard error of no band).  The fitted values are stored once, in configs/advisor.yaml
(``params``, with the fitting seed and game counts), and are the `AdvisorParams` defaults.  The F1 objective
drives alpha to its bound 1.0: F1 rewards catching bluffs more than the value of a
card does.  Played for real, that eagerness loses games -- belief_ev challenges with
its own play constants (`coupjax.policies.belief_ev.PLAY_OVERRIDES`), and the one
recommendation the page, the tracker and ``advised:BASE`` give challenges with
`coupjax.advice.recommend.ADVICE_OVERRIDES` (alpha 0.1), fitted for the games won by a
player who follows it (``python -m evals.advice_fit``).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from coupjax import rules
from coupjax.beliefs import coupvisor
from coupjax.beliefs import posterior as POST
from coupjax.paths import config_path
from coupjax.observation import ObsView, parse

KINDS = ("tax", "assassinate", "steal", "exchange", "block_duke", "block_contessa", "block_captain",
         "block_ambassador")
NUM_KINDS = len(KINDS)
CONTEXTS = ("tax", "exchange", "steal", "steal_me", "assassinate", "assassinate_me", "block_duke",
            "block_contessa", "block_captain", "block_ambassador")
CONTEXT_TEXT = {
    "tax": "tax (duke)", "exchange": "exchange (ambassador)", "steal": "steal from another seat (captain)",
    "steal_me": "steal targeting you (captain)", "assassinate": "assassination of another seat (assassin)",
    "assassinate_me": "assassination of you (assassin)", "block_duke": "duke block of your foreign aid",
    "block_contessa": "contessa block of your assassination", "block_captain": "captain block of your steal",
    "block_ambassador": "ambassador block of your steal",
}
STEAL_CONTEXTS = ("steal", "steal_me", "block_captain", "block_ambassador")
STYLES = {"conservative": -0.05, "balanced": 0.0, "aggressive": 0.07}
BELIEFS = ("coupvisor", "exact")

# main action kind -> claim kind (-1 for unclaimed actions); block role -> claim kind
_ACTION_KIND = np.full(rules.NUM_MAIN_ACTIONS, -1, np.int32)
_ACTION_KIND[[rules.TAX, rules.ASSASSINATE, rules.STEAL, rules.EXCHANGE]] = [0, 1, 2, 3]
_BLOCK_KIND = np.full(rules.NUM_ROLES, -1, np.int32)
_BLOCK_KIND[[rules.DUKE, rules.CONTESSA, rules.CAPTAIN, rules.AMBASSADOR]] = [4, 5, 6, 7]


FITTED_FIELDS = ("alpha", "v_last", "coin_threat", "band", "q_honest_action", "q_bluff_action",
                 "q_honest_block", "q_bluff_block", "cal_scale", "cal_shift", "cal_weights", "cv_cal_scale",
                 "cv_cal_shift", "cv_cal_weights")


def _read_params(path) -> dict:
    """The ``params`` mapping of an advisor YAML (floats; lists as tuples)."""
    import yaml

    with open(path) as f:
        data = yaml.safe_load(f)
    conv = lambda v: tuple(float(x) for x in v) if isinstance(v, (list, tuple)) else float(v)  # noqa: E731
    return {k: conv(v) for k, v in data["params"].items()}


# The fitted constants: stored once, in the shipped advisor.yaml (its ``params``, written
# by the fit with its record); `AdvisorParams`' defaults for `FITTED_FIELDS` are these.
FITTED = _read_params(config_path("advisor.yaml"))
if set(FITTED) != set(FITTED_FIELDS):
    raise RuntimeError(f"advisor.yaml params must be exactly {FITTED_FIELDS}, not {sorted(FITTED)}")


@struct.dataclass
class AdvisorParams:
    """Value model, band, threshold limits, and the beliefs' claim model and calibration.
    Defaults of the fitted fields (`FITTED_FIELDS`) = the ``params`` of advisor.yaml."""

    alpha: float = FITTED["alpha"]  # weight of harm done to an opponent (grid bound 1.0)
    v_one: float = 1.0  # losing one of two cards (the unit)
    v_last: float = FITTED["v_last"]  # losing the last card (elimination)
    coin: float = 1.0 / 7.0  # a coin, in cards (a coup costs 7)
    coin_threat: float = FITTED["coin_threat"]  # added to G when the claim takes the claimant to 7+ coins
    exchange_value: float = 1.0 / 7.0  # what an exchange is worth to its actor (cards)
    band: float = FITTED["band"]  # margin band around theta
    theta_min: float = 0.01
    theta_max: float = 0.99
    # exact posterior claim likelihoods (PosteriorParams; only the ratios matter)
    q_honest_action: float = FITTED["q_honest_action"]
    q_bluff_action: float = FITTED["q_bluff_action"]
    q_honest_block: float = FITTED["q_honest_block"]
    q_bluff_block: float = FITTED["q_bluff_block"]
    # calibration map of the exact belief (identity = scale 1, shift 0, weights 0):
    # logit p' = cal_scale[kind] * logit p + cal_shift[kind] + cal_weights . calibration_features
    cal_scale: tuple = FITTED["cal_scale"]
    cal_shift: tuple = FITTED["cal_shift"]
    cal_weights: tuple = FITTED["cal_weights"]
    # the same map for the CoupVisor belief
    cv_cal_scale: tuple = FITTED["cv_cal_scale"]
    cv_cal_shift: tuple = FITTED["cv_cal_shift"]
    cv_cal_weights: tuple = FITTED["cv_cal_weights"]

    def posterior_params(self) -> POST.PosteriorParams:
        return POST.PosteriorParams(self.q_honest_action, self.q_bluff_action, self.q_honest_block,
                                    self.q_bluff_block)


CAL_FEATURES = ("log1p_table_challenges", "claimant_challenges_lost", "claimant_challenges_won", "turn_over_50",
                "claimant_one_card", "claimant_renewals", "revealed_cards", "claimant_coins_over_7",
                "claimant_roles_claimed", "claimant_other_claims", "observer_one_card")
NUM_CAL_FEATURES = len(CAL_FEATURES)


def load_params(path=None) -> AdvisorParams:
    """AdvisorParams from the ``params`` mapping of a YAML file (default: the fitted
    ``advisor.yaml`` shipped with the package; unknown keys raise)."""
    return AdvisorParams(**(FITTED if path is None else _read_params(path)))


# ---------------------------------------------------------------- context
def challenge_context(obs, num_players: int) -> dict:
    """The public facts of the challenge decision in ``obs`` (jittable).

    Keys: ``decision`` bool (the observer faces a challenge decision), ``answer`` bool
    (answer_block), ``claimant`` i32 relative seat, ``role`` i32, ``kind`` i32 (`KINDS`,
    -1 if none), ``context`` i32 (`CONTEXTS`), ``target`` i32 relative (-1 none),
    ``target_is_me`` bool, ``me_hidden``/``claimant_hidden`` i32, ``claimant_coins``
    i32, ``stake`` i32 (coins a steal moves), ``gain`` i32 (coins the claim brings the
    claimant), ``threat`` bool, and the parsed observation under ``view``.
    """
    v = parse(obs, num_players)
    react = v.phase == rules.PH_REACT
    answer = v.phase == rules.PH_ANSWER_BLOCK
    actor, blocker, target = v.actor, v.blocker, v.target
    claim, block_role, main = v.claim, v.block_role, v.main_action
    decision = ((react & (claim >= 0) & (actor > 0)) | (answer & (actor == 0) & (blocker > 0))) & (v.hidden[0] > 0)
    claimant = jnp.where(answer, blocker, actor)
    role = jnp.where(answer, block_role, claim)
    kind = jnp.where(answer, jnp.asarray(_BLOCK_KIND)[jnp.clip(block_role, 0)],
                     jnp.asarray(_ACTION_KIND)[jnp.clip(main, 0)])
    kind = jnp.where(decision, kind, -1)
    target_is_me = target == 0
    ci = jnp.clip(claimant, 0)
    coins = v.coins
    victim = jnp.where(answer, blocker, target)
    stake = jnp.minimum(2, coins[jnp.clip(victim, 0)])
    ctx = jnp.select(
        [kind == 0, kind == 3, (kind == 2) & ~target_is_me, kind == 2, (kind == 1) & ~target_is_me, kind == 1,
         kind == 4, kind == 5, kind == 6, kind == 7],
        list(range(10)), 0).astype(jnp.int32)
    gain = jnp.select([kind == 0, kind == 2], [3, stake], 0)
    c_coins = coins[ci]
    threat = (gain > 0) & (c_coins < 7) & (c_coins + gain >= 7)
    return dict(decision=decision, answer=answer, claimant=claimant.astype(jnp.int32), role=role.astype(jnp.int32),
                kind=kind.astype(jnp.int32), context=ctx, target=target, target_is_me=target_is_me,
                me_hidden=v.hidden[0], claimant_hidden=v.hidden[ci], claimant_coins=c_coins,
                stake=stake.astype(jnp.int32), gain=gain.astype(jnp.int32), threat=threat, view=v)


# ---------------------------------------------------------------- threshold
def gain_loss(context, me_one, c_one, threat, stake, params: AdvisorParams):
    """(G, L) of the module table for context index ``context`` (broadcasts)."""
    a, v1, vl, c = params.alpha, params.v_one, params.v_last, params.coin
    vc = jnp.where(c_one, vl, v1)
    vm = jnp.where(me_one, vl, v1)
    s = jnp.asarray(stake, jnp.float32)
    g = jnp.select([
        context == 0, context == 1, context == 2, context == 3, context == 4, context == 5,
        context == 6, context == 7, (context == 8) | (context == 9)], [
        a * (vc + 3 * c), a * (vc + params.exchange_value), a * (vc + s * c), a * (vc + s * c) + s * c,
        a * (vc - 3 * c), vm + a * (vc - 3 * c), a * vc + 2 * c,
        jnp.where(c_one, a * vl, a * (v1 + vl)), a * (vc + s * c) + s * c], 0.0)
    g = g + jnp.where(threat, params.coin_threat, 0.0)
    loss = jnp.where(context == 5, jnp.where(me_one, 0.0, vl), vm)
    return g, loss


def theta_of(context, me_one, c_one, threat, stake, params):
    g, loss = gain_loss(context, me_one, c_one, threat, stake, params)
    g = jnp.maximum(g, 0.0)
    raw = jnp.where(g + loss > 0, g / jnp.maximum(g + loss, 1e-9), params.theta_max)
    return jnp.clip(jnp.where(loss <= 0, params.theta_max, raw), params.theta_min, params.theta_max)


def threshold_parts(context, me_one, c_one, threat, stake, params: AdvisorParams, style: str = "balanced") -> dict:
    """theta and its decomposition: ``base`` (neutral table), ``adj_observer`` (a),
    ``adj_claimant`` (b), ``adj_threat`` (c), ``style`` delta; ``theta`` the sum, clipped."""
    f = jnp.zeros_like(jnp.asarray(me_one, bool))
    base = theta_of(context, f, f, f, stake, params)
    t_a = theta_of(context, me_one, f, f, stake, params)
    t_b = theta_of(context, me_one, c_one, f, stake, params)
    t_c = theta_of(context, me_one, c_one, threat, stake, params)
    delta = STYLES[style] if isinstance(style, str) else style  # a name, or the delta itself (may be traced)
    theta = jnp.clip(t_c + delta, params.theta_min, params.theta_max)
    return dict(base=base, adj_observer=t_a - base, adj_claimant=t_b - t_a, adj_threat=t_c - t_b,
                style=theta - t_c, theta=theta)


def context_bases(params: AdvisorParams = AdvisorParams(), stake: int = 2) -> dict:
    """Neutral-table theta per context (Python floats)."""
    f = jnp.array(False)
    return {name: float(theta_of(jnp.int32(i), f, f, f, stake, params)) for i, name in enumerate(CONTEXTS)}


# ---------------------------------------------------------------- beliefs
def calibration_features(v: ObsView, claimant, role):
    """f32[11] public features of the calibration map (`CAL_FEATURES`) from a parsed
    observation: log(1 + challenges so far at the table); the claimant's challenges lost
    and won (capped at 3); turns / 50; claimant on its last card; the claimant's hand
    renewals (capped at 4); cards revealed at the table; the claimant's coins / 7
    (capped at 12 coins); how many roles the claimant has claimed or blocked with since
    its last renewal, and how many of those claims were not of ``role``; the observer on
    its last card.

    Why these: a claimant caught bluffing before is likely to bluff again (the role it
    was caught on is already ruled out by the beliefs until its hand is renewed; the
    lost challenges speak of its other claims); a claimant spreading claims over many
    roles is bluffing some of them whatever it holds; and a table that challenges and
    reveals a lot is a table that bluffs a lot.  (The map was fitted while a caught
    bluff still counted as support in the beliefs; it is refitted separately.)"""
    c = jnp.clip(claimant, 0)
    r = jnp.clip(role, 0)
    f = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    table = f(v.challenges_won.sum() + v.challenges_lost.sum()) / 2.0
    made = v.claims[c] + v.blocks[c]
    return jnp.stack([
        jnp.log1p(table), f(jnp.minimum(v.challenges_lost[c], 3)), f(jnp.minimum(v.challenges_won[c], 3)),
        f(v.turn) / 50.0, f(v.hidden[c] == 1), f(jnp.minimum(v.renewals[c], 4)), f(v.revealed.sum()),
        f(jnp.minimum(v.coins[c], 12)) / 7.0, f((made > 0).sum()), f(made.sum() - made[r]), f(v.hidden[0] == 1)])


def calibrate(p, kind, features, params: AdvisorParams, belief: str = "exact"):
    """The belief's calibration map on logit(p) (module doc); exact 0 and 1 stay put."""
    k = jnp.clip(kind, 0)
    q = jnp.clip(p, 1e-6, 1 - 1e-6)
    pre = "" if belief == "exact" else "cv_"
    scale, shift, weights = (jnp.asarray(getattr(params, pre + name), jnp.float32)
                             for name in ("cal_scale", "cal_shift", "cal_weights"))
    z = scale[k] * jnp.log(q / (1 - q)) + shift[k] + jnp.dot(weights, features)
    return jnp.where(p <= 0, 0.0, jnp.where(p >= 1, 1.0, jax.nn.sigmoid(z)))


def truth_table(obs, num_players: int, belief: str = "exact", params: AdvisorParams = AdvisorParams()):
    """f32[n, 5]: the belief's raw p_truth of every relative seat and role (no calibration:
    the calibration map is per claim, see `advise_challenge`)."""
    if belief == "exact":
        return POST.claim_truth_probabilities(obs, num_players, params.posterior_params())
    if belief == "coupvisor":
        return coupvisor.claim_truth_probabilities(obs, num_players)
    raise ValueError(f"belief must be one of {BELIEFS}, got {belief!r}")


# ---------------------------------------------------------------- challenge advice
def advise_challenge(obs, num_players: int, belief: str = "exact", params: AdvisorParams = AdvisorParams(),
                     style: str = "balanced", calibrated: bool = True, posterior: dict | None = None) -> dict:
    """The challenge advice for ``obs`` (jittable; ``num_players``, ``belief``, ``style``,
    ``calibrated`` static).

    Returns the `challenge_context` fields (without ``obs``) plus ``p_truth`` f32 (the
    belief's, through its calibration map unless ``calibrated=False``), ``p_raw``
    (before calibration), ``impossible``
    bool (all copies visible, or ``disproven``), ``disproven`` bool (the claimant was
    caught bluffing the role since its hand last changed), the `threshold_parts`,
    ``challenge`` bool (the recommendation), ``close_call``
    bool, and the evidence: ``role_claims``/``role_blocks`` (claimant's claims / blocks
    of the role since renewal), ``claims_total``/``blocks_total``, ``visible`` (copies of
    the role visible to the observer), ``revealed_role`` (of them, revealed),
    ``own_role`` (in the observer's hand or drawn cards), ``hidden`` i32[n] hand sizes,
    ``deck`` (cards in the deck), ``renewals`` (claimant's hand renewals).
    Outside a challenge decision ``challenge`` is False.  ``posterior``: for the exact
    belief, `coupjax.beliefs.posterior.exact_posterior` of ``obs`` under
    ``params.posterior_params()`` when the caller has it already (belief_ev shares one
    with `coupjax.advice.action_ev.recommend_action`); computed here otherwise.
    """
    if isinstance(style, str) and style not in STYLES:
        raise ValueError(f"style must be one of {tuple(STYLES)}, got {style!r}")
    ctx = challenge_context(obs, num_players)
    v = ctx.pop("view")
    c, r = jnp.clip(ctx["claimant"], 0), jnp.clip(ctx["role"], 0)
    if posterior is not None and belief == "exact":
        table = posterior["role_marginals"]
    else:
        table = truth_table(obs, num_players, belief, params)
    raw = table[c, r]
    pt = calibrate(raw, ctx["kind"], calibration_features(v, c, r), params, belief) if calibrated else raw
    disproven = ctx["decision"] & v.disproven[c, r]
    impossible = (ctx["decision"] & (v.visible[r] >= rules.COPIES_PER_ROLE)) | disproven
    pt = jnp.where(impossible, 0.0, pt)
    th = threshold_parts(ctx["context"], ctx["me_hidden"] == 1, ctx["claimant_hidden"] == 1, ctx["threat"],
                         ctx["stake"], params, style)
    theta, band = th["theta"], params.band
    challenge = ctx["decision"] & (impossible | (pt < theta - band))
    close = ctx["decision"] & ~impossible & (jnp.abs(pt - theta) <= band)
    return dict(
        ctx, p_truth=pt, p_raw=raw, impossible=impossible, disproven=disproven, **th, band=jnp.float32(band),
        challenge=challenge, close_call=close, role_claims=v.claims[c, r], role_blocks=v.blocks[c, r],
        claims_total=v.claims[c].sum(), blocks_total=v.blocks[c].sum(), visible=v.visible[r],
        revealed_role=v.revealed[:, r].sum(), own_role=v.own_counts[r] + v.drawn[r],
        hidden=v.hidden, deck=v.deck_size, renewals=v.renewals[c],
    )
