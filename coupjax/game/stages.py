"""The rules as pure stage functions on `State`; `apply_action` chains them into one step.

A step runs a fixed chain of stages, each gated by a boolean instead of branched,
because under `vmap` every branch of a `lax.switch` runs anyway::

    decision (declare | react | answer block | reveal | keep | forfeit)
      -> pay a pending loss -> resolve the main action -> pay the target's loss
      -> end the turn -> (the env derives the observation, legal mask, rewards)

A stage that needs a decision (a 2-card loss, the exchange choice, the next responder)
sets the phase and ``current_player`` and switches the later stages off.  Every stage
takes the state and a ``do`` flag (bool[]) and returns the state unchanged where
``do`` is False.  The table size is static: it is the state's number of rows.
"""
from __future__ import annotations

import jax.numpy as jnp

from coupjax import rules
from coupjax.game import board
from coupjax.game.tables import role_counts, tables, take
from coupjax.state import MAX_REVEALS, Event, State

RESOLVE_NEXT, END_TURN_NEXT = 1, 0  # `State._after_loss`: what follows a chosen loss


def _n(s: State) -> int:
    return s._hands.shape[0]


def blank_event(num_players: int, step=-1, turn=0, seat=0, phase=rules.PH_ACTION, action=-1, actor=0, main_action=-1,
                target=-1) -> Event:
    """An event with nothing happened yet (the fields a step fills in are -1 / False)."""
    i32 = lambda v, shape=(): jnp.full(shape, v, jnp.int32)  # noqa: E731
    return Event(
        step=i32(step), turn=i32(turn), seat=i32(seat), phase=i32(phase), action=i32(action),
        forfeit=jnp.array(False), actor=i32(actor), main_action=i32(main_action), target=i32(target),
        claim_role=i32(-1), challenged_seat=i32(-1), challenged_role=i32(-1), bluff_caught=jnp.array(False),
        redraw_role=i32(-1), exchange_drawn=i32(-1, (2,)), reveal_seat=i32(-1, (MAX_REVEALS,)),
        reveal_role=i32(-1, (MAX_REVEALS,)), reveal_index=i32(-1, (MAX_REVEALS,)),
        eliminated=jnp.zeros(num_players, bool), resolved=jnp.array(False),
        turn_ended=jnp.array(False), game_over=jnp.array(False),
    )


