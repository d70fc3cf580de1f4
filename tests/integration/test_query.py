"""The store's query endpoint with real processes: locator, HEADS, READ, below-tail."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import msgpack
import pytest
import zmq

from dafka import Producer
from dafka.query import BelowTailError, QueryClient, StoreLocator, records
from dafka.query import protocol as qp
from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_store import LmdbStorage
from dafka.wire import beacon as wbeacon
from tests.procs import StoreProc, Tower

pytestmark = pytest.mark.integration

P = "3F2504E04F8911D39A0C0305E82C3301"


def produce(towers: str, topic: str, values: list[bytes]) -> str:
    with Producer(topic, towers=towers) as p:
        for v in values:
            p.send(v)
        p.flush(30)
        return p.partition


def test_locator_finds_the_store_through_the_tower(tower: Tower, start_store) -> None:
    store = start_store()
    with StoreLocator(tower.address) as locator:
        assert locator.stores() == {store.node_id: store.query_endpoint}


def _located(towers: str | list[str], wait: float) -> tuple[dict[str, str], float]:
    started = time.monotonic()
    with StoreLocator(towers, wait=wait) as locator:
        return locator.stores(), time.monotonic() - started


def test_a_warm_towers_replay_spares_a_locator_its_listening_time(
    tower: Tower, start_store
) -> None:
    store = start_store()
    # the first listens its full time (the tower may have been up for less than 1.5 s)
    assert _located(tower.address, 1.6)[0] == {store.node_id: store.query_endpoint}
    second = Tower()  # a second tower, without stores, that has not yet listened long enough
    try:
        stores, took = _located([tower.address, second.address], 3.0)
        assert stores == {store.node_id: store.query_endpoint}
        assert took >= 1.0  # the second tower sent no end beacon: its stores might be unknown
        # both towers warm now: the tower that knows the store replays it at once
        stores, took = _located([tower.address, second.address], 30.0)
        assert stores == {store.node_id: store.query_endpoint}
        assert took < 10.0  # not the 30 s it would have listened without the replay
    finally:
        second.stop()


def test_a_tower_that_never_says_it_replayed_keeps_the_full_wait(tower: Tower, start_store) -> None:
    store = start_store()
    _located(tower.address, 1.6)  # warm
    with socket.socket() as s:  # a tower address where no tower answers
        s.bind(("127.0.0.1", 0))
        silent = f"127.0.0.1:{s.getsockname()[1]}"
        stores, took = _located([tower.address, silent], 2.0)
    assert stores == {store.node_id: store.query_endpoint}
    assert took >= 1.9


def test_a_store_is_replayed_as_soon_as_it_starts_on_a_warm_tower(
    tower: Tower, tmp_path: Path
) -> None:
    from dafka.config import NodeConfig, parse_towers
    from dafka.store._facade import Store

    _located(tower.address, 1.6)  # the tower has listened long enough: it sends end beacons
    # a beacon interval of 30 s: a node beacons at once when a tower subscribes to its
    # beacons (its connection is up), or the tower would not know it for 30 s (its first
    # beacon goes out before the connection is)
    node = NodeConfig(towers=parse_towers(tower.address), beacon_interval=30.0, beacon_timeout=60.0)
    store = Store(tmp_path / "s", node=node).start()
    try:
        deadline = time.monotonic() + 10
        stores: dict[str, str] = {}
        while not stores and time.monotonic() < deadline:
            stores, took = _located(tower.address, 30.0)
            assert took < 10.0  # the end beacons came
        assert list(stores) == [store.node_id]
    finally:
        store.stop()


def test_heads_and_reads_over_the_network(tower: Tower, start_store) -> None:
    store = start_store()
    values = [f"value {i}".encode() for i in range(2500)]
    partition = produce(tower.address, "q.events", values)
    other = produce(tower.address, "q.other", [b"x"])
    with QueryClient(store.query_endpoint, timeout=10) as client:
        assert [(p.topic, p.partition, p.tail, p.head) for p in client.heads(["q.events"])] == [
            ("q.events", partition, 0, 2499)
        ]
        assert {p.partition for p in client.heads()} >= {partition, other}
        reply = client.read("q.events", partition, 100, max_records=10)
        # the reply starts with the stored batch holding 100 (signed batches hold many)
        assert reply.first is not None and reply.first <= 100
        got = list(records(reply, start=100, end=110))
        assert [(r.offset, r.value) for r in got] == [(i, values[i]) for i in range(100, 110)]
        # a whole range in bounded chunks: every record once, in order
        offsets: list[int] = []
        for reply in client.read_range("q.events", partition, 0, 2500, max_bytes=4096):
            offsets.extend(r.offset for r in records(reply))
        assert offsets == list(range(2500))
        past = client.read("q.events", partition, 2500)
        assert past.count == 0 and past.head == 2499
        unknown = client.read("q.events", P, 0)
        assert unknown.count == 0 and unknown.head is None
        # STATUS: the store's disk, as its data directory's filesystem says it
        status = client.status()
        fs = os.statvfs(store.data_dir)
        assert status.disk_total == fs.f_blocks * fs.f_frsize
        assert status.disk_free is not None and 0 < status.disk_free <= status.disk_total
        db = os.stat(store.data_dir / "data.mdb").st_size
        assert status.db_bytes is not None and 0 < status.db_bytes <= db  # it only grows


def with_a_tail(data: Path, towers: str, topic: str, first: int, last: int) -> StoreProc:
    """A store whose partition P holds only ``first..last``, as if retention had run."""
    StoreProc(data, towers).kill()  # the store makes its directory and identity
    storage = LmdbStorage(data)
    storage.append([StoredBatch(topic, P, i, i, f"r{i}".encode()) for i in range(first, last + 1)])
    storage.close()
    return StoreProc(data, towers)


def test_reading_below_the_tail_is_a_clear_error(tower: Tower, tmp_path: Path) -> None:
    store = with_a_tail(tmp_path / "retained", tower.address, "q.old", 50, 79)
    try:
        with QueryClient(store.query_endpoint, timeout=10) as client:
            assert [(p.tail, p.head) for p in client.heads(["q.old"])] == [(50, 79)]
            with pytest.raises(BelowTailError) as err:
                client.read("q.old", P, 10)
            assert (err.value.tail, err.value.head) == (50, 79)
            assert "below the tail" in str(err.value)
            reply = client.read("q.old", P, 50)
            assert reply.first == 50 and reply.next_offset == 80
    finally:
        store.kill()


def test_bad_requests_get_an_answer_and_the_store_keeps_serving(tower: Tower, start_store) -> None:
    store = start_store()
    ctx = zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(store.query_endpoint)
    try:
        dealer.send(msgpack.packb([1, "read", 5, "t", "not-a-partition", 0, 1, 1]))
        assert dealer.poll(10_000)
        reply = qp.decode_reply(dealer.recv_multipart())
        assert isinstance(reply, qp.ErrorReply) and reply.code is qp.ErrorCode.BAD_REQUEST
        assert reply.request_id == 5
        dealer.send(b"\xff garbage")  # no request id: dropped
        dealer.send(b"x" * (qp.MAX_REQUEST_BYTES + 4096))  # over the size cap: disconnected
    finally:
        dealer.close(0)
    with QueryClient(store.query_endpoint, timeout=10) as client:
        assert client.heads(["nothing"]) == []


def test_fixed_query_port(tower: Tower, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = StoreProc(tmp_path / "fixed", tower.address, "--query-port", str(port))
    try:
        assert store.query_endpoint == f"tcp://127.0.0.1:{port}"
        with QueryClient(store.query_endpoint, timeout=10) as client:
            assert client.heads() == []
    finally:
        store.kill()


def test_regular_nodes_never_receive_service_beacons(tower: Tower, start_store) -> None:
    start_store()
    ctx = zmq.Context.instance()
    node_like = ctx.socket(zmq.SUB)  # subscribed like every node: W and B
    node_like.setsockopt(zmq.LINGER, 0)
    for prefix in (wbeacon.WELCOME, wbeacon.BEACON):
        node_like.setsockopt(zmq.SUBSCRIBE, prefix)
    host, port = tower.address.rsplit(":", 1)
    node_like.connect(f"tcp://{host}:{int(port) + 1}")
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            if node_like.poll(100):
                seen.append(node_like.recv_multipart()[0])
    finally:
        node_like.close(0)
    assert wbeacon.BEACON in seen  # the store's node beacons arrive
    assert wbeacon.SERVICE not in seen
