"""The page's HTTP API (`coupjax.web.app`) in-process with FastAPI's TestClient.

A request that is not from the page (a wrong token, a malformed body, an event for a
game that does not exist) gets a clear 4xx and changes no file; a rule-breaking entry
is kept as a warning with its rule and the record stays as it was; undo and a restart
give back the same game; the page's advice for a record and key is the tracker's.
"""
from __future__ import annotations

import hashlib
import json

import jax
import pytest
from fastapi.testclient import TestClient

from coupjax.match import Match
from coupjax.tracker import Tracker
from coupjax.web import words as W
from coupjax.web.app import HEADER, create_app

TOKEN = "s3cret-token"
BASE = "http://127.0.0.1"  # a Host the server serves (coupjax.web.guard)
SETUP = {"num_players": 4, "names": ["Ann", "Bea", "Cal", "Dan"], "seat": 0, "hand": ["duke", "duke"], "first": 1}
# Bea taxes; Cal challenges and loses (Bea shows her Duke, so every Duke is accounted for); Cal loses a card
OPENING = [{"seat": 1, "action": "tax"}, {"seat": 2, "action": "challenge", "bluff_caught": False}]
CAL_LOSES = {"seat": 2, "action": "reveal", "reveals": [{"seat": 2, "role": "contessa"}]}
FOURTH_DUKE = {"seat": 2, "action": "reveal", "reveals": [{"seat": 2, "role": "duke"}]}


def snapshot(root):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.iterdir())}


@pytest.fixture(scope="module")
def games_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("games")


@pytest.fixture(scope="module")
def client(games_dir):
    app = create_app(games_dir, token=TOKEN, search=False)
    return TestClient(app, headers={HEADER: TOKEN}, base_url=BASE)


def new_game(client, **over):
    r = client.post("/api/games", json={**SETUP, **over})
    assert r.status_code == 200, r.text
    return r.json()


def enter(client, gid, entry, fixes=None, status=200):
    body = {"entry": entry} if fixes is None else {"entry": entry, "fixes": fixes}
    r = client.post(f"/api/games/{gid}/entries", json=body)
    assert r.status_code == status, r.text
    return r.json()


def test_wrong_or_missing_token_is_refused_and_changes_nothing(client, games_dir):
    g = new_game(client)
    before = snapshot(games_dir)
    for headers in ({HEADER: "wrong"}, {HEADER: ""}):
        bare = TestClient(client.app, headers=headers, base_url=BASE)
        for method, path, body in (("get", "/api/games", None), ("get", f"/api/games/{g['id']}", None),
                                   ("post", f"/api/games/{g['id']}/entries", {"entry": OPENING[0]}),
                                   ("post", f"/api/games/{g['id']}/undo", None), ("post", "/api/games", SETUP)):
            r = getattr(bare, method)(path, **({"json": body} if body else {}))
            assert r.status_code == 401, (path, r.text)
            assert "token" in r.json()["detail"]
    assert snapshot(games_dir) == before
    page = TestClient(client.app, base_url=BASE).get("/")
    assert page.status_code == 401 and "token" in page.text  # the page asks for the token
    opened = TestClient(client.app, base_url=BASE).get(f"/?token={TOKEN}", follow_redirects=False)
    assert opened.status_code == 303 and "coupjax_token" in opened.headers["set-cookie"]


@pytest.mark.parametrize("body, says", [
    ({"entry": {"seat": 1, "action": "fly"}}, "action"),
    ({"entry": {"seat": 1, "action": "tax", "colour": "red"}}, "colour"),
    ({"entry": {"seat": "one", "action": "tax"}}, "seat"),
    ({"entry": {"seat": 1, "action": "tax"}, "extra": 1}, "extra"),
    ({"entry": [1, 2]}, "entry"),
    ({}, "entry"),
    ({"entry": {"seat": 1, "action": "tax"}, "fixes": 99}, "warning 99"),
])
def test_malformed_entry_is_a_422_and_changes_nothing(client, games_dir, body, says):
    g = new_game(client)
    before = snapshot(games_dir)
    r = client.post(f"/api/games/{g['id']}/entries", json=body)
    assert r.status_code == 422, r.text
    assert says in r.json()["detail"], r.json()["detail"]
    assert snapshot(games_dir) == before
    assert client.get(f"/api/games/{g['id']}").json()["table"]["steps"] == 0


