"""coupjax.posterior: the exact posterior against a plain brute force, the sampler, jit/vmap."""
from __future__ import annotations

import functools
import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax.beliefs import posterior
from coupjax.game import deal
from coupjax.game.views import NUM_SEAT_FEATURES, SEAT_FEATURES, observation_layout
from coupjax.observation import parse
from coupjax.match import Match, compiled

Q = dict(q_honest_action=0.85, q_bluff_action=0.15, q_honest_block=0.85, q_bluff_block=0.15)


# --------------------------------------------------------------------------- positions
def _seat_col(name):
    start = 0
    for nm, size in SEAT_FEATURES:
        if nm == name:
            return slice(start, start + size)
        start += size
    raise KeyError(name)


@functools.lru_cache(maxsize=None)
def _observe(n):
    return jax.jit(compiled(n)[0].observe)


def _record(m, out):
    for seat in range(m.num_players):
        out.append((m.num_players, seat, np.asarray(_observe(m.num_players)(m.state, seat))))


def _play(m, names):
    """Play names, recording every seat's observation after each step."""
    out = []
    _record(m, out)
    for name in names:
        if name == "KEEP":
            name = m.legal_actions()[0]
        m.play(name)
        if m.done:
            break
        _record(m, out)
    return out


def scenario_4p_full():
    m = Match(4, seed=1, hands=[["duke", "assassin"], ["captain", "contessa"], ["ambassador", "duke"],
                                ["assassin", "captain"]])
    return m, ["tax", "pass", "pass", "pass", "steal:2", "block:ambassador", "pass",
               "foreign_aid", "block:duke", "pass", "exchange", "pass", "pass", "pass", "KEEP"]


def scenario_4p_revealed():
    m = Match(4, seed=2, hands=[["duke"], ["captain", "captain"], ["duke"], ["ambassador", "assassin"]],
              revealed=[["contessa"], [], ["assassin"], []])
    return m, ["tax", "pass", "pass", "pass", "steal:0", "pass", "pass", "block:captain", "challenge"]


def scenario_4p_redraw():
    """A proven claim (redraw) after a 2-card loss choice; bluffed blocks left standing."""
    m = Match(4, seed=3, hands=[["assassin", "assassin"], ["duke", "contessa"], ["captain", "ambassador"],
                                ["contessa", "duke"]], coins=[3, 3, 3, 3])
    return m, ["assassinate:1", "block:contessa", "pass", "tax", "challenge", "reveal:0",
               "steal:0", "pass", "block:ambassador", "pass", "foreign_aid", "block:duke", "pass"]


SCENARIOS = [scenario_4p_full, scenario_4p_revealed, scenario_4p_redraw]


@functools.lru_cache(maxsize=None)
def observations(name):
    m, names = {f.__name__: f for f in SCENARIOS}[name]()
    return _play(m, names)


def synthetic_obs(n, own, seats, exchanger=None, drawn=()):
    """An observation vector written directly (other table sizes without compiling the
    engine for them).  ``seats``: per relative seat 1..n-1 a dict with ``hidden`` and
    optional ``revealed`` / ``claims`` / ``blocks`` (role lists) and ``disproven`` (roles
    a caught bluff proved absent)."""
    lay = observation_layout(n)
    o = np.zeros(lay["size"][0], np.float32)
    base = lay["own_hand"][0]
    for i, r in enumerate(own):
        o[base + 5 * i + r] = 1
    for r in drawn:
        o[lay["drawn"][0] + r] += 1
    rows = [dict(hidden=len(own))] + list(seats)
    for k, row in enumerate(rows):
        at = lay["seats"][0] + NUM_SEAT_FEATURES * k
        o[at + _seat_col("coins").start] = 2
        o[at + _seat_col("hidden").start] = row["hidden"]
        o[at + _seat_col("alive").start] = float(row["hidden"] > 0)
        for field in ("revealed", "claims", "blocks"):
            for r in row.get(field, ()):
                o[at + _seat_col(field).start + r] += 1
        for r in row.get("disproven", ()):
            o[at + _seat_col("disproven").start + r] = 1
    phase = 4 if exchanger is not None else 0
    o[lay["phase"][0] + phase] = 1
    if exchanger is not None:
        o[lay["actor"][0] + exchanger] = 1
        o[lay["main_action"][0] + 3] = 1
    return o


