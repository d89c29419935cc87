"""Challenge advice and one-step action values from ONE seat's observation.

Everything numeric here is pure, fixed-shape and jit/vmap-able (``num_players`` is
static); the explanation strings are built in Python from the jitted numbers.  The
advisor reads nothing but the observation (`coupjax.engine.observation_layout`) and,
for `recommend_action`, the legal mask.

Challenge decisions
-------------------
A challenge decision is the react phase of a main action that claims a role (tax,
assassinate, steal, exchange; the observer is a responder) or the answer_block phase
(the observer is the actor answering a block).  The *claimant* is the actor (react) or
the blocker (answer_block); the claim *kind* is one of `KINDS`.  ``p_truth`` is the
probability that the claimant's hand holds the claimed role, from the chosen belief

* ``"exact"``: `coupjax.posterior` (the exact posterior over the hidden deal) with the
  fitted claim likelihoods ``q_*`` (`AdvisorParams.posterior_params`), or
* ``"coupvisor"``: `coupjax.belief` (CoupVisor's Appendix A belief, its own constants),

each followed by its calibration map (``calibrated=True``, the default)::

    logit p_truth = scale[kind] * logit p_belief + shift[kind] + w . features

with the 11 public `CAL_FEATURES` of `calibration_features` (the table's challenges
and reveals, the claimant's challenge record, renewals, coins and spread of claims,
turn, who is on a last card), fitted by weighted logistic regression on games never
scored (the conditions weighted to balance their calibration errors).  The threshold below is an expected-value
rule, so it needs probabilities that mean what they say: uncalibrated, CoupVisor's
belief puts a turn-one tax at 0.55 and its advisor challenges 45-60 % of all claims.

A *hard impossibility* (`belief.hard_impossible`: all 3 copies of the role are
revealed or in the observer's own hand / drawn cards) gives p_truth 0 and always a
challenge; the explanation says "impossible: all 3 dukes are accounted for" instead of
quoting a probability.

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
constants: tax 0.588, exchange 0.533, steal 0.563, steal targeting me 0.611,
assassinate 0.364, assassinate targeting me 0.512, block_duke 0.563, block_contessa
0.714, block_captain / block_ambassador 0.611.  Three table-state adjustments are
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

Fitting (``python -m evals.advisor_quality --fit --seed 1000``; seeds >= 1000, the
evaluation's are < 1000 and it refuses the fitting seed): the likelihood ratios
q_honest/q_bluff of action and block claims (grid; calibrated log loss), both
calibration maps, then ``alpha, v_last, coin_threat`` (grid; the highest mean F1 of the
exact advisor over the two conditions with a false-challenge share <= 0.15 in each;
alpha <= 1) and the band (the widest band whose mean F1 is within one bootstrap
standard error of no band).  The fitted values are the `AdvisorParams` defaults and
live in configs/advisor.yaml with the fitting seed and game counts.  The F1 objective
drives alpha to its bound 1.0: F1 rewards catching bluffs more than the value of a
card does.  Played for real, that eagerness loses games -- belief_ev challenges with
`PLAY_OVERRIDES` (alpha 0.35, chosen by win rate, see configs/advisor.yaml).

Main actions and the belief_ev policy
-------------------------------------
`recommend_action` scores every legal main action by a one-step expected value in
coins (`EVParams`; see its docstring) and `make_belief_ev` (registered as
``"belief_ev"``) acts on it and on the challenge advice: it challenges when the
advisor (exact posterior, `play_params`) says so, blocks truthfully, bluff-blocks an
assassination of its last card when the actor seldom challenges, plays the main action
of highest EV (coup / assassinate aimed at the most threatening seat; a bluff only
when it beats every honest action by ``bluff_margin``), reveals its least valuable
card and keeps its best cards in an exchange.
"""
from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from coupjax import belief as B
from coupjax import policies as PO
from coupjax import posterior as POST
from coupjax import rules as R
from coupjax.engine import Env

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
_ACTION_KIND = np.full(R.NUM_MAIN_ACTIONS, -1, np.int32)
_ACTION_KIND[[R.TAX, R.ASSASSINATE, R.STEAL, R.EXCHANGE]] = [0, 1, 2, 3]
_BLOCK_KIND = np.full(R.NUM_ROLES, -1, np.int32)
_BLOCK_KIND[[R.DUKE, R.CONTESSA, R.CAPTAIN, R.AMBASSADOR]] = [4, 5, 6, 7]


