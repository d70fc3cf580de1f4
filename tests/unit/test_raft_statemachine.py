"""The KV state machine of the Raft peer: commands, queries, reqid dedup, snapshots;
and the peer's snapshot transfer format."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from dafka.errors import StorageError, WireError
from dafka.raft.codec import (
    ZERO_REQID,
    ClusterConfig,
    Entry,
    EntryType,
    Peer,
    SnapshotMeta,
)
from dafka.raft.peer import KvStateMachine, StateMachine, put_command
from dafka.raft.peer._peer import pack_snapshot, unpack_snapshot
from dafka.raft.peer._statemachine import (
    decode_value,
    del_command,
    dump_query,
    get_query,
)


def reqid(seconds: int, n: int) -> bytes:
    return seconds.to_bytes(4, "big") + n.to_bytes(8, "big")


def entry(index: int, data: bytes, rid: bytes = ZERO_REQID, kind=EntryType.STATE) -> Entry:
    return Entry(index, 1, kind, rid, data)


def get(sm: KvStateMachine, key: str) -> object:
    return decode_value(sm.query(get_query(key)))


def test_is_a_state_machine() -> None:
    assert isinstance(KvStateMachine(), StateMachine)


def test_put_get_del_dump() -> None:
    sm = KvStateMachine()
    assert sm.apply(entry(1, put_command("a", 1), reqid(100, 1))) is None
    assert sm.apply(entry(2, put_command("b", {"x": [1, 2]}), reqid(100, 2))) is None
    assert sm.apply(entry(3, put_command("a", "two"), reqid(100, 3))) == 1  # previous value
    assert get(sm, "a") == "two" and get(sm, "b") == {"x": [1, 2]} and get(sm, "c") is None
    assert sm.apply(entry(4, del_command("a"), reqid(100, 4))) == "two"
    assert decode_value(sm.query(dump_query())) == {"b": {"x": [1, 2]}}


def test_a_dump_is_packed_once_per_state_and_follows_every_change() -> None:
    """The same bytes object for each dump of one state (a peer sends it without a copy
    and counts it once: dafka.raft.peer._answer_budget); a put, a del or a restore makes anew."""
    sm = KvStateMachine()
    sm.apply(entry(1, put_command("a", 1), reqid(100, 1)))
    first = sm.query(dump_query())[0]
    assert sm.query(dump_query())[0] is first
    sm.apply(entry(2, b"\xc1", reqid(100, 2)))  # garbage: no change, the same answer
    assert sm.query(dump_query())[0] is first
    snap = sm.snapshot()
    sm.apply(entry(3, put_command("b", 2), reqid(100, 3)))
    assert decode_value(sm.query(dump_query())) == {"a": 1, "b": 2}
    sm.apply(entry(4, del_command("a"), reqid(100, 4)))
    assert decode_value(sm.query(dump_query())) == {"b": 2}
    sm.restore(snap)
    assert decode_value(sm.query(dump_query())) == {"a": 1}


def test_a_reqid_applies_once() -> None:
    sm = KvStateMachine()
    sm.apply(entry(1, put_command("x", 1), reqid(100, 1)))
    sm.apply(entry(2, put_command("x", 2), reqid(100, 2)))
    sm.apply(entry(3, put_command("x", 1), reqid(100, 1)))  # a resend appended again
    assert get(sm, "x") == 2 and sm.skipped == 1


def test_entries_without_reqid_are_never_deduplicated() -> None:
    sm = KvStateMachine()
    sm.apply(entry(1, put_command("x", 1)))
    sm.apply(entry(2, put_command("x", 2)))
    sm.apply(entry(3, put_command("x", 1)))
    assert get(sm, "x") == 1 and sm.skipped == 0


def test_config_checkpoint_and_garbage_entries_change_nothing() -> None:
    sm = KvStateMachine()
    sm.apply(entry(1, b"\xc0", kind=EntryType.CHECKPOINT))
    sm.apply(entry(2, b"[1]", kind=EntryType.CONFIG))
    for k, data in enumerate([b"", b"\xc1", b"\x93\x01\x02\x03", put_command("x", 1)[:-1]], 3):
        sm.apply(entry(k, data, reqid(100, k)))
    sm.apply(entry(9, b"\x92\xa3pop\xa1x", reqid(100, 9)))  # ["pop", "x"]: unknown op
    assert decode_value(sm.query(dump_query())) == {}


def test_queries_that_do_not_parse_raise() -> None:
    sm = KvStateMachine()
    for bad in ([], [b"nope"], [b"get"], [b"dump", b"extra"]):
        with pytest.raises(WireError):
            sm.query(bad)
    with pytest.raises(WireError):
        decode_value([b"\x01", b"\x02"])


def test_snapshot_restore_keeps_values_and_dedup_memory() -> None:
    sm = KvStateMachine()
    sm.apply(entry(1, put_command("x", 1), reqid(100, 1)))
    sm.apply(entry(2, put_command("y", 2), reqid(100, 2)))
    other = KvStateMachine()
    other.restore(sm.snapshot())
    assert other.kv == sm.kv and other.seen == sm.seen
    other.apply(entry(3, put_command("x", 9), reqid(100, 1)))  # seen before the snapshot
    assert get(other, "x") == 1
    with pytest.raises(WireError):
        other.restore(b"\x01")


def test_snapshot_reqids_travel_as_one_blob_and_the_pair_form_still_restores() -> None:
    sm = KvStateMachine()
    sm.apply(entry(1, put_command("x", 1), reqid(100, 1)))
    sm.apply(entry(2, put_command("y", 2), reqid(101, 2)))
    blob = msgpack.unpackb(sm.snapshot(), raw=False)["seen_ids"]
    assert blob == reqid(100, 1) + reqid(101, 2)
    older = msgpack.packb(  # what snapshots held before the blob
        {"kv": {"x": 1}, "seen": [[reqid(100, 1), 100], [reqid(101, 2), 101]], "newest": 101},
        use_bin_type=True,
    )
    other = KvStateMachine()
    other.restore(older)
    assert other.seen == sm.seen and other.newest == 101
    torn = msgpack.packb({"kv": {}, "seen_ids": reqid(100, 1)[:-1]}, use_bin_type=True)
    with pytest.raises(WireError):
        other.restore(torn)


def test_dedup_memory_is_bounded_by_reqid_time_the_same_way_everywhere() -> None:
    a, b = KvStateMachine(dedup_ttl=10), KvStateMachine(dedup_ttl=10)
    entries = [entry(k, put_command("x", k), reqid(100 + k, k)) for k in range(1, 30)]
    for e in entries:
        a.apply(e)
    b.restore(a.snapshot())
    assert a.seen == b.seen
    assert min(a.seen.values()) > a.newest - 10  # older ids were forgotten
    assert len(a.seen) == 10


ops = st.lists(
    st.tuples(
        st.sampled_from(["put", "del"]),
        st.sampled_from("abc"),
        st.integers(0, 5),
        st.integers(0, 6),  # reqid number, 0 = no reqid; repeats are resends
    ),
    max_size=40,
)


@given(ops, st.integers(0, 40))
def test_apply_once_semantics_and_snapshot_anywhere(items: list, cut: int) -> None:
    entries = []
    for k, (op, key, value, n) in enumerate(items, 1):
        data = put_command(key, value) if op == "put" else del_command(key)
        entries.append(entry(k, data, reqid(100, n) if n else ZERO_REQID))
    model: dict[str, int] = {}
    seen: set[bytes] = set()
    for e, (op, key, value, _) in zip(entries, items, strict=True):
        if e.reqid != ZERO_REQID:
            if e.reqid in seen:
                continue
            seen.add(e.reqid)
        if op == "put":
            model[key] = value
        else:
            model.pop(key, None)
    whole = KvStateMachine()
    for e in entries:
        whole.apply(e)
    assert whole.kv == model
    first = KvStateMachine()
    for e in entries[:cut]:
        first.apply(e)
    second = KvStateMachine()
    second.restore(first.snapshot())
    for e in entries[cut:]:
        second.apply(e)
    assert second.kv == model


def test_snapshot_transfer_format_round_trips_and_detects_damage() -> None:
    config = ClusterConfig((Peer("a", "tcp://127.0.0.1:1"), Peer("b", "tcp://127.0.0.1:2")))
    meta = SnapshotMeta(42, 7, config)
    blob = pack_snapshot(meta, b"state bytes")
    assert unpack_snapshot(blob) == (meta, b"state bytes")
    assert unpack_snapshot(pack_snapshot(meta, b"")) == (meta, b"")
    for damaged in (blob[:-1], blob[:10], b"x" + blob[1:], blob[:20] + b"?" + blob[21:]):
        with pytest.raises(StorageError):
            unpack_snapshot(damaged)


def _model_seen(
    stamps: list[tuple[int, int]], ttls: tuple[int, int], cut: int
) -> list[list[bytes]]:
    """The remembered reqids after each entry, as the rule says, checked after every reqid
    applied: drop from the oldest while it is ``ttl`` or more seconds older than the
    newest (``ttls[1]`` from entry ``cut`` on)."""
    after: list[list[bytes]] = []
    seen: dict[bytes, int] = {}
    newest = 0
    for k, (seconds, n) in enumerate(stamps):
        ttl = ttls[k >= cut]
        rid = reqid(seconds, n)
        if rid not in seen:
            seen[rid] = seconds
            newest = max(newest, seconds)
            while seen and next(iter(seen.values())) <= newest - ttl:
                del seen[next(iter(seen))]
        after.append(list(seen))
    return after


@given(
    st.lists(st.tuples(st.integers(100, 130), st.integers(0, 3)), max_size=60),
    st.tuples(st.integers(1, 12), st.integers(1, 12)),
    st.integers(0, 60),
)
@example([(100, 0), (110, 0), (105, 1)], (20, 5), 2)  # restored front out of the new window
def test_dedup_window_checks_the_front_as_after_every_reqid(
    stamps: list[tuple[int, int]], ttls: tuple[int, int], cut: int
) -> None:
    """apply forgets out-of-window reqids only when the window or the front can have
    moved; what it remembers (and so skips) is the same as checking after every reqid,
    across out-of-order stamps, resends, and a restore midway into a machine with
    another window (whose front may then be out of it)."""
    sm = KvStateMachine(dedup_ttl=ttls[0])
    after = []
    for k, (seconds, n) in enumerate(stamps):
        if k == cut:
            restored = KvStateMachine(dedup_ttl=ttls[1])
            restored.restore(sm.snapshot())
            sm = restored
        sm.apply(entry(k + 1, put_command("x", k), reqid(seconds, n)))
        after.append(list(sm.seen))
    assert after == _model_seen(stamps, ttls, cut)
