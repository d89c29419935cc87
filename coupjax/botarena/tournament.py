"""The bot arena: matches between external programs and our policies, counted by the
one definition of winning.

Entrants are bots (``NAME=COMMAND``: a program speaking `coupjax.botarena.protocol`
on stdin/stdout, one process per seat per match) and policy specs (resolved by
`coupjax.policies.resolve_policy`, answering in-process).  Matches are played with
`coupjax.match.Match` (which also saves them) and run concurrently on one asyncio
loop: bots think in their own processes, every JAX call (engine steps, our policies,
observations) runs on one worker thread, so the loop stays free to read bots' answers
and time them.  A bot's mistake (timeout, crash, garbage, an illegal name, another
protocol version) forfeits that decision as the rules say and is recorded with its
reason; the match goes on.  Every bot is bounded (`coupjax.botarena.process`: its
output, its log, its resources, every process it starts), so a tournament always ends
and reports.  Results per entrant are `coupjax.seat_tables.summarize` rows over
the matches it played, placements from `coupjax.game.board.placements`.
"""
from __future__ import annotations

import asyncio
import os
import dataclasses
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import numpy as np

from coupjax import rules
from coupjax.seat_tables import summarize
from coupjax.botarena import protocol
from coupjax.botarena.process import BotProcess, become_subreaper, children_now, split_command, sweep_orphans
from coupjax.env import Env
from coupjax.events import event_to_dict, last_event
from coupjax.match import Match
from coupjax.policies.spec import PolicySpecError, resolve_policy

DEFAULT_MOVE_TIMEOUT = 30.0
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


class ArenaError(ValueError):
    """A mistake in the arena's entrants or options, found before any match starts."""


@dataclasses.dataclass(frozen=True)
class Entrant:
    """A bot (``command``) or one of our policies (``spec``), by a unique ``name``."""

    name: str
    command: str = ""
    spec: str = ""

    @property
    def is_bot(self) -> bool:
        return bool(self.command)

    def describe(self) -> dict:
        return {"kind": "bot", "command": self.command} if self.is_bot else {"kind": "policy", "spec": self.spec}


def parse_bot(text: str) -> Entrant:
    """``NAME=COMMAND`` -> a bot entrant; the program must exist."""
    name, sep, command = text.partition("=")
    if not sep or not _NAME.match(name) or not command.strip():
        raise ArenaError(f"--bot {text!r}: expected NAME=COMMAND with NAME of letters, digits, _ . + -")
    try:
        argv = split_command(command)
    except ValueError as err:
        raise ArenaError(f"--bot {name}: cannot split the command ({err})") from None
    if shutil.which(argv[0]) is None:
        raise ArenaError(f"--bot {name}: program {argv[0]!r} not found (nor executable)")
    return Entrant(name, command=command.strip())


def parse_policy(text: str) -> Entrant:
    """``SPEC`` (named by itself) or ``NAME=SPEC`` -> a policy entrant."""
    name, sep, spec = text.partition("=")
    if sep and _NAME.match(name) and spec:
        return Entrant(name, spec=spec)
    return Entrant(text, spec=text)


def check_entrants(entrants: list[Entrant], num_players: int) -> None:
    names = [e.name for e in entrants]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise ArenaError(f"entrant names must be unique, {', '.join(dup)} given twice (name one NAME=SPEC)")
    if len(entrants) < num_players:
        raise ArenaError(f"{len(entrants)} entrants cannot fill a {num_players}-player table: give at least "
                         f"{num_players} (--bot / --policy) or fewer --players")


