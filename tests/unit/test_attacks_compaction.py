"""Compacted topics on a store (issue 36, points 4 and 5): the planner, the background
job and the ingest rule, against the attacks the issue names.

* a store that drops a NEWER record of a key: the planner never drops the newest record
  of a key (nor a fresh tombstone), and a compacted copy that did is noticed;
* a store that keeps a record compaction should have dropped: two stores holding the
  same batches write byte-identical compacted blobs (convergence);
* a keyless or format-3 batch on a compacted topic is refused at ingest (not stored,
  not acknowledged, counted);
* a tombstone whose producer stamp is far in the past or future neither makes its key
  vanish early nor keeps it for ever: its age is the store's own measure.

Pure: store cores and the compactor over real storage, fake time, no sockets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.memory import MemoryStorage
from dafka.storage.retention import HeldLedger
from dafka.store import StoreCore
from dafka.store._compaction import (
    Compactor,
    CompactSettings,
    RecordMeta,
    _records_at,
    compact_settings,
    compacted_blob,
    index_records,
    plan_drops,
    record_metas,
    refusal,
    unjustified,
)
from dafka.store._state import StoreStats
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed_rich import Codec, RichRecord, compact_rich, seal_rich
from tests.signing import PRODUCER, STORE, P, blob, from_blob, sent

S = STORE.node_id
T0 = 1_800_000_000_000
DAY = 86_400_000
KEEP = 60_000  # delete_retention_ms in these tests


def rich(
    first: int,
    records: list[tuple[bytes | None, bytes | None]],
    *,
    ts: int = T0,
    codec: Codec = Codec.NONE,
    topic: str = "t",
) -> bytes:
    recs = [RichRecord(k, v, ts) for k, v in records]
    return seal_rich(PRODUCER, topic.encode(), first, recs, ts, codec)


def metas(data: bytes) -> list[RecordMeta]:
    return record_metas(signed.verify_batch(data))


def never(_: RecordMeta) -> bool:
    return False


def always(_: RecordMeta) -> bool:
    return True


# -- the planner -------------------------------------------------------------------------


def test_the_planner_drops_every_record_with_a_later_one_of_its_key_and_keeps_the_newest() -> None:
    b0 = rich(0, [(b"a", b"1"), (b"b", b"1"), (b"a", b"2")])
    b1 = rich(3, [(b"c", b"1"), (b"a", b"3"), (b"b", None)])
    newest: dict[bytes, RecordMeta] = {}
    for b in (b0, b1):
        index_records(newest, metas(b))
    assert plan_drops(metas(b0), newest, never) == {0, 1, 2}
    # c and a are the newest of their key; b's tombstone is fresh
    assert plan_drops(metas(b1), newest, never) == frozenset()
    # once expired, the tombstone goes (everything older of b went already)
    assert plan_drops(metas(b1), newest, always) == {5}


def test_the_newest_record_of_a_key_is_never_dropped_whatever_the_batches() -> None:
    """Random partitions: after planning, every key's newest record is kept unless it is
    an expired tombstone, and every other record of a key is dropped."""
    import random

    rng = random.Random(7)
    for _ in range(40):
        batches, offset = [], 0
        for _ in range(rng.randint(1, 5)):
            n = rng.randint(1, 6)
            recs = [
                (rng.choice([b"k0", b"k1", b"k2", b"k3"]), rng.choice([b"v", None, b"w"]))
                for _ in range(n)
            ]
            batches.append(rich(offset, recs))
            offset += n
        newest: dict[bytes, RecordMeta] = {}
        for b in batches:
            index_records(newest, metas(b))
        kept: set[int] = set()
        for b in batches:
            ms = metas(b)
            drop = plan_drops(ms, newest, never)
            kept |= {r.offset for r in ms} - drop
        assert kept == {r.offset for r in newest.values()}


def test_records_without_a_key_and_unknown_keys_are_kept() -> None:
    ms = [RecordMeta(0, None, False, T0), RecordMeta(1, b"x", False, T0)]
    assert plan_drops(ms, {}, always) == frozenset()


def test_a_compacted_copy_that_dropped_a_newest_record_is_noticed() -> None:
    """A store that drops a newer record of a key: its compacted form still verifies (the
    signature cannot tell), but the key of the dropped record is in the clear, and no
    later record of it exists: ``unjustified`` names it."""
    b0 = rich(0, [(b"a", b"1"), (b"b", b"1")])
    lying = compact_rich(b0, _records_at(b0), 0, 2, {1})  # drops b's only record
    ms = metas(lying)
    newest: dict[bytes, RecordMeta] = {}
    index_records(newest, ms)
    assert unjustified(ms, newest) == [1]
    honest = metas(rich(0, [(b"a", b"1"), (b"a", b"2")]))
    index_records(newest, honest)
    assert unjustified(honest, newest) == []


def test_compacting_a_compacted_form_gives_the_bytes_of_compacting_the_full_one() -> None:
    b0 = rich(0, [(b"a", b"x" * 100), (b"b", b"y" * 100), (b"c", b"z" * 100)])
    batch = signed.verify_batch(b0)
    once = compacted_blob(batch, {0})
    assert once is not None
    twice = compacted_blob(signed.verify_batch(once), {0, 1})
    direct = compacted_blob(batch, {0, 1})
    assert twice == direct and direct is not None
    signed.verify_batch(direct)  # still the producer's signature


def test_a_compressed_batch_is_compacted_only_once_all_of_it_is_dropped() -> None:
    tiny = signed.verify_batch(rich(0, [(b"a", b"1"), (b"a", b"2")]))
    assert compacted_blob(tiny, {0}) is not None  # uncompressed: whatever it costs
    packed = signed.verify_batch(rich(0, [(b"a", b"x" * 2000)] * 8, codec=Codec.ZSTD))
    assert compacted_blob(packed, {0}) is None  # the rest, uncompressed, would be larger
    assert compacted_blob(packed, set(range(8))) is not None


def test_compact_settings_follow_the_cleanup_policy() -> None:
    assert compact_settings({"cleanup_policy": "delete"}) is None
    assert compact_settings({}) is None
    assert compact_settings({"cleanup_policy": "compact", "delete_retention_ms": 5}) == (
        CompactSettings(5, False)
    )
    assert compact_settings({"cleanup_policy": "compact,delete"}) == CompactSettings(DAY, True)


# -- the ingest rule ---------------------------------------------------------------------


def _core(storage: object | None = None) -> StoreCore:
    core = StoreCore(S, storage or MemoryStorage(), profile=SignedProfile(STORE))  # type: ignore[arg-type]
    core.set_policy({"t": {"cleanup_policy": "compact", "delete_retention_ms": KEEP}})
    return core


def _acks(effects: list) -> int:
    return sum(1 for msg in sent(effects) if type(msg).__name__ == "Ack")


def test_a_keyless_or_format_3_batch_on_a_compacted_topic_is_refused() -> None:
    core = _core()
    for data in (
        blob(0, 2, keys=[b"a", b"b"]),  # format 3, with keys
        rich(0, [(b"a", b"1"), (None, b"2")]),  # a record without a key
    ):
        effects = core.handle_batch([from_blob(data)], 0.0)
        assert _acks(effects) == 0
        assert core.storage.heads() == {}
    assert core.stats.compact_refused == 2
    assert refusal(blob(0, 1, keys=[b"a"])) == "format"
    good = rich(0, [(b"a", b"1"), (b"b", None)])
    assert refusal(good) is None
    effects = core.handle_batch([from_blob(good)], 0.0)
    assert core.storage.heads() == {("t", P): (1, 0)} and _acks(effects) == 1


def test_a_decompression_bomb_on_a_compacted_topic_is_refused_within_the_bound() -> None:
    data = rich(0, [(b"a", b"\0" * 200_000)], codec=Codec.ZSTD)
    assert refusal(data, max_raw=100_000) == "unreadable"
    assert refusal(data) is None


def test_a_compacted_form_of_a_held_batch_is_a_duplicate_not_an_equivocation() -> None:
    core = _core()
    full = rich(0, [(b"a", b"x" * 100), (b"a", b"y" * 100)])
    core.handle_batch([from_blob(full)], 0.0)
    smaller = compacted_blob(signed.verify_batch(full), {0})
    assert smaller is not None
    core.handle_batch([from_blob(smaller)], 1.0)
    assert core.stats.equivocations == 0 and core.stats.duplicates == 1


# -- the background job ------------------------------------------------------------------


def _stored(storage: object, first: int, data: bytes) -> None:
    h = signed.peek_batch(data)
    storage.append([StoredBatch("t", P, first, h.last_offset, data, "signed")])  # type: ignore[attr-defined]


def _run(compactor: Compactor, seconds: float = 30.0, start: float = 0.0) -> None:
    now = start
    while now < start + seconds:
        compactor.step(now, T0)
        now += 0.1


def _batches(storage: object) -> list[bytes]:
    return [b.blob for b in storage.read("t", P, 0, 1000)]  # type: ignore[attr-defined]


PARTITION = [
    rich(0, [(b"a", b"A" * 300), (b"b", b"B" * 300), (b"c", b"C" * 300)]),
    rich(3, [(b"a", b"a" * 300), (b"d", b"D" * 300)]),
    rich(5, [(b"b", None), (b"c", b"c" * 300)]),
]


def _compactor(storage: object, keep: int = KEEP, **kw: object) -> Compactor:
    return Compactor(
        storage,  # type: ignore[arg-type]
        {"t": CompactSettings(keep)},
        StoreStats(),
        rate=10_000_000,
        min_pass=5.0,
        **kw,  # type: ignore[arg-type]
    )


def test_the_job_rewrites_each_batch_in_its_compacted_form_and_returns_space(
    tmp_path: Path,
) -> None:
    storage = LmdbStorage(tmp_path / "db", map_size=1 << 24, node_id=S)
    for data in PARTITION:
        _stored(storage, signed.peek_batch(data).first_offset, data)
    before = sum(map(len, _batches(storage)))
    job = _compactor(storage)
    _run(job, 3.0)
    out = _batches(storage)
    assert job.stats.compaction_batches == 1 and job.stats.compaction_passes >= 1
    assert sum(map(len, out)) == before - job.stats.compaction_reclaimed_bytes < before
    kept: dict[bytes, bytes | None] = {}
    for data in out:
        batch = signed.verify_batch(data)  # every batch still verifies
        recs = signed.open_batch(batch)
        kept.update(zip(recs.keys, recs.values, strict=True))  # type: ignore[arg-type]
    # the newest value of every key; b's tombstone is fresh, so it stays
    assert kept == {b"a": b"a" * 300, b"b": None, b"c": b"c" * 300, b"d": b"D" * 300}
    assert storage.heads()[("t", P)] == (6, 0)
    storage.close()


def test_two_stores_with_the_same_batches_write_byte_identical_compacted_blobs(
    tmp_path: Path,
) -> None:
    """A store that keeps a record compaction should have dropped differs from this."""
    a, b = MemoryStorage(), LmdbStorage(tmp_path / "b", map_size=1 << 24, node_id=S)
    for data in PARTITION:
        _stored(a, signed.peek_batch(data).first_offset, data)
    # b got the first batch compacted by another store already, the rest in full
    _stored(b, 0, compacted_blob(signed.verify_batch(PARTITION[0]), {0}) or b"")
    for data in PARTITION[1:]:
        _stored(b, signed.peek_batch(data).first_offset, data)
    ja, jb = _compactor(a), _compactor(b)
    _run(ja, 3.0)
    _run(jb, 3.0)
    assert _batches(a) == _batches(b)
    assert _batches(a) != PARTITION
    b.close()


def test_a_fresh_tombstone_stays_and_an_old_one_goes_with_its_key() -> None:
    storage = MemoryStorage()
    for data in PARTITION:
        _stored(storage, signed.peek_batch(data).first_offset, data)
    held = HeldLedger()
    job = _compactor(storage, held=lambda: held)
    held.advance(0, T0)
    held.observe(("t", P), 6, T0)
    _run(job, 3.0)
    assert job.stats.compaction_batches == 1  # the first batch only: the tombstone is fresh
    held.advance(KEEP + 10_000, T0 + KEEP + 10_000)
    job.step(10.0, T0 + KEEP + 10_000)
    _run(job, 3.0, start=10.0)
    wall = T0 + KEEP + 10_000
    assert held.ages(("t", P), [signed_info(5)], wall)[0] > KEEP
    last = signed.open_batch(signed.verify_batch(_batches(storage)[-1]))
    assert last.keys == [b"c"] and [d.key for d in last.dropped] == [b"b"]


def signed_info(offset: int) -> object:
    from dafka.storage.retention import BatchInfo

    return BatchInfo(offset, offset, 0, T0)


@pytest.mark.parametrize("stamp", [T0 - 365 * DAY, T0 + 365 * DAY])
def test_a_tombstone_stamped_far_off_neither_vanishes_early_nor_stays_for_ever(
    stamp: int,
) -> None:
    """The producer stamps its tombstone a year in the past (to make the key vanish at
    once) or in the future (to keep it for ever): its age is the store's own measure."""
    storage = MemoryStorage()
    _stored(storage, 0, rich(0, [(b"k", b"v" * 300)]))
    _stored(storage, 1, rich(1, [(b"k", None)], ts=stamp))
    held = HeldLedger()
    job = _compactor(storage, held=lambda: held)
    held.advance(0, T0)
    held.observe(("t", P), 1, T0)
    wall = T0
    job.step(0.0, wall)
    for i in range(1, 60):  # 59 s of the store's time: below delete_retention_ms
        held.advance(i * 1000, T0 + i * 1000)
        job.step(float(i) * 6, T0 + i * 1000)  # a pass every 5 s at least
    last = signed.open_batch(signed.verify_batch(_batches(storage)[-1]))
    assert last.keys == [b"k"] and last.values == [None]  # still there
    for i in range(60, 200):  # then well past it (the held clock moves on)
        held.advance(i * 1000, T0 + i * 1000)
        job.step(float(i) * 6, T0 + i * 1000)
    last = signed.open_batch(signed.verify_batch(_batches(storage)[-1]))
    assert last.keys == [] and [d.key for d in last.dropped] == [b"k"]


