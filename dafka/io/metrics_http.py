"""The HTTP server behind ``--metrics-port``: prometheus_client's exposition on tornado, bounded.

prometheus_client's own ``start_http_server`` starts a thread per connection, without a
limit; the thread-per-connection server that replaced it answered at most 8 connections
at once, each given 5 s per read: eight connections sending one byte every 4 s held all
eight for as long as they liked, and 0 of 15 honest scrapes were answered in 30 s.

This server is tornado's (a single-threaded event loop on its own daemon thread: an
idle connection costs a socket and a few kilobytes, not a thread), with bounds on the
whole of each connection (:class:`HttpLimits`):

* a request's head (request line and headers) must arrive within ``request_timeout``
  seconds of the connection's start or of the previous answer, however it trickles
  (tornado's header timeout: one deadline, not a timeout per read), and be at most
  ``max_header_bytes``; a body must arrive within ``request_timeout`` and be at most
  ``max_body_bytes``;
* a connection is closed ``lifetime`` seconds after it was accepted, whatever it does
  (a client that never reads its answer);
* one peer address holds at most ``per_peer`` connections (one more is closed at once,
  counted in :attr:`MetricsHTTPServer.refused`), and all peers ``connections``: when they
  are all taken, a new connection takes the place of the oldest one of the address that
  holds the most (counted in :attr:`MetricsHTTPServer.evicted`), unless that address holds
  no more than the newcomer's would, when the newcomer is refused. A slowloris from one
  host then holds its own connections only, and one spread over many addresses (32
  addresses of 8 connections filled the 256 before, and 1 of 25 scrapes was answered)
  loses its oldest connection to each scrape, which is answered at once.

Nothing is logged per request or per connection (``docs/security.md``, "Bounds").
Tornado is also a web framework, which a web console can be built on later.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ..errors import ConfigError

__all__ = ["HttpLimits", "MetricsHTTPServer", "serve_metrics"]


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """The bounds of the metrics endpoint's connections (the module says what each does)."""

    request_timeout: float = 10.0
    """Seconds a request's head (or body) may take to arrive, in all."""
    lifetime: float = 300.0
    """Seconds a connection may stay open, in all (a scraper reconnects)."""
    per_peer: int = 8
    """Connections one peer address may hold at once."""
    connections: int = 256
    """Connections all peers may hold at once."""
    max_header_bytes: int = 16 * 1024
    max_body_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        if min(self.request_timeout, self.lifetime) <= 0:
            raise ConfigError("metrics HTTP limits: times must be positive")
        if min(self.per_peer, self.connections, self.max_header_bytes, self.max_body_bytes) < 1:
            raise ConfigError("metrics HTTP limits: counts and sizes must be positive")