D, A, C, M, T = range(5)  # duke assassin captain ambassador contessa
SYNTHETIC = [
    (3, synthetic_obs(3, [A, A], [dict(hidden=2, claims=[D], blocks=[T]),
                                  dict(hidden=1, revealed=[C], blocks=[M])])),
    (5, synthetic_obs(5, [D, C], [dict(hidden=1, revealed=[D], claims=[C]), dict(hidden=1, revealed=[C]),
                                  dict(hidden=0, revealed=[M, M]), dict(hidden=2, claims=[D], blocks=[C])])),
    # another seat (relative 2) is choosing an exchange: its drawn cards are unseen
    (5, synthetic_obs(5, [D, C], [dict(hidden=2, claims=[D, D, M]), dict(hidden=1, revealed=[T], claims=[M]),
                                  dict(hidden=0, revealed=[M, A]), dict(hidden=2, blocks=[D])], exchanger=2)),
    # the observer is choosing an exchange: its drawn cards are visible to it
    (6, synthetic_obs(6, [D], [dict(hidden=2, claims=[D, A]), dict(hidden=0, revealed=[C, C]),
                               dict(hidden=2, blocks=[C, C]), dict(hidden=0, revealed=[A, T]),
                               dict(hidden=2, claims=[M], blocks=[T])], exchanger=0, drawn=[D, M])),
    (6, synthetic_obs(6, [C, C], [dict(hidden=1, revealed=[D], claims=[D]), dict(hidden=1, revealed=[A]),
                                  dict(hidden=2, claims=[C]), dict(hidden=1, revealed=[M], blocks=[T]),
                                  dict(hidden=1, revealed=[T], claims=[A, A])])),
    # caught bluffs: a proven-absent role (still in the claim counts) rules hands out
    (5, synthetic_obs(5, [D, C], [dict(hidden=1, revealed=[A], claims=[D, D], disproven=[D]),
                                  dict(hidden=1, revealed=[A], blocks=[T, M], disproven=[T, M]),
                                  dict(hidden=0, revealed=[M, C]),
                                  dict(hidden=1, revealed=[T], claims=[C, A], disproven=[A])])),
]


# --------------------------------------------------------------------------- brute force
def brute_force(obs, n, q=Q):
    """Enumerate every ordered deal of the unseen cards into the opponents' hidden slots.

    The probability of an ordered deal is that of drawing those cards one after the
    other, without replacement, from all the unseen cards (the deck takes the rest);
    the likelihood multiplies q_honest / q_bluff once per counted claim.  Plain NumPy
    over all 5**slots deals.
    """
    lay = observation_layout(n)
    get = lambda name: obs[lay[name][0]: lay[name][0] + int(np.prod(lay[name][1]))].reshape(lay[name][1])  # noqa
    own = get("own_hand")
    seats = get("seats").round().astype(int)
    hidden = seats[:, _seat_col("hidden")][:, 0]
    revealed, claims, blocks, disproven = (seats[:, _seat_col(c)] for c in ("revealed", "claims", "blocks",
                                                                            "disproven"))
    visible = revealed.sum(0) + own.sum(0).round().astype(int) + get("drawn").round().astype(int)
    unseen = 3 - visible
    owners = np.array([k for k in range(1, n) for _ in range(hidden[k])], int)
    deals = np.array(list(itertools.product(range(5), repeat=len(owners))), int).reshape(-1, len(owners))
    rows = np.arange(len(deals))
    rem = np.tile(unseen.astype(float), (len(deals), 1))
    weight = np.ones(len(deals))
    for i in range(len(owners)):
        avail = rem[rows, deals[:, i]]
        weight = np.where(avail > 0, weight * avail / np.maximum(rem.sum(axis=1), 1), 0.0)
        rem[rows, deals[:, i]] -= avail > 0
    hand_of = {}
    pair = {hand: h for h, hand in enumerate(posterior.HANDS)}
    for k in range(1, n):
        cols = deals[:, owners == k]
        has = np.stack([(cols == r).any(axis=1) for r in range(5)], axis=1)
        for r in range(5):
            weight = weight * np.where(has[:, r], q["q_honest_action"], q["q_bluff_action"]) ** claims[k, r]
            weight = weight * np.where(has[:, r], q["q_honest_block"], q["q_bluff_block"]) ** blocks[k, r]
            weight = weight * ~(has[:, r] & (disproven[k, r] > 0))  # a caught bluff: r is absent
        if cols.shape[1] == 0:
            hand_of[k] = np.zeros(len(deals), int)
        elif cols.shape[1] == 1:
            hand_of[k] = np.array([pair[(r,)] for r in range(5)])[cols[:, 0]]
        else:
            table = np.array([[pair[tuple(sorted((a, b)))] for b in range(5)] for a in range(5)])
            hand_of[k] = table[cols[:, 0], cols[:, 1]]
    weight = weight / weight.sum()
    hand_probs = np.zeros((n, posterior.NUM_HANDS))
    own_cards = tuple(sorted(int(np.argmax(row)) for row in own if row.sum() > 0))
    hand_probs[0, posterior.HANDS.index(own_cards)] = 1.0
    for k in range(1, n):
        hand_probs[k] = np.bincount(hand_of[k], weights=weight, minlength=posterior.NUM_HANDS)
    role = np.array([[hand_probs[k, [h for h in range(posterior.NUM_HANDS) if r in posterior.HANDS[h]]].sum() for r in range(5)]
                     for k in range(n)])
    return hand_probs, role