def test_the_job_stays_within_its_rate() -> None:
    storage = MemoryStorage()
    first = 0
    for i in range(200):
        data = rich(first, [(b"k%d" % (i % 5), b"v" * 2000)])
        _stored(storage, first, data)
        first += 1
    job = Compactor(storage, {"t": CompactSettings(KEEP)}, StoreStats(), rate=100_000)
    now, spent = 0.0, 0
    for _ in range(20):  # 2 s in steps of 0.1 s (a whole pass costs about 1 MB)
        spent += job.step(now, T0)
        now += 0.1
    # 100 kB/s for 2 s, plus at most one batch read and written over the budget
    assert 150_000 <= spent <= 200_000 + 2 * 2200
    for _ in range(200):
        spent += job.step(now, T0)
        now += 0.1
    assert job.stats.compaction_batches > 0


def test_a_gap_statement_meanwhile_stops_the_rewrite_from_a_stale_index() -> None:
    storage = MemoryStorage()
    for data in PARTITION:
        _stored(storage, signed.peek_batch(data).first_offset, data)
    gen = [0]
    job = _compactor(storage, generation=lambda: gen[0])
    job.step(0.0, T0)
    job._credit = 0  # index only: a budget of one batch
    job.rate = 1
    job.step(0.1, T0)
    gen[0] += 1  # batches superseded below the head
    job.rate = 10_000_000
    job.step(0.3, T0)
    assert job.stats.compaction_batches == 0
    assert _batches(storage) == PARTITION