@struct.dataclass
class AdvisorParams:
    """Value model, band, threshold limits, and the beliefs' claim model and calibration.
    Defaults = the fitted values in configs/advisor.yaml (fitted: `FITTED_FIELDS`)."""

    alpha: float = 1.0  # weight of harm done to an opponent (fitted; grid bound 1.0)
    v_one: float = 1.0  # losing one of two cards (the unit)
    v_last: float = 1.5  # losing the last card (elimination) (fitted)
    coin: float = 1.0 / 7.0  # a coin, in cards (a coup costs 7)
    coin_threat: float = 0.25  # added to G when the claim takes the claimant to 7+ coins (fitted)
    exchange_value: float = 1.0 / 7.0  # what an exchange is worth to its actor (cards)
    band: float = 0.01  # margin band around theta (fitted)
    theta_min: float = 0.01
    theta_max: float = 0.99
    # exact posterior claim likelihoods (PosteriorParams; only the ratios matter: 2.0 and 2.0, fitted)
    q_honest_action: float = 2.0 / 3.0
    q_bluff_action: float = 1.0 / 3.0
    q_honest_block: float = 2.0 / 3.0
    q_bluff_block: float = 1.0 / 3.0
    # calibration map of the exact belief (fitted; identity = scale 1, shift 0, weights 0):
    # logit p' = cal_scale[kind] * logit p + cal_shift[kind] + cal_weights . calibration_features
    cal_scale: tuple = (0.943722, 1.056963, 1.32345, 1.411172, 0.9058, 1.508154, 1.270215, 1.527351)
    cal_shift: tuple = (1.946018, 2.848207, 1.349754, 0.47611, 1.859399, 2.49841, 2.334894, 1.945831)
    cal_weights: tuple = (-0.518143, -0.58624, 0.001902, 0.031895, 0.403532, 0.035418,
                          0.103017, -0.069193, -0.461368, -0.015914, 0.013728)
    # the same map for the CoupVisor belief (fitted)
    cv_cal_scale: tuple = (1.023606, 1.638011, 1.799328, 1.974183, 1.148399, 1.802692, 1.881986, 1.989634)
    cv_cal_shift: tuple = (1.918949, 2.80613, 1.510742, 0.356295, 2.025321, 2.321419, 2.698707, 2.034341)
    cv_cal_weights: tuple = (-0.79073, -0.702158, 0.038052, 1.611333, 0.433794, -0.170878,
                             0.238341, 0.222723, -0.283446, -0.08704, -0.039967)

    def posterior_params(self) -> POST.PosteriorParams:
        return POST.PosteriorParams(self.q_honest_action, self.q_bluff_action, self.q_honest_block,
                                    self.q_bluff_block)


FITTED_FIELDS = ("alpha", "v_last", "coin_threat", "band", "q_honest_action", "q_bluff_action",
                 "q_honest_block", "q_bluff_block", "cal_scale", "cal_shift", "cal_weights", "cv_cal_scale",
                 "cv_cal_shift", "cv_cal_weights")
CAL_FEATURES = ("log1p_table_challenges", "claimant_challenges_lost", "claimant_challenges_won", "turn_over_50",
                "claimant_one_card", "claimant_renewals", "revealed_cards", "claimant_coins_over_7",
                "claimant_roles_claimed", "claimant_other_claims", "observer_one_card")
NUM_CAL_FEATURES = len(CAL_FEATURES)


def load_params(path="configs/advisor.yaml") -> AdvisorParams:
    """AdvisorParams from the ``params`` mapping of a YAML file (unknown keys raise)."""
    import yaml

    with open(path) as f:
        data = yaml.safe_load(f)
    conv = lambda v: tuple(float(x) for x in v) if isinstance(v, (list, tuple)) else float(v)  # noqa: E731
    return AdvisorParams(**{k: conv(v) for k, v in data["params"].items()})


