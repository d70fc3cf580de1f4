"""What the producer's IO thread keeps for each send until a store acknowledges it.

Each turn, the IO thread takes everything queued (``producer_io``) and groups it per
topic in a :class:`TopicTurn`: the values and keys to seal, and the sends as *runs*.
Consecutive ``send`` calls make one :class:`RecordRun` (a list of their futures, the
record at index ``i`` having offset ``base + i``); each ``send_many`` makes one
:class:`ManyRun` (its one future). Once published, the runs wait for their ACK in offset
order, and an ACK resolves them run by run: nothing is built per record after ``send``
(no tuple, no entry per record to pop), and a run's futures are resolved under one
taking of the futures' lock (:func:`~dafka.futures.resolve_each`). All on the IO thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate
from typing import NamedTuple, cast

from ..futures import BatchFuture, RecordFuture, fail_each, resolve_each
from ..wire.signed_builder import RecordExtra

__all__ = ["Continued", "ManyRun", "RecordRun", "RichValues", "Run", "TopicTurn", "Values"]


class RecordRun:
    """Consecutive ``send`` calls on one topic: one future per record.

    ``at`` is the index of its first value in the turn's values; once published,
    ``base`` is its first record's offset and ``done`` how many of its futures are
    resolved (or failed)."""

    __slots__ = ("at", "base", "done", "ends", "futures")

    def __init__(self, at: int) -> None:
        self.at = at
        self.futures: list[RecordFuture | None] = []
        """None for a future its caller dropped (``producer_io``)."""
        self.base = -1
        self.done = 0
        self.ends: list[int] = [0]
        """``ends[i]``: the value bytes of its first ``i`` records."""

    @property
    def count(self) -> int:
        return len(self.futures)

    @property
    def first(self) -> int:
        """The first offset not yet resolved."""
        return self.base + self.done

    @property
    def finished(self) -> bool:
        return self.done == len(self.futures)

    def place(self, base: int, values: list[bytes]) -> int:
        """Its records were published from offset ``base`` (``values``: the turn's
        values); returns their bytes."""
        self.base = base
        mine = values[self.at : self.at + len(self.futures)]
        self.ends = list(accumulate(map(len, mine), initial=0))
        return self.ends[-1]

    def resolve(self, durable: int) -> tuple[int, int]:
        """Resolve its futures up to offset ``durable``; returns (records, bytes) resolved."""
        start = self.done
        stop = min(durable + 1 - self.base, len(self.futures))
        if stop <= start:
            return 0, 0
        resolve_each(self.futures[start:stop], self.base + start)
        self.done = stop
        return stop - start, self.ends[stop] - self.ends[start]

    def fail(self, error: BaseException) -> tuple[int, int]:
        """Fail every future not yet resolved; returns (records, bytes) failed."""
        start, stop = self.done, len(self.futures)
        fail_each(self.futures[start:], error)
        self.done = stop
        return stop - start, self.ends[stop] - self.ends[start]


class ManyRun:
    """One ``send_many``: ``count`` records of ``size`` bytes under one future, resolved
    once all of them are acknowledged.

    A ``send_many`` larger than a turn is taken in parts, one run each, in consecutive
    offsets (``producer_io``): ``origin`` is the run of its first part (None: this run is
    it), and only its ``last`` part resolves the future, to the range of every part's
    offsets. Any part failing fails the future."""

    __slots__ = ("at", "base", "count", "finished", "future", "last", "origin", "size")

    def __init__(
        self,
        at: int,
        count: int,
        future: BatchFuture | RecordFuture,
        size: int,
        origin: ManyRun | None = None,
        last: bool = True,
    ) -> None:
        self.at = at
        self.count = count
        self.future = future
        self.size = size
        self.origin = origin
        self.last = last
        self.base = -1
        self.finished = False

    @property
    def first(self) -> int:
        return self.base

    def place(self, base: int, values: list[bytes]) -> int:
        self.base = base
        return self.size

    def resolve(self, durable: int) -> tuple[int, int]:
        if durable < self.base + self.count - 1:
            return 0, 0
        if self.last:
            start = self.base if self.origin is None else self.origin.base
            future = self.future
            if type(future) is RecordFuture:  # a send with headers, a time, ...
                future.resolve(start)  # its offset
            else:
                cast(BatchFuture, future).resolve(range(start, self.base + self.count))
        self.finished = True
        return self.count, self.size

    def fail(self, error: BaseException) -> tuple[int, int]:
        if self.finished:
            return 0, 0
        self.future.fail(error)
        self.finished = True
        return self.count, self.size


Run = RecordRun | ManyRun


class Continued(NamedTuple):
    """In the queue in place of a future: the rest of a ``send_many`` whose first records a
    turn took (``future``: the send's; ``origin``: the run of its first records)."""

    future: BatchFuture | RecordFuture
    origin: ManyRun

    def fail(self, error: BaseException) -> None:
        """The producer stopped before the rest was published (``fail_queued``)."""
        self.future.fail(error)


class Values(list[bytes]):
    """A ``send_many``'s values as queued (a copy of the caller's, never changed once
    queued), with ``lengths`` (``len`` of each) and ``size`` (their sum): measured once, on
    the caller's thread, for the size caps and the budget, and used again by the IO thread
    to share out its turns and to cut and seal the batches."""

    __slots__ = ("lengths", "size")

    def __init__(
        self, values: Iterable[bytes], lengths: list[int] | None = None, size: int | None = None
    ) -> None:
        super().__init__(values)
        self.lengths = list(map(len, self)) if lengths is None else lengths
        self.size = sum(self.lengths) if size is None else size


class RichValues(Values):
    """Values queued by a ``send`` or ``send_many`` some of whose records carry headers,
    their own time or are tombstones (queued as ``b""``): ``extras[i]`` is what record
    ``i`` carries (none: nothing besides). ``lengths`` count each record's header bytes
    with its value's, so the budget holds what headers cost too. Queued as a
    ``send_many``'s values are (a ``send``'s future is then a :class:`RecordFuture`,
    which its :class:`ManyRun` resolves to the offset): the plain ``send`` path never
    sees them."""

    __slots__ = ("extras",)

    def __init__(
        self,
        values: Iterable[bytes],
        extras: dict[int, RecordExtra],
        lengths: list[int] | None = None,
        size: int | None = None,
    ) -> None:
        super().__init__(values, lengths, size)
        self.extras = extras

    def part(self, start: int, stop: int) -> RichValues:
        """Records ``start .. stop - 1`` (their extras numbered from 0)."""
        extras = {i - start: e for i, e in self.extras.items() if start <= i < stop}
        lengths = self.lengths[start:stop]
        return RichValues(self[start:stop], extras, lengths, sum(lengths))


class TopicTurn:
    """What one turn of the IO thread took for one topic: the values and keys to seal
    (``keyed``: some key is not None), their lengths while they are known (None once a
    ``send`` record is among them: those are not measured one by one) and the sends, as
    runs in offset order."""

    __slots__ = ("extras", "keyed", "keys", "lengths", "open", "runs", "values")

    def __init__(self) -> None:
        self.extras: dict[int, RecordExtra] | None = None
        """What records carry besides key and value (:class:`RichValues`), by index in
        :attr:`values`; None while no record does (the fast path)."""
        self.values: list[bytes] = []
        self.keys: list[bytes | None] = []
        self.keyed = False
        self.lengths: list[int] | None = []
        self.runs: list[Run] = []
        self.open: RecordRun | None = None
        """The run the next ``send`` joins (None: a ``send_many`` came last)."""

    def records(self) -> RecordRun:
        """The run a ``send``'s record joins: the open one, or a new one."""
        run = self.open
        if run is None:
            run = self.open = RecordRun(len(self.values))
            self.runs.append(run)
            self.lengths = None
        return run

    def add_many(
        self,
        values: list[bytes],
        keys: list[bytes | None] | None,
        future: BatchFuture | RecordFuture,
        origin: ManyRun | None = None,
        last: bool = True,
        lengths: list[int] | None = None,
        size: int | None = None,
    ) -> ManyRun:
        """Add one ``send_many``'s records (or a part of them: see :class:`ManyRun`) as a
        run of their own; returns the run. ``lengths``: ``len`` of each value, and ``size``
        their sum, if the caller has them."""
        n = len(values)
        if lengths is None:
            lengths = list(map(len, values))
        if size is None:
            size = sum(lengths)
        run = ManyRun(len(self.values), n, future, size, origin, last)
        if type(values) is RichValues and values.extras:
            at = len(self.values)
            if self.extras is None:
                self.extras = {}
            self.extras.update((at + i, e) for i, e in values.extras.items())
        self.runs.append(run)
        self.open = None
        if self.lengths is not None:
            self.lengths.extend(lengths)
        self.values.extend(values)
        if keys is None:
            self.keys.extend([None] * n)
        else:
            self.keys.extend(keys)
            self.keyed = True
        return run
