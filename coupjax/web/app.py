"""The page's HTTP side: a FastAPI app over the games directory.

``create_app(games_dir, token=None, search=True, hosts=LOCAL_HOSTS, policies_dir=None)``.
``/`` serves the page and ``/static`` its files (plain HTML, CSS and JS in this
package; nothing is fetched from elsewhere).  Everything under ``/api`` is JSON.
Every request first passes `coupjax.web.guard`: its ``Host`` must be one of ``hosts``
(and a write's ``Origin`` too), its body JSON of at most 1 MB, and, with a session
token (``coupjax serve --host 0.0.0.0``), every ``/api`` request must carry it -- in
the ``X-Coupjax-Token`` header or the cookie that opening ``/?token=...`` sets -- or
gets 401 before its body is read.  A body the page never sends (an unknown key, a
wrong type, an entry that is not an entry) gets 422 and a game that does not exist
404, both with a ``detail`` that says what is wrong; none of these changes anything.
A rule-breaking entry is not such a request: it is kept as a warning on the game
(`coupjax.web.table`, at most `coupjax.web.table.MAX_WARNINGS` of them).

Practice opponents are registered policies or exports under ``policies_dir``
(`coupjax.web.practice.opponent_policy`): a client never names code to import.
At most `MAX_GAMES` games are held in memory; every change is on disk first, so one
dropped from memory is read back when asked for.

The engine, the tracker and the search run under one lock: the page is one person's,
and a game must not be changed by two requests at once.
"""
from __future__ import annotations

