"""One vocabulary (issue 43, point 2): prompts offer what the rules allow, a seat is
"they", one minus sign, one way to name a bot, the advice names its button."""
from __future__ import annotations

import re
from pathlib import Path

from coupjax.web import words as W

WEB = Path(W.__file__).parent
NAMES = ["Ann", "Bea", "Cal", "Dan"]


def _react(main, target=None):
    return {"done": False, "current_player": 2, "phase": "react", "actor": 1, "main_action": main, "target": target}


def test_a_prompt_asks_only_what_the_rules_allow():
    assert W.prompt(NAMES, _react("tax"), 0) == "Bea claims Duke: tax (+3). Any challenge?"
    assert W.prompt(NAMES, _react("foreign_aid"), 0) == "Bea takes foreign aid (+2). Any block?"
    assert W.prompt(NAMES, _react("steal", 0), 0).endswith("Any challenge or block?")
    assert W.prompt(NAMES, _react("exchange"), 0).endswith("Any challenge?")


def test_the_page_words_have_one_minus_sign_and_no_it_for_a_seat():
    texts = {p.name: p.read_text() for p in [WEB / "words.py", *sorted((WEB / "static").iterdir())]}
    texts["statements.py"] = Path(W.statements.__file__).read_text()
    for name, text in texts.items():
        assert "\u2212" not in text, f"{name}: a typographic minus beside the ASCII one"
        assert not re.search(r"\bit (was|cannot|has|holds)\b", text), f"{name}: a seat called 'it'"


def test_one_way_to_name_a_bot():
    assert [W.policy_name(p) for p in ("best", "aggressive", "honest", "belief_ev")] == [
        "Best", "Aggressive", "Honest", "Belief EV"]


def test_the_advice_names_the_button():
    choices = [{"label": "You challenge Bea's Ambassador block", "entry": {"seat": 0, "action": "challenge"}},
               {"label": "You accept the block", "entry": {"action": "all_passed"}}]
    assert W.button(choices, "pass", 0) == "You accept the block"
    assert W.button(choices, "challenge", 0) == "You challenge Bea's Ambassador block"
    assert W.button([{"label": "You pass", "action": "pass"}], "pass", 0) == "You pass"  # practice's choices


def test_a_lost_challenge_says_what_was_shown():
    ev = {"phase": "react", "seat": 2, "action": "challenge", "actor": 1, "main_action": "tax",
          "challenge": {"seat": 1, "role": "duke", "bluff_caught": False}}
    assert W.event(NAMES, ev, 0) == "Cal challenges Bea's Duke; Bea shows a Duke"
    ev["challenge"]["bluff_caught"] = True
    assert W.event(NAMES, ev, 0) == "Cal challenges Bea's Duke; Bea was caught bluffing: no Duke"


def test_a_game_is_renamed_with_spaces_and_keeps_the_name(tmp_path):
    from coupjax.web.store import GameStore

    store = GameStore(tmp_path)
    store.write("20261203-140912-table-a474", {"kind": "table", "names": NAMES}, ['{"type": "x"}'])
    new = store.rename("20261203-140912-table-a474", "Friday night game #1")
    assert new == "Friday-night-game-1"
    row = next(r for r in store.list() if r["id"] == new)
    assert row["title"] == "Friday night game #1" and row["names"] == NAMES
    assert store.rename(new, "Ann, Bea, Cal, Dan") == "Ann-Bea-Cal-Dan"  # the name the list showed
    for bad in ("../outside/evil", ".hidden", "a/b", "x.json", "", "a" * 101, "a\nb"):
        try:
            store.rename("Ann-Bea-Cal-Dan", bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was taken as a name")


def test_every_table_size_is_compiled_in_the_background_default_first():
    """issue 43 point 5: after the default size, the others, one at a time; a size the
    form names first jumps the queue and is not compiled twice."""
    import threading

    from coupjax.web.readiness import Readiness

    compiled, gate, four_started = [], threading.Event(), threading.Event()

    def table(n):
        compiled.append(n)
        if n == 4:
            four_started.set()
            gate.wait(5)

    r = Readiness(False, table=table, advice=lambda tracker, search: None)
    thread = r.ensure_all()
    assert four_started.wait(10)  # without this wait, 6 could start before the thread runs
    r.ensure(6)  # the start form names 6 players while 4 compiles
    gate.set()
    thread.join(30)
    assert not thread.is_alive() and sorted(compiled) == [2, 3, 4, 5, 6] and compiled[0] == 4
    assert compiled.index(6) < compiled.index(5) and all(v["ready"] for v in r.status().values())