# ------------------------------------------------------------------ the chain
def apply_action(s: State, action, u) -> State:
    """One decision of ``s.current_player``: the chain of stages (module doc).

    ``action``: int32 id (anything outside the legal set forfeits); ``u``: two random
    uint32 words (a redraw after a proven claim; an exchange's two draws).  Returns the
    state with the event, ``terminated`` and ``rewards`` set; the observation and legal
    mask are stale (the env derives them once, after its own selects).
    """
    n = _n(s)
    T = tables(n)
    lay = T.layout
    p, phase = s.current_player, s._phase
    a = jnp.clip(action, 0, T.num_actions - 1)
    legal = take(s.legal_action_mask, a) & (action >= 0) & (action < T.num_actions)
    forfeit = ~legal
    s = s.replace(_event=blank_event(
        n, s._step_count, s._turn, p, phase, action, s._actor, s._action, s._target).replace(forfeit=forfeit))

    in_react, in_answer = phase == rules.PH_REACT, phase == rules.PH_ANSWER_BLOCK
    is_pass = legal & (a == lay.reaction + rules.PASS)
    is_challenge = legal & (a == lay.reaction + rules.CHALLENGE)

    # ---- forfeit: the sender reveals everything and is out at once
    s = reveal_all(s, forfeit, p)
    s = return_drawn(s, forfeit & (phase == rules.PH_EXCHANGE))

    # ---- decisions
    s, resolve = declare(s, legal & (phase == rules.PH_ACTION), a)
    s = block(s, legal & in_react & (a >= lay.block) & (a < lay.reveal), a)
    s = reveal(s, legal & (phase == rules.PH_LOSE), p, a - lay.reveal)
    s = keep(s, legal & (phase == rules.PH_EXCHANGE), a)
    s, holds, claimant = truth_check(s, is_challenge, u[0])
    # who loses next, and what follows the loss
    loss_seat = jnp.where(holds, p, claimant)
    after = jnp.where(holds == in_react, RESOLVE_NEXT, END_TURN_NEXT)
    refund = is_challenge & in_react & ~holds & (s._action == rules.ASSASSINATE)
    s = s.replace(_coins=s._coins + jnp.where((jnp.arange(n) == s._actor) & refund, rules.ACTION_COST[rules.ASSASSINATE], 0))
    # a pass (or a forfeit) in the reaction window hands the floor on
    advance = in_react & (is_pass | forfeit)
    nxt, has_next = board.next_alive_after(s, s._actor, p)
    s = s.replace(current_player=jnp.where(advance & has_next, nxt, s.current_player))
    resolve = resolve | (advance & ~has_next)
    after_lose = (phase == rules.PH_LOSE)
    resolve = resolve | (after_lose & (s._after_loss == RESOLVE_NEXT))
    end = (after_lose & (s._after_loss == END_TURN_NEXT)) | (in_answer & is_pass)
    end = end | (forfeit & ~in_react & ~after_lose) | (legal & (phase == rules.PH_EXCHANGE))

    over = board.is_over(s)
    # ---- the loss caused by a challenge
    s, done_loss = pay_loss(s, is_challenge & ~over, loss_seat, after)
    resolve = (resolve | (done_loss & (after == RESOLVE_NEXT))) & ~board.is_over(s)
    end = end | (done_loss & (after == END_TURN_NEXT))

    # ---- resolve the main action
    s, end_now, target_loss = resolve_action(s, resolve, u[1])
    end = end | end_now
    s, done_loss = pay_loss(s, target_loss & ~board.is_over(s), s._target, END_TURN_NEXT)
    end = end | done_loss

    # ---- end of turn, end of match
    over = board.is_over(s)
    s, capped = end_turn(s, end & ~over)
    return finish(s, over | capped)


# ------------------------------------------------------------------ decisions
def declare(s: State, do, a):
    """Pay the cost; open the reaction window, or resolve at once (income, coup).

    Returns (state, the action resolves now).
    """
    n = _n(s)
    T = tables(n)
    p = s.current_player
    kind = take(T.main_kind, a)
    off = take(T.target_offset, a)
    target = jnp.where(off >= 0, (p + off) % n, -1)
    claim = take(T.claim, jnp.clip(kind, 0))
    seats = jnp.arange(n)
    coins = s._coins - jnp.where(do & (seats == p), take(T.cost, jnp.clip(kind, 0)), 0)
    claims = s._claims + ((seats == p)[:, None] & (jnp.arange(rules.NUM_ROLES) == claim) & do)
    opens = take(T.opens_window, jnp.clip(kind, 0))
    first, _ = board.next_alive_after(s, p, p)
    ev = s._event
    s = s.replace(
        _coins=coins, _claims=claims.astype(jnp.int32),
        _action=jnp.where(do, kind, s._action), _target=jnp.where(do, target, s._target),
        _actor=jnp.where(do, p, s._actor),
        _phase=jnp.where(do & opens, rules.PH_REACT, s._phase),
        current_player=jnp.where(do & opens, first, s.current_player),
        _event=ev.replace(
            main_action=jnp.where(do, kind, ev.main_action), target=jnp.where(do, target, ev.target),
            claim_role=jnp.where(do, claim, ev.claim_role)),
    )
    return s, do & ~opens


def block(s: State, do, a):
    """The responder claims a blocking role; the actor answers next."""
    n = _n(s)
    T = tables(n)
    p = s.current_player
    role = take(T.block_roles, jnp.clip(a - T.layout.block, 0, 3))
    seats = jnp.arange(n)
    blocks = s._blocks + ((seats == p)[:, None] & (jnp.arange(rules.NUM_ROLES) == role) & do)
    return s.replace(
        _blocks=blocks.astype(jnp.int32), _blocker=jnp.where(do, p, s._blocker),
        _block_role=jnp.where(do, role, s._block_role),
        _phase=jnp.where(do, rules.PH_ANSWER_BLOCK, s._phase),
        current_player=jnp.where(do, s._actor, s.current_player),
        _event=s._event.replace(claim_role=jnp.where(do, role, s._event.claim_role)),
    )