# ---------------------------------------------------------------- context
def challenge_context(obs, num_players: int) -> dict:
    """The public facts of the challenge decision in ``obs`` (jittable).

    Keys: ``decision`` bool (the observer faces a challenge decision), ``answer`` bool
    (answer_block), ``claimant`` i32 relative seat, ``role`` i32, ``kind`` i32 (`KINDS`,
    -1 if none), ``context`` i32 (`CONTEXTS`), ``target`` i32 relative (-1 none),
    ``target_is_me`` bool, ``me_hidden``/``claimant_hidden`` i32, ``claimant_coins``
    i32, ``stake`` i32 (coins a steal moves), ``gain`` i32 (coins the claim brings the
    claimant), ``threat`` bool, and the parsed observation under ``obs``.
    """
    p = B.parse_observation(obs, num_players)
    phase = p["phase"]
    react = phase[R.PH_REACT] > 0.5
    answer = phase[R.PH_ANSWER_BLOCK] > 0.5
    has = lambda v: v.sum() > 0.5  # noqa: E731
    idx = lambda v: jnp.where(has(v), jnp.argmax(v), -1).astype(jnp.int32)  # noqa: E731
    actor, blocker, target = idx(p["actor"]), idx(p["blocker"]), idx(p["target"])
    claim, block_role, main = idx(p["claim"]), idx(p["block_role"]), idx(p["main_action"])
    decision = ((react & (claim >= 0) & (actor > 0)) | (answer & (actor == 0) & (blocker > 0))) & (p["hidden"][0] > 0)
    claimant = jnp.where(answer, blocker, actor)
    role = jnp.where(answer, block_role, claim)
    kind = jnp.where(answer, jnp.asarray(_BLOCK_KIND)[jnp.clip(block_role, 0)],
                     jnp.asarray(_ACTION_KIND)[jnp.clip(main, 0)])
    kind = jnp.where(decision, kind, -1)
    target_is_me = target == 0
    ci = jnp.clip(claimant, 0)
    coins = p["coins"]
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
                me_hidden=p["hidden"][0], claimant_hidden=p["hidden"][ci], claimant_coins=c_coins,
                stake=stake.astype(jnp.int32), gain=gain.astype(jnp.int32), threat=threat, obs=p)


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


def _theta(context, me_one, c_one, threat, stake, params):
    g, loss = gain_loss(context, me_one, c_one, threat, stake, params)
    g = jnp.maximum(g, 0.0)
    raw = jnp.where(g + loss > 0, g / jnp.maximum(g + loss, 1e-9), params.theta_max)
    return jnp.clip(jnp.where(loss <= 0, params.theta_max, raw), params.theta_min, params.theta_max)


def threshold_parts(context, me_one, c_one, threat, stake, params: AdvisorParams, style: str = "balanced") -> dict:
    """theta and its decomposition: ``base`` (neutral table), ``adj_observer`` (a),
    ``adj_claimant`` (b), ``adj_threat`` (c), ``style`` delta; ``theta`` the sum, clipped."""
    f = jnp.zeros_like(jnp.asarray(me_one, bool))
    base = _theta(context, f, f, f, stake, params)
    t_a = _theta(context, me_one, f, f, stake, params)
    t_b = _theta(context, me_one, c_one, f, stake, params)
    t_c = _theta(context, me_one, c_one, threat, stake, params)
    delta = STYLES[style] if isinstance(style, str) else style  # a name, or the delta itself (may be traced)
    theta = jnp.clip(t_c + delta, params.theta_min, params.theta_max)
    return dict(base=base, adj_observer=t_a - base, adj_claimant=t_b - t_a, adj_threat=t_c - t_b,
                style=theta - t_c, theta=theta)


def context_bases(params: AdvisorParams = AdvisorParams(), stake: int = 2) -> dict:
    """Neutral-table theta per context (Python floats)."""
    f = jnp.array(False)
    return {name: float(_theta(jnp.int32(i), f, f, f, stake, params)) for i, name in enumerate(CONTEXTS)}


# ---------------------------------------------------------------- beliefs
def calibration_features(p, claimant, role):
    """f32[11] public features of the calibration map (`CAL_FEATURES`) from a parsed
    observation: log(1 + challenges so far at the table); the claimant's challenges lost
    and won (capped at 3); turns / 50; claimant on its last card; the claimant's hand
    renewals (capped at 4); cards revealed at the table; the claimant's coins / 7
    (capped at 12 coins); how many roles the claimant has claimed or blocked with since
    its last renewal, and how many of those claims were not of ``role``; the observer on
    its last card.

    Why these: a claim proven a bluff is not erased from the claimant's claim counts (only
    a renewal resets them), so the posterior reads it as evidence FOR the role -- a lost
    challenge flags that; a claimant spreading claims over many roles is bluffing some of
    them whatever it holds; and a table that challenges and reveals a lot is a table that
    bluffs a lot."""
    c = jnp.clip(claimant, 0)
    r = jnp.clip(role, 0)
    f = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    table = f(p["challenges_won"].sum() + p["challenges_lost"].sum()) / 2.0
    made = p["claims"][c] + p["blocks"][c]
    return jnp.stack([
        jnp.log1p(table), f(jnp.minimum(p["challenges_lost"][c], 3)), f(jnp.minimum(p["challenges_won"][c], 3)),
        f(p["turn"]) / 50.0, f(p["hidden"][c] == 1), f(jnp.minimum(p["renewals"][c], 4)), f(p["revealed"].sum()),
        f(jnp.minimum(p["coins"][c], 12)) / 7.0, f((made > 0).sum()), f(made.sum() - made[r]), f(p["hidden"][0] == 1)])


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
        return B.claim_truth_probabilities(obs, num_players)
    raise ValueError(f"belief must be one of {BELIEFS}, got {belief!r}")


