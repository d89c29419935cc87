"""What the first advice needs, compiled in the background while the player does something else.

A table's first advice compiles the tracker, the beliefs, the advisor and the search
for its table size: up to a minute or two on a 2-core CPU with an empty compilation
cache.  The server starts that work for a 4-player table as it starts, and the page
asks for its table size while the player fills in the start form (``POST /api/warm``).
Until it is done, a game's page comes back without beliefs and advice and says so
(``advice_pending``: the seconds spent so far), so entering events waits for the engine
alone; the page shows "preparing advice: 12 s" and asks again until the advice is there.

A practice opponent's policy compiles the same way, as soon as the player touches the
practice form (``POST /api/warm`` with ``practice``), so its first move does not wait.

The work runs outside the app's lock: it touches no game, only JAX's compiled
functions, which are safe to share between threads.
"""
from __future__ import annotations

import threading
import time


def compile_table(num_players: int):
    """Compile what entering events needs for one table size (the tracker on the engine);
    returns the tracker, a few events in, for `compile_advice`."""
    from coupjax.tracker import Tracker

    t = Tracker(num_players, 0, ("duke", "captain"), 0)
    for entry in ({"seat": 0, "action": "tax"}, {"action": "all_passed"}, {"seat": 1, "action": "steal:0"}):
        t.add(entry)
    t.view()
    return t


def compile_advice(t, search: bool) -> None:
    """Compile what the advice needs (beliefs, advisor, search) on a tracker of that size:
    at the tracker's seat's own turn and at a claim it may challenge once everyone
    before it passed (what the page shows first: `advice_text.after_passes`).  Advice is
    only computed for the seat to move, so each state must have the tracker's seat to move."""
    from coupjax.tracker import Tracker
    from coupjax.web import advice_text

    t.beliefs()
    seat, state = t.seat, t.state()
    reacting = advice_text.after_passes(state, seat, advice_text.responders(state))
    own_turn = Tracker(t.num_players, seat, t.own_hand(), seat).state()
    for s in (own_turn, reacting):
        if s is None or int(s.current_player) != seat:
            raise RuntimeError("compile_advice: the tracker's seat is not to move in a warm-up state")
        for use_search in (False, True) if search else (False,):
            advice_text.advice(s, seat, "balanced", use_search)


def compile_bot(spec: str, num_players: int, policies_dir) -> None:
    """Compile a practice opponent's move (`coupjax.web.practice.bot`, cached per spec and size)."""
    import jax

    from coupjax.match import Match
    from coupjax.web.practice import bot

    bot(spec, num_players, policies_dir)(jax.random.PRNGKey(0), Match(num_players).state)


class Readiness:
    """Per table size: not started, compiling the table, compiling the advice, ready, or failed.

    A request that needs the table waits for the thread compiling it (`wait_for_table`)
    rather than compiling the same functions a second time beside it."""

    def __init__(self, search: bool, table=compile_table, advice=compile_advice):
        self.search, self._table, self._advice = search, table, advice
        self._lock = threading.Lock()
        self._started: dict[int, float] = {}
        self._table_ready: dict[int, threading.Event] = {}
        self._advice_ready: dict[int, threading.Event] = {}
        self._finished: dict[int, float] = {}
        self._errors: dict[int, str] = {}
        self._bots: dict[tuple, threading.Thread] = {}

    def ensure(self, num_players: int) -> None:
        """Start compiling for ``num_players`` in a background thread, unless started."""
        with self._lock:
            if num_players in self._started:
                return
            self._started[num_players] = time.monotonic()
            self._table_ready[num_players] = threading.Event()
            self._advice_ready[num_players] = threading.Event()
        threading.Thread(target=self._run, args=(num_players,), daemon=True,
                         name=f"compile-advice-{num_players}").start()

    def _run(self, num_players: int) -> None:
        try:
            tracker = self._table(num_players)
            self._table_ready[num_players].set()
            self._advice(tracker, self.search)
        except Exception as err:  # noqa: BLE001 - the game computes what it needs itself, and says why if it fails
            self._errors[num_players] = f"{type(err).__name__}: {err}"[:300]
        self._table_ready[num_players].set()
        self._finished[num_players] = time.monotonic()
        self._advice_ready[num_players].set()

    def ensure_all(self, order=(4, 3, 5, 2, 6)) -> threading.Thread:
        """Compile every table size, one after the other in ``order`` (the default size
        first), in one background thread: a size chosen later is ready, or already on its
        way, before the start form names it (a size the form names first starts at once
        and this thread waits for it rather than compiling it twice)."""
        def run():
            for n in order:
                self.ensure(n)
                self._advice_ready[n].wait()

        thread = threading.Thread(target=run, daemon=True, name="compile-advice-all")
        thread.start()
        return thread

    def ensure_bot(self, spec: str, num_players: int, policies_dir=None) -> None:
        """Compile a practice opponent in a background thread, unless started (the caller
        checks ``spec`` is one the server offers); a failure is the game's to report."""
        key = (spec, num_players, policies_dir)
        with self._lock:
            if key in self._bots:
                return
            self._bots[key] = thread = threading.Thread(target=self._quietly, args=(key,), daemon=True,
                                                        name=f"compile-bot-{num_players}")
        thread.start()

    @staticmethod
    def _quietly(key) -> None:
        try:
            compile_bot(*key)
        except Exception:  # noqa: BLE001 - starting the game names what is wrong with its opponent
            pass

    def wait_for_table(self, num_players: int, timeout: float = 600.0) -> None:
        """Block until entering events at this table size is compiled (starting it if need be)."""
        self.ensure(num_players)
        self._table_ready[num_players].wait(timeout)

    def wait_for_advice(self, num_players: int, timeout: float) -> None:
        """Block until the advice for ``num_players`` is compiled, or ``timeout`` seconds:
        the page's long poll, so the advice shows the moment it can (not at the next tick
        of a timer) and the progress still updates while it compiles."""
        self.ensure(num_players)
        self._advice_ready[num_players].wait(timeout)

    def pending(self, num_players: int) -> dict | None:
        """``{"seconds": ..., "players": n}`` while the advice for ``num_players`` compiles
        (starting it if need be); None once done (a failure too: the request then
        compiles what it needs itself)."""
        self.ensure(num_players)
        if num_players in self._finished:
            return None
        return {"seconds": round(time.monotonic() - self._started[num_players], 1), "players": num_players}

    def status(self) -> dict:
        """Every table size asked for: ``{"4": {"ready": bool, "seconds": s, "error": ...}}``."""
        now = time.monotonic()
        return {str(n): {"ready": n in self._finished, "error": self._errors.get(n),
                         "seconds": round(self._finished.get(n, now) - t0, 1)}
                for n, t0 in sorted(self._started.items())}