class _Metrics(tornado.web.RequestHandler):
    """Every path: the registry in the exposition format the client accepts."""

    def initialize(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def get(self, *args: str) -> None:
        encoder, content_type = choose_encoder(self.request.headers.get("Accept", ""))
        self.set_header("Content-Type", content_type)
        self.finish(encoder(self.registry))


def _quiet(handler: tornado.web.RequestHandler) -> None:
    """No access log: a line per request would let any client write to the node's log."""


class _BoundedServer(tornado.httpserver.HTTPServer):
    """tornado's HTTPServer, with at most ``per_peer`` connections per peer address and
    ``connections`` in all, each closed after ``lifetime`` seconds."""

    def initialize(  # type: ignore[override]
        self, app: tornado.web.Application, limits: HttpLimits, owner: MetricsHTTPServer
    ) -> None:
        # the base named, not super(): tests.attack_mutants recompiles these methods alone
        # guard: metrics-endpoint-gives-request-head
        tornado.httpserver.HTTPServer.initialize(
            self,
            app,
            idle_connection_timeout=limits.request_timeout,  # also the whole head's deadline
            body_timeout=limits.request_timeout,
            max_header_size=limits.max_header_bytes,
            max_body_size=limits.max_body_bytes,
            max_buffer_size=limits.max_body_bytes,
        )
        self.limits = limits
        self.owner = owner
        self._peers: dict[str, int] = {}
        self._open: dict[tornado.iostream.IOStream, tuple[str, asyncio.TimerHandle]] = {}

    def handle_stream(self, stream: tornado.iostream.IOStream, address: Any) -> None:
        owner, limits = self.owner, self.limits
        owner.connections += 1
        peer = str(address[0]) if isinstance(address, tuple) and address else "?"
        held = self._peers.get(peer, 0)
        # guard: metrics-endpoint-bounds-connections-peer
        if held >= limits.per_peer:
            owner.refused += 1
            stream.close()
            return
        # guard: metrics-endpoint-answers-bounded-number
        if len(self._open) >= limits.connections:
            # guard: metrics-endpoint-makes-room-newcomer
            victim = self._victim(held + 1)
            if victim is None:
                owner.refused += 1
                stream.close()
                return
            owner.evicted += 1
            self._forget(victim)
            victim.close()
        self._peers[peer] = held + 1
        # guard: metrics-endpoint-closes-connection-after
        timer = asyncio.get_running_loop().call_later(limits.lifetime, stream.close)
        self._open[stream] = (peer, timer)
        tornado.httpserver.HTTPServer.handle_stream(self, stream, address)

    def _victim(self, newcomer_holds: int) -> tornado.iostream.IOStream | None:
        """The oldest connection of the address that holds the most, if it holds more than
        ``newcomer_holds`` (what the new connection's address would hold with it)."""
        most = max(self._peers.values(), default=0)
        if most < newcomer_holds:
            return None
        for stream, (peer, _) in self._open.items():  # oldest first
            if self._peers[peer] == most:
                return stream
        return None

    def _forget(self, stream: tornado.iostream.IOStream) -> None:
        entry = self._open.pop(stream, None)
        if entry is not None:
            peer, timer = entry
            timer.cancel()
            left = self._peers[peer] - 1
            if left:
                self._peers[peer] = left
            else:
                del self._peers[peer]

    def on_close(self, server_conn: object) -> None:
        stream = getattr(server_conn, "stream", None)
        if stream is not None:
            self._forget(stream)
        tornado.httpserver.HTTPServer.on_close(self, server_conn)

    @property
    def open_connections(self) -> int:
        return len(self._open)


class MetricsHTTPServer:
    """The metrics endpoint: bound at construction (``OSError`` if it cannot be), served on
    a daemon thread's event loop by :meth:`start`, stopped by :meth:`shutdown`."""

    def __init__(
        self, registry: CollectorRegistry, host: str, port: int, limits: HttpLimits
    ) -> None:
        self.limits = limits
        self.connections = 0
        """Connections accepted, answered or refused."""
        self.refused = 0
        """Connections closed at once: their peer held the most allowed, or every connection
        was taken and no address held more than the newcomer's would."""
        self.evicted = 0
        """Connections closed to make room for a newcomer when every connection was taken:
        the oldest of the address that held the most."""
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        self._sockets = tornado.netutil.bind_sockets(port, host, family=family, backlog=128)
        self.server_address: tuple[str, int] = self._sockets[0].getsockname()[:2]
        self._app = tornado.web.Application(
            [(r"/.*", _Metrics, {"registry": registry})], log_function=_quiet
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._server: _BoundedServer | None = None
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="metrics-http", daemon=True)

    def start(self) -> None:
        self.thread.start()
        self._ready.wait(10.0)

    @property
    def open_connections(self) -> int:
        """Connections being served now."""
        return self._server.open_connections if self._server is not None else 0

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = self._server = _BoundedServer(self._app, self.limits, self)
        server.add_sockets(self._sockets)
        self._ready.set()
        await self._stop.wait()
        server.stop()
        closing: Awaitable[None] = server.close_all_connections()
        try:
            await asyncio.wait_for(closing, 2.0)
        except TimeoutError:
            pass

    def shutdown(self) -> None:
        """Stop serving, close every connection and the listening sockets."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop closed meanwhile
                pass
        self.thread.join(5.0)

    def server_close(self) -> None:
        for sock in self._sockets:
            sock.close()


def serve_metrics(
    registry: CollectorRegistry, host: str, port: int, limits: HttpLimits | None = None
) -> tuple[MetricsHTTPServer, threading.Thread]:
    """Bind ``host:port`` (port 0: a free one) and serve ``registry`` on a daemon thread;
    ``OSError`` when the address cannot be bound."""
    for name in ("tornado.general", "tornado.application"):
        # tornado logs a malformed request from a peer at INFO, a handler's failure at ERROR
        logging.getLogger(name).setLevel(logging.ERROR)
    server = MetricsHTTPServer(registry, host, port, limits if limits is not None else HttpLimits())
    server.start()
    return server, server.thread