K = 20_000
DEFAULT = posterior.PosteriorParams()
_EXACT = jax.jit(posterior.exact_posterior, static_argnums=1)
_JOINT = jax.jit(posterior.joint_posterior, static_argnums=1)
_SAMPLE = jax.jit(posterior.sample_worlds, static_argnums=(2, 3))


def EXACT(obs, n, params=DEFAULT):  # params always traced: one compile per table size
    return _EXACT(obs, n, params)


def JOINT(obs, n, params=DEFAULT):
    return _JOINT(obs, n, params)


def SAMPLE(key, obs, n, k, params=DEFAULT):
    return _SAMPLE(key, obs, n, k, params)


BATCH = 64


@functools.lru_cache(maxsize=None)
def _batched(fn, n):
    return jax.jit(jax.vmap(lambda o, params: fn(o, n, params), in_axes=(0, None)))


def batched(fn, n, stack, params=None):
    """fn over a batch of observations, padded to BATCH rows (one compile per fn)."""
    params = posterior.PosteriorParams() if params is None else params
    pad = np.concatenate([stack, np.repeat(stack[-1:], BATCH - len(stack), axis=0)])
    return jax.tree.map(lambda x: x[: len(stack)], _batched(fn, n)(jnp.asarray(pad), params))


def _stack(obs_list):
    return np.stack([o for _, _, o in obs_list])


# --------------------------------------------------------------------------- (a) exactness
@pytest.mark.parametrize("name", [f.__name__ for f in SCENARIOS])
def test_exact_posterior_matches_brute_force(name):
    obs_list = observations(name)
    got = batched(posterior.exact_posterior, 4, _stack(obs_list))
    hp, rm = np.asarray(got["hand_probs"]), np.asarray(got["role_marginals"])
    assert np.asarray(got["consistent"]).all()
    for i, (_, seat, obs) in enumerate(obs_list):
        want_hp, want_rm = brute_force(obs, 4)
        np.testing.assert_allclose(hp[i], want_hp, atol=1e-5, err_msg=f"{name} obs {i} seat {seat}")
        np.testing.assert_allclose(rm[i], want_rm, atol=1e-5, err_msg=f"{name} obs {i} seat {seat}")
    # the positions carry evidence: some marginals differ from the claim-free prior
    flat = posterior.PosteriorParams(0.5, 0.5, 0.5, 0.5)
    prior = batched(posterior.exact_posterior, 4, _stack(obs_list), flat)["role_marginals"]
    assert np.abs(np.asarray(prior) - rm).max() > 0.1