def truth_check(s: State, do, u):
    """A challenge of the actor's claim (react) or of the block (answer_block).

    Returns (state, claimant held the role, claimant).  A proven card goes into the
    deck, which is reshuffled, and the claimant draws a replacement into that slot
    (a renewal).  A caught bluff is a public fact: the claimant's hand holds no card
    of the role (``_disproven``) until the hand is renewed.
    """
    n = _n(s)
    T = tables(n)
    p = s.current_player
    of_block = s._phase == rules.PH_ANSWER_BLOCK
    claimant = jnp.where(of_block, s._blocker, s._actor)
    role = jnp.where(of_block, s._block_role, take(T.claim, jnp.clip(s._action, 0)))
    hand = take(s._hands, claimant)
    holds = do & jnp.any(hand == role)
    slot = jnp.where(hand[0] == role, 0, 1)
    s = push(s, holds, role)
    s, card = draw(s, holds, u)
    seats = jnp.arange(n)
    is_claimant = seats == claimant
    hands = jnp.where(is_claimant[:, None] & (jnp.arange(2) == slot) & holds, card, s._hands)
    winner = jnp.where(holds, claimant, p)
    loser = jnp.where(holds, p, claimant)
    caught = is_claimant[:, None] & (jnp.arange(rules.NUM_ROLES) == role) & do & ~holds
    s = s.replace(
        _hands=hands, _disproven=s._disproven | caught,
        _challenges_won=s._challenges_won + (do & (seats == winner)),
        _challenges_lost=s._challenges_lost + (do & (seats == loser)),
    )
    s = renew(s, holds, claimant)
    ev = s._event
    s = s.replace(_event=ev.replace(
        challenged_seat=jnp.where(do, claimant, ev.challenged_seat),
        challenged_role=jnp.where(do, role, ev.challenged_role),
        bluff_caught=do & ~holds,
        redraw_role=jnp.where(holds, card, ev.redraw_role)))
    return s, holds, claimant


def keep(s: State, do, a):
    """The exchanging actor keeps a multiset; the other two cards go back, reshuffled."""
    n = _n(s)
    T = tables(n)
    k = jnp.clip(a - T.layout.keep, 0, rules.NUM_KEEPS - 1)
    p = s.current_player
    pool = role_counts(take(s._hands, p)) + role_counts(s._drawn)
    back = pool - take(T.keep_counts, k)
    first = jnp.argmax(back > 0)
    second = jnp.argmax((back - (jnp.arange(rules.NUM_ROLES) == first)) > 0)
    s = push_two(s, do, first, second)
    hands = jnp.where((jnp.arange(n) == p)[:, None] & do, take(T.keep_hand, k), s._hands)
    s = s.replace(_hands=hands, _drawn=jnp.where(do, -1, s._drawn))
    return renew(s, do, p)


def return_drawn(s: State, do):
    """An exchanging actor who forfeits puts the drawn cards back (reshuffled)."""
    s = push_two(s, do & (s._drawn[0] >= 0), s._drawn[0], s._drawn[1])
    return s.replace(_drawn=jnp.where(do, -1, s._drawn))