def test_malformed_setup_and_non_json_are_422(client, games_dir):
    before = snapshot(games_dir)
    for body in ({**SETUP, "num_players": 7}, {**SETUP, "num_players": "4"}, {**SETUP, "hand": ["duke", "king"]},
                 {**SETUP, "seat": 4}, {**SETUP, "style": "reckless"}, {"num_players": 4}):
        r = client.post("/api/games", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["detail"]
    r = client.post("/api/games", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert snapshot(games_dir) == before


def test_a_game_that_does_not_exist_is_a_404_and_changes_nothing(client, games_dir):
    new_game(client)
    before = snapshot(games_dir)
    for method, path, body in (("post", "/api/games/20990101-000000-table-beef/entries", {"entry": OPENING[0]}),
                               ("get", "/api/games/nope", None), ("post", "/api/games/nope/undo", None),
                               ("get", "/api/games/nope/replay", None),
                               ("post", "/api/games/..%2Fescape/entries", {"entry": OPENING[0]})):
        r = getattr(client, method)(path, **({"json": body} if body else {}))
        assert r.status_code == 404, (path, r.text)
        assert "no game" in r.json()["detail"]
    assert snapshot(games_dir) == before


def test_rule_breaking_entry_is_a_warning_kept_apart_and_corrected(client, games_dir):
    g = new_game(client)
    gid = g["id"]
    assert [c["label"] for c in g["choices"]][:3] == ["Bea takes income (+1)", "Bea takes foreign aid (+2)",
                                                       "Bea claims Duke: tax (+3)"]
    for e in OPENING:
        assert enter(client, gid, e)["outcome"]["status"] == "accepted"
    record = (games_dir / f"{gid}.jsonl").read_bytes()
    out = enter(client, gid, FOURTH_DUKE)
    w = out["outcome"]["warning"]
    assert out["outcome"]["status"] == "warning" and w["field"] == "reveals" and "duke" in w["rule"]
    assert (games_dir / f"{gid}.jsonl").read_bytes() == record  # the record stays as it was
    page = out["game"]
    assert page["table"]["steps"] == 2 and page["warnings"][0]["entry"] == FOURTH_DUKE  # nothing entered is lost
    assert page["advice"] is None  # warnings are not advice
    ask = enter(client, gid, {"seat": 2, "action": "reveal"}, fixes=w["id"])["outcome"]  # the page's "correct it"
    assert ask["status"] == "need" and ask["asks"][0]["field"] == "reveals" and ask["fixes"] == w["id"]
    fixed = enter(client, gid, CAL_LOSES, fixes=w["id"])
    assert fixed["outcome"]["status"] == "accepted"
    assert fixed["game"]["warnings"][0]["status"] == "corrected"
    assert fixed["game"]["log"][-1]["text"] == "Cal loses a card; Cal revealed Contessa"


def test_missing_facts_are_asked_for(client):
    g = new_game(client, hand=["duke", "captain"], first=0)
    gid = g["id"]
    enter(client, gid, {"seat": 0, "action": "tax"})
    ask = enter(client, gid, {"seat": 1, "action": "challenge", "bluff_caught": False})["outcome"]
    assert ask["status"] == "need" and ask["asks"][0]["field"] == "redraw"  # your proven Duke is replaced
    out = enter(client, gid, {**ask["entry"], "redraw": "contessa"})
    assert out["outcome"]["status"] == "accepted" and sorted(out["game"]["hand"]) == ["captain", "contessa"]
    lose = [c for c in out["game"]["choices"] if c["kind"] == "reveal"]
    assert [c["label"] for c in lose] == [f"Bea reveals {r}" for r in ("Duke", "Assassin", "Captain", "Ambassador",
                                                                        "Contessa")]  # one tap, no question
    assert lose[0]["entry"] == {"seat": 1, "action": "reveal", "reveals": [{"seat": 1, "role": "duke"}]}


def test_undo_and_restart_give_back_the_same_game(client, games_dir):
    g = new_game(client)
    gid = g["id"]
    for e in OPENING + [CAL_LOSES]:
        enter(client, gid, e)
    page = client.get(f"/api/games/{gid}").json()
    enter(client, gid, {"seat": 2, "action": "income"})
    undone = client.post(f"/api/games/{gid}/undo").json()
    assert undone == page
    fresh = TestClient(create_app(games_dir, token=TOKEN, search=False), headers={HEADER: TOKEN}, base_url=BASE)
    assert fresh.get(f"/api/games/{gid}").json() == page  # a restarted server resumes exactly
    loaded = Tracker.load(games_dir / f"{gid}.jsonl")  # the record on disk is a seat record
    assert loaded.num_steps == page["table"]["steps"]


def test_page_advice_is_the_trackers(client):
    """Same record, same key: the page's advice (search off here; with search in
    test_web_browser's slow module) equals `Tracker.advice`."""
    g = new_game(client, hand=["duke", "captain"], first=1)
    entries = [{"seat": 1, "action": "tax"}, {"action": "all_passed"}, {"seat": 2, "action": "steal:0"}]
    for e in entries:
        page = enter(client, g["id"], e)["game"]
    t = Tracker(4, 0, ("duke", "captain"), 1)
    for e in entries:
        t.add(e)
    assert page["advice_for"] == "if_passed"
    frame = client.get(f"/api/games/{g['id']}/replay?step={page['table']['steps']}").json()  # replay: the same
    assert frame["advice_for"] == "if_passed" and frame["advice"] == page["advice"]
    assert frame["advice_words"]["recommended"] == page["advice_words"]["recommended"]
    enter(client, g["id"], {"seat": 3, "action": "pass"})
    page = client.get(f"/api/games/{g['id']}").json()
    t.add({"seat": 3, "action": "pass"})
    assert page["advice_for"] == "now"
    assert page["advice"] == t.advice(use_search=False, key=jax.random.PRNGKey(0))
    words = page["advice_words"]
    assert "call" not in words["challenge"] and words["recommended"]["action"] in page["advice"]["legal"]
    cautious = client.post(f"/api/games/{g['id']}/style", json={"style": "cautious"}).json()
    assert cautious["advice"]["challenge"]["theta"] < page["advice"]["challenge"]["theta"]


def test_practice_to_the_end_and_its_replay(client, games_dir):
    r = client.post("/api/practice", json={"num_players": 4, "seat": 1, "opponents": "random", "seed": 7})
    assert r.status_code == 200, r.text
    g = r.json()
    assert client.post("/api/practice", json={"num_players": 3, "opponents": "no_such_bot"}).status_code == 422
    assert client.post(f"/api/games/{g['id']}/act", json={"action": "fly"}).status_code == 422
    adv = client.get(f"/api/games/{g['id']}?advice=1").json()
    assert adv["advice"] is not None and adv["advice_words"]["recommended"]
    for _ in range(300):
        if g["done"]:
            break
        labels = [c["label"] for c in g["choices"]]
        assert len(set(labels)) == len(labels), labels  # every tap says what it does
        g = client.post(f"/api/games/{g['id']}/act", json={"action": g["choices"][0]["action"]}).json()
    assert g["done"] and g["true_hands"] is not None
    m = Match.load(games_dir / f"{g['id']}.jsonl")  # a full match: replays exactly
    assert m.done and len(m.events) == len(g["log"])
    first = client.get(f"/api/games/{g['id']}/replay?step=0&seat=0").json()
    deal = json.loads((games_dir / f"{g['id']}.jsonl").read_text().splitlines()[0])
    assert first["true_hands"] == deal["hands"]  # a full match shows the true hands
    assert first["steps"] == len(m.events) + 1 and first["event_text"]
    last = client.get(f"/api/games/{g['id']}/replay?step={len(m.events)}").json()
    assert last["table"]["done"] and last["event_text"] is None
    assert client.get(f"/api/games/{g['id']}/replay?step={len(m.events) + 1}").status_code == 422


def test_upload_and_replay_a_seat_record(client, games_dir):
    g = new_game(client)
    for e in OPENING + [CAL_LOSES]:
        enter(client, g["id"], e)
    text = (games_dir / f"{g['id']}.jsonl").read_text()
    gid = client.post("/api/upload", json={"name": "my game.jsonl", "text": text}).json()["id"]
    frames = [client.get(f"/api/games/{gid}/replay?step={k}").json() for k in range(4)]
    assert [f["kind"] for f in frames] == ["seat record"] * 4 and frames[0]["true_hands"] is None
    assert frames[3]["table"]["revealed"][2] == ["contessa"] and frames[3]["event_text"] is None
    assert client.get(f"/api/games/{gid}/replay?step=0&seat=1").status_code == 422  # only the recording seat
    bad = client.post("/api/upload", json={"name": "bad", "text": text + "{oops\n"}).json()["id"]
    r = client.get(f"/api/games/{bad}/replay?step=0").json()
    assert "line 5" in r["error"] and str(games_dir) not in r["error"]  # the line, never the server's path
    before = snapshot(games_dir)
    for name, junk in (("notes.txt", "hello\n"), ("empty.jsonl", ""), ("head.jsonl", text.splitlines()[0][:-3])):
        r = client.post("/api/upload", json={"name": name, "text": junk})
        assert r.status_code == 422 and name in r.json()["detail"] or r.json()["detail"].startswith("not a game")
        assert str(games_dir) not in r.text and "\n" not in r.json()["detail"]
    assert snapshot(games_dir) == before  # a refused upload is not kept, so not listed
    assert not [x for x in client.get("/api/games").json()["games"] if x["id"].startswith("notes")]


@pytest.mark.slow
def test_page_advice_with_search_is_the_trackers(games_dir):
    """With the search (it compiles for a minute on a CPU): the whole advice, values and
    standard errors included, equals `Tracker.advice` with the same key.
    Quick twin: test_page_advice_is_the_trackers."""
    client = TestClient(create_app(games_dir, token=None, search=True), base_url=BASE)
    g = new_game(client, hand=["duke", "captain"], first=1)
    entries = [{"seat": 1, "action": "tax"}, {"action": "all_passed"}, {"seat": 2, "action": "steal:0"},
               {"seat": 3, "action": "pass"}]
    t = Tracker(4, 0, ("duke", "captain"), 1)
    for e in entries:
        page = enter(client, g["id"], e)["game"]
        t.add(e)
    assert page["advice_for"] == "now" and "search" in page["advice"]
    assert page["advice"] == t.advice(use_search=True, key=jax.random.PRNGKey(0))
    words = page["advice_words"]
    assert words["recommended"]["source"] in ("search", "search, tie broken by the advice")
    assert len(words["values"]) == len(page["advice"]["legal"])


def test_serve_on_the_network_prints_a_token_it_then_requires(tmp_path, capsys):
    """``coupjax serve --host 0.0.0.0`` prints the address with a session token; the API
    refuses requests without it.  Bad options are one line with exit status 2."""
    import os
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request
    from pathlib import Path

    import socket

    from coupjax import cli

    for argv, says in ((["serve", "--port", "99999"], "port number"), (["serve", "--port", "x"], "port number")):
        with pytest.raises(SystemExit) as info:
            cli.main(argv)
        err = capsys.readouterr().err.strip()
        assert info.value.code == 2 and len(err.splitlines()) == 1 and says in err
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "coupjax", "serve", "--host", "0.0.0.0", "--port", str(port),
                             "--games-dir", str(tmp_path / "g"), "--no-warm-up", "--no-search"], cwd=root,
                            env=dict(os.environ, PYTHONPATH=str(root)), stdout=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        token = lines[1].split("?token=")[1].split()[0]
        assert f":{port}/?token={token}" in lines[1] and "session token" in lines[1]
        url = f"http://127.0.0.1:{port}/api/games"
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=5)
            except urllib.error.HTTPError as err:
                assert err.code == 401
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError("the server did not answer")
        with urllib.request.urlopen(urllib.request.Request(url, headers={HEADER: token}), timeout=5) as r:
            assert r.status == 200 and json.loads(r.read()) == {"games": []}
    finally:
        proc.terminate()
        proc.wait(20)


