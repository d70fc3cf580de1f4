"""A restarted producer settles the range it reserved but never saw acknowledged.

The gap statement's bytes are laid out here by hand and signed with PyNaCl,
independently of the codec; the cores run with real keys and signed frames.
"""

from __future__ import annotations

import hashlib
import struct

import pytest
from nacl.signing import SigningKey

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import Acked, Deliver, Publish
from dafka.producer._core import ProducerCore
from dafka.producer._recovery import Recovery
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire import signed
from dafka.wire.profiles import RFC46, SignedProfile, records_of
from dafka.wire.signed import BadSignature, WireError, WrongPartition
from tests.signing import CONSUMER, FORGER, PRODUCER, STORE, WIRE, P, ack, blob, decoded

S = STORE.node_id


def gap_bytes(topic: str, first: int, count: int, stamp: int, seed: bytes) -> bytes:
    """A gap statement from the table in docs/wire.md, by hand."""
    key = SigningKey(seed)
    public = bytes(key.verify_key)
    node = hashlib.blake2b(public, digest_size=16, person=b"dafka-node-id").digest()
    node = bytearray(node)
    node[6] = (node[6] & 0x0F) | 0x80
    node[8] = (node[8] & 0x3F) | 0x80
    body = (
        bytes([2, len(topic)])
        + topic.encode()
        + bytes(node)
        + struct.pack(">QIQ", first, count, stamp)
        + public
    )
    digest = hashlib.blake2b(body, digest_size=32).digest()
    return body + key.sign(b"dafka-batch-v1\0" + digest).signature


# ---------------------------------------------------------------- the wire


def test_gap_statement_bytes_match_the_table() -> None:
    made = signed.seal_gap(PRODUCER, "t", 7, 3, 1_700_000_000_000)
    assert made == gap_bytes("t", 7, 3, 1_700_000_000_000, bytes(range(32)))
    batch = signed.verify_batch(made, topic="t", partition=P)
    assert (batch.is_gap, batch.first_offset, batch.count, batch.records) == (True, 7, 3, ())
    assert batch.columns() == (None, [])
    header = signed.peek_batch(made)
    assert (header.is_gap, header.last_offset) == (True, 9)
    assert not signed.peek_batch(blob(0, 2)).is_gap


def test_gap_statement_covers_far_more_offsets_than_a_batch() -> None:
    made = signed.seal_gap(PRODUCER, "t", 0, signed.MAX_GAP_OFFSETS, 0)
    assert signed.verify_batch(made).count == signed.MAX_GAP_OFFSETS
    with pytest.raises(WireError):
        signed.seal_gap(PRODUCER, "t", 0, 0, 0)
    with pytest.raises(WireError):
        signed.seal_gap(PRODUCER, "t", 2**64 - 2, 3, 0)


def test_a_gap_statement_is_as_unforgeable_as_a_batch() -> None:
    forged = signed.seal_gap(FORGER, "t", 0, 5, 0)
    with pytest.raises(WrongPartition):
        signed.verify_batch(forged, partition=P)
    genuine = bytearray(signed.seal_gap(PRODUCER, "t", 0, 5, 0))
    genuine[-100] ^= 1  # inside the count/timestamp/key area
    with pytest.raises((BadSignature, WrongPartition)):
        signed.verify_batch(bytes(genuine))
    with pytest.raises(WireError):
        signed.verify_batch(bytes(genuine) + b"x")  # not exactly header + trailer


def test_records_of_a_stored_gap_is_empty() -> None:
    from dafka.storage.base import StoredBatch

    made = signed.seal_gap(PRODUCER, "t", 4, 6, 0)
    stored = StoredBatch("t", P, 4, 9, made, "signed")
    assert records_of(stored) == []
    assert records_of(stored, verify=True) == []


# ---------------------------------------------------------------- the producer


def signed_producer(**kw: object) -> ProducerCore:
    wire = SignedProfile(PRODUCER, max_batch_records=4, max_batch_bytes=4096)
    kw.setdefault("trusted_stores", [S])
    return ProducerCore(P, profile=wire, **kw)  # type: ignore[arg-type]