def test_refusals_are_counted_each_and_logged_once_a_period(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = _core()
    with caplog.at_level("WARNING", logger="dafka.store._ingest"):
        for i in range(50):
            core.handle_batch([from_blob(blob(0, 1, keys=[b"k%d" % i]))], 0.001 * i)
    assert core.stats.compact_refused == 50
    lines = [r for r in caplog.records if "store.compact_refused" in r.getMessage()]
    assert len(lines) == 1


def test_a_compact_only_topic_is_not_trimmed_by_retention_but_compact_delete_is() -> None:
    for policy, trimmed in (("compact", False), ("compact,delete", True)):
        core = StoreCore(S, MemoryStorage(), profile=SignedProfile(STORE))
        core.set_policy({"t": {"cleanup_policy": policy, "retention_bytes": 1}})
        for first in range(3):
            core.handle_batch([from_blob(rich(first, [(b"k", b"v" * 100)]))], 0.0)
        core.apply_retention(T0, 0)
        assert (core.storage.heads()[("t", P)][1] > 0) is trimmed


def test_a_compacted_form_from_another_store_is_verified_and_kept() -> None:
    core = _core()
    full = rich(0, [(b"a", b"x" * 100), (b"a", b"y" * 100)])
    smaller = compacted_blob(signed.verify_batch(full), {0})
    assert smaller is not None
    core.handle_batch([from_blob(smaller, to=S)], 0.0)  # a DIRECT-RECORD answering a FETCH
    assert [b.blob for b in core.storage.read("t", P, 0, 10)] == [smaller]
    forged = smaller[:-100] + bytes([smaller[-100] ^ 1]) + smaller[-99:]
    other = _core()
    other.handle_batch([from_blob(forged, to=S)], 0.0)
    assert other.storage.heads() == {} and other.stats.rejected == 1


def test_one_step_yields_after_its_time_budget_whatever_the_rate() -> None:
    """The IO thread receives and acknowledges between steps: a step ends after the batch
    it is on once it has worked MAX_STEP_BUSY seconds, however much the rate allows."""
    storage = MemoryStorage()
    for i in range(50):
        _stored(storage, i, rich(i, [(b"k%d" % (i % 3), b"v" * 500)]))
    ticks = iter(range(10**6))
    clock = lambda: next(ticks) * 0.01  # noqa: E731  # each look: 10 ms later
    job = Compactor(
        storage, {"t": CompactSettings(KEEP)}, StoreStats(), rate=1e12, busy_clock=clock
    )
    job.step(0.0, T0)
    one = job.step(1.0, T0)
    assert 0 < one <= 2 * 1100  # a batch or two, not the 50 the rate allows


def test_the_index_costs_the_same_whatever_the_keys_length() -> None:
    """The red team's index flood: long keys (64 KiB each, a thousand a batch). What the
    index keeps of a key is a digest, so 500 such keys cost it well under a megabyte
    once the records are gone (with the keys themselves it would be 32 MiB)."""
    import gc
    import tracemalloc

    from dafka.store._compaction import RecordMeta

    tracemalloc.start()
    try:
        newest: dict[bytes, RecordMeta] = {}
        metas = [RecordMeta(i, i.to_bytes(4, "big") * (16 * 1024), False, 0) for i in range(500)]
        index_records(newest, metas)
        del metas
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(newest) == 500
    assert held < 1024 * 1024
    again = [RecordMeta(1000 + i, i.to_bytes(4, "big") * (16 * 1024), False, 0) for i in range(2)]
    assert (
        plan_drops([RecordMeta(0, (0).to_bytes(4, "big") * (16 * 1024), False, 0)], newest, never)
        == frozenset()
    )
    index_records(newest, again)
    assert plan_drops(
        [RecordMeta(0, (0).to_bytes(4, "big") * (16 * 1024), False, 0)], newest, never
    ) == {0}