@pytest.mark.parametrize("index", range(len(SYNTHETIC)))
def test_exact_posterior_other_table_sizes(index):
    n, obs = SYNTHETIC[index]
    got = EXACT(obs, n)
    want_hp, want_rm = brute_force(obs, n)
    np.testing.assert_allclose(np.asarray(got["hand_probs"]), want_hp, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got["role_marginals"]), want_rm, atol=1e-5)


@pytest.mark.parametrize("name", [f.__name__ for f in SCENARIOS])
def test_joint_table_agrees_with_marginals(name):
    obs_list = observations(name)
    stack = _stack(obs_list)
    j = batched(posterior.joint_posterior, 4, stack)
    hp = np.asarray(batched(posterior.exact_posterior, 4, stack)["hand_probs"])
    hands, probs = np.asarray(j["hands"]), np.asarray(j["probs"])
    assert hands.shape[1] == 15 ** 3
    for i in range(len(obs_list)):
        marg = np.zeros((4, posterior.NUM_HANDS))
        for k in range(4):
            np.add.at(marg[k], hands[i, :, k], probs[i])
        np.testing.assert_allclose(marg, hp[i], atol=1e-5)
    n, obs = SYNTHETIC[0]
    j = JOINT(obs, n)
    marg = np.zeros((n, posterior.NUM_HANDS))
    for k in range(n):
        np.add.at(marg[k], np.asarray(j["hands"])[:, k], np.asarray(j["probs"]))
    np.testing.assert_allclose(marg, brute_force(obs, n)[0], atol=1e-5)
    with pytest.raises(ValueError):
        posterior.joint_posterior(SYNTHETIC[1][1], 5)


def test_parameters_change_the_posterior():
    _, _, obs = observations("scenario_4p_full")[32]  # seat 0 after the foreign aid (before its block)
    q = dict(q_honest_action=0.6, q_bluff_action=0.4, q_honest_block=0.95, q_bluff_block=0.05)
    got = EXACT(obs, 4, posterior.PosteriorParams(**q))
    np.testing.assert_allclose(np.asarray(got["hand_probs"]), brute_force(obs, 4, q)[0], atol=1e-5)
    default = EXACT(obs, 4)
    assert np.abs(np.asarray(default["hand_probs"]) - np.asarray(got["hand_probs"])).max() > 0.02


def test_claim_truth_probability_and_extreme_counts():
    _, _, obs = observations("scenario_4p_full")[4]  # seat 0 after its tax
    rm = np.asarray(EXACT(obs, 4)["role_marginals"])
    assert rm[0].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]  # the observer's own duke + assassin
    # 150 duke claims each by two seats while only one duke is unseen: log space keeps it exact
    lay = observation_layout(4)
    start = lay["seats"][0]
    o = np.array(obs)
    o[start + 1 * NUM_SEAT_FEATURES + _seat_col("claims").start + D] = 150
    o[start + 2 * NUM_SEAT_FEATURES + _seat_col("claims").start + D] = 150
    o[start + 0 * NUM_SEAT_FEATURES + _seat_col("revealed").start + D] = 1  # own duke + a revealed one: one unseen
    out = EXACT(o, 4)
    hp = np.asarray(out["hand_probs"])
    assert np.isfinite(hp).all()
    np.testing.assert_allclose(hp.sum(axis=1), 1.0, atol=1e-6)
    rm = np.asarray(out["role_marginals"])
    assert rm[1, D] == pytest.approx(0.5, abs=1e-4) and rm[2, D] == pytest.approx(0.5, abs=1e-4)


