"""Which offset a time names: the search behind ``offsets_for_times`` (and ``-o s@`` of
tools that ask the stores), over a partition's batches by their records' own times.

Pure: the caller gives ``batch_at(offset)``, the verified batch that holds an offset
(:class:`BatchTimes`), and :func:`first_at_or_after` finds Kafka's answer, the earliest
offset whose record's time is at or after ``t``, in about log2(N) calls for N batches:

* a **binary search over batches** by each batch's newest record time (``max_ms``: the
  seal stamp for formats 1 and 3, whose records are all at it; for format 5 the maximum
  of its signed header, read without decompressing) finds the first batch whose newest
  record is at or after ``t``;
* the answer is then **refined inside that batch**: its records are opened (only that
  batch's, after its signature was checked; bounded by the caller's decompression limit)
  and the first one, in offset order, whose own time is at or after ``t`` is the answer.
  If none is (a compacted batch whose only such record was dropped), the batches after
  it are looked at in order, at most :data:`MAX_FORWARD` of them.

Record times need not grow with offsets (Kafka's CreateTime is the producer's word). A
binary search is exact when the batches' newest times do not decrease along the
partition, as seal stamps do and as record times do when a producer stamps in order.
When they do decrease, the search still returns an offset whose record is at or after
``t``, in a batch whose newest time is at or after ``t`` and that follows one whose newest
time is before ``t``; a record at or after ``t`` in an earlier batch the search jumped over
may be missed (Kafka's time index keeps the largest time so far for the same reason; it
is exact only because it then scans). Reading from the start and passing over records
before ``t`` (``Consumer.seek_to_timestamp``) finds the earliest one exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["MAX_FORWARD", "BatchAt", "BatchTimes", "first_at_or_after", "first_in_batch"]

MAX_FORWARD = 16
"""Batches looked at in order after the one the search found, when none of its own
records is at or after the time (each is one READ and perhaps one decompression)."""

_MAX_STEPS = 200  # each step halves the range: 64 cover any u64 range


@dataclass(frozen=True, slots=True)
class BatchTimes:
    """The verified batch holding an offset: its offsets, the newest time of its records
    (ms; the seal stamp for formats 1 and 3) and, opened only when asked, its records'
    ``(offset, time)`` in offset order (a compacted batch: the records it kept)."""

    first: int
    last: int
    max_ms: int
    records: Callable[[], Sequence[tuple[int, int]]]


BatchAt = Callable[[int], BatchTimes]
"""``offset -> BatchTimes`` of the verified batch that holds ``offset``."""


def first_in_batch(records: Sequence[tuple[int, int]], timestamp_ms: int, lo: int) -> int | None:
    """The first offset (from ``lo``) of ``records`` whose time is at or after
    ``timestamp_ms``, or None."""
    for offset, ts in records:
        if offset >= lo and ts >= timestamp_ms:
            return offset
    return None


def first_at_or_after(batch_at: BatchAt, tail: int, head: int, timestamp_ms: int) -> int | None:
    """The earliest offset in ``tail..head`` whose record's time is at or after
    ``timestamp_ms`` (exact when the batches' newest times do not decrease: the module's
    docstring), or None when no record is."""
    lo, hi = tail, head + 1  # batches ending below lo are older; from hi on they are not
    found: BatchTimes | None = None  # the batch starting at hi, when the search saw it
    for _ in range(_MAX_STEPS):
        if lo >= hi:
            break
        mid = (lo + hi) // 2
        batch = batch_at(mid)
        if batch.max_ms >= timestamp_ms:
            hi = max(lo, min(batch.first, mid))
            found = batch
        else:
            lo = min(hi, max(mid + 1, batch.last + 1))
    at = lo
    for _ in range(MAX_FORWARD + 1):
        if at > head:
            return None
        batch = found if found is not None and found.first <= at <= found.last else batch_at(at)
        found = None
        if batch.max_ms >= timestamp_ms:
            offset = first_in_batch(batch.records(), timestamp_ms, at)
            if offset is not None:
                return offset
        at = max(at, batch.last) + 1
    return at if at <= head else None