# ---------------------------------------------------------------- challenge advice
def advise_challenge(obs, num_players: int, belief: str = "exact", params: AdvisorParams = AdvisorParams(),
                     style: str = "balanced", calibrated: bool = True) -> dict:
    """The challenge advice for ``obs`` (jittable; ``num_players``, ``belief``, ``style``,
    ``calibrated`` static).

    Returns the `challenge_context` fields (without ``obs``) plus ``p_truth`` f32 (the
    belief's, through its calibration map unless ``calibrated=False``), ``p_raw``
    (before calibration), ``impossible``
    bool, the `threshold_parts`, ``challenge`` bool (the recommendation), ``close_call``
    bool, and the evidence: ``role_claims``/``role_blocks`` (claimant's claims / blocks
    of the role since renewal), ``claims_total``/``blocks_total``, ``visible`` (copies of
    the role visible to the observer), ``revealed_role`` (of them, revealed),
    ``own_role`` (in the observer's hand or drawn cards), ``hidden`` i32[n] hand sizes,
    ``deck`` (cards in the deck), ``renewals`` (claimant's hand renewals).
    Outside a challenge decision ``challenge`` is False.
    """
    if isinstance(style, str) and style not in STYLES:
        raise ValueError(f"style must be one of {tuple(STYLES)}, got {style!r}")
    ctx = challenge_context(obs, num_players)
    p = ctx.pop("obs")
    c, r = jnp.clip(ctx["claimant"], 0), jnp.clip(ctx["role"], 0)
    raw = truth_table(obs, num_players, belief, params)[c, r]
    pt = calibrate(raw, ctx["kind"], calibration_features(p, c, r), params, belief) if calibrated else raw
    impossible = ctx["decision"] & (p["visible"][r] >= R.COPIES_PER_ROLE)
    pt = jnp.where(impossible, 0.0, pt)
    th = threshold_parts(ctx["context"], ctx["me_hidden"] == 1, ctx["claimant_hidden"] == 1, ctx["threat"],
                         ctx["stake"], params, style)
    theta, band = th["theta"], params.band
    challenge = ctx["decision"] & (impossible | (pt < theta - band))
    close = ctx["decision"] & ~impossible & (jnp.abs(pt - theta) <= band)
    return dict(
        ctx, p_truth=pt, p_raw=raw, impossible=impossible, **th, band=jnp.float32(band), challenge=challenge,
        close_call=close, role_claims=p["claims"][c, r], role_blocks=p["blocks"][c, r],
        claims_total=p["claims"][c].sum(), blocks_total=p["blocks"][c].sum(), visible=p["visible"][r],
        revealed_role=p["revealed"][:, r].sum(), own_role=p["own_counts"][r] + p["drawn"][r],
        hidden=p["hidden"], deck=p["deck_size"], renewals=p["renewals"][c],
    )


def _plural(role: str, k: int) -> str:
    return role if k == 1 else role + "s"


def _seat(rel: int, observer_seat) -> str:
    if rel == 0:
        return "you"
    if observer_seat is None:
        return f"seat +{rel}"
    return f"seat {observer_seat + rel}"  # caller passes (observer, n) via explain


