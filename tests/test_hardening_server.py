"""Hostile clients never breach the page server (issue 28).

A client-chosen ``module:function`` as a practice opponent (a module on the server's
path whose import would leave a mark), a path outside ``--policies-dir``, a foreign
``Host`` or ``Origin``, bodies that are not JSON or too large, a deeply nested upload,
and the saved-games routes (rename, delete, download) with path traversal: each answer
is a 4xx with a one-line reason, and nothing changes on disk.
"""
from __future__ import annotations

import hashlib
import json
import sys

import pytest
from fastapi.testclient import TestClient

from coupjax.web import app as web_app
from coupjax.web import table
from coupjax.web.app import HEADER, create_app

BASE = "http://127.0.0.1"
SETUP = {"num_players": 4, "names": ["Ann", "Bea", "Cal", "Dan"], "seat": 0, "hand": ["duke", "duke"], "first": 1}
TRAVERSALS = ["..", "../x", "..%2F..%2Fetc%2Fpasswd", "%2e%2e%2fsecret", ".hidden", "a%00b", "x.json",
              "%2Fetc%2Fpasswd", "C:%5Cwindows", "a" * 200]


def snapshot(*roots):
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "-"
    return out


def one_line_4xx(r, status=None):
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    assert status is None or r.status_code == status, (r.status_code, r.text)
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail and "\n" not in detail, detail
    return detail


DEAL = ('{"type": "deal", "version": 2, "num_players": 2, "seed": 0, "hands": [["captain", "duke"], ["captain", '
        '"ambassador"]], "deck": ["assassin", "assassin", "duke", "duke", "captain", "ambassador", "ambassador", '
        '"assassin", "contessa", "contessa", "contessa"], "deck_shuffled": true, "coins": [2, 2], "revealed": [[], []], '
        '"current_player": 0, "turn": 0}\n')  # a match's deal: a game file an upload may give


@pytest.fixture()
def world(tmp_path):
    games, policies, outside = tmp_path / "games", tmp_path / "policies", tmp_path / "outside"
    for d in (games, policies, outside):
        d.mkdir()
    (outside / "secret.jsonl").write_text(DEAL)
    return games, policies, outside


@pytest.fixture()
def client(world):
    games, policies, _ = world
    return TestClient(create_app(games, search=False, policies_dir=policies), base_url=BASE)


def test_a_client_chosen_module_is_never_imported(world, client, tmp_path, monkeypatch):
    """``module:function``, ``NAME:ARG`` and paths (outside the policies folder, or
    inside it but not an export) are refused with the same one line; the module that
    would leave a mark on import is never imported."""
    mark = tmp_path / "imported"
    pkg = tmp_path / "onpath"
    pkg.mkdir()
    (pkg / "hostile_policy_mod.py").write_text(
        f"open({str(mark)!r}, 'w').write('imported')\ndef make(env):\n    open({str(mark)!r}, 'a').write('called')\n")
    monkeypatch.syspath_prepend(str(pkg))
    games, policies, outside = world
    (policies / "not_an_export").mkdir()
    before = snapshot(games, policies, outside)
    specs = ["hostile_policy_mod:make", "json:dumps", "this:x", "os:system", "selfplay_search:" + str(outside),
             str(outside), "../outside", "/etc", "not_an_export", "../../../../etc", "nope"]
    answers = set()
    for spec in specs:
        for opponents in (spec, [spec]):
            r = client.post("/api/practice", json={"num_players": 2, "opponents": opponents})
            detail = one_line_4xx(r, 422)
            answers.add(detail.replace(repr(spec[:100]), "SPEC"))
    assert len(answers) == 1, answers  # the same answer whatever exists on the server's disk
    assert not mark.exists() and "hostile_policy_mod" not in sys.modules
    assert snapshot(games, policies, outside) == before


def test_a_checkpoint_under_the_policies_folder_is_an_opponent(world, client):
    """An export under ``--policies-dir`` is named by its path there, listed by /api/info,
    and plays; the same export named by an absolute path is refused."""
    import jax

    from coupjax.env import Env
    from training import checkpoint
    from coupjax.networks import init_params, make_network

    games, policies, _ = world
    env = Env(2)
    path = policies / "mine" / "tiny"
    params = init_params(make_network(env, (8,)), jax.random.PRNGKey(0), env.observation_shape[0])
    checkpoint.write_export(path, params, kind="dqn", num_players=2, hidden_sizes=(8,), obs_dim=env.observation_shape[0],
                   num_actions=env.num_actions, temperature=0.0, config={})
    assert "mine/tiny" in client.get("/api/info").json()["checkpoints"]
    r = client.post("/api/practice", json={"num_players": 2, "seat": 1, "opponents": "mine/tiny", "seed": 3})
    assert r.status_code == 200, r.text
    assert r.json()["specs"] == ["mine/tiny", None]
    one_line_4xx(client.post("/api/practice", json={"num_players": 2, "opponents": str(path)}), 422)


