"""Differential test: the JAX engine against the plain-Python model, step by step.

Both are driven by the same protocol names: random legal play, stalling play that
reaches the 200-turn cap, and injected names outside the legal set (forfeits).  Half
the games start from a random deal (`Env.init`: the deck counts as shuffled), half
from an explicit position (`make_position`: random hands, deck order, coins, revealed
cards, seat to act and turn; the deck is drawn in order until the first reshuffle).
The engine runs all games in one vmapped step.

After every step everything is compared, the hidden cards included: hands per seat in
hand-index order, the drawn exchange cards, the deck as a multiset, the deck's order
while the rules fix it (no reshuffle yet), and whether it counts as shuffled.  Nothing
is synced from the engine: the only thing the rules leave to chance, which card a
uniform draw after a reshuffle takes, the model takes from the engine's event
(`RefGame.play(..., draws=)`), and only out of its own deck.
"""
from __future__ import annotations

import collections
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from coupjax import rules
from coupjax.events import last_event
from coupjax.game import board
from coupjax.game import deal
from coupjax.match import compiled
from tests.play import stalling_choice
from tests.reference_model import DrawMismatch, RefGame

ROLE = rules.ROLES


class Row:
    """Game ``i`` of a batched host state, for the one-state readers of `coupjax.game`
    (each attribute read takes row ``i`` of the batch)."""

    def __init__(self, batch, i):
        self.batch, self.i = batch, i

    def __getattr__(self, name):
        return getattr(self.batch, name)[self.i]


def _names(ids):
    return [ROLE[c] for c in ids]


def hidden_differs(g: RefGame, row: Row) -> str | None:
    """What of the hidden cards differs between the model and the engine (None: nothing)."""
    hands = [_names(h) for h in deal.hands(row)]
    if g.hands != hands:
        return f"hands: model {g.hands}, engine {hands}"
    drawn = _names(deal.drawn(row))
    if g.drawn != drawn:
        return f"drawn: model {g.drawn}, engine {drawn}"
    shuffled = deal.deck_shuffled(row)
    if g.shuffled != shuffled:
        return f"deck shuffled: model {g.shuffled}, engine {shuffled}"
    deck = _names(deal.deck_order(row))
    if collections.Counter(g.deck) != collections.Counter(deck):
        return f"deck cards: model {sorted(g.deck)}, engine {sorted(deck)}"
    if not shuffled and g.deck != deck:
        return f"deck order (fixed before a reshuffle): model {g.deck}, engine {deck}"
    return None


def engine_draws(ev, i) -> list[str]:
    """The cards the engine drew in game ``i``'s last step, in order: a redraw after a
    proven claim, then an exchange's two cards."""
    cards = [int(ev.redraw_role[i])] + [int(c) for c in ev.exchange_drawn[i]]
    return [ROLE[c] for c in cards if c >= 0]


def explicit_position(rng: random.Random, n: int) -> dict:
    """A random position as `make_position` and `RefGame` take it (role names)."""
    cards = [r for r in ROLE for _ in range(rules.COPIES_PER_ROLE)]
    rng.shuffle(cards)
    hands = [cards[2 * s: 2 * s + 2] for s in range(n)]
    revealed = [[] for _ in range(n)]
    for s in range(n):  # some seats have lost one card or both
        down = rng.choices((0, 1, 2), (0.75, 0.2, 0.05))[0]
        revealed[s], hands[s] = hands[s][:down], hands[s][down:]
    for s in range(n):  # at least two live seats
        if sum(1 for h in hands if h) < 2 and not hands[s]:
            hands[s], revealed[s] = revealed[s], []
    live = [s for s in range(n) if hands[s]]
    return {"hands": hands, "deck": cards[2 * n:], "revealed": revealed,
            "coins": [rng.choice((0, 1, 2, 2, 3, 5, 7, 9, 11)) for _ in range(n)],
            "current_player": rng.choice(live), "turn": rng.choice((0, 0, 0, 17, 120, 195))}