def test_entries_never_wait_for_the_first_advice_to_compile(tmp_path):
    """``coupjax serve``'s app compiles a table size's first advice in the background: until
    it is done, a new game and every entry come back at once with the table and
    ``advice_pending`` (the seconds so far), then the advice; the start form's table size
    is compiled on request (``POST /api/warm``)."""
    import threading
    import time

    from coupjax.web.readiness import Readiness

    app = create_app(tmp_path, token=None, search=False, background_advice=True)
    gate, asked = threading.Event(), []
    app.state.readiness = Readiness(False, table=lambda n: asked.append(n),
                                    advice=lambda tracker, search: gate.wait(60))
    client = TestClient(app, base_url=BASE)
    g = new_game(client, hand=["duke", "captain"], first=1)
    assert g["advice"] is None and g["advice_pending"]["players"] == 4 and g["advice_pending"]["seconds"] >= 0
    page = enter(client, g["id"], {"seat": 1, "action": "steal:0"})["game"]  # a decision for me: advice wanted
    assert page["advice"] is None and page["advice_pending"] and page["table"]["phase"] == "react"
    assert client.post("/api/warm", json={"num_players": 5}).json()["warm"]["5"]["ready"] is False
    t0 = time.monotonic()  # the page's long poll: held while the advice compiles, then answered pending
    assert client.get(f"/api/games/{g['id']}", params={"wait": 0.3}).json()["advice_pending"]
    assert time.monotonic() - t0 >= 0.3
    gate.set()
    for _ in range(60):  # each ask is answered as soon as the advice is ready (or after MAX_ADVICE_WAIT)
        page = client.get(f"/api/games/{g['id']}", params={"wait": 60}).json()
        if page["advice_pending"] is None:
            break
    assert page["advice_pending"] is None and page["advice"] is not None and page["advice_words"]["recommended"]
    deadline = time.time() + 60
    while not all(s["ready"] for s in client.get("/api/info").json()["warm"].values()) and time.time() < deadline:
        time.sleep(0.05)
    assert sorted(asked) == [4, 5]
    assert client.post("/api/warm", json={"num_players": 9}).status_code == 422