def seatings(num_entrants: int, num_players: int, num_matches: int, seed: int) -> list[list[int]]:
    """Entrant index per seat, per match.

    Matches come in rounds of ``num_players``: each round seats the entrants that have
    played fewest matches so far (ties broken by a seeded shuffle), in a seeded order,
    and rotates that line-up so each of them sits in every seat once.
    """
    rng = np.random.default_rng([seed % 2**32, 0xA7E4A])
    played = np.zeros(num_entrants, np.int64)
    out: list[list[int]] = []
    while len(out) < num_matches:
        order = rng.permutation(num_entrants)
        chosen = sorted(order, key=lambda e: played[e])[:num_players]  # stable: the shuffle breaks ties
        lineup = [int(chosen[k]) for k in rng.permutation(num_players)]
        for r in range(min(num_players, num_matches - len(out))):
            out.append(lineup[r:] + lineup[:r])
            played[lineup] += 1
    return out


def match_seeds(seed: int, match: int) -> tuple[int, int]:
    """(deal seed of the Match, seed of our policies' keys) of match ``match``."""
    a, b = np.random.SeedSequence([seed % 2**32, match]).generate_state(2)
    return int(a) >> 1, int(b) >> 1


class _PolicySeat:
    """One of our policies: a jitted ``choose(key, step, state) -> action id`` sampled from
    its logits the way `coupjax.seat_tables.make_table_runner` samples."""

    def __init__(self, policy):
        def choose(key, step, state):
            k_pol, k_act = jax.random.split(jax.random.fold_in(key, step))
            return jax.random.categorical(k_act, policy(k_pol, state))

        self.choose = jax.jit(choose)


