"""The query endpoint's reply bounds (dafka.query.budget) on a QueryService in this process,
with real TCP connections: a READ is clamped to its connection's share, a client that
does not read is dropped and what it held freed, and a request waits one round of the
connections, not the whole queue of a flood."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import zmq

from dafka.query import protocol as qp
from dafka.query.budget import MIB, QueryLimits
from dafka.query.server import QueryService
from dafka.storage.base import StoredBatch
from dafka.storage.memory import MemoryStorage

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

P = "3F2504E04F8911D39A0C0305E82C3301"


OPENED: list[zmq.Socket] = []


@pytest.fixture
def ctx() -> Iterator[zmq.Context]:
    context = zmq.Context()
    yield context
    while OPENED:
        OPENED.pop().close(0)
    context.destroy(0)


def _service(
    ctx: zmq.Context, limits: QueryLimits, batch: int = MIB
) -> tuple[QueryService, zmq.Socket]:
    """A service of a partition of 40 MiB in batches of ``batch`` bytes."""
    storage = MemoryStorage()
    blob = bytes(range(256)) * (batch // 256)
    storage.append([StoredBatch("bulk", P, i, i, blob) for i in range(40 * MIB // batch)])
    service = QueryService(storage, profile="rfc46", limits=limits)
    return service, service.open(ctx, "127.0.0.1")


def _pump(service: QueryService, sock: zmq.Socket, until: Callable[[], bool], seconds: float):
    """Run the service as the store's loop does (a turn when readable, a tick each 50 ms)
    until ``until()``; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < deadline, "the service did not get there in time"
        if sock.poll(50):
            service.on_readable(time.monotonic())
        else:
            service.on_tick(time.monotonic())


def _client(ctx: zmq.Context, endpoint: str, reading: bool = True) -> zmq.Socket:
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if not reading:  # its own queue takes one reply, and its kernel little more
        sock.setsockopt(zmq.RCVHWM, 1)
        sock.setsockopt(zmq.RCVBUF, 64 * 1024)
    sock.connect(endpoint)
    OPENED.append(sock)
    return sock


def _read(sock: zmq.Socket, rid: int, max_bytes: int = qp.MAX_READ_BYTES) -> None:
    sock.send_multipart(qp.encode_request(qp.ReadRequest(rid, "bulk", P, 0, 10**6, max_bytes)))


def _reply(sock: zmq.Socket) -> qp.Reply | None:
    try:
        return qp.decode_reply(sock.recv_multipart(zmq.NOBLOCK))
    except zmq.Again:
        return None


def test_a_64_mib_read_is_clamped_to_the_connections_share(ctx: zmq.Context) -> None:
    service, sock = _service(ctx, QueryLimits(connection_bytes=4 * MIB))
    client = _client(ctx, service.endpoint)
    _read(client, 1)
    got: list[qp.Reply] = []
    _pump(service, sock, lambda: bool(got) or bool(got.extend(filter(None, [_reply(client)]))), 10)
    reply = got[0]
    assert isinstance(reply, qp.ReadReply)
    assert 0 < len(reply.data) <= 4 * MIB  # not the 40 MiB it asked for
    assert service.stats["clamped"] == 1
    service.close()


def test_a_client_that_does_not_read_is_dropped_and_what_it_held_is_freed(
    ctx: zmq.Context,
) -> None:
    limits = QueryLimits(connection_bytes=4 * MIB, stall=0.5)
    service, sock = _service(ctx, limits)
    flooder = _client(ctx, service.endpoint, reading=False)
    for rid in range(4):
        _read(flooder, rid)
    _pump(service, sock, lambda: service.budget.held >= 4 * MIB, 10)  # a share held, unread
    _pump(service, sock, lambda: service.stats["dropped_connections"] >= 1, 10)
    # libzmq frees what it queued for the dropped connection: the trackers end
    _pump(service, sock, lambda: service.budget.prune() or service.budget.held == 0, 10)
    service.close()