def test_the_practice_form_compiles_only_an_offered_opponent(tmp_path, monkeypatch):
    """``POST /api/warm`` with ``practice``: a registered opponent is compiled in the
    background (once per spec and size); a spec the server does not offer is not."""
    from coupjax.web import readiness

    compiled = []
    monkeypatch.setattr(readiness, "compile_bot", lambda spec, n, folder: compiled.append((spec, n, folder)))
    client = TestClient(create_app(tmp_path, token=None, search=False, background_advice=True), base_url=BASE)
    for spec in ("random", "random", "json:dumps", "../../etc", "nope"):
        assert client.post("/api/warm", json={"num_players": 3, "practice": spec}).status_code == 200
    import time

    deadline = time.time() + 10
    while not compiled and time.time() < deadline:  # the compile runs in a background thread
        time.sleep(0.02)
    assert compiled == [("random", 3, None)]
    assert client.post("/api/warm", json={"num_players": 3, "practice": "x" * 400}).status_code == 422


BAD_WORDS = r"you's|\byou chooses|\bdoes you\b|\ba (assassin|ambassador)\b|\b1 (coins|steps|cards|games|times)\b|_"


def test_words_read_as_people_say_them(client):
    """The taps, prompts, questions and advice of a few steps say "your", "you choose",
    "Do you", "an Assassin", "1 coin", and name the card a loss would cost."""
    import re

    g = new_game(client, hand=["assassin", "contessa"], first=0)
    gid = g["id"]
    page = enter(client, gid, {"seat": 0, "action": "steal:1"})["game"]  # I steal from Bea
    page = enter(client, gid, {"seat": 1, "action": "block:captain"})["game"]
    assert page["prompt"] == "You claim Captain: steal from Bea; Bea blocked with Captain. Do you challenge the block?"
    assert "You challenge Bea's Captain block" in [c["label"] for c in page["choices"]]
    page = enter(client, gid, {"action": "all_passed"})["game"]  # I accept the block
    page = enter(client, gid, {"seat": 1, "action": "steal:0"})["game"]
    labels = [c["label"] for c in page["choices"]]
    assert "You challenge Bea's Captain" in labels
    asks = [a["question"] for c in page["choices"] for a in c["asks"]]
    assert "Did Bea show a Captain?" in asks
    texts = [page["prompt"], *labels, *asks, *(x["text"] for x in page["log"])]
    w = page["advice_words"] or {}
    texts += (w.get("recommended") or {}).get("reasons", []) + [(w.get("challenge") or {}).get("sentence", "")]
    why = w["challenge"]["explanation"]  # "Why, in full": each number said in words
    assert any(x.startswith("So: ") for x in why) and any("for this kind of claim" in x for x in why), why
    texts += why
    bad = [t for t in texts if re.search(BAD_WORDS, t, re.I)]
    assert not bad, bad
    names = ["Ann", "Bea", "Cal"]
    assert W.a_role("assassin") == "an Assassin" and W.plural(1, "coin") == "1 coin" and W.plural(2, "step") == "2 steps"
    assert W.policy_name("belief_ev") == "Belief EV" and W.policy_name("runs/night_run/export") == "night run"
    assert W.prompt(names, {"done": False, "current_player": 0, "phase": "exchange", "actor": 0,
                                 "main_action": "exchange", "target": None}, 0) == "You choose the cards to keep."
    assert W.reason("Seat 2 cannot hold a Assassin; steal:1 has 1 coins.", names, 0) == \
        "Cal cannot hold an Assassin; steal from Bea has 1 coin."
    assert W.cut_name("Annabelle Marguerite Fitzgerald") == "Annabelle Marguerite…"