class Arena:
    """A prepared tournament (policies resolved and compiled): ``await arena.run(...)``.

    ``save_dir`` receives ``matches/match-NNNN.jsonl`` (`Match.save`), ``logs/`` (each
    bot process's stderr) and ``arena.log`` (every forfeit with its reason).
    """

    def __init__(self, entrants: list[Entrant], num_players: int = 4, *, move_timeout: float = DEFAULT_MOVE_TIMEOUT,
                 save_dir="arena", seed: int = 0):
        self.num_players = rules.check_num_players(num_players)
        check_entrants(entrants, self.num_players)
        if not move_timeout > 0:
            raise ArenaError(f"the move timeout must be positive, got {move_timeout}")
        self.entrants, self.move_timeout, self.seed = list(entrants), float(move_timeout), int(seed)
        self.save_dir = Path(save_dir)
        env = Env(self.num_players)
        self.seats: dict[str, _PolicySeat] = {}
        for e in self.entrants:
            if not e.is_bot:
                try:
                    self.seats[e.name] = _PolicySeat(resolve_policy(e.spec, env))
                except (PolicySpecError, ValueError, OSError) as err:  # a spec naming nothing, a broken export
                    raise ArenaError(f"--policy {e.spec}: {err}" if not isinstance(err, PolicySpecError)
                                     else str(err)) from None
        self._jax = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coupjax-arena-jax")
        self._log = None

    def warm_up(self) -> None:
        """Compile everything a match runs once, before any clock runs: every policy, and
        the engine's paths (one match played to its end and saved, nowhere)."""
        n = self.num_players
        m, _, key, look = self._new_match(0, 0, set(range(n)))
        for entrant in self.seats:
            self._choose(m, entrant, key, 0)
        while "placements" not in look:
            look = self._play(m, look["legal"][0], set(range(n)))[2]
        m.save(os.devnull)

    async def _call(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._jax, fn, *args)

    # ------------------------------------------------------------ the JAX side
    def _look(self, m: Match, bot_seats) -> dict:
        """What the loop needs next: the seat to move, its legal names and, for a bot, its
        readable observation; or the placements once the match is over."""
        if m.done:
            return {"placements": m.placements(), "steps": len(m.events)}
        seat = m.current_player
        look = {"seat": seat, "step": len(m.events), "legal": m.legal_actions()}
        if seat in bot_seats:
            look["observation"] = protocol.readable(m.state.observation, seat, self.num_players)
        return look

    def _play(self, m: Match, name: str, bot_seats):
        private = m.play(name)
        public = event_to_dict(last_event(m.state), self.num_players, public=True)
        return private, public, self._look(m, bot_seats)

    def _choose(self, m: Match, entrant: str, key, step: int) -> str:
        a = int(self.seats[entrant].choose(key, np.int32(step), m.state))
        return rules.action_name(a, m.current_player, self.num_players)

    def _new_match(self, deal_seed: int, policy_seed: int, bot_seats):
        m = Match(self.num_players, seed=deal_seed)
        return m, m.hands, jax.random.PRNGKey(policy_seed), self._look(m, bot_seats)

    # ------------------------------------------------------------ one match
    def _record(self, text: str) -> None:
        if self._log is not None:
            self._log.write(text + "\n")
            self._log.flush()

    async def play_match(self, index: int, seating: list[int]) -> dict:
        n, timeout = self.num_players, self.move_timeout
        names = [self.entrants[k].name for k in seating]
        deal_seed, policy_seed = match_seeds(self.seed, index)
        bots: dict[int, BotProcess] = {}
        for seat, k in enumerate(seating):
            e = self.entrants[k]
            if e.is_bot:
                log = self.save_dir / "logs" / f"match-{index:04d}-seat{seat}-{e.name}.stderr.log"
                bots[seat] = BotProcess(e.name, e.command, log)
        m, hands, key, look = await self._call(self._new_match, deal_seed, policy_seed, set(bots))
        await asyncio.gather(*(b.start(protocol.hello(b.name, index, timeout), timeout) for b in bots.values()))
        for seat, b in bots.items():
            b.send(protocol.start(index, seat, names, hands[seat], [rules.START_COINS] * n))
        forfeits = []
        try:
            while "placements" not in look:
                seat, step = look["seat"], look["step"]
                bot = bots.get(seat)
                if bot is None:
                    name = await self._call(self._choose, m, names[seat], key, step)
                else:
                    name, reason, detail = await self._ask(bot, step, look)
                    if reason:
                        forfeits.append({"match": index, "step": step, "seat": seat, "entrant": names[seat],
                                         "reason": reason, "detail": detail, "sent": name})
                        self._record(f"match {index} step {step} seat {seat} ({names[seat]}): {reason}: {detail}")
                        if reason in ("timeout", "crash"):
                            bot.stop()
                        name = name or f"coup:{seat}"  # never legal: the engine forfeits it
                private, public, look = await self._call(self._play, m, name, set(bots))
                for s, b in bots.items():
                    b.send(protocol.event(public, private, s))
        finally:
            ended = look.get("placements")
            await asyncio.gather(*(b.finish(protocol.end(ended, s) if ended else None) for s, b in bots.items()))
        placements = look["placements"]
        path = self.save_dir / "matches" / f"match-{index:04d}.jsonl"
        await self._call(m.save, path)
        return {"match": index, "deal_seed": deal_seed, "seats": names, "placements": placements,
                "steps": look["steps"], "forfeits": forfeits, "file": str(path),
                "bot_exit_status": {str(s): b.exit_status for s, b in bots.items()},
                "bot_decisions": {str(s): [b.decisions, b.seconds] for s, b in bots.items()}}

    async def _ask(self, bot: BotProcess, step: int, look: dict):
        if bot.broken:
            return None, *bot.broken
        line, why = await bot.decide(protocol.decide(step, look["observation"], look["legal"]), self.move_timeout)
        if why:
            return None, why, line
        return protocol.check_reply(line, look["legal"], self.num_players)

    # ------------------------------------------------------------ the tournament
    async def run(self, num_matches: int, concurrency: int = 8, on_match=None) -> dict:
        """Play ``num_matches`` matches, at most ``concurrency`` at a time; returns the report."""
        plan = seatings(len(self.entrants), self.num_players, num_matches, self.seed)
        (self.save_dir / "matches").mkdir(parents=True, exist_ok=True)
        gate = asyncio.Semaphore(max(1, int(concurrency)))

        async def one(i):
            async with gate:
                result = await self.play_match(i, plan[i])
            if on_match:
                on_match(result)
            return result

        t0 = time.perf_counter()
        before = children_now()
        reaper = become_subreaper()  # an orphan of a bot becomes ours, to be found and killed
        try:
            with open(self.save_dir / "arena.log", "w") as self._log:
                matches = await asyncio.gather(*(one(i) for i in range(num_matches)))
        finally:
            self._log = None
            sweep_orphans(before, BotProcess.RUNNING)
            if reaper:
                become_subreaper(False)
        wall = time.perf_counter() - t0
        return self.report(matches, wall)

    def play(self, num_matches: int, concurrency: int = 8, on_match=None) -> dict:
        """`run` from synchronous code."""
        return asyncio.run(self.run(num_matches, concurrency, on_match))

    def report(self, matches: list[dict], wall: float) -> dict:
        rows = {}
        for e in self.entrants:
            wins, places, forfeits = [], [], dict.fromkeys(protocol.REASONS, 0)
            decisions, seconds = 0, 0.0
            for r in matches:
                for seat, name in enumerate(r["seats"]):
                    if name != e.name:
                        continue
                    place = r["placements"].index(seat) + 1
                    wins.append(place == 1)
                    places.append(place)
                    d, s = r["bot_decisions"].get(str(seat), (0, 0.0))
                    decisions, seconds = decisions + d, seconds + s
            for f in (f for r in matches for f in r["forfeits"] if f["entrant"] == e.name):
                forfeits[f["reason"]] += 1
            row = summarize(np.asarray(wins, np.int32), np.asarray(places, np.int32))
            row = {"matches": row["games"], **{k: row[k] for k in ("wins", "win_rate", "ci95_low", "ci95_high",
                                                                  "mean_placement")}}
            row["forfeits"] = forfeits
            if e.is_bot:
                row["bot_decisions"] = decisions
                row["bot_seconds_per_decision"] = seconds / max(decisions, 1)
            rows[e.name] = row
        moves = sum(r["steps"] for r in matches)
        return {
            "protocol": protocol.PROTOCOL_VERSION, "players": self.num_players, "matches": len(matches),
            "seed": self.seed, "move_timeout": self.move_timeout,
            "entrants": {e.name: e.describe() for e in self.entrants},
            "results": rows,
            "forfeits": [f for r in matches for f in r["forfeits"]],
            "figures": {"wall_seconds": wall, "moves": moves, "moves_per_s": moves / max(wall, 1e-9),
                        "matches_per_s": len(matches) / max(wall, 1e-9)},
            "save_dir": str(self.save_dir),
            "match_list": [{k: r[k] for k in ("match", "deal_seed", "seats", "placements", "steps", "file",
                                              "bot_exit_status")} for r in matches],
        }

    def close(self) -> None:
        self._jax.shutdown(wait=True)


