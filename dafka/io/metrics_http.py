"""The HTTP server behind ``--metrics-port``: prometheus_client's WSGI app, bounded.

prometheus_client's own ``start_http_server`` starts a thread per connection and keeps it
for as long as the client keeps the connection open, with no limit: whoever reaches the
port can make a node start threads without end. This server answers at most
``MAX_CONNECTIONS`` connections at once, closes any connection beyond them at once
(counted in :attr:`MetricsHTTPServer.refused`), gives each client ``CLIENT_TIMEOUT``
seconds per read or write, and logs nothing per request (``docs/security.md``, "Bounds").
"""

from __future__ import annotations

import socket
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app

__all__ = ["CLIENT_TIMEOUT", "MAX_CONNECTIONS", "MetricsHTTPServer", "serve_metrics"]

MAX_CONNECTIONS = 8
"""Connections answered at once; a scraper needs one."""
CLIENT_TIMEOUT = 5.0
"""Seconds a client may take to send its request or to read the answer."""


class _QuietHandler(WSGIRequestHandler):
    timeout = CLIENT_TIMEOUT  # StreamRequestHandler sets it on the connection

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base's name)
        """Nothing: a line per request would let any client write to the node's log."""


class MetricsHTTPServer(ThreadingMixIn, WSGIServer):
    """A thread per connection, at most ``MAX_CONNECTIONS`` of them."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 64  # the listen backlog: a burst is taken (and refused) at once

    def __init__(self, address: tuple[str, int], family: socket.AddressFamily) -> None:
        self.address_family = family
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.connections = 0
        """Connections taken, answered or refused."""
        self.refused = 0
        """Connections closed at once because ``MAX_CONNECTIONS`` were being answered."""
        super().__init__(address, _QuietHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1  # only the serving thread writes the counters
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Nothing: a client that times out or hangs up is not the node's error (the base
        prints a traceback to stderr for each)."""

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def serve_metrics(
    registry: CollectorRegistry, host: str, port: int
) -> tuple[MetricsHTTPServer, threading.Thread]:
    """Bind ``host:port`` (port 0: a free one) and serve ``registry`` on a daemon thread;
    ``OSError`` when the address cannot be bound."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, sockaddr = infos[0]
    server = MetricsHTTPServer((str(sockaddr[0]), port), family)
    server.set_app(make_wsgi_app(registry))
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return server, thread