def test_card_loss_advice_names_the_cards_like_the_buttons(client):
    g = new_game(client, hand=["assassin", "contessa"], first=1)
    gid = g["id"]
    enter(client, gid, {"seat": 1, "action": "tax"})
    page = enter(client, gid, {"seat": 0, "action": "challenge", "bluff_caught": False})["game"]
    assert page["prompt"] == "You challenge Bea's Duke; Bea shows a Duke. You must lose a card."  # what led to it
    labels = [c["label"] for c in page["choices"]]
    assert labels == ["Lose your Assassin", "Lose your Contessa"]
    # the search advises a loss (here without the search, its answer's shape): said as the buttons say it
    from coupjax.web import advice_text

    adv = {"recommendation": {"action": "reveal:1", "action_id": 9, "source": "search", "close_call": False,
                              "settled": False, "reasons": ["The search values reveal:1 at +0.10 ± 0.02, clearly ahead."],
                              "alternatives": [{"id": 9, "value": 0.1, "se": 0.02}]},
           "search": {"actions": [{"action": f"reveal:{i}", "value": 0.1 * i, "se": 0.02, "best_share": 0.5}
                                  for i in (0, 1)]}}
    words = advice_text.describe(adv, page["names"], 0, page["table"], page["hand"], "balanced")
    assert words["recommended"]["text"] == "Lose your Contessa" and words["recommended"]["text"] in labels
    assert [v["text"] for v in words["values"]] == ["lose your Assassin", "lose your Contessa"]
    assert words["recommended"]["reasons"] == ["The search values lose your Contessa at +0.10 ± 0.02, clearly ahead."]