def to_producer(first: int, count: int, **kw: object) -> m.DirectRecord:
    frames = signed.encode(signed.DirectRecord.of(P, blob(first, count, **kw)))  # type: ignore[arg-type]
    return decoded(frames)  # type: ignore[return-value]


def fetches(effects: list) -> list[m.Fetch]:
    return [e.msg for e in effects if isinstance(e, Publish) and isinstance(e.msg, m.Fetch)]


def records(effects: list) -> list[m.Record | m.DirectRecord]:
    return [
        e.msg
        for e in effects
        if isinstance(e, Publish) and isinstance(e.msg, m.Record | m.DirectRecord)
    ]


def test_nothing_to_recover_when_everything_reserved_was_acknowledged() -> None:
    core = signed_producer(next_offsets={"t": 10}, acked_offsets={"t": 10})
    assert not core.recovering
    assert fetches(core.tick(0.0)) == []


def test_restart_fetches_its_range_adopts_what_stores_hold_and_closes_the_rest() -> None:
    core = signed_producer(next_offsets={"t": 10}, acked_offsets={"t": 4}, recovery_wait=2.0)
    assert core.recovering
    assert m.DirectRecord.__name__ and b"D" + P.encode() in core.subscriptions()
    # new records are numbered after the reserved range at once (signed never waits)
    first, _ = core.publish("t", [b"new"], 0.0)
    assert first == 10
    assert fetches(core.tick(0.0)) == [m.Fetch(P, P, "t", 4, 6)]
    assert fetches(core.tick(0.1)) == []  # not due yet
    # a store answers with what it holds: offsets 4..6
    assert core.handle(to_producer(4, 3), 0.2) == []
    assert fetches(core.tick(0.6)) == [m.Fetch(P, P, "t", 7, 3)]  # asks for the rest again
    out = core.tick(2.5)  # the deadline: close 7..9
    assert not core.recovering
    gaps = records(out)
    assert [(r.offset, r.count) for r in gaps] == [(7, 3)]
    batch = signed.verify_batch(gaps[0].content, topic="t", partition=P)
    assert batch.is_gap
    assert core.stats.recovered == 3 and core.stats.gap_offsets == 3
    # it serves the recovered batch, the gap and the new record, in order
    served = records(core.handle(m.Fetch(P, CONSUMER, "t", 4, 100), 3.0))
    assert [(r.offset, r.count) for r in served] == [(4, 3), (7, 3), (10, 1)]


def test_complete_answer_needs_no_gap_and_ends_recovery_at_once() -> None:
    core = signed_producer(next_offsets={"t": 6}, acked_offsets={"t": 2})
    core.tick(0.0)
    assert core.handle(to_producer(2, 2), 0.1) == []
    assert records(core.handle(to_producer(4, 2), 0.2)) == []
    assert not core.recovering
    assert core.stats.gap_offsets == 0 and core.stats.recovered == 4


def test_a_store_cannot_make_the_producer_adopt_what_it_never_signed() -> None:
    core = signed_producer(next_offsets={"t": 4}, acked_offsets={"t": 0}, recovery_wait=1.0)
    core.tick(0.0)
    forged = signed.encode(signed.DirectRecord.of(P, blob(0, 4, identity=FORGER)))
    msg = decoded(forged)
    # the forger's batch names its own partition: re-label it as ours
    assert isinstance(msg, m.DirectRecord)
    relabelled = m.DirectRecord(P, "t", P, 0, msg.content, 4)
    assert core.handle(relabelled, 0.1) == []
    assert core.stats.recovery_rejected == 1
    out = core.tick(1.5)
    assert [(r.offset, r.count) for r in records(out)] == [(0, 4)]
    assert signed.verify_batch(records(out)[0].content).is_gap


def test_offsets_acknowledged_during_recovery_are_never_declared_a_gap() -> None:
    core = signed_producer(next_offsets={"t": 8}, acked_offsets={"t": 0}, recovery_wait=1.0)
    core.tick(0.0)
    # the store acknowledges up to 5 but its answers to the FETCH are lost
    out = core.handle(ack(5, store=STORE), 0.5)
    assert out == [Acked("t", 5)]
    gaps = records(core.tick(1.5))
    assert [(r.offset, r.count) for r in gaps] == [(6, 2)]


