"""Issue 33, point 8: a producer's runs are ordered by a counter in its state directory,
signed into its gap statements (format 4), never by its clock; and every store meets
every gap statement, also one that was away while the producer recovered.

The cores run with real keys and signed frames; messages go between them by hand."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from pathlib import Path

import pytest
from nacl.signing import SigningKey

from dafka.core import messages as m
from dafka.core.effects import Publish
from dafka.errors import ConfigError
from dafka.producer._core import ProducerCore
from dafka.storage.memory import MemoryStorage
from dafka.storage.state_dir import StateDir
from dafka.store import StoreCore
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed import WireError
from tests.signing import PRODUCER, STORE, P

S = STORE.node_id


def gap_run_bytes(topic: str, first: int, count: int, stamp: int, run: int) -> bytes:
    """A format-4 gap statement laid out from docs/wire.md §12 by hand."""
    key = SigningKey(bytes(range(32)))
    public = bytes(key.verify_key)
    node = bytearray(hashlib.blake2b(public, digest_size=16, person=b"dafka-node-id").digest())
    node[6] = (node[6] & 0x0F) | 0x80
    node[8] = (node[8] & 0x3F) | 0x80
    body = (
        bytes([4, len(topic)])
        + topic.encode()
        + bytes(node)
        + struct.pack(">QIQQ", first, count, stamp, run)
        + public
    )
    digest = hashlib.blake2b(body, digest_size=32).digest()
    return body + key.sign(b"dafka-batch-v1\0" + digest).signature


# ---------------------------------------------------------------- the wire


def test_a_gap_statement_with_its_run_matches_the_table() -> None:
    made = signed.seal_gap(PRODUCER, "t", 7, 3, 1_700_000_000_000, run=5)
    assert made == gap_run_bytes("t", 7, 3, 1_700_000_000_000, 5)
    batch = signed.verify_batch(made, topic="t", partition=P)
    assert (batch.is_gap, batch.run, batch.first_offset, batch.count) == (True, 5, 7, 3)
    assert batch.records == () and batch.columns() == (None, [])
    header = signed.peek_batch(made)
    assert (header.is_gap, header.run, header.last_offset) == (True, 5, 9)
    old = signed.seal_gap(PRODUCER, "t", 7, 3, 0)  # format 2 is still made and read
    assert old[0] == 2 and signed.verify_batch(old).run is None
    assert signed.peek_batch(signed.encode_batch(PRODUCER, "t", 0, [(None, b"v")], 0)).run is None


def test_a_gap_statement_with_its_run_is_checked_like_any() -> None:
    made = signed.seal_gap(PRODUCER, "t", 0, 5, 0, run=2)
    for cut in (made[:-1], made + b"x"):
        with pytest.raises(WireError):
            signed.verify_batch(cut)
    tampered = bytearray(made)
    tampered[-100] ^= 1  # in the run
    with pytest.raises(WireError):
        signed.verify_batch(bytes(tampered))


def test_each_start_of_a_state_directory_has_a_higher_run(tmp_path: Path) -> None:
    with StateDir(tmp_path / "s") as state:
        assert state.next_run() == 1
    with StateDir(tmp_path / "s") as state:
        assert state.next_run() == 2
    (tmp_path / "s" / "run").write_text("garbage\n")
    with StateDir(tmp_path / "s") as state, pytest.raises(ConfigError, match="run counter"):
        state.next_run()


# ---------------------------------------------------------------- a producer and a store


def producer(run: int, clock: int, **kw: object) -> ProducerCore:
    """``clock``: the wall clock (ms) its HEADs are stamped with; its gap statements are
    stamped with what `tick` is given (``wall_ms``), the same in these tests."""
    wire = SignedProfile(PRODUCER, max_batch_records=8, clock_ms=lambda: clock)
    return ProducerCore(P, profile=wire, trusted_stores=[S], run=run, **kw)  # type: ignore[arg-type]


def sent(effects: Iterable[object]) -> list[m.Message]:
    return [e.msg for e in effects if isinstance(e, Publish)]


def pump(prod: ProducerCore, store: StoreCore, msgs: list[m.Message], now: float) -> list[m.Ack]:
    """Deliver ``msgs`` (the producer's) to the store, and the store's FETCHes and ACKs to
    the producer and its answers back, until nothing moves; the ACKs the store sent."""
    acks: list[m.Ack] = []
    for _ in range(20):
        if not msgs:
            break
        out = sent(store.handle_batch(msgs, now) + store.tick(now))
        acks += [a for a in out if isinstance(a, m.Ack)]
        msgs = []
        for msg in out:
            if isinstance(msg, m.Fetch | m.Ack):
                msgs += sent(prod.handle(msg, now))
        msgs += sent(prod.tick(now))
    return acks


def test_a_producer_whose_clock_stepped_back_still_closes_its_earlier_run() -> None:
    """Run 1 published 0..3 at 5,000 ms; the store got 0..1 only; nothing was acknowledged.
    Run 2's clock reads 4,000: its gap statement 0..3 is 'older' than the batches it
    replaces. Before, the store took it for equivocation, kept 0..1, and then FETCHed
    2..3 for ever, answered with the same gap statement: the partition never moved again.
    """
    storage = MemoryStorage()
    store = StoreCore(S, storage, profile=SignedProfile(STORE))
    first = producer(1, 5_000)
    _, pubs = first.publish("t", [b"a", b"b"], 0.0, timestamp_ms=5_000)
    first.publish("t", [b"c", b"d"], 0.0, timestamp_ms=5_000)  # lost on the way
    store.handle_batch(sent(pubs), 0.0)
    assert store.head("t", P) == 1
    second = producer(2, 4_000, next_offsets={"t": 4}, acked_offsets={}, recovery_wait=1.0)
    second.tick(0.0)  # its recovery FETCH finds no store (the store is away)
    closing = sent(second.tick(2.0, wall_ms=4_000))
    assert [(r.offset, r.count) for r in closing if isinstance(r, m.Record)] == [(0, 4)]
    _, new = second.publish("t", [b"new"], 2.0, timestamp_ms=4_000)
    acks = pump(second, store, closing + sent(new), 3.0)
    assert store.stats.equivocations == 0 and store.stats.superseded == 2
    assert store.head("t", P) == 4
    assert max(a.offset for a in acks) == 4  # stored and acknowledged again
    held = storage.read("t", P, 0, 10)
    assert [(b.first_offset, b.last_offset) for b in held] == [(0, 3), (4, 4)]
    assert signed.peek_batch(held[0].blob).run == 2


def test_a_gap_statement_of_an_earlier_run_replaces_nothing() -> None:
    storage = MemoryStorage()
    store = StoreCore(S, storage, profile=SignedProfile(STORE))
    later = signed.seal_gap(PRODUCER, "t", 0, 4, 1_000, run=3)
    store.handle_batch([m.Record("t", P, 0, later, 4)], 0.0)
    earlier = signed.seal_gap(PRODUCER, "t", 0, 4, 9_000, run=2)
    store.handle_batch([m.Record("t", P, 0, earlier, 4)], 1.0)
    assert store.stats.superseded == 0 and store.stats.equivocations == 1
    assert storage.read("t", P, 0, 1)[0].blob == later


def test_a_store_that_was_away_meets_the_gap_statement_of_a_recovery() -> None:
    """Run 1 published 0..4 and the store holds it all, unacknowledged (the producer died
    first). The store was away while run 2 recovered and closed 0..4 with a gap statement.
    Back, it holds the whole range and the HEAD says 4: nothing to FETCH. Before, it
    kept run 1's records for ever (a consumer reading through it got 5 records where one
    reading through any other store got none), and its cumulative ACK covered a gap
    statement it did not hold. Run 2 publishes its gap statements again before each HEAD."""
    storage = MemoryStorage()
    store = StoreCore(S, storage, profile=SignedProfile(STORE))
    first = producer(1, 5_000)
    _, pubs = first.publish("t", [b"%d" % i for i in range(5)], 0.0, timestamp_ms=5_000)
    store.handle_batch(sent(pubs), 0.0)
    assert store.head("t", P) == 4
    second = producer(2, 6_000, next_offsets={"t": 5}, acked_offsets={}, recovery_wait=1.0)
    second.tick(0.0)
    second.tick(2.0, wall_ms=6_000)  # the gap statement 0..4 goes out; the store is away
    acks = pump(second, store, sent(second.tick(10.0)), 10.0)  # back: a HEAD is due
    held = storage.read("t", P, 0, 10)
    assert [(b.first_offset, b.last_offset) for b in held] == [(0, 4)]
    assert signed.peek_batch(held[0].blob).is_gap
    assert store.stats.superseded == 5
    assert acks and max(a.offset for a in acks) == 4
    # stores that hold it already take it as a replay: nothing changes there
    again = sent(second.tick(20.0))
    assert any(isinstance(r, m.Record) for r in again)
    store.handle_batch(again, 20.0)
    assert store.stats.superseded == 5 and store.stats.equivocations == 0


def test_only_a_run_that_closed_a_range_publishes_its_gap_statements_again() -> None:
    core = producer(1, 0)
    core.publish("t", [b"x"], 0.0)
    assert not [r for r in sent(core.tick(5.0)) if isinstance(r, m.Record)]


def test_each_start_of_a_producer_gets_a_higher_run(tmp_path: Path) -> None:
    from dafka.config import ProducerConfig
    from dafka.producer._setup import open_state

    config = ProducerConfig(state_dir=tmp_path / "p").validate()
    runs = []
    for _ in range(3):
        opened = open_state(config, durable=False)
        assert opened.state is not None
        runs.append(opened.run)
        opened.state.close()
    assert runs == [1, 2, 3]


def test_a_consumer_passes_a_gap_statement_with_its_run() -> None:
    from dafka.consumer._core import ConsumerCore
    from dafka.core.effects import Deliver
    from tests.signing import CONSUMER, WIRE, blob, decoded

    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    live = decoded(signed.encode(signed.Record.of(blob(0, 2))))
    gap = decoded(signed.encode(signed.Record.of(signed.seal_gap(PRODUCER, "t", 2, 3, 0, run=7))))
    after = decoded(signed.encode(signed.Record.of(blob(5, 1))))
    delivered = []
    for msg in (gap, after, live):
        for effect in core.handle(msg, 1.0):
            if isinstance(effect, Deliver):
                delivered.extend(r.offset for r in effect.records())
    assert delivered == [0, 1, 5]
    assert core.stats.gap_offsets == 3


@pytest.mark.parametrize("lmdb_storage", [False, True], ids=["memory", "lmdb"])
def test_a_store_that_took_the_new_run_first_still_meets_the_gap_statement(
    tmp_path: Path, lmdb_storage: bool
) -> None:
    """Run 1 published 0..4 and the store holds it, unacknowledged. Run 2 closed 0..4
    with a gap statement the store missed, and published 5..7, which the store took (they
    continue what it holds). When the gap statement reaches it, before, it was an
    equivocation: the store kept run 1's records for ever below run 2's. Now the store
    replaces exactly 0..4 by the statement in one transaction and keeps 5..7."""
    from dafka.storage.lmdb_store import LmdbStorage

    storage = LmdbStorage(tmp_path / "s") if lmdb_storage else MemoryStorage()
    store = StoreCore(S, storage, profile=SignedProfile(STORE))
    first = producer(1, 5_000)
    _, pubs = first.publish("t", [b"%d" % i for i in range(5)], 0.0, timestamp_ms=5_000)
    store.handle_batch(sent(pubs), 0.0)
    second = producer(2, 6_000, next_offsets={"t": 5}, acked_offsets={}, recovery_wait=1.0)
    second.tick(0.0)
    closing = [r for r in sent(second.tick(2.0, wall_ms=6_000)) if isinstance(r, m.Record)]
    assert closing and signed.peek_batch(closing[0].content).is_gap  # the store misses it
    _, pubs = second.publish("t", [b"n%d" % i for i in range(3)], 3.0)
    store.handle_batch(sent(pubs), 3.0)
    assert store.head("t", P) == 7
    out = sent(store.handle_batch(closing, 4.0))
    held = storage.read("t", P, 0, 10)
    assert [(b.first_offset, b.last_offset) for b in held] == [(0, 4), (5, 7)]
    assert signed.peek_batch(held[0].blob).is_gap
    assert store.stats.equivocations == 0 and store.stats.superseded == 5
    assert store.head("t", P) == 7
    assert any(isinstance(a, m.Ack) and a.offset == 7 for a in out)
    storage.close()


@pytest.mark.parametrize("lmdb_storage", [False, True], ids=["memory", "lmdb"])
def test_a_rewrite_that_does_not_line_up_with_the_batches_changes_nothing(
    tmp_path: Path, lmdb_storage: bool
) -> None:
    from dafka.errors import StorageError
    from dafka.storage.base import StoredBatch
    from dafka.storage.lmdb_store import LmdbStorage

    storage = LmdbStorage(tmp_path / "s") if lmdb_storage else MemoryStorage()
    storage.append(
        [StoredBatch("t", P, a, b, b"%d" % a, "signed") for a, b in ((0, 2), (3, 4), (5, 9))]
    )
    for first, last in ((1, 4), (0, 3), (3, 6), (0, 12), (10, 11)):
        with pytest.raises(StorageError):
            storage.rewrite(StoredBatch("t", P, first, last, b"gap", "signed"))
    held = storage.read("t", P, 0, 10)
    assert [(b.first_offset, b.last_offset, b.blob) for b in held] == [
        (0, 2, b"0"),
        (3, 4, b"3"),
        (5, 9, b"5"),
    ]
    assert storage.rewrite(StoredBatch("t", P, 0, 4, b"gap", "signed")) == 2
    held = storage.read("t", P, 0, 10)
    assert [(b.first_offset, b.last_offset, b.blob) for b in held] == [(0, 4, b"gap"), (5, 9, b"5")]
    assert storage.partitions("t") == [(P, 9)]
    storage.close()


def test_a_rotten_or_lost_run_counter_is_refused_not_counted_lower(tmp_path: Path) -> None:
    """Attack (a red-team pass): the run file held 4; a flipped digit ('1') was taken
    silently and the next start ran as 2, below runs already used, and a deleted file
    restarted at 1. The counter carries its checksum, and a missing file beside journals
    is damage too."""
    with StateDir(tmp_path / "s") as state:
        for _ in range(4):
            state.next_run()
        state.offset_journal().reserve("t", 10)
    run = tmp_path / "s" / "run"
    good = run.read_text()
    assert good.startswith("4 ")
    run.write_text("1" + good[1:])  # one digit flipped
    with StateDir(tmp_path / "s") as state, pytest.raises(ConfigError, match="run counter"):
        state.next_run()
    run.write_text("1\n")  # a bare lower number
    with StateDir(tmp_path / "s") as state, pytest.raises(ConfigError, match="run counter"):
        state.next_run()
    run.unlink()
    with StateDir(tmp_path / "s") as state, pytest.raises(ConfigError, match="missing"):
        state.next_run()
    run.write_text(good)
    with StateDir(tmp_path / "s") as state:
        assert state.next_run() == 5


def test_a_directory_of_an_earlier_version_or_with_an_empty_journal_starts_at_run_1(
    tmp_path: Path,
) -> None:
    """Only a journal begun by a producer that keeps a run file witnesses a lost one: an
    empty journal (the Spark sink opens one before its producer) or one of an earlier
    version (records of format 0xd4, no run file yet) starts at run 1."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "offsets.journal").write_bytes(b"")
    with StateDir(tmp_path / "a") as state:
        assert state.next_run() == 1
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "offsets.journal").write_bytes(b"\xd4\x00\x00\x00\x0e" + b"\x00" * 18)
    with StateDir(tmp_path / "b") as state:
        assert state.next_run() == 1