def test_practice_names_its_bots_and_narrates_their_moves(client):
    r = client.post("/api/practice", json={"num_players": 3, "seat": 2, "opponents": "random", "seed": 3,
                                           "names": ["Zoe", "", ""]})
    g = r.json()
    assert g["names"] == ["Zoe", "Cal", "You"] and g["bots"][:2] == ["Random", "Random"]
    assert g["narration"] and g["narration"][0].startswith("Zoe")  # the bots moved before my first decision
    for _ in range(300):
        if g["done"]:
            break
        before = len(g["log"])
        g = client.post(f"/api/games/{g['id']}/act", json={"action": g["choices"][0]["action"]}).json()
        moved = len(g["log"]) - before - 1  # steps after mine: the bots'
        assert bool(g["narration"]) == (moved > 0 or g["done"]), (moved, g["narration"])
    assert g["done"] and g["narration"]  # the ending is said, not only logged
    assert g["narration"][-1].lower().rstrip(".").endswith("game over")


def test_a_practice_game_downloads_with_its_names_and_uploads_back_with_them(client):
    """A practice game is a full match (a deal line): its download carries the players'
    names, and the upload of that file replays with them (issue 43: they were lost)."""
    g = client.post("/api/practice", json={"num_players": 3, "seat": 2, "opponents": "random", "seed": 3,
                                           "names": ["Zoe", "Al B", ""]}).json()
    text = client.get(f"/api/games/{g['id']}/download").text
    head = json.loads(text.splitlines()[0])
    assert head["type"] == "deal" and head["names"] == g["names"] == ["Zoe", "Al B", "You"]
    up = client.post("/api/upload", json={"name": "again", "text": text}).json()["id"]
    frame = client.get(f"/api/games/{up}/replay").json()
    assert frame["names"] == ["Zoe", "Al B", "You"], frame.get("names")
    assert client.get(f"/api/games/{up}/download").text == text  # a file that has names is left as it is