def test_holes_between_recovered_batches_get_their_own_gap() -> None:
    core = signed_producer(next_offsets={"t": 10}, acked_offsets={"t": 0}, recovery_wait=1.0)
    core.tick(0.0)
    core.handle(to_producer(3, 2), 0.1)  # 0..2 and 5..9 are held by no store
    gaps = records(core.tick(1.5))
    assert [(r.offset, r.count) for r in gaps] == [(0, 3), (5, 5)]
    served = records(core.handle(m.Fetch(P, CONSUMER, "t", 0, 100), 2.0))
    assert [(r.offset, r.count) for r in served] == [(0, 3), (3, 2), (5, 5)]


def test_recovery_window_keeps_only_batches_inside_the_range() -> None:
    rec = Recovery("t", 4, 8)
    assert not rec.offer(0, 4, b"x")  # below: acknowledged already
    assert not rec.offer(6, 4, b"x")  # past what was reserved
    assert rec.offer(4, 2, b"a")
    assert not rec.offer(4, 2, b"a")  # once
    assert rec.offer(6, 2, b"b") and rec.complete()
    with pytest.raises(ValueError):
        Recovery("t", 5, 5)


def test_rfc46_holds_new_records_and_numbers_them_after_what_stores_hold() -> None:
    core = ProducerCore(P, next_offsets={"t": 10}, acked_offsets={"t": 4}, recovery_wait=1.0)
    assert core.holds_publishing
    assert fetches(core.tick(0.0)) == [m.Fetch(P, P, "t", 4, 6)]
    core.handle(m.DirectRecord(P, "t", P, 4, b"four"), 0.1)
    core.handle(m.DirectRecord(P, "t", P, 5, b"five"), 0.1)
    core.tick(1.5)
    assert not core.holds_publishing
    assert core.next_offset("t") == 6
    first, _ = core.publish("t", [b"six"], 2.0)
    assert first == 6
    served = records(core.handle(m.Fetch(P, CONSUMER, "t", 4, 10), 2.0))
    assert [(r.offset, r.content) for r in served] == [(4, b"four"), (5, b"five"), (6, b"six")]


def test_rfc46_never_renumbers_what_a_store_acknowledged() -> None:
    core = ProducerCore(P, next_offsets={"t": 10}, acked_offsets={"t": 0}, recovery_wait=1.0)
    core.tick(0.0)
    core.handle(m.Ack(P, "t", 6), 0.5)
    core.tick(1.5)
    assert core.next_offset("t") == 7
    assert RFC46.name == "rfc46"


# ---------------------------------------------------------------- stores and consumers


def test_store_keeps_a_gap_statement_and_serves_it_verbatim() -> None:
    storage = MemoryStorage()
    core = StoreCore(S, storage, profile=SignedProfile(STORE))
    first = decoded(signed.encode(signed.Record.of(blob(0, 2))))
    gap = decoded(signed.encode(signed.Record.of(signed.seal_gap(PRODUCER, "t", 2, 5, 0))))
    out = core.handle_batch([first, gap], 1.0)
    acks = [e.msg for e in out if isinstance(e.msg, m.Ack)]
    assert [a.offset for a in acks] == [6]
    served = [
        e.msg
        for e in core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 100)], 2.0) + core.tick(2.0)
        if isinstance(e.msg, m.DirectRecord)
    ]
    assert [(d.offset, d.count) for d in served] == [(0, 2), (2, 5)]


def test_consumer_passes_a_gap_without_delivering_and_goes_on() -> None:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    live = decoded(signed.encode(signed.Record.of(blob(0, 2))))
    gap = decoded(signed.encode(signed.Record.of(signed.seal_gap(PRODUCER, "t", 2, 3, 0))))
    after = decoded(signed.encode(signed.Record.of(blob(5, 1))))
    delivered = []
    # the gap and the record after it arrive first: buffered, then drained in order
    for msg in (gap, after, live):
        for effect in core.handle(msg, 1.0):
            if isinstance(effect, Deliver):
                delivered.extend((r.offset, r.value) for r in effect.records())
    assert delivered == [(0, b"value 0"), (1, b"value 1"), (5, b"value 5")]
    assert core.positions()[("t", P)] == 6
    assert core.stats.gap_offsets == 3
    assert core.stats.delivered == 3


