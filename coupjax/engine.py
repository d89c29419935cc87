"""The Coup engine: `Env.init` and `Env.step`, pure and jit/vmap-able (Pgx v2 style).

Every decision is one `step` by `state.current_player`.  A step runs a fixed chain of
stages, each gated by a boolean instead of branched, because under `vmap` every branch
of a `lax.switch` runs anyway::

    decision (declare | react | answer block | reveal | keep | forfeit)
      -> pay a pending loss -> resolve the main action -> pay the target's loss
      -> end the turn -> observation, legal mask, rewards

A stage that needs a decision (a 2-card loss, the exchange choice, the next responder)
sets the phase and `current_player` and switches the later stages off.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules as R
from coupjax.state import MAX_REVEALS, Event, State

RESOLVE_NEXT, END_TURN_NEXT = 1, 0

SEAT_FEATURES = (
    ("coins", 1), ("hidden", 1), ("alive", 1), ("revealed", R.NUM_ROLES), ("claims", R.NUM_ROLES),
    ("blocks", R.NUM_ROLES), ("challenges_won", 1), ("challenges_lost", 1), ("renewals", 1),
)
NUM_SEAT_FEATURES = sum(size for _, size in SEAT_FEATURES)  # 21


def observation_layout(num_players: int) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Name -> (start index, shape) of each part of the flat observation.

    Seats are relative to the observer (row 0 is the observer, row k the seat k places
    clockwise).  One-hot blocks are all zero when the thing is absent (-1).

    own_hand [2, 5]     one-hot role of the observer's hidden card at hand index 0 and 1
    drawn [5]           counts of the 2 cards drawn in the observer's own exchange choice
    seats [n, 21]       per relative seat: coins, hidden cards, alive, revealed counts per
                        role [5], claims per role since the hand was renewed [5], blocks
                        per role since renewal [5], challenges won, challenges lost,
                        hand renewals (redraws after a proven claim, exchanges)
    phase [5]           one-hot rules.PHASES
    main_action [7]     one-hot of the pending main action (rules.MAIN_ACTIONS)
    actor [n]           one-hot relative seat of the turn's actor
    target [n]          one-hot relative seat of the target
    claim [5]           one-hot role claimed by the main action
    blocker [n]         one-hot relative seat of the blocker
    block_role [5]      one-hot role claimed by the block
    turn [1]            turns completed
    """
    n = num_players
    parts = [
        ("own_hand", (2, R.NUM_ROLES)), ("drawn", (R.NUM_ROLES,)), ("seats", (n, NUM_SEAT_FEATURES)),
        ("phase", (R.NUM_PHASES,)), ("main_action", (R.NUM_MAIN_ACTIONS,)), ("actor", (n,)),
        ("target", (n,)), ("claim", (R.NUM_ROLES,)), ("blocker", (n,)), ("block_role", (R.NUM_ROLES,)),
        ("turn", (1,)),
    ]
    layout, start = {}, 0
    for name, shape in parts:
        layout[name] = (start, shape)
        start += int(np.prod(shape))
    layout["size"] = (start, ())
    return layout


def _one_hot(index, size):
    """One-hot float32 vector; all zeros for index -1."""
    return (jnp.arange(size) == index).astype(jnp.float32)


def _role_counts(cards):
    """Counts per role of a card array (-1 ignored) -> int32[5]."""
    return (cards[..., None] == jnp.arange(R.NUM_ROLES)).sum(axis=tuple(range(cards.ndim))).astype(jnp.int32)


def _take(table, index):
    """``table[index]`` (first axis) as a one-hot select-and-sum instead of a gather.

    Under `vmap` a per-game index turns plain indexing into an XLA gather, which does
    not fuse with its neighbours on CPU; the tables here are a few rows long, so the
    one-hot form is cheaper.  An ``index`` outside the table gives zeros (False).
    """
    table = jnp.asarray(table)
    hit = (jnp.arange(table.shape[0]) == index).reshape((-1,) + (1,) * (table.ndim - 1))
    if table.dtype == jnp.bool_:
        return jnp.any(hit & table, axis=0)
    return jnp.sum(jnp.where(hit, table, 0), axis=0, dtype=table.dtype)


