"""Hostile Kafka frames against a ``dafka-kafka --memory`` process: every refusal is an
answer or a closed connection with a logged reason, and costs little."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator

import pytest
from kio.schema.errors import ErrorCode

from tests.integration.kafka.conftest import Listener
from tests.kafka_wire import RawClient, build, decode_response
from tests.procs import wait_until

pytestmark = pytest.mark.integration

Connect = Callable[..., RawClient]


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Open raw clients; all closed at the end of the test."""
    opened: list[RawClient] = []

    def open_one(host: str, port: int, timeout: float = 10.0) -> RawClient:
        c = RawClient(host, port, timeout)
        opened.append(c)
        return c

    yield open_one
    for c in opened:
        c.close()


def api_versions_ok(c: RawClient) -> bool:
    r = c.call(18, 3, build(18, 3, client_software_name="t", client_software_version="1"))
    return bool(r.error_code == ErrorCode.none and r.api_keys)


def list_offsets_v1(partitions: int, correlation_id: int = 5) -> bytes:
    """A ListOffsets v1 request naming ``partitions`` partitions of one topic (12 bytes each)."""
    head = struct.pack(">hhih4s", 2, 1, correlation_id, 4, b"test")
    body = struct.pack(">ii", -1, 1) + struct.pack(">h1s", 1, b"t") + struct.pack(">i", partitions)
    one = struct.pack(">iq", 0, -1)
    payload = head + body + one * partitions
    return struct.pack(">i", len(payload)) + payload


def test_an_oversize_frame_closes_the_connection_with_a_reason(
    listener: Listener, connect: Connect
) -> None:
    c = connect(listener.host, listener.port, timeout=5)
    c.send(struct.pack(">i", 200 * 1024 * 1024) + b"\0" * 100)
    assert c.read_frame() is None
    listener.proc.wait_line(r"over the listener's cap of 104857600")
    other = connect(listener.host, listener.port)
    assert api_versions_ok(other)


def test_a_frame_below_the_header_size_closes_with_a_reason(
    listener: Listener, connect: Connect
) -> None:
    c = connect(listener.host, listener.port, timeout=5)
    c.send(struct.pack(">i", 3) + b"abc")
    assert c.read_frame() is None
    listener.proc.wait_line(r"a request of 3 bytes, less than the 8")


def test_unknown_keys_bad_versions_and_garbage_are_answered(
    listener: Listener, connect: Connect
) -> None:
    c = connect(listener.host, listener.port)
    c.send(struct.pack(">ihhih", 10, 999, 0, 31, -1))  # unknown api key
    assert struct.unpack(">ih", c.read_frame() or b"") == (31, 35)
    c.send(struct.pack(">ihhih", 10, 18, 77, 32, -1))  # ApiVersions v77
    cid, r = decode_response(18, 0, c.read_frame() or b"")
    assert cid == 32 and r.error_code == ErrorCode.unsupported_version and r.api_keys
    c.send(struct.pack(">ihhih", 10, 3, 99, 33, -1))  # Metadata v99
    assert struct.unpack(">ih", c.read_frame() or b"") == (33, 35)
    garbage = struct.pack(">hhih", 3, 4, 34, -1) + b"\x7f\xff\xff\xff\x01"
    c.send(struct.pack(">i", len(garbage)) + garbage)  # Metadata v4, a body that does not decode
    cid, r = decode_response(3, 4, c.read_frame() or b"")
    assert cid == 34 and r.topics == ()
    assert api_versions_ok(c)  # and the connection still serves
    listener.proc.wait_line(
        r"refused from .*: api 999 v0, not served, answered UNSUPPORTED_VERSION"
    )


def test_a_request_naming_a_million_partitions_is_refused_cheaply(
    listener: Listener, connect: Connect
) -> None:
    c = connect(listener.host, listener.port)
    for partitions, correlation_id in ((1_000_000, 41), (100_000, 42)):
        started = time.monotonic()
        c.send(list_offsets_v1(partitions, correlation_id))
        cid, r = decode_response(2, 1, c.read_frame() or b"")
        assert (cid, r.topics) == (correlation_id, ())
        assert time.monotonic() - started < 3.0
    listener.proc.wait_line(r"api 2 request of 120000\d\d bytes, over the 2097152")
    assert api_versions_ok(c)


def test_connections_over_the_cap_are_closed_and_the_others_served(connect: Connect) -> None:
    server = Listener("--max-connections", "2")
    try:
        first = connect(server.host, server.port)
        second = connect(server.host, server.port)
        assert api_versions_ok(first) and api_versions_ok(second)
        third = connect(server.host, server.port, timeout=5)
        try:
            third.send(struct.pack(">ihhih", 10, 18, 0, 1, -1))
        except OSError:
            pass
        assert third.read_frame() is None
        server.proc.wait_line(
            r"refused a connection from .*: 2 open, \d+ from its host, the most served"
        )
        assert api_versions_ok(first)
        first.close()
        wait_until(lambda: _served(server), 5, what="a connection served again")
        third.close()
    finally:
        server.stop()


def _served(server: Listener) -> bool:
    c = RawClient(server.host, server.port, timeout=2)
    try:
        return api_versions_ok(c)
    except (AssertionError, OSError):
        return False
    finally:
        c.close()


def test_garbage_after_the_cap_check_never_stalls_another_client(
    listener: Listener, connect: Connect
) -> None:
    """A client that announces 50 MB and sends 10 holds its own connection, nobody else's."""
    slow = socket.create_connection((listener.host, listener.port))
    slow.sendall(struct.pack(">i", 50 * 1024 * 1024) + struct.pack(">hhih", 0, 9, 1, -1))
    c = connect(listener.host, listener.port)
    started = time.monotonic()
    for _ in range(20):
        assert api_versions_ok(c)
    assert time.monotonic() - started < 2.0
    slow.close()