def initial_states(num_players: int, num_games: int, seed: int, explicit_share: float):
    """Batched engine states and their models: a share of explicit positions, the rest
    random deals."""
    n = num_players
    env = compiled(n)[0]
    dealt = jax.device_get(jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(seed), num_games)))
    rng = random.Random(seed)
    explicit = [i < explicit_share * num_games for i in range(num_games)]
    positions = [explicit_position(rng, n) for _ in range(num_games)]
    ids = lambda rows: deal.hand_arrays([[ROLE.index(c) for c in r] for r in rows], n)  # noqa: E731
    made = jax.device_get(jax.jit(jax.vmap(lambda *a: deal.make_position(n, *a, deck_shuffled=False)))(
        np.stack([ids(p["hands"]) for p in positions]),
        np.stack([deal.deck_array([ROLE.index(c) for c in p["deck"]]) for p in positions]),
        np.asarray([p["coins"] for p in positions], np.int32),
        np.stack([ids(p["revealed"]) for p in positions]),
        np.asarray([p["current_player"] for p in positions], np.int32),
        np.asarray([p["turn"] for p in positions], np.int32)))
    pick = np.asarray(explicit)
    state = jax.tree.map(lambda a, b: np.where(pick.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), made, dealt)
    games = []
    for i in range(num_games):
        model_seed = seed * 100_003 + i
        if explicit[i]:
            games.append(RefGame(n, seed=model_seed, **positions[i]))
        else:  # the deal is random: the model copies its cards (its deck counts as shuffled)
            row = Row(dealt, i)
            games.append(RefGame(n, hands=[_names(h) for h in deal.hands(row)], deck=_names(deal.deck_order(row)),
                                 seed=model_seed, deck_shuffled=True))
    return jax.device_put(state), games, explicit


def run_differential(num_players: int, num_games: int, seed: int, illegal_rate=0.01, stall_share=0.1,
                     explicit_share=0.5):
    env, _, _, _ = compiled(num_players)
    n, A = num_players, env.num_actions
    key = jax.random.PRNGKey(seed + 1)

    @jax.jit
    def step(state, actions, t):
        state = jax.vmap(env.step)(state, actions, jax.random.split(jax.random.fold_in(key, t), num_games))
        return state, jax.vmap(env.placements)(state)

    names = [[rules.action_name(a, seat, n) for a in range(A)] for seat in range(n)]
    every_name = rules.all_protocol_names(n)
    state, games, explicit = initial_states(n, num_games, seed, explicit_share)
    st = jax.device_get(state)
    rngs = [random.Random(seed * 7919 + i) for i in range(num_games)]
    # stalling games among both the explicit and the random deals
    stalls = [(i % int(1 / stall_share)) == 0 for i in range(num_games)] if stall_share else [False] * num_games
    stats = collections.Counter(games=num_games)
    for i, g in enumerate(games):
        assert hidden_differs(g, Row(st, i)) is None, f"game {i} at the start"
    active = [i for i in range(num_games) if not games[i].done]
    t = 0
    while active:
        actions = np.zeros(num_games, np.int32)
        chosen = {}
        for i in active:
            g, rng = games[i], rngs[i]
            legal = g.legal_actions()
            if rng.random() < (illegal_rate / 20 if stalls[i] else illegal_rate):
                name = rng.choice([x for x in every_name if x not in legal])
                stats["forfeits"] += 1
            elif stalls[i]:
                name = stalling_choice(rng, legal)
            else:
                name = rng.choice(legal)
            chosen[i] = name
            actions[i] = rules.action_id(name, g.current_player, n)
        state, places = step(state, jnp.asarray(actions), t)
        t += 1
        st, places = jax.device_get((state, places))
        ev = last_event(st)
        still = []
        for i in active:
            g, row = games[i], Row(st, i)
            was_shuffled = g.shuffled
            draws = engine_draws(ev, i)
            stats["steps"] += 1
            where = f"game {i} ({'explicit' if explicit[i] else 'random'} deal) step {stats['steps']} " \
                f"after {chosen[i]!r}"
            try:
                g.play(chosen[i], draws=draws)
            except DrawMismatch as err:
                raise AssertionError(f"{where}: {err}") from None
            stats["ordered_draws"] += len(draws) if not was_shuffled and not g.shuffled else 0
            assert (diff := hidden_differs(g, row)) is None, f"{where}: {diff}"
            assert g.done == bool(row.terminated), where
            assert g.coins == deal.coins(row), where
            assert g.revealed == [_names(r) for r in deal.revealed(row)], where
            if g.done:
                assert g.placements == [int(s) for s in places[i]], where
                assert g.winner == int(places[i][0]), where
                assert row.rewards[g.winner] == 1.0, where
                stats["capped"] += int(g.turn >= rules.TURN_CAP)
                continue
            assert g.turn == int(board.turn(row)), where
            assert g.phase == rules.PHASES[int(board.phase(row))], where
            assert g.current_player == int(row.current_player), where
            engine_legal = sorted(names[g.current_player][a] for a in np.flatnonzero(row.legal_action_mask))
            assert g.legal_actions() == engine_legal, where
            still.append(i)
        active = still
    return stats