def test_a_newer_gap_statement_supersedes_batches_never_acknowledged() -> None:
    """A store that was away holds batches of the old run where the producer, restarted,
    has closed the range: the store drops them for the gap, so every store agrees."""
    storage = MemoryStorage()
    core = StoreCore(S, storage, profile=SignedProfile(STORE))
    old = [
        decoded(signed.encode(signed.Record.of(blob(0, 2, timestamp_ms=1_000)))),
        decoded(signed.encode(signed.Record.of(blob(2, 2, timestamp_ms=1_000)))),
    ]
    core.handle_batch(old, 1.0)
    assert core.head("t", P) == 3
    gap = decoded(signed.encode(signed.Record.of(signed.seal_gap(PRODUCER, "t", 2, 4, 2_000))))
    out = core.handle_batch([gap], 2.0)
    assert [e.msg.offset for e in out if isinstance(e.msg, m.Ack)] == [5]
    assert core.head("t", P) == 5
    assert core.stats.superseded == 2 and core.stats.equivocations == 0
    served = storage.read("t", P, 2, 10)
    assert [(b.first_offset, b.last_offset) for b in served] == [(2, 5)]
    assert signed.peek_batch(served[0].blob).is_gap


def test_an_older_gap_statement_is_equivocation_and_the_batches_stay() -> None:
    storage = MemoryStorage()
    core = StoreCore(S, storage, profile=SignedProfile(STORE))
    core.handle_batch(
        [decoded(signed.encode(signed.Record.of(blob(0, 2, timestamp_ms=5_000))))], 1.0
    )
    gap = decoded(signed.encode(signed.Record.of(signed.seal_gap(PRODUCER, "t", 0, 3, 4_000))))
    core.handle_batch([gap], 2.0)
    assert core.head("t", P) == 1
    assert core.stats.superseded == 0 and core.stats.equivocations == 1


def test_recovery_slides_past_what_stores_hold_beyond_its_memory_budget() -> None:
    """An old state directory without an acknowledged bound starts recovery at 0: the
    producer must not hold a partition's whole history to learn where it ends."""
    rec = Recovery("t", 0, 100, budget=10)
    assert rec.offer(0, 10, b"a" * 6)
    assert rec.offer(10, 10, b"b" * 6)  # 12 bytes held: the oldest run is let go
    assert rec.start == 10 and rec.contiguous_end == 20
    assert rec.offer(20, 10, b"c" * 6, local=True)  # our own log's: always kept
    assert rec.offer(30, 10, b"d" * 6)
    result = rec.result()
    assert result.start == 20  # 0..19 are on a store: neither held nor a gap
    assert [f for f, _, _ in result.batches] == [20, 30]
    assert result.local == frozenset({20})
    assert result.holes() == [(40, 60)]


def test_a_restart_with_a_long_history_holds_only_its_budget() -> None:
    core = signed_producer(
        next_offsets={"t": 40}, acked_offsets={}, recovery_wait=1.0, recovery_budget=1
    )
    core.tick(0.0)
    for first in range(0, 40, 4):
        core.handle(to_producer(first, 4), 0.1)
    assert not core.recovering  # it all came back: nothing to close
    assert core.stats.gap_offsets == 0
    assert core.unacked_bytes < 2 * len(blob(0, 4))


# ------------------------------------- issue 33, point 4: a journal bound in doubt


def test_never_numbers_below_the_acknowledged_bound() -> None:
    """The offset journal lost its last record (rot read as a torn write): it says 49,
    the acked journal says 50 were acknowledged. Numbering goes on from 50."""
    core = signed_producer(next_offsets={"t": 49}, acked_offsets={"t": 50})
    assert not core.recovering
    assert core.next_offset("t") == 50
    first, _ = core.publish("t", [b"x"], now=0.0)
    assert first == 50