class Env:
    """Coup for ``num_players`` (2..6, static).  Pure functions; wrap them in jit/vmap."""

    def __init__(self, num_players: int = 4):
        n = R.check_num_players(num_players)
        self.num_players = n
        self.layout = R.ActionLayout(n)
        self.num_actions = self.layout.num_actions
        self.obs_layout = observation_layout(n)
        self.observation_shape = (self.obs_layout["size"][0],)
        lay = self.layout
        self._main_kind = jnp.asarray(lay.main_kind)
        self._target_offset = jnp.asarray(lay.target_offset)
        self._cost = jnp.asarray(R.ACTION_COST)
        self._claim = jnp.asarray(R.ACTION_CLAIM)
        self._opens_window = jnp.asarray(R.OPENS_WINDOW)
        self._blockers = jnp.asarray(R.ACTION_BLOCKERS[:, list(R.BLOCK_ROLES)])  # [7, 4] by block slot
        self._target_only = jnp.asarray(R.BLOCK_BY_TARGET_ONLY)
        self._block_roles = jnp.asarray(R.BLOCK_ROLES, jnp.int32)
        self._gain = jnp.asarray([1, 2, 3, 0, 0, 0, 0], jnp.int32)
        self._keep_counts = jnp.asarray(R.KEEP_COUNTS)
        self._keep_size = jnp.asarray(R.KEEP_SIZE)
        keep_hand = np.full((R.NUM_KEEPS, 2), -1, np.int32)
        for k, roles in enumerate(R.KEEPS):
            keep_hand[k, : len(roles)] = roles
        self._keep_hand = jnp.asarray(keep_hand)
        self._cards = jnp.repeat(jnp.arange(R.NUM_ROLES, dtype=jnp.int32), R.COPIES_PER_ROLE)
        self._deal_words = self.num_players  # two swaps per word, 2n swaps
        self._template = self._fresh_template()

    # ------------------------------------------------------------------ public API
    @property
    def id(self) -> str:
        return "coup"

    def init(self, key: jax.Array) -> State:
        """A fresh match: a uniform deal onto a constant template (cheap: it runs every
        step under auto-reset).

        Only the hands are dealt (a partial Fisher-Yates); the deck's order is uniformly
        random, so the deck starts out "shuffled": each draw takes a uniform card, which
        has the same distribution as drawing the top of a uniformly shuffled deck.
        """
        s = self._fresh(jax.random.bits(key, (self._deal_words,), jnp.uint32))
        own = (s._hands[0][:, None] == jnp.arange(R.NUM_ROLES)).astype(jnp.float32).ravel()
        start, _ = self.obs_layout["own_hand"]
        return s.replace(observation=s.observation.at[start:start + own.size].set(own))

    def step_autoreset(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """`step`, then a fresh match wherever the match ended (Pgx's ``auto_reset``).

        Where a match ended, the returned state is a new match whose ``terminated`` and
        ``rewards`` still report the one that ended (so a learner sees the result); the
        next call plays on in the new match.  The input's ``terminated`` flag is ignored.
        Fused for speed: one select against the constant template, views derived once.
        """
        u = jax.random.bits(key, (2 + self._deal_words,), jnp.uint32)
        new = self._step(state, jnp.asarray(action, jnp.int32), u[:2])
        fresh = self._fresh(u[2:]).replace(terminated=new.terminated, rewards=new.rewards)
        s = jax.tree.map(lambda a, b: jnp.where(new.terminated, a, b), fresh, new)
        mask = self._legal_mask(s)
        return s.replace(legal_action_mask=mask, observation=self._observe(s, s.current_player))

    def _fresh(self, words) -> State:
        """The template with dealt hands and deck (no observation filled in)."""
        n = self.num_players
        cards = self._dealt_cards(words)
        hands = cards[: 2 * n].reshape(n, 2)
        storage = jnp.where(jnp.arange(R.DECK_SIZE) < R.DECK_SIZE - 2 * n, cards[::-1], -1)
        return self._template.replace(_hands=hands, _deck=storage, _shuffled=jnp.array(True))

    def step(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """Apply ``action`` (an id for `state.current_player`); a terminated state is returned unchanged."""
        new = self._step(state, jnp.asarray(action, jnp.int32), jax.random.bits(key, (2,), jnp.uint32))
        done = state.terminated
        kept = state.replace(rewards=jnp.zeros_like(state.rewards))
        # Select first, then derive the mask and observation once (they are functions of
        # the rest of the state): half the cost of a step at large batch sizes.
        s = jax.tree.map(lambda a, b: jnp.where(done, a, b), kept, new)
        return self._with_views(s)

    def observe(self, state: State, seat) -> jax.Array:
        """The observation of any ``seat`` (float32[obs]); depends only on what it can see."""
        return self._observe(state, jnp.asarray(seat, jnp.int32))

    def placements(self, state: State) -> jax.Array:
        """Seats in finishing order (int32[n]); meaningful once terminated."""
        return jnp.argsort(-self._rank_score(state), stable=True).astype(jnp.int32)

    # --------------------------------------------------------------- construction
    def _fresh_template(self) -> State:
        n, A = self.num_players, self.num_actions
        i32 = lambda v, shape=(): jnp.full(shape, v, jnp.int32)  # noqa: E731
        s = State(
            current_player=i32(0), observation=jnp.zeros(self.observation_shape, jnp.float32),
            rewards=jnp.zeros(n, jnp.float32), terminated=jnp.array(False), truncated=jnp.array(False),
            legal_action_mask=jnp.zeros(A, bool), _step_count=i32(0), _turn=i32(0), _phase=i32(R.PH_ACTION),
            _hands=i32(-1, (n, 2)), _revealed=i32(-1, (n, 2)), _coins=i32(R.START_COINS, (n,)),
            _deck=i32(-1, (R.DECK_SIZE,)), _deck_size=i32(R.DECK_SIZE - 2 * n), _shuffled=jnp.array(False),
            _drawn=i32(-1, (2,)), _actor=i32(0), _action=i32(-1), _target=i32(-1), _blocker=i32(-1),
            _block_role=i32(-1), _after_loss=i32(END_TURN_NEXT), _elim_order=i32(-1, (n,)), _num_elim=i32(0),
            _claims=i32(0, (n, R.NUM_ROLES)), _blocks=i32(0, (n, R.NUM_ROLES)), _challenges_won=i32(0, (n,)),
            _challenges_lost=i32(0, (n,)), _renewals=i32(0, (n,)), _event=self._blank_event(),
        )
        s = s.replace(_hands=i32(0, (n, 2)))  # any full hands: the legal mask at the start ignores cards
        s = s.replace(legal_action_mask=self._legal_mask(s))
        s = s.replace(observation=self._observe(s, s.current_player))
        start, shape = self.obs_layout["own_hand"]  # init fills in the observer's own cards
        return s.replace(_hands=i32(-1, (n, 2)), observation=s.observation.at[start:start + 10].set(0.0))

    def _blank_event(self, step=-1, turn=0, seat=0, phase=R.PH_ACTION, action=-1, actor=0, main_action=-1,
                     target=-1) -> Event:
        i32 = lambda v, shape=(): jnp.full(shape, v, jnp.int32)  # noqa: E731
        return Event(
            step=i32(step), turn=i32(turn), seat=i32(seat), phase=i32(phase), action=i32(action),
            forfeit=jnp.array(False), actor=i32(actor), main_action=i32(main_action), target=i32(target),
            claim_role=i32(-1), challenged_seat=i32(-1), challenged_role=i32(-1), bluff_caught=jnp.array(False),
            redraw_role=i32(-1), exchange_drawn=i32(-1, (2,)), reveal_seat=i32(-1, (MAX_REVEALS,)),
            reveal_role=i32(-1, (MAX_REVEALS,)), reveal_index=i32(-1, (MAX_REVEALS,)),
            eliminated=jnp.zeros(self.num_players, bool), resolved=jnp.array(False),
            turn_ended=jnp.array(False), game_over=jnp.array(False),
        )

    def _dealt_cards(self, words) -> jax.Array:
        """The 15 cards with a uniform random choice in the first 2n places (the hands).

        A partial Fisher-Yates (position i swaps with a uniform j >= i), two swaps per
        32-bit word (bias below 1e-7); the remaining places hold the rest in some order.
        """
        deal = 2 * self.num_players
        cards, idx = self._cards, jnp.arange(R.DECK_SIZE)
        for i in range(deal):
            w = words[i // 2]
            w = w if i % 2 == 0 else w // jnp.uint32(R.DECK_SIZE - i + 1)  # the word's second draw
            j = i + (w % jnp.uint32(R.DECK_SIZE - i)).astype(jnp.int32)
            a, b = cards[i], cards[j]
            cards = jnp.where(idx == i, b, jnp.where(idx == j, a, cards))
        return cards

    # --------------------------------------------------------------- the step
    def _step(self, s: State, action, u) -> State:
        """The chain of stages; ``u``: two random uint32 words (a redraw; an exchange's draws)."""
        n, lay = self.num_players, self.layout
        p, phase = s.current_player, s._phase
        a = jnp.clip(action, 0, self.num_actions - 1)
        legal = _take(s.legal_action_mask, a) & (action >= 0) & (action < self.num_actions)
        forfeit = ~legal
        s = s.replace(_event=self._blank_event(
            s._step_count, s._turn, p, phase, action, s._actor, s._action, s._target).replace(forfeit=forfeit))

        in_react, in_answer = phase == R.PH_REACT, phase == R.PH_ANSWER_BLOCK
        is_pass = legal & (a == lay.reaction + R.PASS)
        is_challenge = legal & (a == lay.reaction + R.CHALLENGE)

        # ---- forfeit: the sender reveals everything and is out at once
        s = self._reveal_all(s, forfeit, p)
        s = self._return_drawn(s, forfeit & (phase == R.PH_EXCHANGE))

        # ---- decisions
        s, resolve = self._declare(s, legal & (phase == R.PH_ACTION), a)
        s = self._block(s, legal & in_react & (a >= lay.block) & (a < lay.reveal), a)
        s = self._reveal(s, legal & (phase == R.PH_LOSE), p, a - lay.reveal)
        s = self._keep(s, legal & (phase == R.PH_EXCHANGE), a)
        s, holds, claimant = self._truth_check(s, is_challenge, u[0])
        # who loses next, and what follows the loss
        loss_seat = jnp.where(holds, p, claimant)
        after = jnp.where(holds == in_react, RESOLVE_NEXT, END_TURN_NEXT)
        refund = is_challenge & in_react & ~holds & (s._action == R.ASSASSINATE)
        s = s.replace(_coins=s._coins + jnp.where((jnp.arange(n) == s._actor) & refund, R.ACTION_COST[R.ASSASSINATE], 0))
        # a pass (or a forfeit) in the reaction window hands the floor on
        advance = in_react & (is_pass | forfeit)
        nxt, has_next = self._next_alive_after(s, s._actor, p)
        s = s.replace(current_player=jnp.where(advance & has_next, nxt, s.current_player))
        resolve = resolve | (advance & ~has_next)
        after_lose = (phase == R.PH_LOSE)
        resolve = resolve | (after_lose & (s._after_loss == RESOLVE_NEXT))
        end = (after_lose & (s._after_loss == END_TURN_NEXT)) | (in_answer & is_pass)
        end = end | (forfeit & ~in_react & ~after_lose) | (legal & (phase == R.PH_EXCHANGE))

        over = self._over(s)
        # ---- the loss caused by a challenge
        s, done_loss = self._pay_loss(s, is_challenge & ~over, loss_seat, after)
        resolve = (resolve | (done_loss & (after == RESOLVE_NEXT))) & ~self._over(s)
        end = end | (done_loss & (after == END_TURN_NEXT))

        # ---- resolve the main action
        s, end_now, target_loss = self._resolve(s, resolve, u[1])
        end = end | end_now
        s, done_loss = self._pay_loss(s, target_loss & ~self._over(s), s._target, END_TURN_NEXT)
        end = end | done_loss

        # ---- end of turn, end of match
        over = self._over(s)
        s, capped = self._end_turn(s, end & ~over)
        return self._finish(s, over | capped)

    # ------------------------------------------------------------------ stages
    def _declare(self, s: State, do, a):
        """Pay the cost; open the reaction window, or resolve at once (income, coup)."""
        n = self.num_players
        p = s.current_player
        kind = _take(self._main_kind, a)
        off = _take(self._target_offset, a)
        target = jnp.where(off >= 0, (p + off) % n, -1)
        claim = _take(self._claim, jnp.clip(kind, 0))
        seats = jnp.arange(n)
        coins = s._coins - jnp.where(do & (seats == p), _take(self._cost, jnp.clip(kind, 0)), 0)
        claims = s._claims + ((seats == p)[:, None] & (jnp.arange(R.NUM_ROLES) == claim) & do)
        opens = _take(self._opens_window, jnp.clip(kind, 0))
        first, _ = self._next_alive_after(s, p, p)
        ev = s._event
        s = s.replace(
            _coins=coins, _claims=claims.astype(jnp.int32),
            _action=jnp.where(do, kind, s._action), _target=jnp.where(do, target, s._target),
            _actor=jnp.where(do, p, s._actor),
            _phase=jnp.where(do & opens, R.PH_REACT, s._phase),
            current_player=jnp.where(do & opens, first, s.current_player),
            _event=ev.replace(
                main_action=jnp.where(do, kind, ev.main_action), target=jnp.where(do, target, ev.target),
                claim_role=jnp.where(do, claim, ev.claim_role)),
        )
        return s, do & ~opens

    def _block(self, s: State, do, a):
        """The responder claims a blocking role; the actor answers next."""
        p = s.current_player
        role = _take(self._block_roles, jnp.clip(a - self.layout.block, 0, 3))
        seats = jnp.arange(self.num_players)
        blocks = s._blocks + ((seats == p)[:, None] & (jnp.arange(R.NUM_ROLES) == role) & do)
        return s.replace(
            _blocks=blocks.astype(jnp.int32), _blocker=jnp.where(do, p, s._blocker),
            _block_role=jnp.where(do, role, s._block_role),
            _phase=jnp.where(do, R.PH_ANSWER_BLOCK, s._phase),
            current_player=jnp.where(do, s._actor, s.current_player),
            _event=s._event.replace(claim_role=jnp.where(do, role, s._event.claim_role)),
        )

    def _truth_check(self, s: State, do, u):
        """A challenge of the actor's claim (react) or of the block (answer_block).

        Returns (state, claimant held the role, claimant).  A proven card goes into the
        deck, which is reshuffled, and the claimant draws a replacement into that slot.
        """
        n = self.num_players
        p = s.current_player
        of_block = s._phase == R.PH_ANSWER_BLOCK
        claimant = jnp.where(of_block, s._blocker, s._actor)
        role = jnp.where(of_block, s._block_role, _take(self._claim, jnp.clip(s._action, 0)))
        hand = _take(s._hands, claimant)
        holds = do & jnp.any(hand == role)
        slot = jnp.where(hand[0] == role, 0, 1)
        s = self._push(s, holds, role)
        s, card = self._draw(s, holds, u)
        seats = jnp.arange(n)
        is_claimant = seats == claimant
        hands = jnp.where(is_claimant[:, None] & (jnp.arange(2) == slot) & holds, card, s._hands)
        winner = jnp.where(holds, claimant, p)
        loser = jnp.where(holds, p, claimant)
        s = s.replace(
            _hands=hands,
            _challenges_won=s._challenges_won + (do & (seats == winner)),
            _challenges_lost=s._challenges_lost + (do & (seats == loser)),
        )
        s = self._renew(s, holds, claimant)
        ev = s._event
        s = s.replace(_event=ev.replace(
            challenged_seat=jnp.where(do, claimant, ev.challenged_seat),
            challenged_role=jnp.where(do, role, ev.challenged_role),
            bluff_caught=do & ~holds,
            redraw_role=jnp.where(holds, card, ev.redraw_role)))
        return s, holds, claimant

    def _keep(self, s: State, do, a):
        """The exchanging actor keeps a multiset; the other two cards go back, reshuffled."""
        k = jnp.clip(a - self.layout.keep, 0, R.NUM_KEEPS - 1)
        p = s.current_player
        pool = _role_counts(_take(s._hands, p)) + _role_counts(s._drawn)
        back = pool - _take(self._keep_counts, k)
        first = jnp.argmax(back > 0)
        second = jnp.argmax((back - (jnp.arange(R.NUM_ROLES) == first)) > 0)
        s = self._push_two(s, do, first, second)
        hands = jnp.where((jnp.arange(self.num_players) == p)[:, None] & do, _take(self._keep_hand, k), s._hands)
        s = s.replace(_hands=hands, _drawn=jnp.where(do, -1, s._drawn))
        return self._renew(s, do, p)

    def _return_drawn(self, s: State, do):
        s = self._push_two(s, do & (s._drawn[0] >= 0), s._drawn[0], s._drawn[1])
        return s.replace(_drawn=jnp.where(do, -1, s._drawn))

    def _resolve(self, s: State, do, u):
        """The main action takes effect.  Returns (state, turn ends now, target must lose)."""
        n = self.num_players
        seats = jnp.arange(n)
        kind, actor, target = s._action, s._actor, s._target
        alive = self._alive(s)
        target_alive = (target >= 0) & alive[jnp.clip(target, 0)]
        stolen = jnp.where((kind == R.STEAL) & target_alive, jnp.minimum(R.STEAL_AMOUNT, _take(s._coins, target)), 0)
        gain = _take(self._gain, jnp.clip(kind, 0)) + stolen
        coins = s._coins + jnp.where(do & (seats == actor), gain, 0) - jnp.where(do & (seats == target), stolen, 0)
        s = s.replace(_coins=coins)
        exchange = do & (kind == R.EXCHANGE)
        # two draws from one word, mixed radix (bias below 1e-7)
        s, c1 = self._draw(s, exchange, u)
        s, c2 = self._draw(s, exchange, u // jnp.maximum(s._deck_size + 1, 1).astype(jnp.uint32))
        drawn = jnp.stack([c1, c2])
        ev = s._event
        s = s.replace(
            _drawn=jnp.where(exchange, drawn, s._drawn),
            _phase=jnp.where(exchange, R.PH_EXCHANGE, s._phase),
            current_player=jnp.where(exchange, actor, s.current_player),
            _event=ev.replace(resolved=ev.resolved | (do & (target_alive | (target < 0))),
                              exchange_drawn=jnp.where(exchange, drawn, ev.exchange_drawn)),
        )
        hits = (kind == R.COUP) | (kind == R.ASSASSINATE)
        target_loss = do & hits & target_alive
        return s, do & ~exchange & ~target_loss, target_loss

    def _pay_loss(self, s: State, do, seat, after):
        """``seat`` loses one influence: a choice with 2 cards, automatic with 1, nothing with 0.

        Returns (state, the loss is paid and play goes on in this step).
        """
        hidden = (_take(s._hands, seat) >= 0).sum()
        choose = do & (hidden >= 2)
        s = self._reveal(s, do & (hidden == 1), seat, 0)
        s = s.replace(
            _phase=jnp.where(choose, R.PH_LOSE, s._phase),
            current_player=jnp.where(choose, seat, s.current_player),
            _after_loss=jnp.where(choose, after, s._after_loss),
        )
        return s, do & ~choose

    def _end_turn(self, s: State, do):
        """Count the turn; stop at the cap, else hand the turn to the next live seat."""
        turn = s._turn + do
        capped = do & (turn >= R.TURN_CAP)
        nxt, _ = self._next_alive_after(s, s._actor, s._actor)
        go = do & ~capped
        s = s.replace(
            _turn=turn, _phase=jnp.where(go, R.PH_ACTION, s._phase),
            current_player=jnp.where(go, nxt, s.current_player), _actor=jnp.where(go, nxt, s._actor),
            _action=jnp.where(go, -1, s._action), _target=jnp.where(go, -1, s._target),
            _blocker=jnp.where(go, -1, s._blocker), _block_role=jnp.where(go, -1, s._block_role),
            _event=s._event.replace(turn_ended=do),
        )
        return s, capped

    def _finish(self, s: State, over) -> State:
        n = self.num_players
        winner = jnp.argmax(self._rank_score(s))
        rewards = jnp.where(jnp.arange(n) == winner, 1.0, -1.0 / (n - 1)).astype(jnp.float32)
        s = s.replace(
            terminated=over, rewards=jnp.where(over, rewards, 0.0).astype(jnp.float32),
            _step_count=s._step_count + 1, _event=s._event.replace(game_over=over),
        )
        return s

    def _with_views(self, s: State) -> State:
        """Fill the derived public fields: the legal mask and the observation."""
        mask = jnp.where(s.terminated, True, self._legal_mask(s))
        return s.replace(legal_action_mask=mask, observation=self._observe(s, s.current_player))

    # ------------------------------------------------------------------ cards
    def _reveal(self, s: State, do, seat, index):
        """``seat`` reveals its hidden card at ``index``; the other card moves to index 0."""
        n = self.num_players
        seat = jnp.clip(seat, 0, n - 1)
        index = jnp.clip(index, 0, 1)
        hand = _take(s._hands, seat)
        role = _take(hand, index)
        keep = _take(hand, 1 - index)
        row = (jnp.arange(n) == seat) & do
        hands = jnp.where(row[:, None], jnp.stack([keep, jnp.int32(-1)]), s._hands)
        nrev = (_take(s._revealed, seat) >= 0).sum()
        revealed = jnp.where(row[:, None] & (jnp.arange(2) == nrev), role, s._revealed)
        out = do & (keep < 0)
        ev = s._event
        slot = (jnp.arange(MAX_REVEALS) == (ev.reveal_seat >= 0).sum()) & do
        return s.replace(
            _hands=hands, _revealed=revealed,
            _elim_order=jnp.where(row & out, s._num_elim, s._elim_order), _num_elim=s._num_elim + out,
            _event=ev.replace(
                reveal_seat=jnp.where(slot, seat, ev.reveal_seat), reveal_role=jnp.where(slot, role, ev.reveal_role),
                reveal_index=jnp.where(slot, index, ev.reveal_index), eliminated=ev.eliminated | (row & out)),
        )

    def _reveal_all(self, s: State, do, seat):
        """A forfeit: ``seat`` reveals every hidden card at once and is eliminated.

        Forfeits come first in a step, so its reveals take the event's first slots.
        """
        n = self.num_players
        hand = _take(s._hands, seat)
        row = (jnp.arange(n) == seat) & do
        # hidden + revealed is always 2: fill the empty revealed slots with the hand in order
        shown = _take(s._revealed, seat)
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

    def _push(self, s: State, do, card):
        """Put ``card`` into the deck; the deck counts as reshuffled from now on."""
        idx = jnp.arange(R.DECK_SIZE)
        return s.replace(
            _deck=jnp.where(do & (idx == s._deck_size), card, s._deck),
            _deck_size=s._deck_size + do, _shuffled=s._shuffled | do,
        )

    def _push_two(self, s: State, do, first, second):
        """Put two cards into the deck (exchange returns); reshuffled from now on."""
        idx = jnp.arange(R.DECK_SIZE)
        deck = jnp.where(do & (idx == s._deck_size), first, s._deck)
        deck = jnp.where(do & (idx == s._deck_size + 1), second, deck)
        return s.replace(_deck=deck, _deck_size=s._deck_size + 2 * do, _shuffled=s._shuffled | do)

    def _draw(self, s: State, do, u):
        """Draw the next card: the top before any reshuffle, a uniform card after one."""
        size = s._deck_size
        top = size - 1
        j = jnp.where(s._shuffled, (u % jnp.maximum(size, 1).astype(jnp.uint32)).astype(jnp.int32), top)
        card = _take(s._deck, jnp.clip(j, 0))
        idx = jnp.arange(R.DECK_SIZE)
        deck = jnp.where(do & (idx == j), _take(s._deck, jnp.clip(top, 0)), s._deck)
        deck = jnp.where(do & (idx == top), -1, deck)
        return s.replace(_deck=deck, _deck_size=size - do), jnp.where(do, card, -1)

    def _renew(self, s: State, do, seat):
        """A hand changed unseen: its claim record restarts."""
        row = (jnp.arange(self.num_players) == seat) & do
        return s.replace(
            _claims=jnp.where(row[:, None], 0, s._claims), _blocks=jnp.where(row[:, None], 0, s._blocks),
            _renewals=s._renewals + row,
        )

    # ------------------------------------------------------------------ derived
    def _alive(self, s: State):
        return s._hands[:, 0] >= 0

    def _over(self, s: State):
        return self._alive(s).sum() <= 1

    def _next_alive_after(self, s: State, actor, seat):
        """First live seat clockwise after ``seat`` and before coming back round to ``actor``."""
        n = self.num_players
        pos = (jnp.arange(n) - actor) % n
        cand = self._alive(s) & (pos > (seat - actor) % n)
        first = jnp.min(jnp.where(cand, pos, n))
        return ((actor + first) % n).astype(jnp.int32), cand.any()

    def _rank_score(self, s: State):
        """Higher is better: survivors by hidden cards, coins, lower seat; then latest eliminated."""
        n = self.num_players
        seats = jnp.arange(n)
        hidden = (s._hands >= 0).sum(axis=1)
        coins = jnp.clip(s._coins, 0, (1 << 19) - 1)
        alive_score = (1 << 30) + (hidden << 27) + (coins << 4) + (n - 1 - seats)  # n <= 6 < 16
        return jnp.where(hidden > 0, alive_score, s._elim_order).astype(jnp.int32)

    def _legal_mask(self, s: State):
        n = self.num_players
        p, phase = s.current_player, s._phase
        coins = _take(s._coins, p)
        opponents = self._alive(s)[(p + jnp.arange(n)) % n] & (jnp.arange(n) > 0)
        in_action = phase == R.PH_ACTION
        free = in_action & (coins < R.FORCED_COUP_COINS)
        kind = jnp.clip(s._action, 0)
        in_react, in_answer = phase == R.PH_REACT, phase == R.PH_ANSWER_BLOCK
        may_block = in_react & _take(self._blockers, kind) & (~_take(self._target_only, kind) | (p == s._target))
        hand = _take(s._hands, p)
        pool = _role_counts(hand) + _role_counts(s._drawn)
        hidden = (hand >= 0).sum()
        keeps = ((phase == R.PH_EXCHANGE) & (self._keep_size == hidden)
                 & jnp.all(self._keep_counts <= pool, axis=1))
        return jnp.concatenate([
            jnp.broadcast_to(free, (4,)),
            in_action & (coins >= R.ACTION_COST[R.COUP]) & opponents,
            free & (coins >= R.ACTION_COST[R.ASSASSINATE]) & opponents,
            free & opponents,
            jnp.stack([in_react | in_answer, (in_react & (_take(self._claim, kind) >= 0)) | in_answer]),
            may_block,
            jnp.broadcast_to(phase == R.PH_LOSE, (2,)),
            keeps,
        ])

    def _observe(self, s: State, seat) -> jax.Array:
        n = self.num_players
        rel = lambda x: jnp.where(x >= 0, (x - seat) % n, -1)  # noqa: E731
        own = (_take(s._hands, seat)[:, None] == jnp.arange(R.NUM_ROLES)).astype(jnp.float32)
        sees_drawn = (s._phase == R.PH_EXCHANGE) & (s._actor == seat)
        drawn = jnp.where(sees_drawn, _role_counts(s._drawn), 0)
        hidden = (s._hands >= 0).sum(axis=1)
        revealed = (s._revealed[:, :, None] == jnp.arange(R.NUM_ROLES)).sum(axis=1)
        seats = jnp.concatenate([
            s._coins[:, None], hidden[:, None], (hidden > 0)[:, None], revealed, s._claims, s._blocks,
            s._challenges_won[:, None], s._challenges_lost[:, None], s._renewals[:, None],
        ], axis=1)[(seat + jnp.arange(n)) % n]  # rows relative to the observer
        claim = jnp.where(s._action >= 0, _take(self._claim, jnp.clip(s._action, 0)), -1)
        return jnp.concatenate([
            own.ravel(), drawn.astype(jnp.float32), seats.ravel().astype(jnp.float32),
            _one_hot(s._phase, R.NUM_PHASES), _one_hot(s._action, R.NUM_MAIN_ACTIONS),
            _one_hot(rel(s._actor), n), _one_hot(rel(s._target), n), _one_hot(claim, R.NUM_ROLES),
            _one_hot(rel(s._blocker), n), _one_hot(s._block_role, R.NUM_ROLES),
            s._turn[None].astype(jnp.float32),
        ])
