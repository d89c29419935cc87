"""The bot arena: the protocol's messages, seating, and tournaments between the example
bots, our policies (belief_ev and an exported network) and bots that time out, crash,
answer garbage or illegal names, where no match is lost and every forfeit is logged
with its reason.  The quick tournament runs through ``python -m coupjax arena``
in-process; the 100-match one is marked slow.
"""
from __future__ import annotations

import json
import random
import shutil
import sys
from collections import Counter
from pathlib import Path

import jax
import numpy as np
import pytest

from coupjax import cli
from coupjax.seat_tables import summarize
from coupjax.botarena import Arena, ArenaError, parse_bot, parse_policy, process, protocol, seatings
from coupjax.events import event_to_dict, last_event
from coupjax.match import Match

ROOT = Path(__file__).resolve().parents[1]
PY = shutil.which("python") or sys.executable
BAD = ROOT / "tests" / "bots" / "misbehaving_bot.py"
# name -> (command, (the reason it forfeits with, at its Nth decision of a match))
MISBEHAVING = {"slow": (f"{PY} {BAD} timeout 2", ("timeout", 2)), "crashy": (f"{PY} {BAD} crash 1", ("crash", 1)),
               "junk": (f"{PY} {BAD} garbage 2", ("garbage", 2)), "cheat": (f"{PY} {BAD} illegal 1", ("illegal", 1))}


def good_bots() -> dict:
    bots = {"simple": f"{PY} {ROOT / 'examples' / 'bots' / 'simple_bot.py'}"}
    if shutil.which("node"):
        bots["rnd_js"] = f"node {ROOT / 'examples' / 'bots' / 'random_bot.js'}"
    return bots


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    """A tiny exported DQN with random parameters (as tests/test_policies.py makes one)."""
    from coupjax.env import Env
    from training import checkpoint
    from coupjax.networks import init_params, make_network

    env = Env(4)
    path = tmp_path_factory.mktemp("export") / "tiny"
    params = init_params(make_network(env, (16,)), jax.random.PRNGKey(0), env.observation_shape[0])
    checkpoint.write_export(path, params, kind="dqn", num_players=4, hidden_sizes=(16,), obs_dim=env.observation_shape[0],
                   num_actions=env.num_actions, temperature=0.0, config={})
    return path


# ------------------------------------------------------------------ protocol
@pytest.mark.parametrize("line, name, reason", [
    (b'{"action": "income"}\n', "income", None),
    (b'{"action": "coup:1"}\n', "coup:1", "illegal"),
    (b'{"action": "coup:9"}\n', None, "garbage"),
    (b'{"action": "fly"}\n', None, "garbage"),
    (b'{"move": "income"}\n', None, "garbage"),
    (b'income\n', None, "garbage"),
    (b'\xff\xfe\n', None, "garbage"),
    (b"[1, 2]\n", None, "garbage"),
    (b"", None, "crash"),
])
def test_replies_are_checked(line, name, reason):
    got, why, detail = protocol.check_reply(line, ["income", "foreign_aid", "tax"], 4)
    assert (got, why) == (name, reason) and (bool(detail) == bool(reason))


@pytest.mark.parametrize("line, reason", [(b'{"type": "hello", "protocol": 1}', None),
                                          (b'{"type": "hello", "protocol": 2}', "version"),
                                          (b'{"type": "hi"}', "garbage"), (b"nope", "garbage"), (b"", "crash")])
def test_hello_is_checked(line, reason):
    assert protocol.check_hello(line)[0] == reason


def _random_match(seed, max_steps=400):
    rng = random.Random(seed)
    m = Match(4, seed=seed)
    yield m
    while not m.done and len(m.events) < max_steps:
        m.play(rng.choice(m.legal_actions()))
        yield m


