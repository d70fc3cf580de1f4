"""The platform with real processes on 127.0.0.1: towers and stores are child
processes; producers and consumers run in the test process through the API."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import BufferFullError, Consumer, Producer
from dafka.core.effects import ConsumedRecord
from tests.procs import (
    Proc,
    StoreProc,
    Tower,
    free_tower_address,
    py,
    stored_head,
    wait_until,
)

pytestmark = pytest.mark.integration


def consume(
    towers: str, topic: str, n: int, reset: str | int = "earliest", timeout: float = 30.0
) -> list[ConsumedRecord]:
    """Read exactly ``n`` records (or fail at the deadline)."""
    got: list[ConsumedRecord] = []
    with Consumer(topic, towers=towers, offset_reset=reset) as c:  # type: ignore[arg-type]

        def enough() -> bool:
            got.extend(c.poll_batch(10_000, timeout=0.1))
            return len(got) >= n

        wait_until(enough, timeout, what=f"{n} records of {topic}")
        # nothing more than n must arrive (no duplicates)
        got.extend(c.poll_batch(10_000, timeout=0.3))
    return got


def produce(towers: str, topic: str, values: list[bytes], **kw: object) -> str:
    with Producer(topic, towers=towers, **kw) as p:  # type: ignore[arg-type]
        futures = [p.send(v) for v in values]
        p.flush(timeout=30)
        assert [f.result(0) for f in futures] == [
            futures[0].result(0) + i for i in range(len(values))
        ]
        return p.partition


def assert_in_order(
    records: list[ConsumedRecord], partition: str, values: list[bytes], first: int = 0
) -> None:
    mine = [r for r in records if r.partition == partition]
    assert [r.offset for r in mine] == list(range(first, first + len(values)))
    assert [r.value for r in mine] == values


def test_consumer_started_after_producer_exited_gets_every_record_from_the_store(
    tower: Tower, start_store
) -> None:
    start_store()
    values = [f"record {i}".encode() for i in range(600)]
    partition = produce(tower.address, "orders", values)
    records = consume(tower.address, "orders", len(values))
    assert_in_order(records, partition, values)
    assert len(records) == len(values)


def test_store_killed_with_sigkill_still_serves_everything_it_acked(
    tower: Tower, tmp_path: Path
) -> None:
    store = StoreProc(tmp_path / "s", tower.address)
    values = [f"durable {i}".encode() for i in range(1000)]
    partition = produce(tower.address, "durable", values)
    store.kill()  # SIGKILL: no clean shutdown
    restarted = StoreProc(tmp_path / "s", tower.address)
    try:
        assert restarted.node_id == store.node_id  # same identity after restart
        records = consume(tower.address, "durable", len(values))
        assert_in_order(records, partition, values)
    finally:
        restarted.kill()


def test_two_stores_both_end_up_with_every_record(tower: Tower, tmp_path: Path) -> None:
    a = StoreProc(tmp_path / "a", tower.address)
    b = StoreProc(tmp_path / "b", tower.address)
    values = [f"replicated {i}".encode() for i in range(400)]
    # min_acks=2: with one ACK the producer may close before the second store has every
    # record, and nothing would tell that store it is behind (it failed 1 run in 4)
    partition = produce(tower.address, "both", values, min_acks=2)
    # each store alone must serve the whole partition
    for survivor, other in ((a, b), (b, a)):
        other.kill()
        survivor.kill()  # one store per data directory: restart it alone
        alone = StoreProc(survivor.data_dir, tower.address)
        try:
            records = consume(tower.address, "both", len(values))
            assert_in_order(records, partition, values)
        finally:
            alone.kill()


def test_a_store_that_joins_late_catches_up_from_the_other_store(
    tower: Tower, tmp_path: Path
) -> None:
    a = StoreProc(tmp_path / "a", tower.address)
    values = [f"early {i}".encode() for i in range(300)]
    with Producer("late", towers=tower.address, head_interval=0.2) as p:
        for v in values:
            p.send(v)
        p.flush(30)  # every record is on a; the producer holds nothing any more
        b = StoreProc(tmp_path / "b", tower.address)
        # b hears the producer's HEAD and fetches the partition from a
        wait_until(
            lambda: stored_head(b.data_dir, "late", p.partition) == 299,
            30,
            what="store b to catch up from store a",
        )
        partition = p.partition
    a.kill()
    b.kill()
    alone = StoreProc(b.data_dir, tower.address)
    try:
        records = consume(tower.address, "late", len(values))
        assert_in_order(records, partition, values)
    finally:
        alone.kill()


def test_restarted_producer_keeps_its_partition_and_continues_offsets(
    tower: Tower, start_store, tmp_path: Path
) -> None:
    start_store()
    state = tmp_path / "producer-state"
    first = produce(tower.address, "restarts", [b"a", b"b", b"c"], state_dir=state)
    with Producer("restarts", towers=tower.address, state_dir=state) as p:
        assert p.partition == first
        assert p.send(b"d").result(timeout=30) == 3
    records = consume(tower.address, "restarts", 4)
    assert_in_order(records, first, [b"a", b"b", b"c", b"d"])


def test_live_consumer_gets_records_in_order_and_only_its_topic(tower: Tower, start_store) -> None:
    start_store()
    with Consumer("hello", towers=tower.address, offset_reset="earliest") as c:
        with Producer("hello2", towers=tower.address) as other:
            other.send(b"not for you").result(timeout=30)
        values = [f"v{i}".encode() for i in range(2000)]
        partition = produce(tower.address, "hello", values)
        got: list[ConsumedRecord] = []
        wait_until(
            lambda: got.extend(c.poll_batch(10_000, timeout=0.1)) or len(got) >= 2000,
            30,
            what="2000 live records",
        )
        got.extend(c.poll_batch(10_000, timeout=0.3))
    assert {r.topic for r in got} == {"hello"}
    assert_in_order(got, partition, values)


def test_nodes_start_without_a_tower_and_join_when_it_appears(tmp_path: Path) -> None:
    address = free_tower_address()
    store = StoreProc(tmp_path / "s", address)  # no tower yet: must not block
    with Producer("patience", towers=address) as p:
        fut = p.send(b"waited")
        assert not fut.done()
        host, port = address.split(":")
        late = Proc(py("tower", "--bind", address, "--data-dir", str(tmp_path / "tower")))
        try:
            late.wait_line("tower on")
            assert fut.result(timeout=30) == 0
        finally:
            late.kill()
            store.kill()


def test_several_towers_one_of_them_down(tower: Tower, tmp_path: Path) -> None:
    probe = Tower()  # a tower address with nobody behind it
    dead = probe.address
    probe.stop()
    both = f"{dead},{tower.address}"
    store = StoreProc(tmp_path / "s", both)
    try:
        partition = produce(both, "multi", [b"x", b"y"])
        records = consume(both, "multi", 2)
        assert_in_order(records, partition, [b"x", b"y"])
    finally:
        store.kill()


def test_unacked_record_cap_paces_the_producer() -> None:
    """No store: the record cap (rfc46 default 50,000) fills and send refuses more."""
    probe = Tower()
    nowhere = probe.address
    probe.stop()
    with Producer(
        "capped", towers=nowhere, profile="rfc46", on_full="raise", max_unacked_records=3
    ) as p:
        for _ in range(3):
            p.send(b"x")
        with pytest.raises(BufferFullError, match="3 records"):
            p.send(b"one too many")
        assert p.unacked == 3
        p.close(timeout=0)
