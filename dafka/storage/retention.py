"""Retention: which whole old batches of a partition fall out of its topic's limits.

Pure planning, no IO: given a partition's batches oldest first as
:class:`BatchInfo` (offsets, stored size, producer timestamp, records' time),
:func:`retention_cut` says from which batch on to keep. Only whole batches go, oldest
first, and the newest batch always stays (so a partition keeps a head and a tail).

Age is not taken from one clock (issue 33, point 6). A batch's age is the smaller of

* how long this store has **held** it by its own monotonic measure
  (:class:`HeldLedger`: a "held clock" that advances only by monotonic time elapsed
  while the store runs, persisted across restarts, so no step of the wall clock,
  forward or back, and no restart makes it shorter), and
* the store's wall clock minus the producer's stamp **clamped** to the window from
  :data:`STAMP_WINDOW_MS` before the store's wall clock when it received the batch to
  that time (the signed stamp stays verbatim in the blob; only the age computed here is
  bounded, so a producer clock behind cannot age its batches and one ahead cannot keep
  them for ever).

**Record times** (issue 36, point 3). A format-5 batch carries its records' own times
(Kafka's CreateTime) and, in its signed header, their maximum ``T``. As Kafka ages a
segment by its largest timestamp, such a batch is aged by ``T`` (``BatchInfo.record_ms``;
when ``T`` is the seal stamp, every record at the seal time, the rule above applies
unchanged). ``T`` is the producer's word, so it only counts within a window around the
batch's arrival ``W_r`` (the store's wall clock at receipt), from
:func:`backdate_ms` (half the retention) before it to ``max_future_ms`` (the topic's
setting, an hour by default) after it::

    t   = clamp(T, W_r - retention_ms // 2, W_r + max_future_ms)
    age = max(0, min(held + (W_r - t), wall - t))

where ``held`` is the time this store has held the batch by its held clock and ``wall``
its wall clock now. So, whatever the records' times:

* a batch is **never kept past** ``retention_ms + max_future_ms`` of held time (a record
  stamped far in the future counts as ``max_future_ms`` past arrival; the held term then
  passes the retention after that long), and it never blocks the batches after it longer;
* a batch is **never deleted before** it has been held ``retention_ms - retention_ms // 2``
  (half the retention: a record stamped far in the past, a replay of last year's events,
  counts as half a retention old at arrival, not as older than the retention, which in
  Kafka deletes it at the next check, before anyone read it);
* between the two, a past record time **ages the batch faster**, as Kafka users expect:
  records stamped a quarter of the retention before they arrived go after three quarters
  of it. The wall term keeps the issue 33 property: a store clock stepped back only makes
  batches look younger; one stepped ahead is caught by the held term and the pause below.

And no batch is trimmed by age while the store's wall clock has stepped ahead of its
monotonic measure by more than :data:`CLOCK_STEP_MS` since the newest batch whose
producer stamp agreed with it (:meth:`HeldLedger.clock_ahead_ms`; the seal stamp, never a
record's own time, which need not be near the clock).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CLOCK_STEP_MS",
    "DEFAULT_MAX_FUTURE_MS",
    "MAX_RECEIPTS",
    "STAMP_WINDOW_MS",
    "BatchInfo",
    "HeldLedger",
    "Receipt",
    "backdate_ms",
    "retention_cut",
]

STAMP_WINDOW_MS = 60_000
"""How far a producer's stamp may lie from the store's wall clock at receipt before the
age computed from it is clamped (Kafka bounds record timestamps against the broker's)."""

CLOCK_STEP_MS = 60_000
"""How far the store's wall clock may run ahead of its monotonic measure (since the start
of the run or the newest batch whose stamp agreed with it) before age retention stops."""

DEFAULT_MAX_FUTURE_MS = 3_600_000
"""The topic setting ``max_future_ms`` by default (``dafka.metadata.settings``): how far
past a batch's arrival its records' own times count."""

MAX_RECEIPTS = 64
"""Receipts kept per partition; beyond it the two closest in held time merge (the later
time is kept, so a merged batch only ever looks younger)."""


@dataclass(frozen=True, slots=True)
class BatchInfo:
    first_offset: int
    last_offset: int
    size: int
    timestamp_ms: int | None
    """The producer's timestamp (None under rfc46: age retention does not apply)."""
    record_ms: int | None = None
    """The newest of its records' own times (format 5, from the signed header), when it
    differs from ``timestamp_ms``; None: every record is at the seal stamp."""


def backdate_ms(max_age_ms: int | None) -> int:
    """How far before a batch's arrival its records' time may count for retention: half
    the retention, so a batch is held at least the other half whatever its records say."""
    return 0 if max_age_ms is None else max(0, max_age_ms) // 2


def retention_cut(
    batches: Sequence[BatchInfo],
    *,
    max_age_ms: int | None,
    max_bytes: int | None,
    now_ms: int,
    ages_ms: Sequence[int | None] | None = None,
) -> int:
    """How many of ``batches`` (oldest first) to delete: too old, or beyond ``max_bytes``
    counted from the newest. Never all of them. ``ages_ms``: each batch's age as
    :meth:`HeldLedger.ages` bounds it (None: ``now_ms`` minus the producer's stamp, the
    unbounded age; a None entry: no age retention for that batch)."""
    if len(batches) <= 1:
        return 0
    drop = 0
    if max_age_ms is not None:
        for i, batch in enumerate(batches[:-1]):
            if ages_ms is not None:
                age = ages_ms[i]
            else:
                stamp = batch.timestamp_ms if batch.record_ms is None else batch.record_ms
                age = None if stamp is None else now_ms - stamp
            if age is None or age <= max_age_ms:
                break
            drop += 1
    if max_bytes is not None:
        total = 0
        keep_from = len(batches) - 1
        for i in range(len(batches) - 1, -1, -1):
            total += batches[i].size
            if total > max_bytes and i < len(batches) - 1:
                break
            keep_from = i
        drop = max(drop, keep_from)
    return min(drop, len(batches) - 1)


@dataclass(frozen=True, slots=True)
class Receipt:
    """Batches of one partition up to ``upto`` (and above the previous receipt's) were
    first seen by the store no earlier than held time ``held_ms`` and wall time
    ``wall_ms`` (the store's clocks when it noticed its head had moved)."""

    upto: int
    held_ms: int
    wall_ms: int


Key = tuple[str, str]


@dataclass(slots=True)
class HeldLedger:
    """When this store took in each partition's batches, by its own measure.

    ``held_ms`` is the held clock: it advances in :meth:`advance` by the monotonic time
    elapsed since the last call of this run, never by the wall clock, and restarts from
    its persisted value (time while the store is down does not count, so a restart only
    ever makes batches look younger). Batches are attributed to the first receipt whose
    ``upto`` covers their last offset; a partition whose head moved past its last receipt
    gets a new one at the next :meth:`observe` (a store stores each partition in offset
    order, the out-of-order ones are buffered until the gap fills), so a batch's receipt
    is never earlier than its arrival. Losing receipts (a crash before the ledger was
    saved, a missing file) only makes batches look younger: the ones not covered are
    taken as received at the next :meth:`observe`."""

    held_ms: int = 0
    receipts: dict[Key, list[Receipt]] = field(default_factory=dict)
    dirty: bool = False
    _mono_ms: int | None = None
    _base_ms: int | None = None  # wall minus held at the last agreement (None: not yet)

    def advance(self, mono_ms: int, wall_ms: int) -> None:
        """Move the held clock by the monotonic time since the last call of this run."""
        if self._mono_ms is not None and mono_ms > self._mono_ms:
            self.held_ms += mono_ms - self._mono_ms
        self._mono_ms = mono_ms
        if self._base_ms is None:  # the first call of a run: the wall clock is taken as is
            self._base_ms = wall_ms - self.held_ms

    def clock_ahead_ms(self, wall_ms: int) -> int:
        """How far the wall clock runs ahead of the monotonic measure since the run started
        or a fresh batch's producer stamp last agreed with it (<= 0: not ahead)."""
        if self._base_ms is None:
            return 0
        return wall_ms - self.held_ms - self._base_ms

    def observe(
        self,
        key: Key,
        head: int,
        wall_ms: int,
        newest_stamp_ms: int | None = None,
        granule_ms: int = 0,
    ) -> None:
        """The partition's head is ``head`` now: what lies above its last receipt was
        received now. ``newest_stamp_ms``: the producer stamp of its newest batch; if it
        agrees with the wall clock (within :data:`CLOCK_STEP_MS`), the wall clock is
        trusted again from here. Receipts closer than ``granule_ms`` merge."""
        receipts = self.receipts.setdefault(key, [])
        if receipts and head <= receipts[-1].upto:
            return
        new = Receipt(head, self.held_ms, wall_ms)
        if receipts and self.held_ms - receipts[-1].held_ms < granule_ms:
            receipts[-1] = new  # the later time for both: only ever younger
        else:
            receipts.append(new)
            if len(receipts) > MAX_RECEIPTS:
                _merge_closest(receipts)
        self.dirty = True
        if newest_stamp_ms is not None and abs(wall_ms - newest_stamp_ms) <= CLOCK_STEP_MS:
            self._base_ms = wall_ms - self.held_ms

    def ages(
        self,
        key: Key,
        batches: Sequence[BatchInfo],
        wall_ms: int,
        *,
        max_age_ms: int | None = None,
        max_future_ms: int | None = None,
    ) -> list[int | None]:
        """Each batch's age for retention (None: no stamp): the smaller of its held time
        and the wall clock minus its producer stamp clamped to the receipt's window; for
        records with their own times (``record_ms``), the module's rule, their time
        clamped from :func:`backdate_ms` of ``max_age_ms`` before the receipt to
        ``max_future_ms`` after it (None: :data:`DEFAULT_MAX_FUTURE_MS`)."""
        back = backdate_ms(max_age_ms)
        future = DEFAULT_MAX_FUTURE_MS if max_future_ms is None else max(0, max_future_ms)
        receipts = self.receipts.get(key, [])
        uptos = [r.upto for r in receipts]
        out: list[int | None] = []
        for batch in batches:
            if batch.timestamp_ms is None:
                out.append(None)
                continue
            i = bisect.bisect_left(uptos, batch.last_offset)
            if i == len(receipts):  # not seen yet: received now
                out.append(0)
                continue
            r = receipts[i]
            held = self.held_ms - r.held_ms
            if batch.record_ms is not None:
                # guard: retention-clamps-record-times
                t = min(max(batch.record_ms, r.wall_ms - back), r.wall_ms + future)
                # guard: retention-record-age-bounded-held
                out.append(max(0, min(held + (r.wall_ms - t), wall_ms - t)))
                continue
            # guard: retention-clamps-producer-stamps-receipt
            stamp = min(max(batch.timestamp_ms, r.wall_ms - STAMP_WINDOW_MS), r.wall_ms)
            # guard: retention-age-bounded-store-own
            out.append(max(0, min(held, wall_ms - stamp)))
        return out

    def trimmed(self, key: Key, tail: int) -> None:
        """Batches below ``tail`` are gone: drop the receipts that covered only them."""
        receipts = self.receipts.get(key)
        if receipts:
            kept = [r for r in receipts if r.upto >= tail]
            if len(kept) != len(receipts):
                self.receipts[key] = kept
                self.dirty = True

    def keep_only(self, keys: Iterable[Key]) -> None:
        """Forget the partitions not in ``keys`` (deleted topics, no age retention)."""
        wanted = set(keys)
        for key in [k for k in self.receipts if k not in wanted]:
            del self.receipts[key]
            self.dirty = True

    def to_json(self) -> dict:
        return {
            "version": 1,
            "held_ms": self.held_ms,
            "partitions": [
                [t, p, [[r.upto, r.held_ms, r.wall_ms] for r in rs]]
                for (t, p), rs in self.receipts.items()
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping) -> HeldLedger:
        """Raises ValueError (or TypeError, KeyError) if ``data`` is not a saved ledger."""
        if data.get("version") != 1:
            raise ValueError(f"unknown held ledger version {data.get('version')!r}")
        held = _int(data["held_ms"])
        receipts: dict[Key, list[Receipt]] = {}
        for topic, partition, rows in data["partitions"]:
            if not isinstance(topic, str) or not isinstance(partition, str):
                raise TypeError("partition names must be strings")
            got = [Receipt(_int(u), min(_int(h), held), _int(w)) for u, h, w in rows]
            got.sort(key=lambda r: r.upto)
            receipts[(topic, partition)] = got[-MAX_RECEIPTS:]
        return cls(held_ms=held, receipts=receipts)


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"not a non-negative integer: {value!r}")
    return value


def _merge_closest(receipts: list[Receipt]) -> None:
    """Merge the two neighbouring receipts closest in held time into the later one."""
    i = min(range(len(receipts) - 1), key=lambda j: receipts[j + 1].held_ms - receipts[j].held_ms)
    del receipts[i]