def test_readable_observation_agrees_with_the_table():
    """Every seat's readable observation (parsed by coupjax.observation.parse, seats made
    absolute) says what the Match says: coins, hidden and revealed cards, own cards,
    the pending action; only the seat's own cards are in it."""
    observe, checked = jax.jit(Match(4).env.observe), 0
    for seed in range(3):
        for m in _random_match(seed):
            if m.done:
                break
            view = m.view()
            for seat in range(4):
                obs = protocol.readable(observe(m.state, seat), seat, 4)
                assert obs["coins"] == view["coins"] and obs["hidden"] == view["hidden"]
                assert [sorted(r) for r in obs["revealed"]] == [sorted(r) for r in view["revealed"]]
                assert obs["cards"] == m.hands[seat] and obs["alive"] == view["alive"]
                assert obs["phase"] == view["phase"] and obs["main_action"] == view["main_action"]
                assert obs["target"] == view["target"] and obs["blocker"] == view["blocker"]
                if view["main_action"] is not None:
                    assert obs["actor"] == view["actor"]
                own_exchange = view["phase"] == "exchange" and view["actor"] == seat
                assert sorted(obs["drawn"]) == sorted(m.drawn if own_exchange else [])
                checked += 1
    assert checked > 300


def test_each_bot_gets_the_public_event_and_only_its_own_private_facts():
    """Over random matches: the private facts (a lose or keep choice, a redraw, an
    exchange draw, a reveal's index) reach exactly the seat they belong to."""
    seen = Counter()
    for seed in range(12):
        for m in _random_match(seed):
            if not m.events:
                continue
            private = m.events[-1]
            public = event_to_dict(last_event(m.state), 4, public=True)
            for seat in range(4):
                e = protocol.event(public, private, seat)["event"]
                assert set(e) == set(public)
                for k in ("step", "turn", "seat", "phase", "forfeit", "actor", "challenge", "eliminated"):
                    assert e[k] == public[k]
                owner_redraw = private["challenge"]["seat"] if private["challenge"] else None
                assert e["redraw"] == (private["redraw"] if seat == owner_redraw else None)
                seen["redraw"] += e["redraw"] is not None
                assert e["exchange_drawn"] == (private["exchange_drawn"] if seat == private["actor"] else [])
                seen["drawn"] += bool(e["exchange_drawn"])
                assert e["action"] == (private["action"] if seat == private["seat"] else public["action"])
                for r in e["reveals"]:
                    assert ("index" in r) == (r["seat"] == seat)
                    seen["index"] += "index" in r
    assert min(seen["redraw"], seen["drawn"], seen["index"]) > 0, seen


def test_table_text_names_every_seat():
    m = Match(4, seed=0)
    m.play("steal:2")
    obs = protocol.readable(m.state.observation, m.current_player, 4)
    text = protocol.table_text(obs, m.current_player, own_cards=True)
    assert "steal on seat 2 (claims captain)" in text and "seat 3" in text
    assert ", ".join(m.hands[m.current_player]) in text


# ------------------------------------------------------------------ seating
def test_seatings_rotate_balance_and_follow_the_seed():
    plan = seatings(7, 4, 100, seed=7)
    assert plan == seatings(7, 4, 100, seed=7) and plan != seatings(7, 4, 100, seed=8)
    assert all(len(set(row)) == 4 for row in plan)
    counts = Counter(e for row in plan for e in row)
    assert sum(counts.values()) == 400 and max(counts.values()) - min(counts.values()) <= 4
    for r in range(25):  # each round: one line-up, every entrant once in every seat
        rnd = plan[4 * r:4 * r + 4]
        assert len({frozenset(row) for row in rnd}) == 1
        assert all(sorted(row[s] for row in rnd) == sorted(rnd[0]) for s in range(4))
    assert seatings(4, 4, 3, seed=0)[2] != seatings(4, 4, 3, seed=0)[0]


def test_entrant_mistakes_are_found_before_any_match():
    with pytest.raises(ArenaError, match="NAME=COMMAND"):
        parse_bot("python bot.py")
    with pytest.raises(ArenaError, match="not found"):
        parse_bot("x=surely-no-such-program-here")
    assert parse_policy("belief_ev").spec == parse_policy("mine=belief_ev").spec == "belief_ev"
    with pytest.raises(ArenaError, match="unique"):
        Arena([parse_policy("random"), parse_policy("random"), parse_policy("honest")], 2)
    with pytest.raises(ArenaError, match="cannot fill"):
        Arena([parse_policy("random")], 2)
    with pytest.raises(ArenaError, match="neither a registered policy"):
        Arena([parse_policy("random"), parse_policy("no_such_policy")], 2)