def test_foreign_host_and_origin_are_refused(world, client):
    """A DNS-rebinding page sends its own name as Host; a cross-site form sends its Origin."""
    games, policies, outside = world
    before = snapshot(games, policies, outside)
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil", ""):
        for method, path, body in (("get", "/", None), ("get", "/api/games", None), ("get", "/api/info", None),
                                   ("post", "/api/games", SETUP)):
            r = getattr(client, method)(path, headers={"Host": host}, **({"json": body} if body else {}))
            assert "Host" in one_line_4xx(r, 400)
    for origin in ("http://evil.example", "http://evil.example:8000", "null", "https://127.0.0.1.evil.example"):
        r = client.post("/api/games", json=SETUP, headers={"Origin": origin})
        one_line_4xx(r, 403)
        r = client.post("/api/upload", json={"text": "x"}, headers={"Origin": origin})
        one_line_4xx(r, 403)
    assert snapshot(games, policies, outside) == before
    assert client.get("/api/games", headers={"Host": "localhost:8000"}).status_code == 200  # no token on 127.0.0.1
    assert client.get("/api/games", headers={"Host": "[::1]:8000", "Origin": "http://127.0.0.1:8000"}).status_code \
        == 200


def test_bodies_that_are_not_json_or_too_large(world, client):
    games, policies, outside = world
    before = snapshot(games, policies, outside)
    for headers, content in (({"Content-Type": "text/plain"}, b'{"text": "x"}'),
                             ({"Content-Type": "application/x-www-form-urlencoded"}, b"text=x"),
                             ({"Content-Type": "multipart/form-data; boundary=x"}, b"--x--"),
                             ({}, b'{"text": "x"}')):
        r = client.post("/api/upload", content=content, headers=headers)
        assert "JSON" in one_line_4xx(r, 415)
    big = b'{"text": "' + b"x" * (2 << 20) + b'"}'
    r = client.post("/api/upload", content=big, headers={"Content-Type": "application/json"})
    assert "limit" in one_line_4xx(r, 413)

    def chunks():  # no Content-Length: cut off as it passes the bound
        yield b'{"text": "'
        for _ in range(40):
            yield b"x" * 65536
        yield b'"}'

    r = client.post("/api/upload", content=chunks(), headers={"Content-Type": "application/json"})
    one_line_4xx(r, 413)
    for body in ({"text": "1" * 5000}, {"name": "x", "text": "[" * 60_000}):  # read by the bounded readers:
        assert "not a game file" in one_line_4xx(client.post("/api/upload", json=body), 422)  # refused, not kept
    deep = client.post("/api/games", content=b"[" * 60_000, headers={"Content-Type": "application/json"})
    one_line_4xx(deep)
    assert snapshot(games, policies, outside) == before


def test_the_token_is_checked_before_the_body_is_read(tmp_path):
    app = create_app(tmp_path / "g", token="tok", search=False, hosts=["127.0.0.1"])
    bare = TestClient(app, base_url=BASE)
    for content, kind in ((b"{not json", "application/json"), (b"x" * (2 << 20), "application/json"),
                          (b"x", "text/plain")):
        r = bare.post("/api/upload", content=content, headers={"Content-Type": kind})
        assert "token" in one_line_4xx(r, 401)
    assert list((tmp_path / "g").iterdir()) == []
    good = TestClient(app, base_url=BASE, headers={HEADER: "tok"})
    assert "not a game file" in one_line_4xx(good.post("/api/upload", json={"text": "x"}), 422)  # past the token


def test_a_bad_saved_file_is_skipped_and_reported(world, client):
    """A nested-JSON upload, a huge number, a bad page side and a FIFO: the list is 200,
    the good game is in it, each bad one is reported with one line."""
    import os

    games, _, _ = world
    good = client.post("/api/upload", json={"name": "good", "text": (games.parent / "outside" / "secret.jsonl")
                                            .read_text()}).json()["id"]
    nested, digits = "nested", "digits"  # files put in the folder by hand (an upload like them is refused)
    (games / "nested.jsonl").write_text("[" * 60_000 + "\n")
    (games / "digits.jsonl").write_text('{"type": ' + "1" * 5000 + "}\n")
    (games / "badmeta.jsonl").write_text('{"type": "deal"}\n')
    (games / "badmeta.json").write_text("[" * 60_000)
    os.mkfifo(games / "fifo.jsonl")
    r = client.get("/api/games")
    assert r.status_code == 200
    listed = {g["id"] for g in r.json()["games"]}
    skipped = {s["id"]: s["error"] for s in r.json()["skipped"]}
    assert good in listed and set(skipped) == {nested, digits, "badmeta", "fifo"}
    assert all(e and "\n" not in e for e in skipped.values())
    for gid in (nested, "badmeta", "fifo"):  # opening one is a 4xx too, never a 500
        one_line_4xx(client.get(f"/api/games/{gid}"))
    one_line_4xx(client.get("/api/games/fifo/download"), 404)
    one_line_4xx(client.get("/api/games/fifo/replay"), 404)
    assert client.get(f"/api/games/{nested}/download").text == "[" * 60_000 + "\n"  # the file is the user's
    assert "nested" in client.get(f"/api/games/{nested}/replay").json()["error"]


