"""Time lookups by the records' own times (issue 36, point 3): ``offsets_for_times``'s
search (``dafka.api.times``) over batches by their newest record time, refined inside
the batch found, and what a hostile store may answer it. Pure: synthetic batches, and a
fake query client serving genuine signed format-5 batches (no sockets)."""

from __future__ import annotations

import random

import pytest

from dafka.api.cluster import _batch_at
from dafka.api.times import MAX_FORWARD, BatchTimes, first_at_or_after, first_in_batch
from dafka.errors import ProtocolError, WireError
from dafka.query import protocol as qp
from dafka.query.protocol import pack_batches
from dafka.wire.signed_rich import (
    MAX_RAW_BYTES,
    Codec,
    DecompressionBomb,
    RichRecord,
    compact_rich,
    seal_rich,
)
from tests.signing import PRODUCER, P

T0 = 1_700_000_000_000


# ------------------------------------------------------------- the pure search


def synthetic(batches: list[list[int]]) -> tuple[list[BatchTimes], list[int]]:
    """Batches of the given record times, back to back from offset 0; and every record's
    time by offset."""
    out: list[BatchTimes] = []
    times: list[int] = []
    for recs in batches:
        first = len(times)
        pairs = [(first + i, t) for i, t in enumerate(recs)]
        out.append(BatchTimes(first, first + len(recs) - 1, max(recs), lambda p=pairs: p))
        times.extend(recs)
    return out, times


def searcher(batches: list[BatchTimes]) -> tuple[list[int], object]:
    reads: list[int] = []

    def batch_at(offset: int) -> BatchTimes:
        reads.append(offset)
        return next(b for b in batches if b.first <= offset <= b.last)

    return reads, batch_at


def test_the_answer_is_the_first_record_at_or_after_inside_the_batch_found() -> None:
    # record times out of order inside batches, batches' newest times in order
    batches, _ = synthetic([[10, 30, 20], [25, 50, 40], [45, 60, 55]])
    _, batch_at = searcher(batches)
    find = lambda t: first_at_or_after(batch_at, 0, 8, t)  # noqa: E731
    assert find(0) == 0
    assert find(21) == 1  # offset 1 (30): not the batch's first, not offset 2 (20)
    assert find(31) == 4  # batch 1's 25 is before: its 50 is the first at or after
    assert find(41) == 4
    assert find(51) == 7  # batch 2: 45 is before, 60 at offset 7
    assert find(56) == 7
    assert find(61) is None


def test_exact_when_the_batches_newest_times_do_not_decrease() -> None:
    rng = random.Random(36)
    for _ in range(300):
        newest = 0
        spec: list[list[int]] = []
        for _ in range(rng.randrange(1, 12)):
            newest += rng.randrange(0, 20)
            n = rng.randrange(1, 6)
            recs = [rng.randrange(0, newest + 1) for _ in range(n - 1)] + [newest]
            rng.shuffle(recs)
            spec.append(recs)
        batches, times = synthetic(spec)
        reads, batch_at = searcher(batches)
        for t in range(0, newest + 3, 3):
            want = next((o for o, x in enumerate(times) if x >= t), None)
            assert first_at_or_after(batch_at, 0, len(times) - 1, t) == want, (spec, t)


def test_non_monotonic_times_still_answer_a_record_at_or_after() -> None:
    """Batches' newest times out of order: the answer is still a record at or after the
    time, the first such in its batch (an earlier batch may hold one: documented)."""
    rng = random.Random(7)
    for _ in range(300):
        spec = [[rng.randrange(0, 100) for _ in range(rng.randrange(1, 5))] for _ in range(9)]
        batches, times = synthetic(spec)
        _, batch_at = searcher(batches)
        t = rng.randrange(0, 100)
        got = first_at_or_after(batch_at, 0, len(times) - 1, t)
        if got is not None:
            assert times[got] >= t
            home = next(b for b in batches if b.first <= got <= b.last)
            assert all(x < t for x in times[home.first : got])


def test_a_batch_without_a_kept_record_at_or_after_moves_on_a_bounded_number() -> None:
    # the search finds batch 0 (newest 50) but its records kept are older (compacted)
    hollow = BatchTimes(0, 4, 50, lambda: [(0, 10), (4, 20)])
    later = [BatchTimes(5 + i, 5 + i, 50, lambda i=i: [(5 + i, 10)]) for i in range(40)]
    batches = [hollow, *later]
    reads, batch_at = searcher(batches)
    got = first_at_or_after(batch_at, 0, 44, 30)
    assert got == 5 + MAX_FORWARD  # where it stopped looking: nothing before is at 30
    assert len(reads) <= 8 + MAX_FORWARD
    assert first_in_batch([(3, 5), (4, 9)], 6, 0) == 4
    assert first_in_batch([(3, 9), (4, 9)], 6, 4) == 4
    assert first_in_batch([(3, 1)], 6, 0) is None


# ------------------------------------------------------------- against signed batches