@pytest.mark.parametrize("argv, says", [
    (["arena", "--policy", "random"], "cannot fill"),
    (["arena", "--bot", "x", "--policy", "random"], "NAME=COMMAND"),
    (["arena", "--bot", "x=no-such-program-3", "--policy", "a", "--policy", "b", "--policy", "c"], "not found"),
    (["arena", "--policy", "nope", "--policy", "random", "--players", "2"], "neither a registered policy"),
    (["arena", "--move-timeout", "0"], "positive number of seconds"),
    (["arena", "--matches", "0"], "positive integer"),
    (["arena", "--seed", "0", "--policy", "random", "--policy", "honest", "--players", "2"], "used to tune"),
])
def test_arena_command_mistakes_are_one_line(capsys, argv, says):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1 and says in err, err


# ------------------------------------------------------------------ tournaments
def check_tournament(report: dict, out_dir: Path, num_matches: int, misbehaving: dict,
                     stderr_says: str | None = "misbehaving") -> None:
    """No match lost, every forfeit logged with its reason (in the report, the arena's log
    and the saved match), the right reasons for the right bots (``misbehaving``: name ->
    (reason, N): it forfeits at its Nth decision of every match that gets that far,
    nowhere else), and results that are the arena's one definition of winning over the
    saved matches."""
    assert report["matches"] == num_matches == len(report["match_list"])
    files = sorted((out_dir / "matches").glob("match-*.jsonl"))
    assert len(files) == num_matches
    log = (out_dir / "arena.log").read_text().splitlines()
    assert len(log) == len(report["forfeits"])
    places = {name: [] for name in report["entrants"]}
    expected = {name: 0 for name in report["entrants"]}
    forfeits_by_match = {}
    for f in report["forfeits"]:
        forfeits_by_match.setdefault(f["match"], []).append(f)
        assert f["reason"] in protocol.REASONS and f["detail"]
        assert any(f"match {f['match']} step {f['step']} seat {f['seat']} ({f['entrant']}): {f['reason']}" in x
                   for x in log)
    for row in report["match_list"]:
        replay = Match.load(row["file"])  # exact replay of the saved match
        assert replay.done and replay.placements() == row["placements"]
        events = replay.events
        logged = {(f["step"], f["seat"]): f for f in forfeits_by_match.get(row["match"], [])}
        assert {(e["step"], e["seat"]) for e in events if e["forfeit"]} == set(logged)
        for (step, seat), f in logged.items():  # an illegal name is played as sent, else a never-legal one
            assert events[step]["action"] == (f["sent"] if f["reason"] == "illegal" else f"coup:{seat}")
        for seat, name in enumerate(row["seats"]):
            places[name].append(row["placements"].index(seat) + 1)
            kind = report["entrants"][name]["kind"]
            log_file = out_dir / "logs" / f"match-{row['match']:04d}-seat{seat}-{name}.stderr.log"
            assert log_file.exists() == (kind == "bot")
            if name in misbehaving:
                reason, nth = misbehaving[name]
                mine = [e for e in events if e["seat"] == seat]
                if len(mine) >= nth:
                    assert logged[(mine[nth - 1]["step"], seat)]["reason"] == reason
                    expected[name] += 1
                    assert not stderr_says or stderr_says in log_file.read_text()
    for name, row in report["results"].items():
        p = np.asarray(places[name])
        expect = summarize(p == 1, p)
        assert row["matches"] == expect["games"] == len(p)
        for k in ("wins", "win_rate", "ci95_low", "ci95_high", "mean_placement"):
            assert row[k] == expect[k], (name, k)
        reason = misbehaving.get(name, (None,))[0]
        assert row["forfeits"] == {r: (expected[name] if r == reason else 0) for r in protocol.REASONS}, (name, row)
        assert expected[name] >= len(p) // 2 if reason else expected[name] == 0
    assert sum(r["wins"] for r in report["results"].values()) == num_matches