def test_differential_four_players_400_games():
    """Each game is checked step by step against the Python model, so the cost is the
    model's and grows with the games: 400 reach every kind of step (forfeits, capped
    games, draws fixed by the dealt order) in the quick tier."""
    stats = run_differential(4, 400, seed=0)
    assert stats["forfeits"] > 40
    assert stats["capped"] >= 10
    assert stats["ordered_draws"] > 40  # draws whose card the dealt deck order fixes


@pytest.mark.slow
@pytest.mark.usefixtures("optimized_xla")
def test_differential_four_players_2000_games():
    """Quick twin: test_differential_four_players_400_games."""
    stats = run_differential(4, 2000, seed=0)
    assert stats["forfeits"] > 200
    assert stats["capped"] >= 50
    assert stats["ordered_draws"] > 200  # draws whose card the dealt deck order fixes


@pytest.mark.parametrize("num_players", [2, 3, 5, 6])
def test_differential_other_table_sizes(num_players):
    stats = run_differential(num_players, 150, seed=num_players, stall_share=0.1)
    assert stats["forfeits"] > 0 and stats["capped"] > 0 and stats["ordered_draws"] > 0


def test_the_model_takes_only_cards_of_its_deck_for_uniform_draws():
    """The one thing taken from the engine cannot hide a card bug: a uniform draw of a
    card that is not in the deck, or a wrong number of draws, fails."""
    D, A, CA, AM, CO = ROLE
    hands = [[D, AM], [D, D]]  # no duke left in the deck

    def game(shuffled):
        deck = [A, A, A, CA, CA, CA, AM, AM, CO, CO, CO]
        return RefGame(2, hands=[list(h) for h in hands], deck=deck, deck_shuffled=shuffled)

    g = game(True)
    g.play("exchange")
    g.play("challenge", draws=[CO])  # a proven ambassador: seat 0 redraws (uniform)
    assert g.hands[0] == [D, CO] and g.phase == "lose"
    g.play("reveal:0", draws=[A, A])  # then the exchange resolves: two uniform draws
    assert g.drawn == [A, A] and g.deck.count(A) == 1
    for shuffled, draws in ((True, [D, A]), (True, [CO]), (True, [CO, CO, CO]), (False, [CA, CA, CA])):
        g = game(shuffled)
        g.play("exchange")
        with pytest.raises(DrawMismatch):
            g.play("pass", draws=draws)
    g = game(False)  # before a reshuffle the deck's order decides, whatever the engine drew
    g.play("exchange")
    g.play("pass", draws=[CA, CA])
    assert g.drawn == [A, A]