def results_table(report: dict, title: str | None = None):
    """A rich table of a report's rows, best win rate first."""
    from rich.table import Table

    table = Table(title=title or f"bot arena: {report['matches']} matches, {report['players']} players, "
                                 f"seed {report['seed']}")
    rows = []
    for name, row in sorted(report["results"].items(), key=lambda kv: -kv[1]["win_rate"]):
        forfeits = ", ".join(f"{k} {v}" for k, v in row["forfeits"].items() if v) or "-"
        rows.append((name, report["entrants"][name]["kind"], str(row["matches"]), f"{row['win_rate']:.3f}",
                     f"{row['ci95_low']:.3f}-{row['ci95_high']:.3f}", f"{row['mean_placement']:.2f}", forfeits))
    # In a narrow terminal the names and the forfeits fold onto more lines; the figures
    # keep their whole width (never "0.193-0.6...").
    for k, (col, justify) in enumerate((("entrant", "left"), ("kind", "left"), ("matches", "right"),
                                        ("win rate", "right"), ("95% CI", "right"), ("mean place", "right"),
                                        ("forfeits", "left"))):
        if col in ("entrant", "forfeits"):
            table.add_column(col, justify=justify, overflow="fold", min_width=8)
        else:
            table.add_column(col, justify=justify, no_wrap=True, min_width=max([len(r[k]) for r in rows] + [len(col)]))
    for r in rows:
        table.add_row(*r)
    return table