SPEC = [  # batch first offset -> record times (out of order inside batches)
    (0, [T0 + 5, T0 + 1, T0 + 9]),
    (3, [T0 + 30, T0 + 12, T0 + 20]),
    (6, [T0 + 31, T0 + 50, T0 + 40]),
    (9, [T0 + 60]),
]


def rich_blob(first: int, times: list[int], codec: Codec = Codec.ZSTD) -> bytes:
    recs = [RichRecord(b"k%d" % (first + i), b"x" * 200, t) for i, t in enumerate(times)]
    return seal_rich(PRODUCER, b"t", first, recs, T0 + 100, codec)


class FakeStore:
    """A store's READ of one batch from ``blobs`` (first offset -> blob); ``envelope``:
    what the store claims the batch's offsets are (a lie when set)."""

    endpoint = "tcp://fake:2"

    def __init__(self, blobs: dict[int, bytes], envelope: tuple[int, int] | None = None) -> None:
        self.blobs = blobs
        self.envelope = envelope
        self.reads: list[int] = []

    def read(self, topic: str, partition: str, offset: int, *_: object) -> qp.ReadReply:
        self.reads.append(offset)
        first = max(f for f in self.blobs if f <= offset)
        data = self.blobs[first]
        count = next(len(t) for f, t in SPEC if f == first)
        lo, hi = self.envelope or (first, first + count - 1)
        packed = pack_batches([(lo, hi, data)])
        return qp.ReadReply(1, topic, partition, 0, 9, *packed, "signed")


def lookup(store: FakeStore, ts: int, max_raw: int = MAX_RAW_BYTES) -> int | None:
    return first_at_or_after(_batch_at(store, ("t", P), max_raw), 0, 9, ts)  # type: ignore[arg-type]


def test_offsets_for_times_uses_the_records_own_times_of_format_5_batches() -> None:
    store = FakeStore({f: rich_blob(f, times) for f, times in SPEC})
    assert lookup(store, T0) == 0
    assert lookup(store, T0 + 6) == 2  # offset 2 (T0+9), after 0 (T0+5) and 1 (T0+1)
    assert lookup(store, T0 + 10) == 3  # batch 3: its first record, T0+30
    assert lookup(store, T0 + 31) == 6
    assert lookup(store, T0 + 32) == 7  # T0+50: offset 6 (T0+31) is before
    assert lookup(store, T0 + 51) == 9
    assert lookup(store, T0 + 61) is None
    # the seal stamp (T0+100) is not what is searched: every record is older than it
    assert lookup(store, T0 + 99) is None


def test_a_compacted_batch_answers_from_the_records_it_kept() -> None:
    blobs = {f: rich_blob(f, times) for f, times in SPEC}
    data = blobs[6]
    blobs[6] = compact_rich(data, 2 + data[1] + 36, 6, 3, [7])  # drops T0+50
    store = FakeStore(blobs)
    assert lookup(store, T0 + 32) == 8  # T0+40, the first kept at or after
    assert lookup(store, T0 + 41) == 9  # only the dropped record was: the next batch


def test_a_store_cannot_forge_a_batchs_record_times() -> None:
    """Attack: a store raises the signed maximum time in a batch's header to steer the
    search; the signature covers it, so the batch is refused."""
    blobs = {f: rich_blob(f, times) for f, times in SPEC}
    data = bytearray(blobs[3])
    at = 2 + data[1] + 36 + 2 + 8  # the maximum time
    data[at + 7] ^= 0xFF
    blobs[3] = bytes(data)
    with pytest.raises(WireError):
        lookup(FakeStore(blobs), T0 + 10)


def test_a_store_lying_about_a_batchs_offsets_is_refused() -> None:
    """Attack: a store answers with the genuine batch holding the offset asked, but
    claims it spans offsets 0..9, so the search would take its time for all of them."""
    store = FakeStore({f: rich_blob(f, times) for f, times in SPEC}, envelope=(0, 9))
    with pytest.raises(ProtocolError, match="holds offsets"):
        lookup(store, T0 + 10)


def test_a_time_lookup_decompresses_a_batch_only_within_its_bound() -> None:
    """Attack: a batch whose records inflate far past their compressed size (a bomb);
    the lookup refuses it before decompressing, by the signed raw length."""
    store = FakeStore({f: rich_blob(f, times) for f, times in SPEC})
    with pytest.raises(DecompressionBomb):
        lookup(store, T0 + 6, max_raw=100)
    assert lookup(store, T0 + 6, max_raw=10_000) == 2


def test_only_the_batch_found_is_opened() -> None:
    opened: list[int] = []
    store = FakeStore({f: rich_blob(f, times) for f, times in SPEC})
    batch_at = _batch_at(store, ("t", P), MAX_RAW_BYTES)  # type: ignore[arg-type]

    def counting(offset: int) -> BatchTimes:
        b = batch_at(offset)
        return BatchTimes(b.first, b.last, b.max_ms, lambda: opened.append(b.first) or b.records())

    assert first_at_or_after(counting, 0, 9, T0 + 32) == 7
    assert opened == [6]