def test_rename_delete_and_download(world, client):
    games, policies, outside = world
    text = (outside / "secret.jsonl").read_text()
    gid = client.post("/api/upload", json={"name": "mine", "text": text}).json()["id"]
    other = client.post("/api/upload", json={"name": "other", "text": text}).json()["id"]
    r = client.get(f"/api/games/{gid}/download")
    assert r.status_code == 200 and r.text == text and gid in r.headers["content-disposition"]
    r = client.post(f"/api/games/{gid}/rename", json={"name": "friday-night"})
    assert r.status_code == 200 and r.json() == {"id": "friday-night"}
    assert not (games / f"{gid}.jsonl").exists() and (games / "friday-night.jsonl").read_text() == text
    assert "already" in one_line_4xx(client.post("/api/games/friday-night/rename", json={"name": other}), 409)
    assert client.delete("/api/games/friday-night").json() == {"deleted": "friday-night"}
    assert not (games / "friday-night.jsonl").exists()
    one_line_4xx(client.delete("/api/games/friday-night"), 404)
    # a game with its page side: both files move and go
    t = client.post("/api/games", json=SETUP)
    assert t.status_code == 200, t.text
    tid = t.json()["id"]
    assert client.post(f"/api/games/{tid}/rename", json={"name": "table-1"}).status_code == 200
    assert {p.name for p in games.glob("table-1.*")} == {"table-1.json", "table-1.jsonl"}
    assert client.get("/api/games/table-1").json()["id"] == "table-1"
    assert client.delete("/api/games/table-1").status_code == 200 and not list(games.glob("table-1*"))
    one_line_4xx(client.get("/api/games/table-1"), 404)


def test_saved_game_routes_refuse_path_traversal(world, client):
    games, policies, outside = world
    text = (outside / "secret.jsonl").read_text()
    gid = client.post("/api/upload", json={"name": "mine", "text": text}).json()["id"]
    (games / "link.jsonl").symlink_to(outside / "secret.jsonl")
    before = snapshot(games, policies, outside)
    for bad in TRAVERSALS + ["link"]:
        for method, path, body in (("get", f"/api/games/{bad}/download", None),
                                   ("post", f"/api/games/{bad}/rename", {"name": "x"}),
                                   ("delete", f"/api/games/{bad}", None)):
            if bad == "link" and method == "delete":
                continue
            kwargs = {"json": body} if body else {}
            r = client.request(method.upper(), path, **kwargs)
            assert 400 <= r.status_code < 500, (bad, method, r.status_code, r.text)
    for name in ("../outside/evil", "/tmp/evil", ".hidden", "a/b", "x.json", "", "a" * 101, "..", "a\nb"):
        r = client.post(f"/api/games/{gid}/rename", json={"name": name})
        one_line_4xx(r)
    assert snapshot(games, policies, outside) == before


def test_what_a_game_and_the_server_keep_is_bounded(world, client, monkeypatch):
    """Refused entries kept per game stop at MAX_WARNINGS; games in memory at MAX_GAMES
    (a game dropped from memory is read back from disk)."""
    meta = {"warnings": [{"id": k, "status": "open" if k % 2 else "dismissed"} for k in range(1, 71)]}
    table.bound_warnings(meta)
    assert len(meta["warnings"]) == table.MAX_WARNINGS and meta["warnings_dropped"] == 20
    kept = meta["warnings"]  # the settled ones went first, oldest first
    assert sum(w["status"] == "open" for w in kept) == 35 and min(w["id"] for w in kept if w["status"] != "open") == 42
    games, _, _ = world
    monkeypatch.setattr(web_app, "MAX_GAMES", 2)
    small = TestClient(create_app(games, search=False), base_url=BASE)
    made = [small.post("/api/games", json=SETUP).json()["id"] for _ in range(3)]
    assert list(small.app.state.games) == made[1:]
    assert all(small.get(f"/api/games/{g}").status_code == 200 for g in made)
    assert len(small.app.state.games) == 2
    entries = [{"seat": 1, "action": "tax"}]
    r = small.post(f"/api/games/{made[0]}/entries", json={"entry": entries[0]})
    assert r.status_code == 200 and r.json()["outcome"]["status"] == "accepted"
    assert json.loads((games / f"{made[0]}.json").read_text())["entries"] == entries


def test_serve_refuses_a_policies_dir_that_is_not_a_folder(tmp_path, capsys):
    from coupjax import cli

    (tmp_path / "file").write_text("x")
    for bad in (tmp_path / "missing", tmp_path / "file"):
        with pytest.raises(SystemExit) as info:
            cli.main(["serve", "--games-dir", str(tmp_path / "g"), "--policies-dir", str(bad)])
        err = capsys.readouterr().err.strip()
        assert info.value.code == 2 and len(err.splitlines()) == 1 and "--policies-dir" in err, err