# --------------------------------------------------------------------------- (b) sampler
def _check_worlds(worlds, obs, n):
    lay = observation_layout(n)
    get = lambda name: obs[lay[name][0]: lay[name][0] + int(np.prod(lay[name][1]))].reshape(lay[name][1])  # noqa
    seats = get("seats").round().astype(int)
    hidden = seats[:, _seat_col("hidden")][:, 0]
    revealed = seats[:, _seat_col("revealed")].sum(0)
    hands, deck, drawn = (np.asarray(x) for x in worlds)
    own = [int(np.argmax(r)) if r.sum() > 0 else -1 for r in get("own_hand")]
    assert (hands[:, 0, :] == np.array(own)).all()
    assert ((hands >= 0).sum(axis=2) == hidden[None, :]).all()
    cards = np.concatenate([hands.reshape(len(hands), -1), deck, drawn], axis=1)
    counts = np.stack([(cards == r).sum(axis=1) for r in range(5)], axis=1) + revealed[None, :]
    assert (counts == 3).all(), "card conservation"
    assert not ((hands[:, :, 0] < 0) & (hands[:, :, 1] >= 0)).any()  # rows compacted left
    sizes = (deck >= 0).sum(axis=1)
    assert (deck[np.arange(15)[None, :] < sizes[:, None]] >= 0).all()  # deck -1 padded at the end
    assert len(set(sizes.tolist())) == 1
    return hands, deck, drawn


def _assert_marginals(hands, rm):
    freq = np.stack([((hands == r).any(axis=2)).mean(axis=0) for r in range(5)], axis=1)
    se = np.sqrt(rm * (1 - rm) / len(hands))
    assert (np.abs(freq - rm) <= 4 * se + 1e-6).all(), (freq, rm)


def test_sampler_matches_exact_marginals_and_joint():
    n, seat, obs = observations("scenario_4p_full")[36]  # seat 0 after block:duke
    hands, deck, _ = _check_worlds(SAMPLE(jax.random.PRNGKey(7), obs, n, K), obs, n)
    rm = np.asarray(EXACT(obs, n)["role_marginals"])
    assert rm[1:].min() < 0.5 and rm[1:].max() > 0.7  # a non-trivial position
    _assert_marginals(hands, rm)
    # joint: pairs of seats against the enumerated joint table
    j = JOINT(obs, n)
    jh, jp = np.asarray(j["hands"]), np.asarray(j["probs"])
    for (a, ra), (b, rb) in [((1, D), (2, D)), ((1, C), (3, D)), ((2, M), (3, M))]:
        p = float((jp * posterior.HAND_HAS[jh[:, a], ra] * posterior.HAND_HAS[jh[:, b], rb]).sum())
        f = ((hands[:, a] == ra).any(axis=1) & (hands[:, b] == rb).any(axis=1)).mean()
        assert abs(f - p) <= 4 * np.sqrt(p * (1 - p) / K) + 1e-6
    # the two cards of a sampled pair come in both orders
    opp = hands[:, 1:, :].reshape(-1, 2)
    two = opp[(opp[:, 0] >= 0) & (opp[:, 1] >= 0) & (opp[:, 0] != opp[:, 1])]
    assert 0.47 < (two[:, 0] < two[:, 1]).mean() < 0.53
    # the deck order is uniform: the next card is distributed like any deck card
    first = np.bincount(deck[:, 0], minlength=5) / K
    overall = np.stack([(deck == r).sum(axis=1) for r in range(5)], 1).sum(0) / (deck >= 0).sum()
    np.testing.assert_allclose(first, overall, atol=0.02)


def test_sampler_six_players_own_exchange():
    n, obs = SYNTHETIC[3]
    p = parse(obs, n)
    hands, deck, drawn = _check_worlds(SAMPLE(jax.random.PRNGKey(3), obs, n, K), obs, n)
    _assert_marginals(hands, np.asarray(EXACT(obs, n)["role_marginals"]))
    assert ((deck >= 0).sum(axis=1) == int(p.deck_size)).all()
    assert int(p.exchanger) == 0 and (drawn == np.array([D, M])).all()  # its own draw, role order


def test_sampler_engine_exchange_phase():
    obs_list = observations("scenario_4p_full")
    mid = [o for o in obs_list if int(parse(o[2], 4).exchanger) >= 0]
    assert len(mid) == 4  # every seat's view while seat 3 chooses its exchange
    for n, seat, obs in mid:
        p = parse(obs, n)
        hands, deck, drawn = _check_worlds(SAMPLE(jax.random.PRNGKey(seat), obs, n, K), obs, n)
        assert (drawn >= 0).all()  # the exchanger's two drawn cards: own (seat 3) or sampled
        assert ((deck >= 0).sum(axis=1) == int(p.deck_size)).all()
        if seat == 3:
            assert (drawn == drawn[0]).all()
        else:
            assert int(p.exchanger) == (3 - seat) % 4 and len({tuple(r) for r in drawn[:200].tolist()}) > 1
            _assert_marginals(hands, np.asarray(EXACT(obs, n)["role_marginals"]))


