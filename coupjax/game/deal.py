"""Deals and positions: the fresh-match template, random deals, explicit positions,
sampled worlds (other hidden cards under the same public state), and readers of a
state's cards for Python code.

`make_position` and `replace_hidden` are pure and jittable; the readers (`hands`,
`deck_order`, ...) take one unbatched state and return Python lists.  Outside the
`coupjax.game` package, code reads a state's private fields only through these.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.game import board
from coupjax.game.stages import END_TURN_NEXT, blank_event
from coupjax.game.tables import tables
from coupjax.game.views import legal_mask, observation_size, observe, with_views
from coupjax.state import State

DEAL_WORDS_PER_SEAT = 1  # two swaps per random word: 2n swaps take n words


def _build_template(n: int) -> State:
    A = tables(n).num_actions
    i32 = lambda v, shape=(): jnp.full(shape, v, jnp.int32)  # noqa: E731
    s = State(
        current_player=i32(0), observation=jnp.zeros(observation_size(n), jnp.float32),
        rewards=jnp.zeros(n, jnp.float32), terminated=jnp.array(False), truncated=jnp.array(False),
        legal_action_mask=jnp.zeros(A, bool), _step_count=i32(0), _turn=i32(0), _phase=i32(rules.PH_ACTION),
        _hands=i32(0, (n, 2)), _revealed=i32(-1, (n, 2)), _coins=i32(rules.START_COINS, (n,)),
        _deck=i32(-1, (rules.DECK_SIZE,)), _deck_size=i32(rules.DECK_SIZE - 2 * n), _shuffled=jnp.array(False),
        _drawn=i32(-1, (2,)), _actor=i32(0), _action=i32(-1), _target=i32(-1), _blocker=i32(-1),
        _block_role=i32(-1), _after_loss=i32(END_TURN_NEXT), _elim_order=i32(-1, (n,)), _num_elim=i32(0),
        _claims=i32(0, (n, rules.NUM_ROLES)), _blocks=i32(0, (n, rules.NUM_ROLES)), _challenges_won=i32(0, (n,)),
        _challenges_lost=i32(0, (n,)), _renewals=i32(0, (n,)), _disproven=jnp.zeros((n, rules.NUM_ROLES), bool),
        _event=blank_event(n),
    )
    # any full hands: the legal mask at the start ignores cards; the own-hand part of
    # the observation is filled in by each deal
    s = s.replace(legal_action_mask=legal_mask(s), observation=observe(s, s.current_player))
    own = rules.HAND_SIZE * rules.NUM_ROLES
    return s.replace(_hands=i32(-1, (n, 2)), observation=s.observation.at[:own].set(0.0))


@functools.lru_cache(maxsize=None)
def template(num_players: int) -> State:
    """The fresh-match state without cards: every seat 2 coins, seat 0 to act, the legal
    mask of a first turn and the observation without its own-hand part.  Built once per
    table size, by one compiled function (op by op it was ~100 small compilations, a
    second of every process's first deal even with the compilation cache warm), and run
    at once even when first asked for inside a trace."""
    n = rules.check_num_players(num_players)
    # lowered and compiled explicitly: a compiled function runs at once even inside an
    # outer trace (a plain jit call there would return tracers)
    s = jax.jit(_build_template, static_argnums=0).lower(n).compile()()
    # NumPy leaves: constants wherever the template is used, whatever the trace context
    # (a shard_map or a mesh) in which it was first asked for
    return jax.tree.map(np.asarray, s)


def dealt_cards(words, num_players: int) -> jax.Array:
    """The 15 cards with a uniform random choice in the first 2n places (the hands).

    A partial Fisher-Yates (position i swaps with a uniform j >= i), two swaps per
    32-bit word (bias below 1e-7); the remaining places hold the rest in some order.
    """
    deal = 2 * num_players
    cards, idx = jnp.asarray(tables(num_players).cards), jnp.arange(rules.DECK_SIZE)
    for i in range(deal):
        w = words[i // 2]
        w = w if i % 2 == 0 else w // jnp.uint32(rules.DECK_SIZE - i + 1)  # the word's second draw
        j = i + (w % jnp.uint32(rules.DECK_SIZE - i)).astype(jnp.int32)
        a, b = cards[i], cards[j]
        cards = jnp.where(idx == i, b, jnp.where(idx == j, a, cards))
    return cards


def deal_words(num_players: int) -> int:
    """Random uint32 words a deal consumes."""
    return DEAL_WORDS_PER_SEAT * num_players


def fresh(words, num_players: int) -> State:
    """The template with dealt hands and a deck that counts as shuffled (no own-hand
    observation filled in).

    Only the hands are dealt; the deck's order is uniformly random, so each draw takes a
    uniform card, which has the same distribution as the top of a shuffled deck.
    """
    n = num_players
    cards = dealt_cards(words, n)
    hands = cards[: 2 * n].reshape(n, 2)
    storage = jnp.where(jnp.arange(rules.DECK_SIZE) < rules.DECK_SIZE - 2 * n, cards[::-1], -1)
    return template(n).replace(_hands=hands, _deck=storage, _shuffled=jnp.array(True))


def deal(words, num_players: int) -> State:
    """A fresh random match with the observation of seat 0 complete."""
    s = fresh(words, num_players)
    own = (s._hands[0][:, None] == jnp.arange(rules.NUM_ROLES)).astype(jnp.float32).ravel()
    return s.replace(observation=jnp.asarray(s.observation).at[:own.size].set(own))


# ------------------------------------------------------------------ explicit positions
def _deck_storage(deck):
    """Deck in draw order (next first, -1 padded to 15) -> engine storage (top at size-1)."""
    deck = jnp.asarray(deck, jnp.int32)
    size = (deck >= 0).sum().astype(jnp.int32)
    idx = size - 1 - jnp.arange(rules.DECK_SIZE)
    return jnp.where(idx >= 0, deck[jnp.clip(idx, 0)], -1), size


def make_position(num_players: int, hands, deck, coins=None, revealed=None, current_player=0, turn=0,
                  deck_shuffled=False) -> State:
    """A state at the start of ``current_player``'s turn from an explicit position.

    hands: int[n, 2] hidden role ids, -1 for an empty slot (cards compacted left);
    deck: int[15] role ids in draw order, next card first, -1 padded; coins: int[n];
    revealed: int[n, 2] revealed role ids, -1 padded; turn: turns already played;
    deck_shuffled: the deck counts as shuffled (draws take a uniform card), as after a
    random deal; False: draws follow the given order until the first reshuffle.
    Seats with no hidden card are eliminated, in seat order.  Jittable; validate card
    conservation beforehand with `check_cards`.
    """
    n = num_players
    hands = jnp.asarray(hands, jnp.int32)
    hands = jnp.where((hands[:, :1] < 0) & (hands[:, 1:] >= 0), hands[:, ::-1], hands)  # compact left
    coins = jnp.full(n, rules.START_COINS, jnp.int32) if coins is None else jnp.asarray(coins, jnp.int32)
    revealed = jnp.full((n, 2), -1, jnp.int32) if revealed is None else jnp.asarray(revealed, jnp.int32)
    storage, size = _deck_storage(deck)
    out = hands[:, 0] < 0
    elim_order = jnp.where(out, jnp.cumsum(out) - 1, -1).astype(jnp.int32)
    player = jnp.asarray(current_player, jnp.int32)
    s = template(n).replace(
        _hands=hands, _deck=storage, _deck_size=size, _coins=coins, _revealed=revealed,
        _elim_order=elim_order, _num_elim=out.sum().astype(jnp.int32), _turn=jnp.asarray(turn, jnp.int32),
        current_player=player, _actor=player, _shuffled=jnp.asarray(deck_shuffled, bool),
        _disproven=jnp.zeros((n, rules.NUM_ROLES), bool),  # no public record yet
    )
    over = board.is_over(s)
    s = s.replace(terminated=over, rewards=jnp.where(over, board.terminal_rewards(s), 0.0).astype(jnp.float32))
    return with_views(s)


def replace_hidden(state: State, hands, deck, drawn=None) -> State:
    """The same public state with other hidden cards (a sampled world).

    hands: int[n, 2] (same hidden counts per seat as before); deck: int[15] in draw
    order, next first, -1 padded; drawn: int[2] an exchanging actor's drawn cards
    (None keeps them).  The previous step's event, which holds private fields, is
    blanked.  Jittable.
    """
    storage, size = _deck_storage(deck)
    n = state._hands.shape[0]
    s = state.replace(_hands=jnp.asarray(hands, jnp.int32), _deck=storage, _deck_size=size,
                      _event=template(n)._event)
    if drawn is not None:
        s = s.replace(_drawn=jnp.asarray(drawn, jnp.int32))
    return with_views(s)


def scramble_unseen(state: State, seat, key) -> State:
    """The same state as ``seat`` sees it, with everything it cannot see scrambled.

    The unseen cards (other seats' hidden cards, the deck, another seat's drawn
    exchange cards) are permuted among their places uniformly at random, and the
    previous step's private event fields that belong to another seat (a redrawn card,
    the cards drawn in an exchange, which hand index was revealed, the reveal or keep
    chosen) are replaced by random values.  ``seat``'s observation and legal mask are
    unchanged.  Jittable; the basis of `coupjax.testing.check_policy`'s leak test.
    """
    n = state._hands.shape[0]
    k_perm, k_ev = jax.random.split(key)
    seat = jnp.asarray(seat, jnp.int32)
    idx = jnp.arange(rules.DECK_SIZE)
    size = state._deck_size
    deck = jnp.where(idx < size, state._deck[jnp.clip(size - 1 - idx, 0)], -1)  # draw order
    other_draws = (state._phase == rules.PH_EXCHANGE) & (state._actor != seat)
    drawn = jnp.where(other_draws, state._drawn, -1)
    pool = jnp.concatenate([state._hands.ravel(), deck, drawn])
    owner = jnp.concatenate([jnp.repeat(jnp.arange(n), 2), jnp.full(rules.DECK_SIZE + 2, -1)])
    unseen = (pool >= 0) & (owner != seat)
    r = jax.random.uniform(k_perm, pool.shape)
    src = jnp.argsort(jnp.where(unseen, r, 2.0), stable=True)  # unseen places in random order, then the rest
    dst = jnp.argsort(jnp.where(unseen, 0, 1), stable=True)  # unseen places in order, then the rest
    new = pool.at[dst].set(pool[src])
    hands = new[: 2 * n].reshape(n, 2)
    new_deck = new[2 * n: 2 * n + rules.DECK_SIZE]
    new_drawn = jnp.where(other_draws, new[2 * n + rules.DECK_SIZE:], state._drawn)
    storage, size = _deck_storage(new_deck)

    ev = state._event
    T = tables(n)
    u = jax.random.randint(k_ev, (8,), 0, 1 << 20)
    roles = u % rules.NUM_ROLES
    lay = T.layout
    private_action = ((ev.phase == rules.PH_LOSE) | (ev.phase == rules.PH_EXCHANGE)) & (ev.seat != seat) & (ev.action >= 0)
    random_action = jnp.where(ev.phase == rules.PH_LOSE, lay.reveal + u[0] % 2, lay.keep + u[0] % rules.NUM_KEEPS)
    ev = ev.replace(
        action=jnp.where(private_action, random_action, ev.action),
        redraw_role=jnp.where((ev.redraw_role >= 0) & (ev.challenged_seat != seat), roles[1], ev.redraw_role),
        exchange_drawn=jnp.where((ev.exchange_drawn >= 0) & (ev.actor != seat), roles[2:4], ev.exchange_drawn),
        reveal_index=jnp.where((ev.reveal_index >= 0) & (ev.reveal_seat != seat), u[4:8] % 2, ev.reveal_index),
    )
    s = state.replace(_hands=hands, _deck=storage, _deck_size=size, _drawn=new_drawn, _event=ev)
    return s.replace(legal_action_mask=jnp.where(s.terminated, True, legal_mask(s)),
                     observation=observe(s, s.current_player))


def check_cards(hands, deck, revealed, drawn=()) -> None:
    """Raise ValueError unless hands + deck + revealed + drawn hold 3 of each role."""
    cards = [c for row in hands for c in row if c >= 0] + [c for c in deck if c >= 0]
    cards += [c for row in revealed for c in row if c >= 0] + [c for c in drawn if c >= 0]
    counts = np.bincount(np.asarray(cards, int), minlength=rules.NUM_ROLES) if cards else np.zeros(rules.NUM_ROLES, int)
    if len(counts) != rules.NUM_ROLES or (counts != rules.COPIES_PER_ROLE).any():
        got = ", ".join(f"{rules.ROLES[r]}={counts[r]}" for r in range(rules.NUM_ROLES))
        raise ValueError(f"hands, deck and revealed cards must hold 3 of each role; got {got}")


def hidden_hands(state: State):
    """int32[n, 2]: every seat's hidden cards (-1 empty) -- the ground truth, for test
    harnesses and evaluations that score a seat's view against it.  Jittable."""
    return state._hands


