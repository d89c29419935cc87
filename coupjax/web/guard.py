"""What every request passes before the app sees it (docs/security.md).

The page has no accounts: on 127.0.0.1 any program of this computer may use it, on
the network anyone with the session token.  A web page open in the same browser is
neither, and could still reach the server (a form posted across sites, or a name it
controls re-pointed at 127.0.0.1: DNS rebinding), so before any route runs:

* the ``Host`` header must name an address the server serves (400 otherwise), and a
  write's ``Origin``, when the browser sends one, too (403);
* with a token, an ``/api`` request must carry it (401) -- checked before its body is
  read, let alone parsed;
* a body must be JSON (415) and at most `MAX_BODY` bytes (413): a ``Content-Length``
  over it is refused before anything is read, a body without one is cut off as soon
  as it passes the bound.

Each refusal is a JSON ``{"detail": ONE LINE}``, and changes nothing.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException

MAX_BODY = 1 << 20  # the largest body the page sends is an upload of a saved game
COOKIE = "coupjax_token"
HEADER = "X-Coupjax-Token"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def host_name(value: str) -> str:
    """The host part of a ``Host`` header or an origin's netloc, lower case, brackets and
    port removed ("[::1]:8000" -> "::1")."""
    try:
        return (urlsplit("//" + value.strip()).hostname or "").lower()
    except ValueError:
        return ""


def given_token(headers: dict, cookies: str) -> str:
    if headers.get(HEADER.lower()):
        return headers[HEADER.lower()]
    for part in cookies.split(";"):
        k, _, v = part.strip().partition("=")
        if k == COOKIE:
            return v
    return ""


def token_matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


class Refused(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class BodyTooLarge(HTTPException):
    """Raised inside the app's receive when a body without a length passes `MAX_BODY`
    (an HTTP exception, so the app answers it as one)."""

    def __init__(self):
        super().__init__(413, f"a body over the limit of {MAX_BODY} bytes")


class Guard:
    """ASGI middleware doing the checks of the module doc.

    ``hosts``: the host names and addresses the server answers to; ``any_ip``: also
    any IP address literal (a server on 0.0.0.0 is reached by whichever address the
    phone uses; a rebinding page needs a name, not an address)."""

    def __init__(self, app, hosts, token: str | None, any_ip: bool = False):
        self.app, self.token, self.any_ip = app, token, any_ip
        self.hosts = {host_name(h) or h.lower() for h in hosts}

    def allowed(self, name: str) -> bool:
        if name in self.hosts:
            return True
        if self.any_ip:
            try:
                ipaddress.ip_address(name)
                return True
            except ValueError:
                return False
        return False

    def check(self, scope, headers: dict) -> None:
        host = headers.get("host", "")
        if not self.allowed(host_name(host)):
            raise Refused(400, f"the Host header {host[:80]!r} is not an address this server serves")
        method, path = scope.get("method", "GET"), scope.get("path", "")
        origin = headers.get("origin")
        if method in WRITES and origin is not None and origin != "null" and not self.allowed(
                host_name(urlsplit(origin).netloc if "//" in origin else origin)):
            raise Refused(403, f"a write from the page at {origin[:80]!r}, not from this server's page")
        if method in WRITES and origin == "null":
            raise Refused(403, "a write from a page without an origin, not from this server's page")
        if path.startswith("/api") and self.token is not None and not token_matches(
                given_token(headers, headers.get("cookie", "")), self.token):
            raise Refused(401, "missing or wrong token: open the address printed by coupjax serve "
                               "(it ends in ?token=...)")
        length = headers.get("content-length")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                raise Refused(400, f"a Content-Length that is not a number: {length[:40]!r}") from None
            if size > MAX_BODY:
                raise Refused(413, f"a body of {size} bytes, over the limit of {MAX_BODY}")
        has_body = chunked or (length is not None and int(length) > 0)
        if has_body:
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise Refused(415, f"the body must be JSON (Content-Type: application/json), not "
                                   f"{kind[:60] or 'untyped'}")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            self.check(scope, headers)
        except Refused as r:
            return await _answer(send, r.status, r.detail)
        seen = 0
        started = False

        async def bounded_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > MAX_BODY:
                    raise BodyTooLarge()
            return message

        async def tracked_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await _answer(send, 413, f"a body over the limit of {MAX_BODY} bytes")


async def _answer(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