def test_sampled_worlds_reproduce_the_observation():
    m, names = scenario_4p_full()
    for name in names[:8]:
        m.play(name)
    observer = 2
    obs = _observe(4)(m.state, observer)
    worlds = SAMPLE(jax.random.PRNGKey(3), obs, 4, K)
    hands_abs = np.asarray(posterior.to_absolute(worlds.hands, observer))
    assert (hands_abs[:, observer] == np.asarray(worlds.hands[:, 0])).all()
    assert (hands_abs[:, (observer + 1) % 4] == np.asarray(worlds.hands[:, 1])).all()
    replace = jax.jit(deal.replace_hidden)
    for k in range(4):
        s = replace(m.state, hands_abs[k], worlds.deck[k])
        deal.check_cards(deal.hands(s), deal.deck_order(s), deal.revealed(s), deal.drawn(s))
        np.testing.assert_array_equal(np.asarray(_observe(4)(s, observer)), np.asarray(obs))


# --------------------------------------------------------------------------- (d) jit / vmap
def test_jit_vmap_and_single_trace():
    obs_list = observations("scenario_4p_full")
    stack = jnp.asarray(_stack(obs_list))
    seats = jnp.arange(len(obs_list)) % 4
    roles = jnp.arange(len(obs_list)) % 5

    @jax.jit
    @chex.assert_max_traces(n=1)
    def everything(x, seat, role, key):
        marg = jax.vmap(lambda o: posterior.exact_posterior(o, 4)["role_marginals"])(x)
        truth = jax.vmap(lambda o, s, r: posterior.claim_truth_probability(o, 4, s, r))(x, seat, role)
        worlds = jax.vmap(lambda k, o: posterior.sample_worlds(k, o, 4, 8))(jax.random.split(key, x.shape[0]), x)
        return marg, truth, worlds, posterior.to_absolute(worlds.hands, 1)

    a, truth, w, absolute = everything(stack, seats, roles, jax.random.PRNGKey(0))
    b, _, _, _ = everything(stack[::-1], seats, roles, jax.random.PRNGKey(1))
    np.testing.assert_allclose(np.asarray(a)[::-1], np.asarray(b), atol=1e-6)
    np.testing.assert_allclose(np.asarray(truth), np.asarray(a)[np.arange(len(a)), seats, roles], atol=1e-6)
    for i in (0, 5, len(obs_list) - 1):
        np.testing.assert_allclose(np.asarray(a[i]), np.asarray(EXACT(stack[i], 4)["role_marginals"]), atol=1e-6)
    B = len(obs_list)
    assert w.hands.shape == (B, 8, 4, 2) and w.deck.shape == (B, 8, 15) and w.drawn.shape == (B, 8, 2)
    np.testing.assert_array_equal(np.asarray(absolute)[:, :, 1], np.asarray(w.hands)[:, :, 0])


def test_hand_table():
    from coupjax import rules
    assert posterior.NUM_HANDS == 21 and posterior.HANDS[0] == ()
    assert posterior.HANDS[1:6] == tuple((r,) for r in range(5))
    assert posterior.HANDS[6:] == rules.KEEPS[5:]
    assert [len(b) for b in posterior.BY_SUM] == [1, 5, 15, 35, 65, 101, 135, 155, 155, 135, 101]
    assert posterior.WIDTHS == (1, 15, 65, 135, 155, 155)
    # every link adds (up) or removes (down) exactly its option's cards
    for table, sign in ((posterior.SUM_UP, 1), (posterior.SUM_DOWN, -1)):
        s, z, o, i = np.nonzero(table >= 0)
        moved = posterior.SUM_STATES[s + sign * z, table[s, z, o, i]] - posterior.SUM_STATES[s, i]
        assert len(s) > 1000 and (moved == sign * posterior.HAND_COUNTS[posterior.OPTION_HAND[z, o]]).all()
