"""The metrics endpoint under slow and idle connections (docs/metrics.md, docs/security.md
"Bounds"), real TCP connections to a server in this process.

prometheus_client's own server took a thread per connection for as long as the client held
it; the thread-per-connection server after it answered 8 connections at once with a 5 s
timeout per read, so eight connections sending one byte every 4 s left 0 of 15 honest
scrapes answered in 30 s. Ours (tornado) bounds the whole of each request in time, each
connection's life, and the connections of one peer address and of all: a slowloris holds
only its own host's share, for a request's deadline at a time. The tests shorten the
deadlines through :class:`HttpLimits`; honest scrapes come from 127.0.0.2, another address
of the loopback, the attacker's from 127.0.0.1.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time

import pytest
from prometheus_client import CollectorRegistry, Counter

from dafka.io.metrics import MetricsServer
from dafka.io.metrics_http import HttpLimits, MetricsHTTPServer
from tests.procs import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

HONEST = "127.0.0.2"
ATTACKER = "127.0.0.1"


def _server(limits: HttpLimits | None = None) -> MetricsServer:
    registry = CollectorRegistry()
    Counter("dafka_probe", "a probe", registry=registry).inc()
    return MetricsServer(registry, "127.0.0.1", 0, limits)


def _scrape(server: MetricsServer, source: str = HONEST, timeout: float = 5.0) -> bool:
    """Whether a scrape from ``source`` is answered with the metrics within ``timeout``."""
    conn = http.client.HTTPConnection(
        "127.0.0.1", server.port, timeout=timeout, source_address=(source, 0)
    )
    try:
        conn.request("GET", "/metrics")
        return b"dafka_probe_total 1.0" in conn.getresponse().read()
    except OSError:
        return False  # refused, reset or timed out
    finally:
        conn.close()


def _http(server: MetricsServer) -> MetricsHTTPServer:
    assert server._server is not None
    return server._server


def _connect(server: MetricsServer, source: str = ATTACKER) -> socket.socket:
    return socket.create_connection(
        ("127.0.0.1", server.port), timeout=10, source_address=(source, 0)
    )


def _closed_by_server(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False  # open, nothing to read
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except ConnectionResetError:
        return True


class Slowloris:
    """``count`` connections from ``ATTACKER``, each sending a request's head one byte every
    ``every`` seconds, and connecting again whenever the server closes one."""

    REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000

    def __init__(self, server: MetricsServer, count: int, every: float) -> None:
        self.server, self.every = server, every
        self.lived: list[float] = []  # how long each connection the server closed lived
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(count)]
        for t in self._threads:
            t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                sock = _connect(self.server)
            except OSError:
                self._stop.wait(0.1)
                continue
            started = time.monotonic()
            with sock:
                for byte in self.REQUEST:
                    try:
                        sock.send(bytes([byte]))
                    except OSError:
                        break
                    readable, _, _ = select.select([sock], [], [], self.every)
                    if readable or self._stop.is_set():
                        break  # closed by the server (it never answers a request not sent)
            if not self._stop.is_set():
                self.lived.append(time.monotonic() - started)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(10)


def test_a_slowloris_of_eight_connections_leaves_every_scrape_answered() -> None:
    limits = HttpLimits(request_timeout=2.0)  # 10 s by default: shortened for the test
    server = _server(limits)
    loris = Slowloris(server, 8, every=4.0)  # the issue's: 8 connections, a byte every 4 s
    try:
        wait_until(lambda: server._server.open_connections >= 8, 10, what="the slowloris")  # type: ignore[union-attr]
        answered = 0
        for _ in range(15):
            answered += _scrape(server)
            time.sleep(0.5)
        assert answered == 15, f"{answered} of 15 scrapes answered during the slowloris"
        # each of its connections was cut at the request's deadline, though every byte came
        # sooner than any timeout per read would have fired
        wait_until(lambda: len(loris.lived) >= 8, 15, what="the server to cut the slowloris")
        assert max(loris.lived) < limits.request_timeout + 4.5
    finally:
        loris.stop()
        server.close()


def test_one_peer_holds_at_most_its_connections_and_others_are_served() -> None:
    server = _server(HttpLimits(per_peer=4, request_timeout=60))
    held = [_connect(server) for _ in range(10)]
    try:
        wait_until(
            lambda: sum(map(_closed_by_server, held)) >= 6,
            10,
            what="the server to close the peer's connections past 4",
        )
        time.sleep(0.2)
        assert sum(map(_closed_by_server, held)) == 6
        assert _scrape(server, HONEST)  # another address: served at once
        assert not _scrape(server, ATTACKER)  # the peer's own: full
    finally:
        for sock in held:
            sock.close()
    wait_until(lambda: _scrape(server, ATTACKER), 10, what="the peer's scrape once it let go")
    server.close()


def test_all_peers_hold_at_most_the_connections_in_all() -> None:
    """Eight addresses of one connection each against a total of 5: at most 5 are open at
    once; when all are taken, a newcomer from an address that holds nothing takes the oldest
    connection's place, and one from an address whose share is as large is refused."""
    server = _server(HttpLimits(per_peer=100, connections=5, request_timeout=60))
    held = [_connect(server, f"127.0.0.{3 + i}") for i in range(8)]
    try:
        wait_until(
            lambda: sum(map(_closed_by_server, held)) >= 3,
            10,
            what="the server to close the connections past 5",
        )
        assert _http(server).open_connections <= 5
        assert [_closed_by_server(s) for s in held[:3]] == [True] * 3  # the oldest went
        assert not any(_closed_by_server(s) for s in held[3:])
        assert _scrape(server, HONEST)  # takes the place of the oldest, 127.0.0.6
        assert _closed_by_server(held[3])
    finally:
        for sock in held:
            sock.close()
    server.close()


