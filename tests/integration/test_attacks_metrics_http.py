"""The metrics endpoint under a flood of idle connections (docs/security.md, "Bounds"):
prometheus_client's own server took a thread per connection for as long as the client
held it, without a limit; ours answers at most MAX_CONNECTIONS at once, and a scrape
works again once the flood lets go. Real TCP connections to a server in this process."""

from __future__ import annotations

import socket
import threading
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from dafka.io import metrics_http
from dafka.io.metrics import MetricsServer
from tests.procs import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

IDLE = 200


def _server() -> MetricsServer:
    registry = CollectorRegistry()
    Counter("dafka_probe", "a probe", registry=registry).inc()
    return MetricsServer(registry, "127.0.0.1", 0)


def _scrape(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return bytes(answer.read())


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False  # open, nothing to read
    except ConnectionResetError:
        return True


def test_idle_connections_take_a_bounded_number_of_threads() -> None:
    server = _server()
    before = threading.active_count()
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        # every connection is taken: answered (a thread each) or closed at once; the old
        # server answered every one with a thread of its own and closed none
        wait_until(
            lambda: sum(map(_closed_by_server, idle)) >= IDLE - metrics_http.MAX_CONNECTIONS,
            30,
            what=f"the server to close all but {metrics_http.MAX_CONNECTIONS} connections",
        )
        assert threading.active_count() <= before + metrics_http.MAX_CONNECTIONS
    finally:
        for sock in idle:
            sock.close()
    # the held connections end (closed here, or timed out): scrapes are answered again
    wait_until(
        lambda: b"dafka_probe_total 1.0" in _scrape(server.url),
        30,
        what="a scrape after the flood",
    )
    server.close()


def test_a_client_that_never_sends_its_request_is_cut_off() -> None:
    server = _server()
    try:
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        try:
            # the server closes it after CLIENT_TIMEOUT: recv returns b"" (end of stream)
            assert silent.recv(1) == b""
        finally:
            silent.close()
        assert b"dafka_probe_total 1.0" in _scrape(server.url)
    finally:
        server.close()
