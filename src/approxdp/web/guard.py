"""An ASGI guard in front of the app: only requests from the app's own pages get through.

Binding 127.0.0.1 keeps other computers out, but not other *web sites* open in the same
browser: a page on any site may open a WebSocket to ``ws://127.0.0.1:8000/`` (browsers do not
apply the same-origin rule to WebSockets) and drive the app — review and spend — or, through
DNS rebinding, make its own name resolve to 127.0.0.1. So every HTTP request and WebSocket
must name the server in its ``Host`` header (for a loopback server: ``127.0.0.1:PORT``,
``localhost:PORT`` or ``[::1]:PORT``), and a browser's ``Origin`` header, when present, must be
that same host. Anything else is refused with 403 before the app sees it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from approxdp.web.config import ServeConfig, is_loopback

__all__ = ["allowed_hosts", "guard", "request_allowed"]

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


def guard(app: ASGIApp, config: ServeConfig) -> ASGIApp:
    """``app`` behind the Host/Origin check (HTTP and WebSocket; lifespan passes through)."""
    hosts = allowed_hosts(config)

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") not in ("http", "websocket") or request_allowed(scope, hosts):
            await app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = b"refused: this server answers only its own pages (Host/Origin check)\n"
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    return guarded
