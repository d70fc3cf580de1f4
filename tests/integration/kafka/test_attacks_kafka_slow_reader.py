"""A client that never reads its responses, against a listener in this process: its requests
stop being read once its unsent responses pass the cap, it is closed after the slow
timeout, and another client is served all the while."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dafka.kafka.handlers import Handlers
from dafka.kafka.memory_backend import MemoryBackend
from dafka.kafka.model import Broker, KafkaRecord
from dafka.kafka.server import KafkaServer, ServerLimits
from tests.kafka_wire import RawClient, build, ms, request_bytes

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
REQUESTS = 200


class Running:
    def __init__(self, limits: ServerLimits) -> None:
        self.backend = MemoryBackend(Broker(0, "127.0.0.1", 0))
        self.fetches = 0
        fetch = self.backend.fetch

        def counted(*args: Any) -> Any:
            self.fetches += 1
            return fetch(*args)

        self.backend.fetch = counted  # type: ignore[method-assign]
        self.server = KafkaServer(Handlers(self.backend), None, "127.0.0.1", 0, limits)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def running() -> Iterator[Running]:
    r = Running(ServerLimits(max_unsent_bytes=MIB, slow_timeout=1.5, max_in_flight=5))
    try:
        yield r
    finally:
        r.stop()


def fetch_request(correlation_id: int) -> bytes:
    from kio.schema.fetch.v4.request import FetchPartition, FetchTopic

    part = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=MIB)
    body = build(
        1,
        4,
        replica_id=-1,
        max_wait=ms(0),
        min_bytes=1,
        max_bytes=MIB,
        isolation_level=0,
        topics=(FetchTopic(topic="big", partitions=(part,)),),
    )
    return request_bytes(1, 4, body, correlation_id)


def test_a_client_that_never_reads_is_paused_then_closed_while_another_is_served(
    running: Running,
) -> None:
    running.backend.create_topic("big", 1, {}, False)
    value = b"x" * (256 * 1024)
    running.backend.produce("big", 0, [KafkaRecord(0, 1, None, value) for _ in range(8)], 1.0)
    bad = socket.socket()
    bad.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    bad.connect(("127.0.0.1", running.port))
    bad.settimeout(0.5)
    try:
        data = b"".join(fetch_request(i) for i in range(REQUESTS))
        sent = 0
        while sent < len(data):
            try:
                sent += bad.send(data[sent:])
            except TimeoutError:
                break  # the listener stopped reading this client's requests
        good = RawClient("127.0.0.1", running.port)
        try:
            for i in range(20):
                started = time.monotonic()
                r = good.call(
                    18, 3, build(18, 3, client_software_name="t", client_software_version="1"), i
                )
                assert r.api_keys and time.monotonic() - started < 1.0
        finally:
            good.close()
        # the cap: a few responses in the kernel's buffers and the cap, not all 200
        assert running.fetches < 60, running.fetches
        time.sleep(2.5)  # past the slow timeout (1.5 s), still not reading
        bad.settimeout(10)
        deadline = time.monotonic() + 10
        closed = False
        while time.monotonic() < deadline:
            try:
                if not bad.recv(1 << 20):
                    closed = True
                    break
            except ConnectionResetError:
                closed = True
                break
        assert closed, "the listener kept a client that never read"
        assert running.fetches < REQUESTS
    finally:
        bad.close()


def test_consumers_waiting_for_records_never_hold_up_a_producer() -> None:
    """Ten long polls on an empty partition, more than the pool has threads: a Produce is
    still answered at once (Fetch waits in its own pool)."""
    from kio.schema.fetch.v4.request import FetchPartition, FetchTopic
    from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

    from dafka.kafka.batches import encode_batch

    r = Running(ServerLimits(pool_threads=4, fetch_threads=16))
    waiting: list[RawClient] = []
    try:
        r.backend.create_topic("quiet", 1, {}, False)
        r.backend.create_topic("busy", 1, {}, False)
        part = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=MIB)
        poll = build(
            1,
            4,
            replica_id=-1,
            max_wait=ms(3000),
            min_bytes=1,
            max_bytes=MIB,
            isolation_level=0,
            topics=(FetchTopic(topic="quiet", partitions=(part,)),),
        )
        for i in range(10):
            c = RawClient("127.0.0.1", r.port)
            c.send(request_bytes(1, 4, poll, i))
            waiting.append(c)
        time.sleep(0.3)  # the polls are waiting
        producer = RawClient("127.0.0.1", r.port)
        waiting.append(producer)
        data = encode_batch([KafkaRecord(0, 1, b"k", b"v")])
        topics = (
            TopicProduceData(
                name="busy", partition_data=(PartitionProduceData(index=0, records=data),)
            ),
        )
        started = time.monotonic()
        answer = producer.call(0, 9, build(0, 9, acks=1, timeout=ms(1000), topic_data=topics))
        assert answer.responses[0].partition_responses[0].base_offset == 0
        assert time.monotonic() - started < 1.0
    finally:
        for c in waiting:
            c.close()
        r.stop()


def test_a_large_request_never_finished_holds_up_no_small_one_and_is_closed() -> None:
    """A client announcing a request as large as the listener's whole budget of request
    bytes, then sending nothing: small requests of others are still read and answered at
    once, and the client is closed once its request is late."""
    r = Running(
        ServerLimits(max_buffered_bytes=MIB, small_request_bytes=64 * 1024, request_timeout=1.0)
    )
    stalled = socket.create_connection(("127.0.0.1", r.port))
    good = RawClient("127.0.0.1", r.port, timeout=5)
    try:
        stalled.sendall(struct.pack(">i", MIB) + b"\0" * 100)  # all of the budget, never sent
        time.sleep(0.2)
        started = time.monotonic()
        answer = good.call(
            18, 3, build(18, 3, client_software_name="t", client_software_version="1")
        )
        assert answer.api_keys and time.monotonic() - started < 0.5
        stalled.settimeout(5)
        try:
            assert stalled.recv(10) == b""
        except ConnectionResetError:
            pass
    finally:
        stalled.close()
        good.close()
        r.stop()


def test_silent_connections_are_closed_and_one_host_cannot_take_every_connection() -> None:
    """A host opening connections that never send a request: past its share it is refused
    while another host is still served, and its silent connections are closed once the first
    request is late (not after the idle timeout of a connection that spoke)."""
    r = Running(
        ServerLimits(max_connections=10, max_connections_per_host=3, first_request_timeout=1.0)
    )
    silent = [socket.create_connection(("127.0.0.1", r.port)) for _ in range(3)]
    # 127.0.0.2 is loopback too (the whole 127/8 is), another host to the listener
    other = socket.create_connection(("127.0.0.1", r.port), source_address=("127.0.0.2", 0))
    refused = RawClient("127.0.0.1", r.port, timeout=5)  # a fourth from the first host
    versions = build(18, 3, client_software_name="t", client_software_version="1")
    try:
        try:
            refused.send(request_bytes(18, 3, versions))
        except OSError:
            pass
        assert refused.read_frame() is None, "a host held more connections than its share"
        other.sendall(request_bytes(18, 3, versions))
        other.settimeout(5)
        assert len(other.recv(4)) == 4, "another host was not served"
        started = time.monotonic()
        for s in silent:
            s.settimeout(5)
            try:
                assert s.recv(10) == b""
            except ConnectionResetError:
                pass
        assert time.monotonic() - started < 3.0, "silent connections outlived their deadline"
        again = RawClient("127.0.0.1", r.port, timeout=5)
        try:
            # the host is served again once its silent ones closed
            assert again.call(18, 3, versions).api_keys
        finally:
            again.close()
    finally:
        for s in (*silent, other):
            s.close()
        refused.close()
        r.stop()