def test_a_request_during_a_flood_waits_one_round_not_the_floods_queue(
    ctx: zmq.Context,
) -> None:
    # a slow rate: each round has room for a few replies only
    limits = QueryLimits(rate=8 * MIB, burst=4 * MIB, parked_per_connection=16, park=60)
    service, sock = _service(ctx, limits, batch=64 * 1024)
    flood = [_client(ctx, service.endpoint) for _ in range(8)]
    for i, f in enumerate(flood):
        for rid in range(16):
            _read(f, 100 * i + rid)
    _pump(service, sock, lambda: service.stats["requests"] >= 128, 10)
    assert service.waiting >= 64  # the flood's requests wait: tens of MiB at 8 MiB/s
    honest = _client(ctx, service.endpoint)
    _read(honest, 1, 64 * 1024)
    started = time.monotonic()
    answered: list[qp.Reply] = []

    def got() -> bool:
        reply = _reply(honest)
        if reply is not None:
            answered.append(reply)
        return bool(answered)

    _pump(service, sock, got, 20)
    took = time.monotonic() - started
    assert isinstance(answered[0], qp.ReadReply)
    # one round of 9 connections at burst/9 each is 4 MiB at 8 MiB/s: 0.5 s; the flood's
    # queue ahead of it (over 64 READs of up to 16 MiB each) would be minutes
    assert took < 3.0, f"the honest READ waited {took:.2f} s"
    assert service.waiting > 0  # the flood still waited when it was answered
    service.close()


def test_a_request_that_cannot_get_room_is_answered_busy(ctx: zmq.Context) -> None:
    limits = QueryLimits(connection_bytes=MIB, park=0.3, stall=60, parked_per_connection=64)
    service, sock = _service(ctx, limits)
    client = _client(ctx, service.endpoint, reading=False)
    rid = 0

    def ask() -> bool:  # a READ each 0.1 s: far fewer wait than a connection may have
        nonlocal rid
        rid += 1
        _read(client, rid)
        _pump(service, sock, lambda: False if time.monotonic() < due else True, 1)
        return service.stats["busy"] >= 1

    deadline = time.monotonic() + 3  # 30 READs at most: busy for waiting, not for the cap
    while True:
        due = time.monotonic() + 0.1
        if ask():
            break
        assert time.monotonic() < deadline, "no request was answered busy"
    assert service.budget.held >= MIB  # what its unread replies hold: its share
    service.close()


def test_a_waiting_request_is_judged_by_the_acl_again_when_served(ctx: zmq.Context) -> None:
    readers: dict[str, frozenset[str] | None] = {"bulk": None}  # open, then closed
    limits = QueryLimits(rate=1024, burst=MIB, park=60)
    storage = MemoryStorage()
    storage.append([StoredBatch("bulk", P, i, i, b"x" * MIB) for i in range(4)])
    service = QueryService(storage, profile="rfc46", limits=limits, readers=readers.get)
    sock = service.open(ctx, "127.0.0.1")
    client = _client(ctx, service.endpoint)
    _read(client, 1, MIB)
    _pump(service, sock, lambda: service.budget.tokens <= 0, 10)  # the burst is spent
    _read(client, 2, MIB)
    _pump(service, sock, lambda: service.waiting == 1, 10)  # it waits for the rate
    readers["bulk"] = frozenset({"0" * 32})  # an ACL now names someone else
    service.budget.tokens = MIB  # and the rate lets it go
    replies: list[qp.Reply] = []

    def second() -> bool:
        reply = _reply(client)
        if reply is not None and reply.request_id == 2:
            replies.append(reply)
        return bool(replies)

    _pump(service, sock, second, 10)
    assert isinstance(replies[0], qp.ErrorReply)
    assert replies[0].code is qp.ErrorCode.FORBIDDEN
    service.close()