def test_an_acked_topic_missing_from_the_offset_journal_is_not_renumbered() -> None:
    core = signed_producer(next_offsets={}, acked_offsets={"t": 12})
    assert core.publish("t", [b"x"], now=0.0)[0] == 12


def test_a_bound_in_doubt_asks_the_stores_before_numbering() -> None:
    """The journal says 20 (acked 10) but its last record was unreadable and not clearly
    torn: records up to 27 were published and a store holds them. The producer holds new
    records, FETCHes past 20, and numbers from 28; the hole 10..15 gets a gap statement."""
    core = signed_producer(
        next_offsets={"t": 20}, acked_offsets={"t": 10}, recovery_wait=2.0, journal_in_doubt=True
    )
    assert core.recovering and core.holds_publishing
    core.stores_connected(True)
    out = core.tick(0.0)
    (fetch,) = fetches(out)
    assert (fetch.offset, fetch.partition) == (10, P)
    for first in (16, 20, 24):
        core.handle(to_producer(first, 4), 0.1)
    assert core.recovering  # a probe waits for its deadline: stores may hold more
    out = core.tick(2.5)
    assert not core.recovering and not core.holds_publishing
    assert core.next_offset("t") == 28
    gaps = [r for r in records(out) if signed.peek_batch(r.content).is_gap]
    assert [(g.offset, g.count) for g in gaps] == [(10, 6)]
    assert core.publish("t", [b"new"], now=3.0)[0] == 28


def test_a_probe_that_finds_nothing_numbers_from_the_journal_bound() -> None:
    core = signed_producer(next_offsets={"t": 20}, acked_offsets={"t": 20}, journal_in_doubt=True)
    assert core.holds_publishing
    core.stores_connected(True)
    core.tick(0.0)
    core.tick(10.0)
    assert not core.recovering
    assert core.publish("t", [b"x"], now=10.0)[0] == 20


def test_a_probe_asks_for_its_whole_wait_while_a_store_is_connected() -> None:
    """The fault suite's at-rest run (seed 2739): p2 restarted with its journal's last record
    rotten in both copies (bound 2090, records 2090..2099 published and stored) just as
    every store lost its disk. Its probe ran out of time asking nobody, it numbered from
    2090 again, and the stores, back, kept the earlier 2090..2099: equivocation, and none
    of its records was ever acknowledged. A probe's wait runs only while some store is
    subscribed to the producer; it starts again when one is, after none was."""
    core = signed_producer(
        next_offsets={"t": 20}, acked_offsets={"t": 20}, recovery_wait=2.0, journal_in_doubt=True
    )
    out = core.tick(0.0) + core.tick(10.0)  # no store connected: nobody to ask
    assert core.recovering and core.holds_publishing  # so it numbers nothing yet
    assert fetches(out) == []
    core.stores_connected(True)
    (fetch,) = fetches(core.tick(10.5))  # at once
    assert (fetch.offset, fetch.partition) == (20, P)
    core.stores_connected(False)  # the store stopped before it answered
    core.tick(13.0)
    assert core.recovering and core.holds_publishing
    core.stores_connected(True)  # back, and the wait starts again
    assert fetches(core.tick(20.0))
    core.handle(to_producer(20, 4), 20.2)  # the records the lost reservation covered
    core.tick(21.9)
    assert core.recovering
    core.tick(22.0)
    assert not core.recovering and not core.holds_publishing
    assert core.publish("t", [b"x"], now=22.0)[0] == 24