def test_quick_tournament_through_the_command(tmp_path, export_dir, capsys):
    """8 matches of 4 players between the example bots (Python, Node), belief_ev, a tiny
    export and four bots that time out, crash, answer garbage and name an illegal action."""
    argv = ["arena", "--matches", "8", "--move-timeout", "3", "--seed", "11", "--out", str(tmp_path / "res.json"),
            "--policy", "belief_ev", "--policy", f"tiny={export_dir}"]
    for name, command in good_bots().items():
        argv += ["--bot", f"{name}={command}"]
    for name, (command, _) in MISBEHAVING.items():
        argv += ["--bot", f"{name}={command}"]
    cli.main(argv)
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "res.json").read_text())
    check_tournament(report, tmp_path / "res", 8, {k: v[1] for k, v in MISBEHAVING.items()})
    assert "win rate" in out and "belief_ev" in out and "timeout" in out
    assert report["entrants"]["tiny"] == {"kind": "policy", "spec": str(export_dir)}
    logs = sorted((tmp_path / "res" / "logs").glob("*-simple.stderr.log"))  # the hello told it its time
    assert logs and all("3.0 s per decision" in p.read_text() for p in logs)
    assert set(report["results"]) == {"belief_ev", "tiny", *good_bots(), *MISBEHAVING}


def test_a_bot_process_reports_each_mistake(tmp_path):
    """Over-long lines are garbage, a closed stdout is a crash, silence is a timeout, and
    the bot's stderr lands in its log."""
    import asyncio

    async def ask(code, timeout=5.0):
        bot = process.BotProcess("b", f"{PY} -c '{code}'", tmp_path / "b.log")
        await bot.start(protocol.hello("b", 0), 5.0)
        got = await bot.decide({"type": "decide"}, timeout)
        await bot.finish(None)
        return bot.broken, got[1]

    hello = "import sys, json; print(json.dumps({\"type\": \"hello\", \"protocol\": 1}), flush=True); "
    assert asyncio.run(ask(hello + "sys.stdin.readline(); sys.stdin.readline(); print(\"x\" * 70000, flush=True)")) \
        == (None, "garbage")
    assert asyncio.run(ask(hello + "sys.stderr.write(\"bye\"); sys.exit(1)")) == (None, "crash")
    assert (tmp_path / "b.log").read_text() == "bye"
    assert asyncio.run(ask(hello + "import time; time.sleep(60)", timeout=0.3)) == (None, "timeout")


def test_handshake_failures_forfeit_every_decision(tmp_path, monkeypatch):
    """A bot of another protocol version, or one that never answers the hello, is never
    spoken to again: each of its decisions forfeits with that reason."""
    monkeypatch.setattr(process, "HELLO_TIMEOUT", 0.5)
    entrants = [parse_bot(f"old={PY} {BAD} version"), parse_bot(f"mute={PY} {BAD} silent_hello"),
                parse_policy("random"), parse_policy("honest")]
    arena = Arena(entrants, 4, move_timeout=0.5, save_dir=tmp_path / "a", seed=3)
    report = arena.play(4)
    arena.close()
    check_tournament(report, tmp_path / "a", 4, {"old": ("version", 1), "mute": ("timeout", 1)}, stderr_says=None)
    for row in report["match_list"]:  # both bots forfeit their first decision: the last two places
        assert {row["seats"][s] for s in row["placements"][2:]} == {"old", "mute"}


@pytest.mark.slow
def test_hundred_match_tournament(tmp_path, export_dir):
    """The 100-match tournament of the issue: two example bots, belief_ev, an export and
    the misbehaving bots; no match lost, every forfeit logged with its reason.
    Quick twin: test_quick_tournament_through_the_command."""
    entrants = [parse_policy("belief_ev"), parse_policy(f"tiny={export_dir}")]
    entrants += [parse_bot(f"{n}={c}") for n, c in good_bots().items()]
    entrants += [parse_bot(f"{n}={c}") for n, (c, _) in MISBEHAVING.items()]
    arena = Arena(entrants, 4, move_timeout=3, save_dir=tmp_path / "t", seed=7)
    arena.warm_up()
    report = arena.play(100, concurrency=16)
    arena.close()
    check_tournament(report, tmp_path / "t", 100, {k: v[1] for k, v in MISBEHAVING.items()})
    (tmp_path / "t" / "results.json").write_text(json.dumps(report, indent=2))
    print(json.dumps({k: {x: v[x] for x in ("matches", "win_rate", "mean_placement", "forfeits")}
                      for k, v in report["results"].items()}, indent=1), json.dumps(report["figures"]))