def explain_challenge(advice: dict, num_players: int, belief: str = "exact", style: str = "balanced",
                      observer_seat: int | None = None, calibrated: bool = True) -> str:
    """A human-readable explanation of one (unbatched) `advise_challenge` result."""
    a = {k: np.asarray(v) for k, v in advice.items()}
    n = num_players
    seat = (lambda rel: _seat(rel, None)) if observer_seat is None else (
        lambda rel: "you" if rel == 0 else f"seat {(observer_seat + rel) % n}")
    if not bool(a["decision"]):
        return "No challenge decision: the observer is not facing a claim it may challenge."
    kind, ctx = KINDS[int(a["kind"])], CONTEXTS[int(a["context"])]
    role = R.ROLES[int(a["role"])]
    who = seat(int(a["claimant"]))
    what = (f"{who} blocks with a {role} claim ({kind})" if bool(a["answer"])
            else f"{who} claims {role} ({kind}"
            + (f" targeting {seat(int(a['target']))}" if int(a["target"]) >= 0 else "") + ")")
    vis, rev, own = int(a["visible"]), int(a["revealed_role"]), int(a["own_role"])
    hidden = ", ".join(f"{seat(k)} {int(a['hidden'][k])}" for k in range(n) if int(a["hidden"][k]) > 0)
    evidence = (f"evidence: {who} made {int(a['role_claims'])} {role} claim(s) and {int(a['role_blocks'])} {role} "
                f"block(s) since its hand was last renewed ({int(a['claims_total'])} claims, "
                f"{int(a['blocks_total'])} blocks in all; {int(a['renewals'])} renewals); {vis} of 3 "
                f"{_plural(role, 3)} visible to you ({rev} revealed, {own} in your hand); hand sizes: {hidden}; "
                f"deck {int(a['deck'])} cards")
    if bool(a["impossible"]):
        return (f"{what}. impossible: all 3 {_plural(role, 3)} are accounted for ({rev} revealed, {own} in your "
                f"hand or drawn cards) -> challenge. ({evidence}.)")
    pt, theta, band = float(a["p_truth"]), float(a["theta"]), float(a["band"])
    src = "exact posterior" if belief == "exact" else "CoupVisor belief"
    cal = f", calibrated; {float(a['p_raw']):.4f} before calibration" if calibrated else ", uncalibrated"
    flags = [
        ("you have one influence left" if int(a["me_hidden"]) == 1 else "you have 2 influence", "adj_observer"),
        (f"{who} has one influence left" if int(a["claimant_hidden"]) == 1 else f"{who} has 2 influence",
         "adj_claimant"),
        ((f"coin threat: {int(a['claimant_coins'])} + {int(a['gain'])} coins reaches 7" if bool(a["threat"])
          else "no coin threat"), "adj_threat"),
    ]
    parts = " ".join(f"{float(a[key]):+.4f} ({text})" for text, key in flags)
    thr = (f"threshold {theta:.4f} = base {float(a['base']):.4f} ({CONTEXT_TEXT[ctx]}"
           + (f", {int(a['stake'])} coins at stake" if ctx in STEAL_CONTEXTS else "")
           + f") {parts} {float(a['style']):+.4f} (style {style})")
    if bool(a["challenge"]):
        verdict = f"p_truth {pt:.4f} < threshold - band {theta - band:.4f} -> challenge"
    elif bool(a["close_call"]):
        verdict = f"p_truth {pt:.4f} is within the band +/-{band:.4f} of the threshold -> close call: don't challenge"
    else:
        verdict = f"p_truth {pt:.4f} >= threshold - band {theta - band:.4f} -> don't challenge"
    return f"{what}. p_truth {pt:.4f} ({src}{cal}); {thr}; {verdict}. ({evidence}.)"


_JIT_ADVISE = {}