# ------------------------------------------------------------------ automatic stages
def resolve_action(s: State, do, u):
    """The main action takes effect.  Returns (state, turn ends now, target must lose)."""
    n = _n(s)
    T = tables(n)
    seats = jnp.arange(n)
    kind, actor, target = s._action, s._actor, s._target
    target_alive = (target >= 0) & board.alive(s)[jnp.clip(target, 0)]
    stolen = jnp.where((kind == rules.STEAL) & target_alive, jnp.minimum(rules.STEAL_AMOUNT, take(s._coins, target)), 0)
    gain = take(T.gain, jnp.clip(kind, 0)) + stolen
    coins = s._coins + jnp.where(do & (seats == actor), gain, 0) - jnp.where(do & (seats == target), stolen, 0)
    s = s.replace(_coins=coins)
    exchange = do & (kind == rules.EXCHANGE)
    # two draws from one word, mixed radix (bias below 1e-7)
    s, c1 = draw(s, exchange, u)
    s, c2 = draw(s, exchange, u // jnp.maximum(s._deck_size + 1, 1).astype(jnp.uint32))
    drawn = jnp.stack([c1, c2])
    ev = s._event
    s = s.replace(
        _drawn=jnp.where(exchange, drawn, s._drawn),
        _phase=jnp.where(exchange, rules.PH_EXCHANGE, s._phase),
        current_player=jnp.where(exchange, actor, s.current_player),
        _event=ev.replace(resolved=ev.resolved | (do & (target_alive | (target < 0))),
                          exchange_drawn=jnp.where(exchange, drawn, ev.exchange_drawn)),
    )
    hits = (kind == rules.COUP) | (kind == rules.ASSASSINATE)
    target_loss = do & hits & target_alive
    return s, do & ~exchange & ~target_loss, target_loss


def pay_loss(s: State, do, seat, after):
    """``seat`` loses one influence: a choice with 2 cards, automatic with 1, nothing with 0.

    Returns (state, the loss is paid and play goes on in this step).
    """
    hidden = (take(s._hands, seat) >= 0).sum()
    choose = do & (hidden >= 2)
    s = reveal(s, do & (hidden == 1), seat, 0)
    s = s.replace(
        _phase=jnp.where(choose, rules.PH_LOSE, s._phase),
        current_player=jnp.where(choose, seat, s.current_player),
        _after_loss=jnp.where(choose, after, s._after_loss),
    )
    return s, do & ~choose


def end_turn(s: State, do):
    """Count the turn; stop at the cap, else hand the turn to the next live seat.

    Returns (state, the turn cap ended the match).
    """
    turn = s._turn + do
    capped = do & (turn >= rules.TURN_CAP)
    nxt, _ = board.next_alive_after(s, s._actor, s._actor)
    go = do & ~capped
    s = s.replace(
        _turn=turn, _phase=jnp.where(go, rules.PH_ACTION, s._phase),
        current_player=jnp.where(go, nxt, s.current_player), _actor=jnp.where(go, nxt, s._actor),
        _action=jnp.where(go, -1, s._action), _target=jnp.where(go, -1, s._target),
        _blocker=jnp.where(go, -1, s._blocker), _block_role=jnp.where(go, -1, s._block_role),
        _event=s._event.replace(turn_ended=do),
    )
    return s, capped


def finish(s: State, over) -> State:
    """Count the step; where the match is over, set ``terminated`` and the rewards."""
    return s.replace(
        terminated=over, rewards=jnp.where(over, board.terminal_rewards(s), 0.0).astype(jnp.float32),
        _step_count=s._step_count + 1, _event=s._event.replace(game_over=over),
    )


# ------------------------------------------------------------------ cards
def reveal(s: State, do, seat, index):
    """``seat`` reveals its hidden card at ``index``; the other card moves to index 0."""
    n = _n(s)
    seat = jnp.clip(seat, 0, n - 1)
    index = jnp.clip(index, 0, 1)
    hand = take(s._hands, seat)
    role = take(hand, index)
    kept = take(hand, 1 - index)
    row = (jnp.arange(n) == seat) & do
    hands = jnp.where(row[:, None], jnp.stack([kept, jnp.int32(-1)]), s._hands)
    nrev = (take(s._revealed, seat) >= 0).sum()
    revealed = jnp.where(row[:, None] & (jnp.arange(2) == nrev), role, s._revealed)
    out = do & (kept < 0)
    ev = s._event
    slot = (jnp.arange(MAX_REVEALS) == (ev.reveal_seat >= 0).sum()) & do
    return s.replace(
        _hands=hands, _revealed=revealed,
        _elim_order=jnp.where(row & out, s._num_elim, s._elim_order), _num_elim=s._num_elim + out,
        _event=ev.replace(
            reveal_seat=jnp.where(slot, seat, ev.reveal_seat), reveal_role=jnp.where(slot, role, ev.reveal_role),
            reveal_index=jnp.where(slot, index, ev.reveal_index), eliminated=ev.eliminated | (row & out)),
    )


def reveal_all(s: State, do, seat):
    """A forfeit: ``seat`` reveals every hidden card at once and is eliminated.

    Forfeits come first in a step, so its reveals take the event's first slots.
    """
    n = _n(s)
    hand = take(s._hands, seat)
    row = (jnp.arange(n) == seat) & do
    # hidden + revealed is always 2: fill the empty revealed slots with the hand in order
    shown = take(s._revealed, seat)
    first_empty = (shown >= 0).sum()
    revealed_row = jnp.where(first_empty == 0, hand, jnp.stack([shown[0], hand[0]]))
    had = hand >= 0
    ev = s._event
    slot = jnp.arange(MAX_REVEALS)
    return s.replace(
        _hands=jnp.where(row[:, None], -1, s._hands),
        _revealed=jnp.where(row[:, None], revealed_row, s._revealed),
        _elim_order=jnp.where(row, s._num_elim, s._elim_order), _num_elim=s._num_elim + do,
        _event=ev.replace(
            reveal_seat=jnp.where(do & (slot < 2) & had[jnp.clip(slot, 0, 1)], seat, ev.reveal_seat),
            reveal_role=jnp.where(do & (slot < 2), jnp.pad(hand, (0, MAX_REVEALS - 2), constant_values=-1),
                                  ev.reveal_role),
            reveal_index=jnp.where(do & (slot < 2) & had[jnp.clip(slot, 0, 1)], slot, ev.reveal_index),
            eliminated=ev.eliminated | row),
    )


def push(s: State, do, card):
    """Put ``card`` into the deck; the deck counts as reshuffled from now on."""
    idx = jnp.arange(rules.DECK_SIZE)
    return s.replace(
        _deck=jnp.where(do & (idx == s._deck_size), card, s._deck),
        _deck_size=s._deck_size + do, _shuffled=s._shuffled | do,
    )


def push_two(s: State, do, first, second):
    """Put two cards into the deck (exchange returns); reshuffled from now on."""
    idx = jnp.arange(rules.DECK_SIZE)
    deck = jnp.where(do & (idx == s._deck_size), first, s._deck)
    deck = jnp.where(do & (idx == s._deck_size + 1), second, deck)
    return s.replace(_deck=deck, _deck_size=s._deck_size + 2 * do, _shuffled=s._shuffled | do)


def draw(s: State, do, u):
    """Draw the next card: the top before any reshuffle, a uniform card after one.

    Returns (state, the card or -1).
    """
    size = s._deck_size
    top = size - 1
    j = jnp.where(s._shuffled, (u % jnp.maximum(size, 1).astype(jnp.uint32)).astype(jnp.int32), top)
    card = take(s._deck, jnp.clip(j, 0))
    idx = jnp.arange(rules.DECK_SIZE)
    deck = jnp.where(do & (idx == j), take(s._deck, jnp.clip(top, 0)), s._deck)
    deck = jnp.where(do & (idx == top), -1, deck)
    return s.replace(_deck=deck, _deck_size=size - do), jnp.where(do, card, -1)


def renew(s: State, do, seat):
    """A hand changed unseen: its claim record restarts and its proven-absent roles are
    lifted (a seat with one holds a single card, a caught bluff having cost it the
    other, so a redraw replaces the whole hand; an exchange may draw the role)."""
    row = (jnp.arange(_n(s)) == seat) & do
    return s.replace(
        _claims=jnp.where(row[:, None], 0, s._claims), _blocks=jnp.where(row[:, None], 0, s._blocks),
        _renewals=s._renewals + row, _disproven=s._disproven & ~row[:, None],
    )
