"""ConsumerCore in group mode: only assigned partitions are read, from the given offsets."""

from __future__ import annotations

from dafka.consumer._core import ConsumerCore
from dafka.core.effects import Deliver, Publish
from dafka.core.messages import DirectHead, Fetch, GetHeads, Record

C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
P = "0123456789ABCDEF0123456789ABCDEF"
P2 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
STORE = "FEDCBA9876543210FEDCBA9876543210"


def rec(i: int, partition: str = P) -> Record:
    return Record("t", partition, i, f"value {i}".encode())


def delivered(effects: list) -> list[tuple[str, int]]:
    return [(r.partition, r.offset) for e in effects if isinstance(e, Deliver) for r in e.records()]


def group_core(reset="latest") -> ConsumerCore:
    core = ConsumerCore(C, offset_reset=reset)
    core.group_mode()
    core.subscribe("t", 0.0)
    return core


def test_unassigned_partitions_are_not_delivered_but_known() -> None:
    core = group_core()
    assert delivered(core.handle(rec(0), 0.0)) == []
    assert core.known_partitions() == [("t", P)]
    assert core.positions() == {}


def test_a_group_member_asks_stores_for_heads_even_at_latest() -> None:
    core = ConsumerCore(C, offset_reset="latest")
    core.group_mode()
    assert [e.msg for e in core.subscribe("t", 0.0)] == [GetHeads("t", C)]


def test_an_assigned_partition_starts_at_its_committed_offset() -> None:
    core = group_core()
    core.handle(rec(7), 0.0)
    out = core.assign({("t", P): 5}, (), 1.0)
    assert [e.msg for e in out if isinstance(e, Publish)] == [GetHeads("t", C)]
    effects = core.handle(rec(7), 1.0)  # the gap 5..6 is fetched first
    assert delivered(effects) == []
    assert any(isinstance(e, Publish) and isinstance(e.msg, Fetch) for e in effects)
    assert core.positions() == {("t", P): 5}
    eff = core.handle(rec(5), 1.1) + core.handle(rec(6), 1.1)
    assert delivered(eff) == [(P, 5), (P, 6), (P, 7)]


def test_a_store_hint_starts_an_assigned_partition_at_its_committed_offset() -> None:
    core = group_core()
    core.assign({("t", P): 3}, (), 0.0)
    effects = core.handle(DirectHead(C, "t", P, 9), 0.0)
    fetches = [e.msg for e in effects if isinstance(e, Publish) and isinstance(e.msg, Fetch)]
    assert fetches and fetches[0].offset == 3


def test_a_revoked_partition_is_forgotten_and_no_longer_delivered() -> None:
    core = group_core("earliest")
    core.assign({("t", P): 0, ("t", P2): None}, (), 0.0)
    assert delivered(core.handle(rec(0), 0.0)) == [(P, 0)]
    core.assign({}, [("t", P)], 1.0)
    assert delivered(core.handle(rec(1), 1.0)) == []
    assert ("t", P) not in core.positions()
    assert set(core.known_partitions()) == {("t", P), ("t", P2)}
    # given back later, it starts where it is told
    core.assign({("t", P): 1}, (), 2.0)
    assert delivered(core.handle(rec(1), 2.0)) == [(P, 1)]


def test_without_group_mode_every_partition_is_read() -> None:
    core = ConsumerCore(C, offset_reset="latest")
    core.subscribe("t", 0.0)
    assert delivered(core.handle(rec(0), 0.0)) == [(P, 0)]


def test_at_latest_a_stored_partition_with_no_start_does_not_hold_the_end_back() -> None:
    core = group_core("latest")
    core.assign({("t", P): None, ("t", P2): 2}, (), 0.0)
    core.handle(DirectHead(C, "t", P, 9), 0.0)  # latest: nothing stored is owed
    core.handle(DirectHead(C, "t", P2, 3), 0.0)  # from 2: offsets 2 and 3 are
    assert not core.caught_up()
    core.handle(rec(2, P2), 0.1)
    core.handle(rec(3, P2), 0.1)
    assert core.caught_up()
