"""Towers hosting the metadata Raft group, and nodes following it, as real processes.

One tower: topic settings reach a producer live (min_acks), a revoked store stops
counting, retention shrinks a store and a read below its tail is told so, nodes keep
the last configuration while every tower is down and catch up when one is back.
Three towers: the leader tower is killed and changes are still accepted and seen.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from dafka.consumer._facade import Consumer
from dafka.errors import ConfigError, DafkaError, DataLossError, RecordTooLargeError
from dafka.metadata import MetadataClient, MetadataView
from dafka.producer._facade import Producer
from dafka.query.client import BelowTailError, QueryClient
from dafka.store._facade import Store
from tests.admin import ADMIN_HEX, tower_args
from tests.procs import Proc, StoreProc, Tower, py, wait_until
from tower.metadata import free_port_block

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def start_tower(port: int, data: Path, *extra: str) -> Proc:
    proc = Proc(
        py("tower", "--bind", f"127.0.0.1:{port}", "--data-dir", str(data), "--log-level", "info")
        + tower_args()
        + list(extra)
    )
    proc.wait_line(r"tower on tcp://")
    return proc


def test_topic_settings_reach_a_producer_live(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "s1", tower.address)
    producer = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ev", {"min_acks": 2})
            producer = Producer("ev", towers=tower.address, metadata=True)
            assert producer.metadata is not None
            assert producer.metadata.topic("ev")["min_acks"] == 2
            fut = producer.send(b"x")
            with pytest.raises(DafkaError):
                producer.flush(1.5)  # one store cannot make two ACKs
            assert not fut.done()
            admin.alter_topic("ev", {"min_acks": 1})
            assert fut.result(10) == 0
    finally:
        if producer is not None:
            producer.close(1)
        store.kill()
        tower.stop()


def test_a_revoked_store_no_longer_counts(tmp_path: Path) -> None:
    tower = Tower()
    s1 = StoreProc(tmp_path / "s1", tower.address)
    s2 = StoreProc(tmp_path / "s2", tower.address)
    producer = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ev", {"min_acks": 2})
            admin.trust_store(s1.node_id)
            admin.trust_store(s2.node_id)
            producer = Producer("ev", towers=tower.address, metadata=True)
            assert producer.send(b"a").result(15) == 0
            admin.revoke_store(s2.node_id)
            view = producer.metadata
            assert view is not None
            wait_until(lambda: view.trusted_stores() == (s1.node_id,), 10, what="revocation")
            fut = producer.send(b"b")
            with pytest.raises(DafkaError):
                producer.flush(1.5)  # only s1 counts now: one ACK of two
            admin.trust_store(s2.node_id)
            assert fut.result(10) == 1
    finally:
        if producer is not None:
            producer.close(1)
        s1.kill()
        s2.kill()
        tower.stop()


def test_retention_shrinks_a_store_and_reads_below_the_tail_are_told(tmp_path: Path) -> None:
    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True, retention_interval=0.2)
    store.start()
    producer = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ev", {})
            producer = Producer("ev", towers=tower.address, metadata=True)
            for _ in range(5):  # five separate batches
                producer.send_many([b"x" * 1000] * 10).result(15)
            query = QueryClient(store.query_endpoint, timeout=5)
            (part,) = query.heads(["ev"])
            assert (part.tail, part.head) == (0, 49)
            admin.alter_topic("ev", {"retention_bytes": 25_000})

            def tail() -> int:
                (p,) = query.heads(["ev"])
                return p.tail if p.tail > 0 else 0

            assert wait_until(tail, 15, what="retention to move the tail") in (20, 30)
            with pytest.raises(BelowTailError, match="below the tail"):
                query.read("ev", producer.partition, 0)
            assert query.read("ev", producer.partition, 45).head == 49
            cut = tail()
            query.close()
            # a live consumer from "earliest" is told too: once, then it goes on from the tail
            with Consumer("ev", towers=tower.address, offset_reset="earliest") as consumer:
                with pytest.raises(DataLossError, match=rf"offsets 0\.\.{cut - 1} were deleted"):
                    consumer.poll(15)
                got = consumer.poll_batch(100, timeout=15)
                while got and got[-1].offset < 49:
                    more = consumer.poll_batch(100, timeout=15)
                    if not more:
                        break
                    got += more
                assert [r.offset for r in got] == list(range(cut, 50))
            with Consumer(
                "ev", towers=tower.address, offset_reset="earliest", on_data_loss="skip"
            ) as consumer:
                got = consumer.poll_batch(100, timeout=15)
                while got and got[-1].offset < 49:
                    more = consumer.poll_batch(100, timeout=15)
                    if not more:
                        break
                    got += more
                assert [r.offset for r in got] == list(range(cut, 50))
    finally:
        if producer is not None:
            producer.close(1)
        store.stop()
        tower.stop()


def test_a_view_in_step_with_the_broadcasts_asks_the_towers_nothing(tmp_path: Path) -> None:
    """The towers' StateBroadcasts (every 0.5 s) show a view it holds the whole log: it
    asks again (RequestEntries, every ``refresh`` seconds) only without them, so an idle
    node's follower wakes for the broadcasts alone (issue 39)."""
    port = free_port_block("127.0.0.1")
    tower = start_tower(port, tmp_path / "t1")
    view = MetadataView(f"127.0.0.1:{port}", timeout=0.5, refresh=0.8)
    try:
        with MetadataClient(f"127.0.0.1:{port}") as admin:
            admin.create_topic("ev", {"min_acks": 2})
            assert view.start(wait=10)
            wait_until(lambda: view.topic("ev") is not None, 10, what="the topic")
            time.sleep(1.0)  # the broadcasts have found the view's SUB
            before = view.syncs
            time.sleep(4.0)
            assert view.syncs - before <= 1  # 5 at one a refresh
            admin.alter_topic("ev", {"min_acks": 3})  # a broadcast carries it
            wait_until(lambda: view.topic("ev")["min_acks"] == 3, 5, what="the change")
    finally:
        view.stop()
        tower.kill()