def test_a_probe_counts_the_stores_subscribed_to_the_producer_as_connected() -> None:
    """The shell tells the core: a store subscribes to the CONSUMER-HELLOs addressed to it
    on the producer's data socket, and its connection's end unsubscribes it."""
    from dafka.config import ProducerConfig
    from dafka.core.messages import Subscription
    from dafka.producer._io import _ProducerHandler
    from dafka.producer._state import ProducerState
    from dafka.wire.rfc46 import Command

    core = signed_producer(
        next_offsets={"t": 20}, acked_offsets={"t": 20}, recovery_wait=1.0, journal_in_doubt=True
    )
    handler = _ProducerHandler(
        ProducerState(ProducerConfig().validate(), None),  # type: ignore[arg-type]  # no budget
        core,
    )
    hello = Command.CONSUMER_HELLO.value
    handler.on_subscription(Subscription(True, hello, S.encode()), 0.0)
    assert fetches(core.tick(0.0))
    handler.on_subscription(Subscription(False, hello, S.encode()), 0.5)
    core.tick(5.0)
    assert core.recovering  # its store left before the wait was over
    handler.on_subscription(Subscription(True, hello, S.encode()), 5.0)
    core.tick(5.0)
    core.tick(6.0)
    assert not core.recovering


def test_a_probe_under_rfc46_numbers_past_what_stores_hold() -> None:
    core = ProducerCore(P, next_offsets={"t": 3}, acked_offsets={"t": 3}, journal_in_doubt=True)
    assert core.holds_publishing
    core.stores_connected(True)
    core.tick(0.0)
    for offset in (3, 4):
        core.handle(m.DirectRecord(P, "t", P, offset, b"v%d" % offset), 0.1)
    core.tick(10.0)
    assert not core.recovering
    assert core.next_offset("t") == 5


def test_a_state_directory_whose_journal_is_in_doubt_makes_a_probing_producer(
    tmp_path: object,
) -> None:
    from pathlib import Path

    from dafka.config import ProducerConfig
    from dafka.producer._setup import open_state

    state = Path(str(tmp_path)) / "state"
    config = ProducerConfig(state_dir=state).validate()
    opened = open_state(config, durable=False)
    assert opened.journal is not None and opened.state is not None
    opened.journal.reserve("t", 5)
    opened.journal.reserve("t", 9)
    opened.state.close()
    path = state / "offsets.journal"
    data = bytearray(path.read_bytes())
    half = 23  # one copy of the last record: 5 + 4 + 1 + 1 + 8 + 4 bytes
    data[-3] ^= 1
    data[-3 - half] ^= 1  # both copies rotted: not a torn write, and unreadable
    path.write_bytes(bytes(data))
    opened = open_state(config, durable=False)
    try:
        assert opened.journal_in_doubt
        assert opened.next_offsets == {"t": 5}
    finally:
        assert opened.state is not None
        opened.state.close()


def test_an_acked_bound_in_doubt_declares_nothing_a_gap() -> None:
    """acked.journal lost its last record (both copies rotted): 10..19 may have been
    acknowledged. A gap statement there could make stores drop acknowledged records, so
    nothing reserved is closed; numbering goes on from the reservation."""
    core = signed_producer(
        next_offsets={"t": 20}, acked_offsets={"t": 10}, recovery_wait=1.0, acked_in_doubt=True
    )
    assert not core.recovering
    out = core.tick(0.0) + core.tick(5.0)
    assert not [r for r in records(out) if signed.peek_batch(r.content).is_gap]
    assert core.publish("t", [b"x"], now=5.0)[0] == 20


def test_a_state_directory_whose_acked_journal_is_in_doubt_says_so(tmp_path: object) -> None:
    from pathlib import Path

    from dafka.config import ProducerConfig
    from dafka.producer._setup import ACKED_JOURNAL, open_state

    state = Path(str(tmp_path)) / "state"
    config = ProducerConfig(state_dir=state).validate()
    opened = open_state(config, durable=False)
    assert opened.acked_journal is not None and opened.state is not None
    opened.acked_journal.reserve("t", 5)
    opened.acked_journal.reserve("t", 9)
    opened.state.close()
    path = state / ACKED_JOURNAL
    data = bytearray(path.read_bytes())
    data[-3] ^= 1
    data[-3 - 23] ^= 1  # both copies of the last record
    path.write_bytes(bytes(data))
    opened = open_state(config, durable=False)
    try:
        assert opened.acked_in_doubt and not opened.journal_in_doubt
    finally:
        assert opened.state is not None
        opened.state.close()