def challenge_advice(obs, num_players: int, belief: str = "exact", params: AdvisorParams = AdvisorParams(),
                     style: str = "balanced", observer_seat: int | None = None, calibrated: bool = True) -> dict:
    """Convenience (not jittable): `advise_challenge` run jitted, as Python values, plus
    ``explanation``, ``kind_name``, ``role_name`` and ``recommendation`` ("challenge" |
    "don't challenge" | "close call: don't challenge" | "no decision")."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {tuple(STYLES)}, got {style!r}")
    key = (num_players, belief, calibrated)  # the style delta is an argument: one compilation for all styles
    if key not in _JIT_ADVISE:
        _JIT_ADVISE[key] = jax.jit(lambda o, prm, d: advise_challenge(o, num_players, belief, prm, d, calibrated))
    adv = jax.tree.map(np.asarray, _JIT_ADVISE[key](jnp.asarray(obs, jnp.float32), params, jnp.float32(STYLES[style])))
    out = {k: (v.tolist() if v.ndim else v.item()) for k, v in adv.items()}
    out["explanation"] = explain_challenge(adv, num_players, belief, style, observer_seat, calibrated)
    out["kind_name"] = KINDS[out["kind"]] if out["kind"] >= 0 else None
    out["role_name"] = R.ROLES[out["role"]] if out["decision"] else None
    out["recommendation"] = ("no decision" if not out["decision"] else "challenge" if out["challenge"]
                             else "close call: don't challenge" if out["close_call"] else "don't challenge")
    return out


# ---------------------------------------------------------------- main actions: one-step EV
@struct.dataclass
class EVParams:
    """Constants of the one-step action value (coin units) and of belief_ev's play.

    kill_coins: value of an opponent losing a card (x elim_factor when that eliminates
    it, x (1 + leader_bonus * threat share) for the most threatening seats);
    lose_coins / lose_last_coins: my loss of one of two cards / of my last card;
    steal_harm: weight of the coins a steal takes from its victim; rich_coin_value: value
    of a coin gained while I already hold 7+ (a coup is paid for); exchange_coins: value
    of an exchange; challenge_rate: P(one opponent challenges my claim) (prior, raised
    by that seat's challenge record); bluff_block_rate: P(an opponent lacking the role
    bluff-blocks); bluff_margin: a bluff must beat the best honest action by this much.
    """

    kill_coins: float = 8.0
    elim_factor: float = 1.5
    leader_bonus: float = 0.5
    lose_coins: float = 10.0
    lose_last_coins: float = 25.0
    steal_harm: float = 0.5
    rich_coin_value: float = 0.3
    exchange_coins: float = 1.0
    challenge_rate: float = 0.2
    record_weight: float = 0.1
    bluff_block_rate: float = 0.15
    bluff_margin: float = 3.0


def _threat(p, n):
    """f32[n] threat score of each live opponent (coins + 3 per hidden card), 0 for me / dead."""
    opp = (p["hidden"] > 0) & (jnp.arange(n) > 0)
    return jnp.where(opp, p["coins"].astype(jnp.float32) + 3.0 * p["hidden"].astype(jnp.float32), 0.0)


def _challenge_probs(p, n, ev: EVParams):
    """f32[n]: estimated P(seat k challenges my claim) (0 for me and dead seats).

    Prior ``challenge_rate``, raised by ``record_weight`` per challenge the seat has been
    involved in per 10 turns (a seat that challenges shows up there; so does a seat
    that gets challenged, which is why the weight is small)."""
    opp = (p["hidden"] > 0) & (jnp.arange(n) > 0)
    involved = (p["challenges_won"] + p["challenges_lost"]).astype(jnp.float32)
    per_turn = involved / (1.0 + p["turn"].astype(jnp.float32) / 10.0)
    c = jnp.clip(ev.challenge_rate + ev.record_weight * per_turn, 0.0, 0.9)
    return jnp.where(opp, c, 0.0)


# What `recommend_action` subtracts from a bluff that does not beat the best honest action
# by ``bluff_margin``: it stays legal and finite but below every other legal main action.
REJECTED_BLUFF_PENALTY = 1e3


def recommend_action(obs, mask, num_players: int, params: AdvisorParams = AdvisorParams(),
                     ev: EVParams = EVParams()) -> dict:
    """One-step expected value (coins) of every legal main action (jittable).

    Model (the exact posterior gives every opponent's role marginals and hands):

    * income +1; foreign aid +2 x P(no opponent blocks with a duke: holds one, or
      bluff-blocks at ``bluff_block_rate``); tax +3; exchange ``exchange_coins``;
      steal:t  s (1 + steal_harm) x P(t does not block with captain/ambassador),
      s = min(2, t's coins); assassinate:t  -3 + H_t x P(t does not block with contessa);
      coup:t  -7 + H_t.  H_t = kill_coins x elim_factor (if t has one card) x (1 +
      leader_bonus x t's share of the largest threat: coins + 3 per card).  Coins gained
      while holding 7+ count ``rich_coin_value`` each.
    * A claim of a role I do not hold (a bluff) is challenged with p_c = 1 - prod_k (1 -
      c_k) (`_challenge_probs`); then it fails (assassinate's 3 coins come back) and I
      lose a card: EV = (1 - p_c) EV_honest - p_c x (lose_coins or lose_last_coins);
      a bluff must beat the best honest action by ``bluff_margin``.

    Returns ``ev`` f32[A] (-inf on illegal and non-main actions), ``best`` i32 (-1 if no
    main action is legal), ``bluff`` bool[A], ``rejected_bluff`` bool[A] (a bluff that does
    not beat the best honest action by ``bluff_margin``: its ``ev`` is lowered by
    `REJECTED_BLUFF_PENALTY`), ``p_challenge`` f32[], ``p_block`` f32[A], ``gain`` f32[A]
    (EV if not challenged; blocks included).
    """
    n = num_players
    T = PO._tables(n)
    lay = T.lay
    p = B.parse_observation(obs, n)
    post = POST.exact_posterior(obs, n, params.posterior_params())
    marg = post["role_marginals"]
    has = jnp.asarray(POST.HAND_HAS)
    p_cap_amb = post["hand_probs"] @ (1.0 - (1.0 - has[:, R.CAPTAIN]) * (1.0 - has[:, R.AMBASSADOR]))
    opp = (p["hidden"] > 0) & (jnp.arange(n) > 0)
    bb = ev.bluff_block_rate
    coins = p["coins"].astype(jnp.float32)
    my_coins = coins[0]
    coin_v = lambda g: jnp.where(my_coins >= 7, ev.rich_coin_value * g, g)  # noqa: E731

    threat = _threat(p, n)
    share = threat / jnp.maximum(threat.max(), 1.0)
    harm = ev.kill_coins * jnp.where(p["hidden"] == 1, ev.elim_factor, 1.0) * (1.0 + ev.leader_bonus * share)
    harm = jnp.where(opp, harm, 0.0)
    blk = lambda pr: jnp.where(opp, pr + (1.0 - pr) * bb, 0.0)  # noqa: E731
    p_fa_block = 1.0 - jnp.prod(1.0 - blk(marg[:, R.DUKE]))
    p_ass_block = blk(marg[:, R.CONTESSA])
    p_steal_block = blk(p_cap_amb)
    stake = jnp.minimum(2.0, coins)

    gain = jnp.full(T.A, -jnp.inf, jnp.float32)
    p_block = jnp.zeros(T.A, jnp.float32)
    gain = gain.at[0].set(coin_v(1.0))
    gain = gain.at[1].set(coin_v(2.0) * (1.0 - p_fa_block))
    p_block = p_block.at[1].set(p_fa_block)
    gain = gain.at[2].set(coin_v(3.0))
    gain = gain.at[3].set(ev.exchange_coins)
    gain = gain.at[lay.coup:lay.coup + n].set(-7.0 + harm)
    gain = gain.at[lay.assassinate:lay.assassinate + n].set(-3.0 + harm * (1.0 - p_ass_block))
    p_block = p_block.at[lay.assassinate:lay.assassinate + n].set(p_ass_block)
    gain = gain.at[lay.steal:lay.steal + n].set((coin_v(stake) + ev.steal_harm * stake) * (1.0 - p_steal_block))
    p_block = p_block.at[lay.steal:lay.steal + n].set(p_steal_block)

    c = _challenge_probs(p, n, ev)
    p_chal = 1.0 - jnp.prod(1.0 - c)
    lose = jnp.where(p["hidden"][0] == 1, ev.lose_last_coins, ev.lose_coins)
    bluff = mask & (T.main_claim >= 0) & (p["own_counts"][jnp.clip(T.main_claim, 0)] == 0)
    value = jnp.where(bluff, (1.0 - p_chal) * gain - p_chal * lose, gain)
    legal_main = mask & T.is_main
    value = jnp.where(legal_main, value, -jnp.inf)
    best_honest = jnp.max(jnp.where(legal_main & ~bluff, value, -jnp.inf))
    rejected = bluff & (value < best_honest + ev.bluff_margin)
    value = jnp.where(rejected, value - REJECTED_BLUFF_PENALTY, value)  # penalised, still finite
    best = jnp.where(legal_main.any(), jnp.argmax(value), -1).astype(jnp.int32)
    return dict(ev=value, best=best, bluff=bluff, rejected_bluff=rejected, p_challenge=p_chal, p_block=p_block,
                gain=jnp.where(legal_main, gain, -jnp.inf))


def explain_action(result: dict, num_players: int, observer_seat: int | None = None, top: int = 3) -> str:
    """The `recommend_action` result (unbatched) as text: the best actions with their EV."""
    r = {k: np.asarray(v) for k, v in result.items()}
    n = num_players
    if int(r["best"]) < 0:
        return "No main-action decision."
    seat = 0 if observer_seat is None else observer_seat
    ev = r["ev"]
    order = [a for a in np.argsort(-ev) if np.isfinite(ev[a])][:top]
    parts = []
    for a in order:
        name = R.action_name(int(a), seat, n)
        if observer_seat is None and ":" in name:
            k = (int(name.split(":")[1]) - seat) % n
            name = f"{name.split(':')[0]}:+{k}"
        rejected = bool(r["rejected_bluff"][a])
        shown = ev[a] + (REJECTED_BLUFF_PENALTY if rejected else 0.0)
        extra = f", bluff: challenged with p {float(r['p_challenge']):.2f}" if r["bluff"][a] else ""
        if rejected:
            extra += " (a bluff not worth its risk)"
        if r["p_block"][a] > 0:
            extra += f", blocked with p {float(r['p_block'][a]):.2f}"
        parts.append(f"{name} EV {shown:+.2f} coins (if not challenged {float(r['gain'][a]):+.2f}{extra})")
    best = R.action_name(int(r["best"]), seat, n)
    if observer_seat is None and ":" in best:
        best = f"{best.split(':')[0]}:+{(int(best.split(':')[1]) - seat) % n}"
    return f"best: {best}; " + "; ".join(parts)


# ---------------------------------------------------------------- the belief_ev policy
# belief_ev's challenge rule: the fitted advisor with these value constants, chosen by win
# rate (configs/advisor.yaml, section belief_ev): challenging as eagerly as the F1-fitted
# advisor (alpha 1.0) costs belief_ev about 8 points of win rate.
PLAY_OVERRIDES = {"alpha": 0.35, "v_last": 2.0, "band": 0.02}


def play_params(params: AdvisorParams | None = None) -> AdvisorParams:
    """The advisor constants belief_ev challenges with: ``params`` (default the fitted
    `AdvisorParams`) with `PLAY_OVERRIDES`."""
    return (AdvisorParams() if params is None else params).replace(**PLAY_OVERRIDES)


def make_belief_ev(env: Env, params: AdvisorParams | None = None, ev: EVParams = EVParams(),
                   style: str = "balanced") -> PO.Policy:
    """belief_ev: the exact posterior + the challenge advisor + the one-step EV (module doc).

    ``params`` default: `play_params()`; pass an `AdvisorParams` to challenge with other
    constants."""
    params = play_params() if params is None else params
    n = env.num_players
    T = PO._tables(n)
    lay = T.lay

    def policy(key, state):
        del key
        mask = state.legal_action_mask
        obs = state.observation
        p = B.parse_observation(obs, n)
        own = p["own_counts"]
        phase = jnp.argmax(p["phase"])
        ids = jnp.arange(T.A)

        # ---- main action
        rec = recommend_action(obs, mask, n, params, ev)
        v = rec["ev"]
        top = jnp.where(T.is_main & mask, v >= v.max() - 1e-4, False)
        p_main = PO._uniform_over(top)

        # ---- reactions and answers to a block
        adv = advise_challenge(obs, n, "exact", params, style)
        can_chal = mask[T.challenge_id]
        want_chal = can_chal & adv["challenge"]
        blocks = mask & (T.block_role >= 0)
        true_blocks = blocks & (own[jnp.clip(T.block_role, 0)] > 0)
        # last card, assassinated, no contessa: bluff-block unless the actor likely challenges
        ctx_t = (p["main_action"][R.ASSASSINATE] > 0.5) & (p["target"][0] > 0.5) & (p["hidden"][0] == 1)
        actor = jnp.argmax(p["actor"])
        c_actor = _challenge_probs(p, n, ev)[actor]
        contessa_gone = p["visible"][R.CONTESSA] >= R.COPIES_PER_ROLE
        bluff_contessa = (ctx_t & ~true_blocks.any() & mask[lay.block + 1] & ~contessa_gone
                          & (c_actor < adv["p_truth"]) & ~adv["impossible"])
        bluff_block = (ids == lay.block + 1) & bluff_contessa
        chal_now = want_chal & ~(true_blocks.any() & ~adv["impossible"]) & ~bluff_contessa
        p_react = jnp.select(
            [chal_now, true_blocks.any(), bluff_contessa],
            [(ids == T.challenge_id).astype(jnp.float32), PO._uniform_over(true_blocks),
             bluff_block.astype(jnp.float32)],
            (ids == T.pass_id).astype(jnp.float32))

        # ---- losing influence (the least valuable card) and exchanges (the best multiset)
        p_lose, p_keep = PO.reveal_and_keep(T, p["own_cards"], mask)

        probs = jnp.select(
            [phase == R.PH_ACTION, (phase == R.PH_REACT) | (phase == R.PH_ANSWER_BLOCK), phase == R.PH_LOSE],
            [p_main, p_react, p_lose], p_keep)
        probs = jnp.where((probs * mask).sum() > 0, probs, mask.astype(jnp.float32))
        return PO.masked_logits(probs, mask)

    return policy


@PO.register_policy(
    "belief_ev",
    "Acts on the exact posterior: challenges when the threshold advisor says so, blocks truthfully (bluff-blocks "
    "an assassination of its last card when the actor seldom challenges), picks the main action of highest one-step "
    "expected value (bluffs only when that value says so) aimed at the most threatening seat, reveals its least "
    "valuable card and keeps its best cards in an exchange.")
def _make_belief_ev(env: Env, **kwargs) -> PO.Policy:
    return make_belief_ev(env, **kwargs)
