"""Both wire profiles with real processes: rfc46 still works, signed adds keys and trust,
and the two never mix. (tests/integration/test_platform.py runs the main scenarios
under the default, signed.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import Consumer, Producer
from dafka.core.effects import ConsumedRecord
from dafka.errors import ConfigError, DafkaTimeout, ProfileError
from tests.procs import StoreProc, Tower, stored_head, wait_until

pytestmark = pytest.mark.integration


def consume(
    towers: str, topic: str, n: int, *, profile: str = "signed", timeout: float = 30.0
) -> list[ConsumedRecord]:
    got: list[ConsumedRecord] = []
    with Consumer(topic, towers=towers, offset_reset="earliest", profile=profile) as c:  # type: ignore[arg-type]

        def enough() -> bool:
            got.extend(c.poll_batch(10_000, timeout=0.1))
            return len(got) >= n

        wait_until(enough, timeout, what=f"{n} records of {topic}")
        got.extend(c.poll_batch(10_000, timeout=0.3))
    return got


# ------------------------------------------------------------------ rfc46


def test_rfc46_platform_end_to_end(tower: Tower, tmp_path: Path) -> None:
    store = StoreProc(tmp_path / "s", tower.address, "--profile", "rfc46")
    try:
        values = [f"rfc46 {i}".encode() for i in range(500)]
        with Consumer(
            "old", towers=tower.address, offset_reset="earliest", profile="rfc46"
        ) as live:
            with Producer("old", towers=tower.address, profile="rfc46") as p:
                futures = [p.send(v) for v in values[:250]]
                batch = p.send_many(values[250:])
                p.flush(30)
                assert [f.result(0) for f in futures] == list(range(250))
                assert batch.result(0) == range(250, 500)
                partition = p.partition
            got: list[ConsumedRecord] = []
            wait_until(
                lambda: got.extend(live.poll_batch(10_000, timeout=0.1)) or len(got) >= 500,
                30,
                what="500 live rfc46 records",
            )
        assert [(r.offset, r.value, r.key) for r in got] == [
            (i, v, None) for i, v in enumerate(values)
        ]
        late = consume(tower.address, "old", 500, profile="rfc46")
        assert [(r.partition, r.offset, r.value) for r in late] == [
            (partition, i, v) for i, v in enumerate(values)
        ]
    finally:
        store.kill()


def test_rfc46_producer_keeps_its_partition_across_restarts(tower: Tower, tmp_path: Path) -> None:
    store = StoreProc(tmp_path / "s", tower.address, "--profile", "rfc46")
    state = tmp_path / "p"
    try:
        with Producer("r", towers=tower.address, profile="rfc46", state_dir=state) as p:
            p.send(b"a").result(30)
            first = p.partition
        with Producer("r", towers=tower.address, profile="rfc46", state_dir=state) as p:
            assert p.partition == first
            assert p.send(b"b").result(30) == 1
        # the directory is pinned to rfc46: a signed producer may not reuse its offsets
        with pytest.raises(ConfigError, match="rfc46-profile node"):
            Producer("r", towers=tower.address, state_dir=state)
    finally:
        store.kill()


def test_the_profiles_never_mix(tower: Tower, tmp_path: Path) -> None:
    store = StoreProc(tmp_path / "s", tower.address)  # signed
    try:
        with Consumer("mix", towers=tower.address, offset_reset="earliest") as signed_reader:
            with Producer("mix", towers=tower.address, profile="rfc46") as old:
                old.send(b"from rfc46")
                with pytest.raises(DafkaTimeout):
                    old.flush(3)  # the signed store drops rfc46 frames: no ACK
                old_partition = old.partition
            with Producer("mix", towers=tower.address) as new:
                new.send(b"from signed").result(30)
            got = []
            wait_until(
                lambda: got.extend(signed_reader.poll_batch(100, timeout=0.1)) or got,
                30,
                what="the signed record",
            )
            got.extend(signed_reader.poll_batch(100, timeout=0.5))
        assert [r.value for r in got] == [b"from signed"]
        assert stored_head(store.data_dir, "mix", old_partition) is None
    finally:
        store.kill()


# ------------------------------------------------------------------ signed


def test_keys_and_timestamps_travel_end_to_end(tower: Tower, start_store) -> None:
    start_store()
    with Producer("keyed", towers=tower.address) as p:
        p.send(b"v0", b"k0")
        p.send(b"v1")
        p.send(b"v2", b"")
        p.send_many([b"v3", b"v4"], [b"k3", None]).result(30)
        p.flush(30)
        partition = p.partition
    got = consume(tower.address, "keyed", 5)
    assert [(r.partition, r.offset, r.key, r.value) for r in got] == [
        (partition, 0, b"k0", b"v0"),
        (partition, 1, None, b"v1"),
        (partition, 2, b"", b"v2"),
        (partition, 3, b"k3", b"v3"),
        (partition, 4, None, b"v4"),
    ]
    assert all(r.timestamp is not None and r.timestamp > 1.6e9 for r in got)


def test_only_trusted_stores_make_records_durable(tower: Tower, start_store) -> None:
    store = start_store()
    stranger = "0" * 32
    with Producer("trust", towers=tower.address, trusted_stores=[stranger]) as p:
        fut = p.send(b"x")
        with pytest.raises(DafkaTimeout):
            p.flush(3)  # the store ACKs, but it is not one we trust
        assert not fut.done()
        p.close(timeout=0)
    with Producer("trust", towers=tower.address, trusted_stores=store.node_id) as p:
        assert p.send(b"y").result(30) == 0


def test_min_acks_waits_for_two_distinct_stores(tower: Tower, tmp_path: Path) -> None:
    a = StoreProc(tmp_path / "a", tower.address)
    try:
        with Producer("two", towers=tower.address, min_acks=2) as p:
            fut = p.send(b"x")
            with pytest.raises(DafkaTimeout):
                p.flush(3)  # one store is not enough
            b = StoreProc(tmp_path / "b", tower.address)
            try:
                assert fut.result(30) == 0
                assert stored_head(b.data_dir, "two", p.partition) == 0
            finally:
                b.kill()
    finally:
        a.kill()


def test_rfc46_keys_are_a_clear_error(tower: Tower) -> None:
    with Producer("k", towers=tower.address, profile="rfc46") as p:
        with pytest.raises(ProfileError, match="no record keys"):
            p.send(b"v", b"k")
        with pytest.raises(ProfileError, match="no record keys"):
            p.send_many([b"v"], [b"k"])
        assert p.unacked == 0  # nothing was queued