def test_the_background_compile_computes_advice_where_the_seat_decides(monkeypatch):
    """`readiness.compile_advice` warms the advice at states where the tracker's seat is to
    move (its own turn, and a claim against it once the seats before it passed): advice
    for a seat not to move is None and would compile nothing."""
    from coupjax.web import advice_text, readiness

    seen, real = [], advice_text.advice
    monkeypatch.setattr(advice_text, "advice", lambda state, seat, *a, **k: seen.append(real(state, seat, *a, **k)))
    readiness.compile_advice(readiness.compile_table(4), search=False)
    assert seen and all(seen) and {adv["phase"] for adv in seen} == {"action", "react"}


def test_practice_against_best_and_a_clear_refusal_at_another_table_size(client):
    """`best` (the policy shipped for play) is a practice opponent like any spec; its
    network was trained for 4 seats, so a 3-seat table is refused in one sentence."""
    g = client.post("/api/practice", json={"num_players": 4, "seat": 0, "opponents": "best", "seed": 5}).json()
    for _ in range(300):
        if g["done"]:
            break
        g = client.post(f"/api/games/{g['id']}/act", json={"action": g["choices"][0]["action"]}).json()
    assert g["done"]
    r = client.post("/api/practice", json={"num_players": 3, "opponents": "best"})
    assert r.status_code == 422 and "4 players" in r.text, r.text
