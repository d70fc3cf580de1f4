"""A client that never reads its responses, against a listener in this process: its requests
stop being read once its unsent responses pass the cap, it is closed after the slow
timeout, and another client is served all the while."""

from __future__ import annotations

import asyncio
import socket
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
