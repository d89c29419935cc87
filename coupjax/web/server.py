"""`coupjax serve`: the page behind uvicorn, on this computer or the local network.

On 127.0.0.1 (the default) the page needs no token, and answers only requests whose
``Host`` is this computer's own name for itself (127.0.0.1, localhost, ::1), which
keeps out web pages that re-point a name of theirs at 127.0.0.1 (DNS rebinding).  On
any other address a phone on the network can open it, so a session token -- valid
until the server stops -- is made at start and printed with the address to open
(``http://ADDRESS:PORT/?token=...``); opening it once sets a cookie.  Practice
opponents are registered policies and the exports under ``--policies-dir``, if given
(docs/security.md).
The engine, the beliefs, the advisor and (unless ``--no-search``) the search are
compiled for a 4-player table in the background as the server starts, and for another
table size as soon as the start form names it (`coupjax.web.readiness`); meanwhile a
game's events are entered at once and its advice comes when ready.
"""
from __future__ import annotations

import secrets
import socket
import sys

LOCAL = ("127.0.0.1", "localhost", "::1")


def lan_address() -> str:
    """This computer's address on the local network (no packet is sent)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))
        return s.getsockname()[0]
    except OSError:
        return socket.gethostname()
    finally:
        s.close()


def served_hosts(host: str) -> tuple[list[str], bool]:
    """(the names a request's Host may give, whether any IP address may be given too) for a
    server listening on ``host``."""
    if host in LOCAL:
        return list(LOCAL), False
    names = [host, *LOCAL]
    if host in ("0.0.0.0", "::"):
        name = socket.gethostname()
        names += [lan_address(), name, f"{name}.local"]  # no name lookup: nothing reaches the network
        return names, True
    return names, False


def serve(host: str, port: int, games_dir, search: bool = True, warm: bool = True, policies_dir=None) -> None:
    from coupjax.web.readiness import Readiness

    readiness = Readiness(search)
    if warm:  # a 4-player table's first advice compiles while the web stack loads and the player opens the
        readiness.ensure_all()  # page, then every other size, so that choosing one later does not wait
    import uvicorn

    from coupjax.web.app import create_app

    token = None if host in LOCAL else secrets.token_urlsafe(16)
    hosts, any_ip = served_hosts(host)
    app = create_app(games_dir, token=token, search=search, hosts=hosts, policies_dir=policies_dir, any_ip=any_ip,
                     background_advice=True, readiness=readiness)
    shown = lan_address() if host in ("0.0.0.0", "::") else host
    url = f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/"
    print(f"coupjax: games in {app.state.store.root}"
          + (f"; practice checkpoints from {policies_dir}" if policies_dir is not None else ""), flush=True)
    if token is None:
        print(f"coupjax: open {url}", flush=True)
    else:
        print(f"coupjax: open {url}?token={token} (session token, valid until the server stops: {token})",
              flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    except OSError as err:
        print(f"coupjax: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
