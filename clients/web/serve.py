"""One origin for the browser: the built page, its settings, and the Engine API (Connect/gRPC-Web).

    /                              the page (clients/web/static, built from clients/web/app)
    /config.json                   the play options `ascension web` was started with
    /ascension.v1.Engine/<Method>  the Engine API, forwarded to the engine (gateway.py)

Only for requests whose Host and Origin are this server's own (hosts.py: DNS rebinding).

Served by uvicorn on a socket bound before the server starts, so that the URL (with the real
port when 0 was asked for) is known and printed before anything else happens.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
import webbrowser
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from clients.sdk.tls import TLS, aio_channel, operator_metadata
from clients.web.client_address import ClientAddress
from clients.web.gateway import PREFIX, EngineGateway
from clients.web.hosts import HostGuard, Refusal

STATIC_DIR = Path(__file__).resolve().parent / "static"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class PageConfig:
    """What the page offers in its "new game" form (the play options on the command line)."""

    sets: str = "ss"
    players: int = 2
    bots: list[str] = field(default_factory=lambda: ["ismcts"])
    budget_ms: int = 300
    seed: int | None = None
    name: str = "You"
    engine: str = ""  # the engine's address, for the page's "about" line
    difficulty: str = ""  # a named level (easy, normal, hard, expert); "": bots and budget_ms

    def json(self) -> bytes:
        return json.dumps(asdict(self)).encode()


class WebApp:
    """Routes a request to the gateway, the settings or the static files (ASGI)."""

    def __init__(
        self,
        channel: Any,
        config: PageConfig,
        static_dir: Path = STATIC_DIR,
        metadata: tuple[tuple[str, str], ...] = (),
        guard: HostGuard | None = None,
        client: ClientAddress | None = None,
    ) -> None:
        """``guard``: which Host and Origin headers are answered (hosts.py); by default those
        of a server on loopback. ``client``: how the browser's address is told to the engine
        (client_address.py); by default the connection's peer."""
        if not (static_dir / "index.html").is_file():
            raise FileNotFoundError(
                f"{static_dir}/index.html is missing: build the page with "
                "`python -m clients.web.build` (needs Node.js) or reinstall the package"
            )
        self.guard = guard or HostGuard.of("127.0.0.1")
        self.gateway = EngineGateway(channel, metadata, client or ClientAddress())
        body = config.json()

        async def page_config(request: Request) -> Response:
            return Response(
                body, media_type="application/json", headers={"cache-control": "no-store"}
            )

        self.site = Starlette(
            routes=[
                Route("/config.json", page_config),
                Mount("/", app=StaticFiles(directory=static_dir, html=True)),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            refusal = self.guard.check(headers.get("host"), headers.get("origin"))
            if refusal is not None:
                await refuse(refusal, send)
                return
        path: str = scope.get("path", "")
        if scope["type"] == "http" and path.startswith(PREFIX):
            await self.gateway(scope, receive, send)
            return

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *PAGE_HEADERS]
            await send(message)

        await self.site(scope, receive, send_with_headers)


async def refuse(refusal: Refusal, send: Send) -> None:
    body = f"{refusal.status} {HTTPStatus(refusal.status).phrase}: {refusal.reason}\n".encode()
    await send({
        "type": "http.response.start",
        "status": refusal.status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()), *PAGE_HEADERS],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


# The page loads only its own files and talks only to its own origin. Its referrer policy is
# same-origin, not no-referrer: with no-referrer browsers send "Origin: null" with the page's
# own POSTs, which the Origin check (hosts.py) could not tell from a foreign sandboxed page.
PAGE_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; "
     b"frame-ancestors 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]  # fmt: skip


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free port), bound before the server starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


async def serve(
    sock: socket.socket,
    engine_address: str,
    config: PageConfig,
    *,
    tls: TLS | None = None,
    operator_key: str | None = None,
    access_log: bool = False,
    guard: HostGuard | None = None,
    client: ClientAddress | None = None,
) -> None:
    """Serve until interrupted (SIGINT/SIGTERM end it gracefully).

    ``tls`` secures the channel to the engine; an ``operator_key`` is sent with every call
    (so every browser that reaches the page acts as that operator: keep such a page private).
    ``guard``: the Host and Origin headers answered (hosts.py); ``client``: the browser's
    address told to the engine (client_address.py).
    """
    async with aio_channel(engine_address, tls, []) as channel:
        app = WebApp(
            channel, config, metadata=operator_metadata(operator_key) or (), guard=guard,
            client=client,
        )  # fmt: skip
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=access_log,
                lifespan="off",
                # uvicorn would take the client's address from X-Forwarded-For of any peer
                # on 127.0.0.1 (its FORWARDED_ALLOW_IPS): client_address.py decides instead.
                proxy_headers=False,
                # Long WatchGame streams should not hold up an exit: the page resumes them.
                timeout_graceful_shutdown=2,
            )
        )
        await server.serve(sockets=[sock])


def run(
    sock: socket.socket,
    engine_address: str,
    config: PageConfig,
    *,
    tls: TLS | None = None,
    operator_key: str | None = None,
    guard: HostGuard | None = None,
    client: ClientAddress | None = None,
) -> None:
    asyncio.run(
        serve(
            sock, engine_address, config, tls=tls, operator_key=operator_key, guard=guard,
            client=client,
        )
    )  # fmt: skip


def open_browser(url: str) -> bool:
    """Open the page in a desktop browser, if there is one; never a text browser in this terminal."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return False  # no desktop: webbrowser would pick lynx/w3m, which takes over the terminal
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    # A browser's launcher may wait for the window: never hold up the server for it.
    threading.Thread(target=browser.open, args=(url,), daemon=True).start()
    return True