def _bots_to_try(tmp_path) -> dict:
    """Every bot of ``examples/bots/`` (a Node.js one where node is installed), every
    ``--bot NAME="COMMAND"`` docs/bots.md names and every ``python bot`` block it shows."""
    import re

    bots = {}
    for path in sorted((ROOT / "examples" / "bots").iterdir()):
        if path.suffix == ".py":
            bots[f"ex_{path.stem}"] = f"{PY} {path}"
        elif path.suffix == ".js" and shutil.which("node"):
            bots[f"ex_{path.stem}"] = f"node {path}"
    doc = (ROOT / "docs" / "bots.md").read_text()
    blocks = re.findall(r"```python bot\n(.*?)```", doc, re.S)
    named = dict(re.findall(r"saved as `(\w+\.py)`.*?```python bot\n(.*?)```", doc, re.S))  # the file it is saved as
    for k, block in enumerate(blocks):
        name = next((file for file, code in named.items() if code == block), f"doc_bot_{k}.py")
        (tmp_path / name).write_text(block)
        bots[f"doc_block{k}"] = f"{PY} {tmp_path / name}"
    for name, command in re.findall(r'--bot (\w+)="([^"]+)"', doc):
        argv = [PY if a == "python" else str(ROOT / a) if (ROOT / a).is_file() else
                str(tmp_path / a) if (tmp_path / a).is_file() else a for a in command.split()]
        if argv[0] != "node" or shutil.which("node"):
            bots[f"doc_{name}"] = " ".join(argv)
    return bots


def test_every_example_bot_and_every_bot_in_the_doc_plays_without_a_forfeit(tmp_path):
    """Each bot of examples/bots/ and of docs/bots.md (its commands and its code blocks)
    plays small 2-player matches against ``random`` in the arena: every match ends, no
    decision forfeits, and every bot played."""
    bots = _bots_to_try(tmp_path)
    assert {"ex_simple_bot", "doc_simple", "doc_first", "doc_block0"} <= set(bots), sorted(bots)
    entrants = [parse_bot(f"{name}={command}") for name, command in bots.items()] + [parse_policy("random")]
    arena = Arena(entrants, 2, move_timeout=30, save_dir=tmp_path / "a", seed=5)
    arena.warm_up()
    report = arena.play(2 * len(entrants), concurrency=4)
    arena.close()
    assert not report["forfeits"], report["forfeits"][:3]
    for name in bots:
        assert report["results"][name]["matches"] >= 1, name
    for row in report["match_list"]:
        assert sorted(row["placements"]) == [0, 1] and all(v == 0 for v in row["bot_exit_status"].values()), row


@pytest.mark.parametrize("width", [80, 240])
def test_results_table_keeps_every_figure_whole_in_a_narrow_terminal(width):
    """The figures keep their width (the interval once read ``0.193-0.6…`` at 80 columns);
    names and forfeits fold onto more lines, never cut."""
    import io

    from rich.console import Console

    from coupjax.botarena import results_table

    report = {"matches": 8, "players": 4, "seed": 11,
              "entrants": {"belief_ev": {"kind": "policy"}, "a_long_entrant_name": {"kind": "bot"}},
              "results": {"belief_ev": {"matches": 8, "win_rate": 0.5, "ci95_low": 0.193, "ci95_high": 0.607,
                                        "mean_placement": 2.1, "forfeits": {"timeout": 0}},
                          "a_long_entrant_name": {"matches": 8, "win_rate": 0.25, "ci95_low": 0.071, "ci95_high": 0.591,
                                                  "mean_placement": 2.9,
                                                  "forfeits": {"timeout": 3, "garbage": 2, "illegal": 1}}}}
    buffer = io.StringIO()
    Console(file=buffer, width=width).print(results_table(report))
    text = buffer.getvalue()
    assert "…" not in text and all(len(line) <= width for line in text.splitlines())
    for figure in ("0.193-0.607", "0.071-0.591", "0.500", "2.90", "win rate", "95% CI", "mean place"):
        assert figure in text, (width, figure, text)