import collections
import threading
from importlib import resources
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from coupjax.jsonlines import ReplayError
from coupjax.policies.registry import describe_policies
from coupjax.tracker import record
from coupjax.web.guard import COOKIE, HEADER, Guard, token_matches
from coupjax.web.practice import PracticeGame, checkpoints
from coupjax.web.readiness import Readiness
from coupjax.web.replay import game_of, public_error, replay_frame
from coupjax.web.store import GameExists, GameStore, UnknownGame
from coupjax.web.table import BadRequest, TableGame
from coupjax.web.words import policy_name

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
MAX_GAMES = 32  # games held in memory (least recently used dropped first; all are on disk)
MAX_ADVICE_WAIT = 2.0  # seconds a page's long poll for compiling advice is held before it answers
Style = Literal["cautious", "balanced", "aggressive"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class WarmBody(Strict):
    num_players: int = Field(ge=2, le=6)
    practice: str | None = Field(None, max_length=300)  # a practice opponent to compile too


class TableSetup(Strict):
    num_players: int = Field(ge=2, le=6)
    names: list[str] = []
    seat: int = Field(ge=0, le=5)
    hand: list[str]
    first: int = Field(0, ge=0, le=5)
    style: Style = "balanced"


class PracticeSetup(Strict):
    num_players: int = Field(ge=2, le=6)
    names: list[str] = []
    seat: int = Field(0, ge=0, le=5)
    opponents: str | list[str] = "belief_ev"
    seed: int | None = None
    style: Style = "balanced"


class EntryBody(Strict):
    entry: dict[str, Any]
    fixes: int | None = None


class ActBody(Strict):
    action: str


class StyleBody(Strict):
    style: Style


class UploadBody(Strict):
    name: str = Field("upload.jsonl", max_length=200)
    text: str = Field(max_length=1_000_000)


class RenameBody(Strict):
    name: str = Field(min_length=1, max_length=100)


def _static():
    return resources.files("coupjax.web") / "static"


def create_app(games_dir, token: str | None = None, search: bool = True, hosts=LOCAL_HOSTS,
               policies_dir=None, any_ip: bool = False, background_advice: bool = False,
               readiness: Readiness | None = None) -> FastAPI:
    """The app (module doc); ``search=False`` leaves the search out of every advice;
    ``hosts`` (and, with ``any_ip``, any IP address) are the names a request's Host may give.
    With ``background_advice`` (what ``coupjax serve`` runs) a table size's first advice
    is compiled in the background and a game's page says it is pending meanwhile
    (`coupjax.web.readiness`; ``readiness``: one already started, as ``coupjax serve``
    starts it before importing the web stack); without, a request compiles what it
    needs itself."""
    store = GameStore(games_dir)
    lock = threading.RLock()
    games: collections.OrderedDict = collections.OrderedDict()
    app = FastAPI(title="coupjax", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store, app.state.lock, app.state.token, app.state.search = store, lock, token, search
    app.state.policies_dir, app.state.games = policies_dir, games
    app.state.readiness = Readiness(search) if readiness is None else readiness
    app.add_middleware(Guard, hosts=hosts, token=token, any_ip=any_ip)

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        return token_matches(request.headers.get(HEADER) or request.cookies.get(COOKIE) or "", token)

    def check_token(request: Request) -> None:
        if not authorized(request):
            raise HTTPException(401, "missing or wrong token: open the address printed by coupjax serve "
                                     "(it ends in ?token=...)")

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc):  # noqa: ANN001 - FastAPI signature
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        return JSONResponse({"detail": f"{where}: {first.get('msg', 'invalid request')}" if where else
                             first.get("msg", "invalid request"), "errors": exc.errors()[:5]}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request, exc):  # noqa: ANN001
        detail = f"no game or page at {request.url.path}" if exc.status_code == 404 else exc.detail
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(BadRequest)
    async def _bad(request, exc: BadRequest):  # noqa: ANN001
        return JSONResponse({"detail": exc.message, "field": exc.field}, status_code=422)

    @app.exception_handler(ReplayError)
    async def _unreadable(request, exc: ReplayError):  # noqa: ANN001 - a saved file that is not a game
        return JSONResponse({"detail": public_error(exc)[:300]}, status_code=422)

    @app.exception_handler(GameExists)
    async def _exists(request, exc: GameExists):  # noqa: ANN001
        return JSONResponse({"detail": f"a game named {exc.args[0]!r} is already saved"}, status_code=409)

    @app.exception_handler(UnknownGame)
    async def _unknown(request, exc: UnknownGame):  # noqa: ANN001
        return JSONResponse({"detail": f"no game {str(exc.args[0])[:100]!r} is saved"}, status_code=404)

    def keep(g):
        games[g.id] = g
        games.move_to_end(g.id)
        while len(games) > MAX_GAMES:
            games.popitem(last=False)
        return g

    def game(gid: str):
        store.check_id(gid)
        if gid not in games:
            meta = store.read_meta(gid)
            if meta is None or meta.get("kind") not in ("table", "practice"):
                raise BadRequest(f"{gid} is a game file to replay, not a game to continue", "id")
            if meta["kind"] == "table":
                keep(TableGame.load(store, gid, meta))
            else:
                keep(PracticeGame.load(store, gid, meta, policies_dir))
        games.move_to_end(gid)
        return games[gid]

    def use_search(flag: int | None) -> bool:
        return search and (flag is None or bool(flag))

    def page(g, search_flag=None, advice: int = 0) -> dict:
        if isinstance(g, PracticeGame):
            return g.page(with_advice=bool(advice), use_search=use_search(search_flag))
        pending = app.state.readiness.pending(g.tracker.num_players) if background_advice else None
        out = g.page(use_search=use_search(search_flag), with_advice=pending is None)
        return {**out, "advice_pending": pending}

    api = [Depends(check_token)]

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request):
        given = request.query_params.get("token")
        if token is not None and given is not None:
            if not token_matches(given, token):
                return HTMLResponse(_page("token.html").replace("{{message}}", "That token is wrong."), 401)
            resp = RedirectResponse("/", status_code=303)
            resp.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return resp
        if not authorized(request):
            return HTMLResponse(_page("token.html").replace("{{message}}", ""), 401)
        return HTMLResponse(_page("index.html"))

    app.mount("/static", StaticFiles(directory=str(_static())), name="static")

    @app.get("/api/info", dependencies=api)
    def info():
        pols = describe_policies()
        return {"policies": pols, "policy_names": {p: policy_name(p) for p in pols}, "checkpoints": checkpoints(policies_dir), "styles": ["cautious", "balanced", "aggressive"],
                "roles": ["duke", "assassin", "captain", "ambassador", "contessa"], "search": search,
                "games_dir": str(store.root), "warm": app.state.readiness.status()}

    @app.post("/api/warm", dependencies=api)
    def warm(body: WarmBody):
        """Compile a table size's first advice (or a practice opponent) while the player fills
        in the start form; only what the server offers is compiled."""
        if background_advice and body.practice is None:
            app.state.readiness.ensure(body.num_players)
        offered = body.practice in describe_policies() or body.practice in checkpoints(policies_dir)
        if background_advice and body.practice is not None and offered:
            folder = None if policies_dir is None else str(policies_dir)
            app.state.readiness.ensure_bot(body.practice, body.num_players, folder)
        return {"warm": app.state.readiness.status()}

    @app.get("/api/games", dependencies=api)
    def list_games():
        rows, skipped = store.scan()
        return {"games": rows, "skipped": skipped} if skipped else {"games": rows}

    def table_compiled(num_players: int) -> None:
        """Under `coupjax serve`, wait for the thread compiling this table size rather than
        compiling the same functions beside it (`coupjax.web.readiness`)."""
        if background_advice:
            app.state.readiness.wait_for_table(num_players)

    @app.post("/api/games", dependencies=api)
    def new_table(body: TableSetup):
        table_compiled(body.num_players)
        with lock:
            g = keep(TableGame.create(store, body.num_players, body.names, body.seat, body.hand, body.first,
                                      body.style))
            return page(g)

    @app.post("/api/practice", dependencies=api)
    def new_practice(body: PracticeSetup):
        with lock:
            g = keep(PracticeGame.create(store, body.num_players, body.names, body.seat, body.opponents, body.seed,
                                         body.style, policies_dir))
            return page(g)

    @app.get("/api/games/{gid}", dependencies=api)
    def get_game(gid: str, search: int | None = None, advice: int = 0, wait: float = 0.0):
        """``wait`` (seconds, at most `MAX_ADVICE_WAIT`): while the table's advice is
        still compiling, answer when it is ready or after that long (the page's long poll)."""
        with lock:
            g = game(gid)
        if background_advice and isinstance(g, TableGame) and wait > 0:
            app.state.readiness.wait_for_advice(g.tracker.num_players, min(wait, MAX_ADVICE_WAIT))
        with lock:
            return page(game(gid), search, advice)

    @app.post("/api/games/{gid}/entries", dependencies=api)
    def enter(gid: str, body: EntryBody, search: int | None = None):
        with lock:
            g = game(gid)
        if isinstance(g, TableGame):
            table_compiled(g.tracker.num_players)
        with lock:
            g = game(gid)
            if not isinstance(g, TableGame):
                raise BadRequest("a practice match takes actions (/act), not entries", "entry")
            outcome = g.enter(body.entry, body.fixes)
            return {"outcome": outcome, "game": page(g, search)}

    @app.post("/api/games/{gid}/act", dependencies=api)
    def act(gid: str, body: ActBody, search: int | None = None):
        with lock:
            g = game(gid)
            if not isinstance(g, PracticeGame):
                raise BadRequest("a game at a table takes entries (/entries), not actions", "action")
            g.act(body.action)
            return page(g, search)

    @app.post("/api/games/{gid}/undo", dependencies=api)
    def undo(gid: str, search: int | None = None):
        with lock:
            g = game(gid)
            if not isinstance(g, TableGame):
                raise BadRequest("a practice match has no undo", "undo")
            g.undo()
            return page(g, search)

    @app.post("/api/games/{gid}/warnings/{wid}/dismiss", dependencies=api)
    def dismiss(gid: str, wid: int, search: int | None = None):
        with lock:
            g = game(gid)
            if not isinstance(g, TableGame):
                raise BadRequest("a practice match has no warnings", "warning")
            g.dismiss(wid)
            return page(g, search)

    @app.post("/api/games/{gid}/style", dependencies=api)
    def style(gid: str, body: StyleBody, search: int | None = None, advice: int = 0):
        with lock:
            g = game(gid)
            g.set_style(body.style)
            return page(g, search, advice)

    @app.get("/api/games/{gid}/replay", dependencies=api)
    def replay(gid: str, step: int = 0, seat: int | None = None, search: int | None = None,
               style: Style = "balanced"):
        with lock:
            if not store.exists(gid):
                raise UnknownGame(gid)
            return replay_frame(store, gid, step, seat, use_search(search), style)

    @app.post("/api/upload", dependencies=api)
    def upload(body: UploadBody):
        """Keep a game file for replay if it has a valid step; a file without one is refused
        (422, its reason without the server's paths) and not kept."""
        with lock:
            gid = store.add_file(body.name, body.text)
            try:
                game = game_of(store, gid)
                error = None if game.states else (public_error(game.error, body.name) if game.error
                                                  else "no valid step")
            except (ReplayError, ValueError, OSError, RecursionError) as err:
                error = public_error(err, body.name)
            if error is not None:
                store.delete(gid)
                raise BadRequest(f"not a game file: {error}"[:300], "text")
            return {"id": gid}

    @app.post("/api/games/{gid}/rename", dependencies=api)
    def rename(gid: str, body: RenameBody):
        with lock:
            try:
                new = store.rename(gid, body.name)
            except ValueError as err:
                raise BadRequest(str(err), "name") from None
            games.pop(gid, None)
            return {"id": new}

    @app.delete("/api/games/{gid}", dependencies=api)
    def delete(gid: str):
        with lock:
            store.delete(gid)
            games.pop(gid, None)
            return {"deleted": gid}

    @app.get("/api/games/{gid}/download", dependencies=api)
    def download(gid: str):
        with lock:
            data = store.read_record(gid)
            meta = store.read_meta(gid) or {}
        data = record.with_names(data, meta.get("names"))  # a seat record keeps the players' names
        return Response(data, media_type="application/x-ndjson",
                        headers={"Content-Disposition": f'attachment; filename="{gid}.jsonl"'})

    @app.get("/favicon.ico")
    def favicon():
        return Response(status_code=204)

    return app


def _page(name: str) -> str:
    return (_static() / name).read_text(encoding="utf-8")