def test_nodes_keep_the_last_config_while_towers_are_down(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port_block("127.0.0.1")
    tower = start_tower(port, tmp_path / "t1")
    view = MetadataView(f"127.0.0.1:{port}", timeout=0.5, refresh=0.5)
    try:
        with MetadataClient(f"127.0.0.1:{port}") as admin:
            admin.create_topic("ev", {"min_acks": 2})
        assert view.start(wait=10)
        wait_until(lambda: view.topic("ev") is not None, 10, what="the topic")
        caplog.set_level(logging.INFO, logger="dafka.metadata.follower")
        tower.kill()
        wait_until(lambda: not view.online, 10, what="the view to notice")
        assert view.topic("ev")["min_acks"] == 2  # the last configuration seen
        assert "keeping the configuration last seen" in caplog.text
        tower = start_tower(port, tmp_path / "t1")
        with MetadataClient(f"127.0.0.1:{port}", timeout=10) as admin:
            admin.alter_topic("ev", {"min_acks": 3})
        wait_until(lambda: view.topic("ev")["min_acks"] == 3, 15, what="catching up")
        wait_until(lambda: view.online, 10, what="the view back online")
        assert "metadata.online" in caplog.text
    finally:
        view.stop()
        tower.kill()


def test_three_towers_survive_the_loss_of_the_leader(tmp_path: Path) -> None:
    ports = []
    while len(ports) < 3:
        p = free_port_block("127.0.0.1")
        if all(abs(p - q) >= 4 for q in ports):
            ports.append(p)
    spec = ",".join(f"t{i + 1}=127.0.0.1:{p}" for i, p in enumerate(ports))
    towers: dict[str, Proc] = {}
    addresses = ",".join(f"127.0.0.1:{p}" for p in ports)
    views = [MetadataView(f"127.0.0.1:{p}", timeout=0.5, refresh=0.5) for p in ports]
    views.append(MetadataView(addresses, timeout=0.5, refresh=0.5))
    try:
        for i, p in enumerate(ports):  # inside the try: a tower that fails to start stops the rest
            towers[f"t{i + 1}"] = start_tower(
                p, tmp_path / f"t{i + 1}", "--raft-peers", spec, "--raft-insecure-null"
            )
        with MetadataClient(addresses, timeout=15) as admin:
            admin.create_topic("ev", {"min_acks": 1})
            for view in views:
                view.start()
            for view in views:
                wait_until(lambda v=view: v.topic("ev") is not None, 15, what="the topic")
            leaders = [r for r in admin.status() if r.get("is_leader")]
            assert len(leaders) == 1
            leader = leaders[0]["leader"]
            towers[leader].kill()
            t0 = time.monotonic()
            admin.alter_topic("ev", {"min_acks": 2})
            admin.create_topic("after", {})
            elapsed = time.monotonic() - t0
            survivors = [v for i, v in enumerate(views) if f"t{i + 1}" != leader]
            for view in survivors:
                wait_until(
                    lambda v=view: v.topic("after") is not None and v.topic("ev")["min_acks"] == 2,
                    15,
                    what="the change to reach every node",
                )
            assert elapsed < 15
    finally:
        for view in views:
            view.stop()
        for proc in towers.values():
            proc.kill()


def test_unknown_topics_are_created_or_refused_as_the_cluster_says(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "s1", tower.address)
    producer = None
    try:
        with MetadataClient(tower.address) as admin:
            producer = Producer(towers=tower.address, metadata=True)
            assert producer.send(b"x", topic="fresh").result(15) == 0
            wait_until(lambda: "fresh" in admin.topics(), 10, what="the topic created")
            assert admin.describe("fresh")["min_acks"] == 1
            admin.set_cluster({"auto_create": False})
            view = producer.metadata
            assert view is not None
            wait_until(lambda: not view.auto_create(), 10, what="the setting")
            with pytest.raises(ConfigError, match="dafka topics create unknown"):
                producer.send(b"x", topic="unknown")
            assert producer.send(b"y", topic="fresh").result(15) == 1
            admin.alter_topic("fresh", {"max_record_bytes": 10})
            wait_until(lambda: view.topic("fresh")["max_record_bytes"] == 10, 10, what="cap")
            with pytest.raises(RecordTooLargeError, match="max_record_bytes"):
                producer.send(b"z" * 11, topic="fresh")
            with pytest.raises(RecordTooLargeError, match="max_record_bytes"):
                producer.send_many([b"z", b"z" * 11], topic="fresh")
            assert producer.send(b"z" * 10, topic="fresh").result(15) == 2
    finally:
        if producer is not None:
            producer.close(1)
        store.kill()
        tower.stop()


def test_two_producers_creating_the_same_topics_at_once_both_succeed(tmp_path: Path) -> None:
    import threading

    tower = Tower()
    store = StoreProc(tmp_path / "s1", tower.address)
    producers = [Producer(towers=tower.address, metadata=True) for _ in range(2)]
    try:
        for p in producers:
            assert p.metadata is not None and p.metadata.wait_loaded(15)
        start = threading.Barrier(2)
        errors: list[BaseException] = []

        def write(p: Producer) -> None:
            start.wait(15)
            try:
                for i in range(6):  # each creation is a race between the two
                    p.send(b"x", topic=f"both{i}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(p,)) for p in producers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        for p in producers:
            p.flush(30)
    finally:
        for p in producers:
            p.close(1)
        store.kill()
        tower.stop()


def test_producers_not_allowed_on_a_topic_are_refused(tmp_path: Path) -> None:
    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True).start()
    producer = consumer = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ev", {"producers": ["0" * 32]})
            consumer = Consumer("ev", towers=tower.address, offset_reset="earliest", metadata=True)
            producer = Producer("ev", towers=tower.address, metadata=True)
            fut = producer.send(b"x")
            wait_until(lambda: store.core.stats.unauthorized > 0, 10, what="the store refusing")
            assert not fut.done()
            assert consumer.poll(0.5) is None
            admin.alter_topic("ev", {"producers": ["0" * 32, producer.partition]})
            assert fut.result(15) == 0
            got = wait_until(lambda: consumer.poll(0.2), 15, what="the record delivered")
            assert got.value == b"x"
    finally:
        if producer is not None:
            producer.close(1)
        if consumer is not None:
            consumer.close()
        store.stop()
        tower.stop()


def test_state_broadcasts_carry_the_committed_entries_at_their_indexes() -> None:
    import zmq

    from dafka.metadata.state import MetadataStateMachine
    from dafka.raft.codec import _wire as w

    tower = Tower()
    host, port = tower.address.split(":")
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"dafka")
    sub.connect(f"tcp://{host}:{int(port) + 3}")
    try:
        with MetadataClient(tower.address) as admin:
            wait_until(lambda: sub.poll(100), 10, what="a first broadcast")
            index = admin.create_topic("ev", {"min_acks": 2})

            def the_entry() -> w.StateBroadcast | None:
                if not sub.poll(100):
                    return None
                msg = w.StateBroadcast.decode(sub.recv_multipart())
                return msg if any(e.index == index for e in msg.entries) else None

            msg = wait_until(the_entry, 10, what="the broadcast of the change")
            assert msg.entries[-1].index == msg.last_index
            sm = MetadataStateMachine(admins=[ADMIN_HEX])
            sm.revision = admin.config()["revision"] - 1  # as the tower was before it
            sm.apply(next(e for e in msg.entries if e.index == index))
            assert sm.view()["topics"] == {"ev": {"min_acks": 2}}
    finally:
        sub.close(0)
        ctx.term()
        tower.stop()


def test_a_node_loads_a_compacted_log_from_the_snapshot(tmp_path: Path) -> None:
    from dafka.config import TowerAddress
    from dafka.raft.peer import PeerOptions
    from tower.metadata import TowerNode

    node = TowerNode(
        TowerAddress("127.0.0.1", 0),
        data_dir=tmp_path / "t",
        options=PeerOptions(snapshot_every=5, keep_entries=1),
        admin_keys=[ADMIN_HEX],
    ).start()
    view = MetadataView(str(node.address), timeout=2)
    try:
        with MetadataClient(str(node.address)) as admin:
            for i in range(20):
                admin.create_topic(f"t{i}", {"min_acks": 1 + i % 3})
            wait_until(lambda: node.raft.info().first_index > 2, 10, what="compaction")
            assert view.start(wait=10)
            wait_until(lambda: len(view.config["topics"]) == 20, 10, what="every topic")
            assert view.topic("t5")["min_acks"] == 3
            admin.delete_topic("t0")
            wait_until(lambda: view.topic("t0") is None, 10, what="the deletion")
    finally:
        view.stop()
        node.stop()