# ------------------------------------------------------------------ readers (one state)
def hands(state: State) -> list[list[int]]:
    """Each seat's hidden role ids, in the order ``reveal:<i>`` indexes."""
    return [[int(c) for c in row if c >= 0] for row in np.asarray(state._hands)]


def deck_order(state: State) -> list[int]:
    """Cards in the deck, next first (after a reshuffle any order is equally likely)."""
    size = int(state._deck_size)
    return [int(c) for c in np.asarray(state._deck)[:size][::-1]]


def deck_shuffled(state: State) -> bool:
    """Whether the deck counts as shuffled (draws take a uniform card)."""
    return bool(state._shuffled)


def drawn(state: State) -> list[int]:
    """The exchanging actor's drawn cards (empty outside an exchange choice)."""
    return [int(c) for c in np.asarray(state._drawn) if c >= 0]


def revealed(state: State) -> list[list[int]]:
    return [[int(c) for c in row if c >= 0] for row in np.asarray(state._revealed)]


def coins(state: State) -> list[int]:
    return [int(c) for c in np.asarray(state._coins)]


def hand_arrays(hand_lists, num_players: int) -> np.ndarray:
    """List of per-seat role-id lists -> int32[n, 2], -1 padded."""
    out = np.full((num_players, 2), -1, np.int32)
    for seat, row in enumerate(hand_lists):
        if len(row) > 2:
            raise ValueError(f"seat {seat} holds {len(row)} cards; at most 2")
        out[seat, : len(row)] = row
    return out


def deck_array(deck_list) -> np.ndarray:
    out = np.full(rules.DECK_SIZE, -1, np.int32)
    out[: len(deck_list)] = deck_list
    return out
