"""An ASGI guard in front of the app: only requests from the app's own pages get through.

Binding 127.0.0.1 keeps other computers out, but not other *web sites* open in the same
browser: a page on any site may open a WebSocket to ``ws://127.0.0.1:8000/`` (browsers do not
apply the same-origin rule to WebSockets) and drive the app — review and spend — or, through
DNS rebinding, make its own name resolve to 127.0.0.1. So every HTTP request and WebSocket
must name the server in its ``Host`` header (for a loopback server: ``127.0.0.1:PORT``,
``localhost:PORT`` or ``[::1]:PORT``), and a browser's ``Origin`` header, when present, must be
that same host. Anything else is refused with 403 before the app sees it.

Binding 127.0.0.1 does not keep out other users and programs of the same computer either. So,
as Jupyter does, each start makes a secret token (:func:`~approxdp.web.config.new_token`),
printed in the URL to open (``/?token=...``); every HTTP request and WebSocket must carry it,
in that query parameter or in the cookie the server sets on the first page it serves with it
(``HttpOnly``, ``SameSite=Strict``: the WebSocket, the page's scripts and downloads send it
back; no other site's page can). A request without the token is refused (403, or the
WebSocket closed with 1008) before the app sees it. ``approxdp serve --no-token`` turns the
token off, with a warning.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

from approxdp.web.config import ServeConfig, is_loopback

__all__ = ["allowed_hosts", "cookie_name", "guard", "request_allowed", "token_given"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def allowed_hosts(config: ServeConfig) -> frozenset[str] | None:
    """The ``Host`` values a loopback server answers (lower case, with the port); None for a
    server bound elsewhere with ``--allow-remote`` (its names are not known here)."""
    if not is_loopback(config.host):
        return None
    port = config.port
    names = {"127.0.0.1", "localhost", "[::1]", config.host.lower()}
    if ":" in config.host and not config.host.startswith("["):
        names.add(f"[{config.host.lower()}]")
    return frozenset(f"{name}:{port}" for name in names)


def _header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1").strip().lower()
    return None


def request_allowed(scope: Scope, hosts: frozenset[str] | None) -> bool:
    """True for a request the app may serve: a known ``Host`` (when ``hosts`` is given) and
    no ``Origin`` other than that host."""
    headers = scope.get("headers") or []
    host = _header(headers, b"host")
    if host is None or (hosts is not None and host not in hosts):
        return False
    origin = _header(headers, b"origin")
    if origin is None:  # not sent by a browser page of another site (curl, the app's own GETs)
        return True
    return urlsplit(origin).netloc == host


def cookie_name(config: ServeConfig) -> str:
    """The token's cookie: one per port (cookies ignore ports; two servers must not clash)."""
    return f"approxdp-token-{config.port}"


def token_given(scope: Scope, token: str, cookie: str) -> tuple[bool, bool]:
    """Whether the request carries ``token`` (in its ``?token=`` query or its ``cookie``), and
    whether it came in the query (then the response sets the cookie). Compared in constant
    time."""
    query = scope.get("query_string") or b""
    given = parse_qs(query.decode("latin-1")).get("token", [])
    expected = token.encode()
    if any(hmac.compare_digest(value.encode(), expected) for value in given):
        return True, True
    for key, value in scope.get("headers") or []:
        if key.lower() != b"cookie":
            continue
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(value.decode("latin-1"))
        except CookieError:
            continue
        morsel = jar.get(cookie)
        if morsel is not None and hmac.compare_digest(morsel.value.encode(), expected):
            return True, False
    return False, False


async def _refuse(scope: Scope, send: Send, body: bytes) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def guard(app: ASGIApp, config: ServeConfig) -> ASGIApp:
    """``app`` behind the Host/Origin check and, when ``config.token`` is set, the token check
    (HTTP and WebSocket; lifespan passes through)."""
    hosts = allowed_hosts(config)
    token, cookie = config.token, cookie_name(config)
    set_cookie = (f"{cookie}={token}; Path=/; HttpOnly; SameSite=Strict".encode()
                  if token is not None else b"")

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await app(scope, receive, send)
            return
        if not request_allowed(scope, hosts):
            await _refuse(scope, send, b"refused: this server answers only its own pages "
                                       b"(Host/Origin check)\n")
            return
        if token is None:
            await app(scope, receive, send)
            return
        ok, in_query = token_given(scope, token, cookie)
        if not ok:
            await _refuse(scope, send, b"refused: open the address approxdp serve printed "
                                       b"when it started (it carries the access token, "
                                       b"/?token=...)\n")
            return
        if not in_query or scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_with_cookie(message: MutableMapping[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                headers = list(message.get("headers") or [])
                headers.append((b"set-cookie", set_cookie))
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_with_cookie)

    return guarded