def test_a_slowloris_spread_over_many_addresses_leaves_every_scrape_answered() -> None:
    """The red team's flood: 32 addresses holding 8 slow connections each filled all 256,
    and 1 of 25 scrapes from another address was answered. Here 8 addresses of 4 fill a
    total of 32; each scrape takes the oldest connection of an address holding the most."""
    server = _server(HttpLimits(per_peer=4, connections=32, request_timeout=60))
    held = [_connect(server, f"127.0.1.{1 + i // 4}") for i in range(32)]
    try:
        wait_until(lambda: _http(server).open_connections == 32, 10, what="32 connections held")
        answered = sum(_scrape(server, HONEST, timeout=2.0) for _ in range(15))
        assert answered == 15
        assert _http(server).evicted >= 1 and _http(server).open_connections <= 32
    finally:
        for sock in held:
            sock.close()
    server.close()


def test_idle_connections_take_no_thread() -> None:
    server = _server()
    before = threading.active_count()
    idle = [_connect(server, f"127.0.{i // 200}.{1 + i % 200}") for i in range(200)]
    try:
        wait_until(lambda: server._server.open_connections >= 200, 10, what="200 connections")  # type: ignore[union-attr]
        assert threading.active_count() == before
        assert _scrape(server, "127.9.9.9")
    finally:
        for sock in idle:
            sock.close()
        server.close()


def test_a_client_that_never_sends_its_request_is_cut_off() -> None:
    server = _server(HttpLimits(request_timeout=1.0))
    try:
        silent = _connect(server)
        with silent:
            started = time.monotonic()
            assert silent.recv(1) == b""  # the server closed it: end of stream
            assert time.monotonic() - started < 5
        assert _scrape(server)
    finally:
        server.close()


def test_a_connection_is_closed_after_its_lifetime_however_busy() -> None:
    server = _server(HttpLimits(lifetime=2.0, request_timeout=60))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        started = time.monotonic()
        with pytest.raises((OSError, http.client.HTTPException)):  # noqa: PT012
            while time.monotonic() - started < 10:  # keep-alive: a request each 0.2 s
                conn.request("GET", "/metrics")
                conn.getresponse().read()
                conn.auto_open = 0  # never reconnect: the server's close is an error
                time.sleep(0.2)
        assert time.monotonic() - started < 5
    finally:
        conn.close()
        server.close()
