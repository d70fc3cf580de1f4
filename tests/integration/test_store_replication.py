"""Stores copy back what other stores hold (issue 33 points 1 and 7), as real stores
(real sockets, LMDB in ``tmp_path``) following one real tower's metadata.

* A store whose data directory was wiped gets back every record of a producer that has
  stopped, with its old key and with a new one trusted through the metadata, so the
  topic's ``min_acks`` copies exist again.
* A store down for longer than the retention period continues from the tail the other
  (trusted) store signs, says so, and stores and acknowledges again.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from dafka.metadata import MetadataClient
from dafka.producer._facade import Producer
from dafka.query.client import QueryClient
from dafka.store._facade import Store
from tests.procs import Tower, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ROUND = 0.3  # seconds between a store's rounds of asking the others (default 5)


def start_store(path: Path, tower: Tower, **kw: object) -> Store:
    store = Store(path, towers=tower.address, metadata=True, replicate_interval=ROUND, **kw)  # type: ignore[arg-type]
    return store.start()


def copies(stores: list[Store], topic: str, partition: str, last: int) -> int:
    """How many of ``stores`` hold ``partition`` through ``last``."""
    return sum(1 for s in stores if (s.core.head(topic, partition) or -1) >= last)


@pytest.mark.parametrize("key", ["old", "new"])
def test_a_replaced_store_gets_back_the_records_of_a_stopped_producer(
    tmp_path: Path, key: str
) -> None:
    tower = Tower()
    s1 = start_store(tmp_path / "s1", tower)
    s2 = start_store(tmp_path / "s2", tower)
    stores = [s1, s2]
    producer = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ev", {"min_acks": 2})
            admin.trust_store(s1.node_id)
            admin.trust_store(s2.node_id)
            producer = Producer("ev", towers=tower.address, metadata=True)
            part = producer.node_id
            for i in range(10):
                producer.send_many([b"r%d" % (i * 500 + j) for j in range(500)]).result(30)
            producer.close(5)
            producer = None
            last = 4999
            assert copies(stores, "ev", part, last) == 2
            # s2's disk is replaced: a fresh data directory, its old key or a new one
            old_id, saved_key = s2.node_id, (s2.path / "node.key").read_bytes()
            s2.stop()
            stores.remove(s2)
            shutil.rmtree(s2.path)
            fresh = tmp_path / "s2"
            if key == "old":
                fresh.mkdir(mode=0o700)
                (fresh / "node.key").write_bytes(saved_key)
                (fresh / "node.key").chmod(0o600)
            s2 = start_store(fresh, tower)
            stores.append(s2)
            assert (s2.node_id == old_id) == (key == "old")
            if key == "new":
                admin.trust_store(s2.node_id)
                admin.revoke_store(old_id)
            s3 = start_store(tmp_path / "s3", tower)  # a third store joins meanwhile
            stores.append(s3)
            started = time.monotonic()
            wait_until(
                lambda: s2.core.head("ev", part) == last, 30, what="the replaced store refilled"
            )
            wait_until(lambda: copies(stores, "ev", part, last) == 3, 30, what="three copies")
            assert s2.core.under_replicated.partitions == 0
            print(f"refilled 5,000 records in {time.monotonic() - started:.2f} s")
    finally:
        if producer is not None:
            producer.close(1)
        for s in stores:
            s.stop()
        tower.stop()


def test_a_store_down_longer_than_retention_stores_and_acks_again(tmp_path: Path) -> None:
    """Issue 33 point 7. Two trusted stores, 2 s retention. s2 is down while the producer
    writes for longer than that (acknowledged by s1 alone, min_acks 1) and s1 trims what
    s2 would ask for. Back up, s2 must continue from s1's signed tail: with min_acks 2
    again, a new record is acknowledged by both."""
    tower = Tower()
    s1 = start_store(tmp_path / "s1", tower, retention_interval=0.2)
    s2 = start_store(tmp_path / "s2", tower, retention_interval=0.2)
    stores = [s1, s2]
    producer = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ev", {"min_acks": 2, "retention_ms": 2000})
            admin.trust_store(s1.node_id)
            admin.trust_store(s2.node_id)
            producer = Producer("ev", towers=tower.address, metadata=True)
            part = producer.node_id
            assert producer.send_many([b"before"] * 10).result(30) == range(10)
            held = s2.core.head("ev", part)
            assert held == 9
            s2.stop()
            stores.remove(s2)
            admin.alter_topic("ev", {"min_acks": 1})
            wait_until(lambda: producer.metadata.topic("ev")["min_acks"] == 1, 10)  # type: ignore[union-attr]
            with QueryClient(s1.query_endpoint, timeout=5) as query:

                def trimmed() -> bool:
                    producer.send_many([b"down"] * 10).result(30)  # type: ignore[union-attr]
                    (p,) = query.heads(["ev"])
                    return p.tail > held + 1

                wait_until(trimmed, 30, interval=0.3, what="s1 trimmed what s2 lacks")
            s2 = start_store(tmp_path / "s2", tower, retention_interval=0.2)
            stores.append(s2)
            admin.alter_topic("ev", {"min_acks": 2})
            wait_until(lambda: producer.metadata.topic("ev")["min_acks"] == 2, 10)  # type: ignore[union-attr]
            last = producer.send_many([b"after"] * 10).result(30)[-1]
            assert (s2.core.head("ev", part) or -1) >= last
            assert s2.core.stats.retention_skips >= 1
    finally:
        if producer is not None:
            producer.close(1)
        for s in stores:
            s.stop()
        tower.stop()
