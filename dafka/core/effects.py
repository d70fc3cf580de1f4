"""What node cores return: messages to publish and events for the application.

Cores never touch sockets; the IO shell (``dafka.io``) turns effects into sends
with the node's wire profile (``dafka.wire.profiles``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple

from ..wire.columns import Column
from . import messages as m


@dataclass(frozen=True, slots=True)
class Publish:
    """Send ``msg`` on the node's data socket."""

    msg: m.Message


@dataclass(frozen=True, slots=True)
class PublishRecords:
    """Send consecutive one-record RECORDs of one partition, ``first_offset`` onwards.

    The rfc46 producer's hot path: one effect per batch instead of two objects
    per record, sent by the shell as ``Profile.record_heads`` (frame 0 of each) and
    ``contents`` (the second frame of each). (A signed
    producer publishes sealed batches as :class:`Publish` of a ``Record``.)
    """

    topic: str
    partition: str
    first_offset: int
    contents: tuple[bytes, ...]

    def messages(self) -> list[m.Record]:
        """The RECORD messages this effect stands for."""
        first = self.first_offset
        return [
            m.Record(self.topic, self.partition, first + i, content)
            for i, content in enumerate(self.contents)
        ]


class ConsumedRecord(NamedTuple):
    """A record as the application sees it (immutable; fields by name).

    ``key`` is ``None`` when the record has none (always under rfc46);
    ``value`` is ``None`` for a tombstone (a record sent with a null value, format 5);
    ``timestamp`` is the record's own time in seconds since the epoch: the one its
    producer gave it (``send(..., timestamp=ms)``, format 5), else the producer's clock
    when it sealed the record's batch (signed profile; ``None`` under rfc46).
    ``headers`` are the record's ``(key, value)`` pairs in the order sent (repeated
    keys kept; a value may be ``None``); ``()`` when it has none.

    A named tuple rather than a dataclass because consumers make one per
    record: building a tuple costs a quarter of a frozen dataclass's
    ``__init__``, which matters at hundreds of thousands of records a second.
    """

    topic: str
    partition: str
    offset: int
    value: bytes | None
    key: bytes | None = None
    timestamp: float | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()


Headers = tuple[tuple[str, bytes | None], ...]
"""A record's headers: ordered ``(key, value)`` pairs."""

_new_record = tuple.__new__


DETACH_SLACK = 64 * 1024
"""Bytes a delivered run's columns may keep alive beyond twice what they use
(:meth:`RecordBatch.detached`)."""


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """Consecutive records of one partition, as columns: ``values[i]`` is at ``offset + i``.

    The consumer core's delivery effect (also named :data:`Deliver`): one per
    run of verified records, in order. ``keys`` is ``None`` when no record of
    the run has a key. ``Consumer.poll_batches`` hands these to applications;
    :meth:`records` makes :class:`ConsumedRecord` objects of them.

    Under the signed profile ``values`` and ``keys`` are :class:`~dafka.wire.columns.Column`
    objects over the verified batch: read-only sequences that make a ``bytes`` object
    only for an element read, and give the whole column without one
    (``values.buffer``, ``values.lengths``). Other runs hold lists or tuples; every one
    is a ``Sequence`` (``len``, indexes, slices, iteration) and compares equal to a list
    of the same elements.

    Runs of format-5 batches (``docs/records.md``) also carry ``timestamps`` (each
    record's own time, seconds) and ``headers`` (each record's, ``()`` for none); both
    are ``None`` for runs of earlier formats (every record at ``timestamp``, the seal
    time, without headers). A value is ``None`` for a tombstone. A compacted batch
    (records dropped by a store's compaction) comes as several runs, each consecutive.
    """

    topic: str
    partition: str
    offset: int
    values: Sequence[bytes | None] = field(repr=False)
    keys: Sequence[bytes | None] | None = field(default=None, repr=False)
    timestamp: float | None = None
    timestamps: Sequence[float] | None = field(default=None, repr=False)
    headers: Sequence[Headers] | None = field(default=None, repr=False)

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def value_bytes(self) -> int:
        """The values' total length in bytes: read off a :class:`Column` (no pass over it)."""
        values = self.values
        if isinstance(values, Column):
            return values.nbytes
        if self.timestamps is not None:  # format 5: tombstones are None
            return sum(len(v) for v in values if v is not None)
        return sum(map(len, values))  # type: ignore[arg-type]  # no tombstone before format 5

    def sliced(self, start: int, stop: int) -> RecordBatch:
        """Records ``start`` to ``stop - 1`` of this run (indexes, not offsets), as a run."""
        keys, stamps, headers = self.keys, self.timestamps, self.headers
        return RecordBatch(
            self.topic,
            self.partition,
            self.offset + start,
            self.values[start:stop],
            keys[start:stop] if keys is not None else None,
            self.timestamp,
            stamps[start:stop] if stamps is not None else None,
            headers[start:stop] if headers is not None else None,
        )

    def detached(self) -> RecordBatch:
        """This run, with columns that keep far more of their batch alive than they use
        (a batch cut to the records not delivered yet) copied out: a run waiting to be
        polled holds about the bytes of its records, whatever batch it came in.
        ``self`` when there is nothing to copy."""
        values, keys = self.values, self.keys
        if not isinstance(values, Column):
            return self
        used = values.nbytes + (keys.nbytes if isinstance(keys, Column) else 0)
        # guard: run-waiting-polled-does-keep
        if values.held_bytes <= 2 * used + DETACH_SLACK:
            return self
        if isinstance(keys, Column):
            keys = keys.detached()
        return RecordBatch(
            self.topic,
            self.partition,
            self.offset,
            values.detached(),
            keys,
            self.timestamp,
            self.timestamps,
            self.headers,
        )

    def as_lists(self) -> RecordBatch:
        """This run with its values and keys as lists (each element made now)."""
        if type(self.values) is list and (self.keys is None or type(self.keys) is list):
            return self
        keys = None if self.keys is None else list(self.keys)
        return RecordBatch(
            self.topic,
            self.partition,
            self.offset,
            list(self.values),
            keys,
            self.timestamp,
            self.timestamps,
            self.headers,
        )

    def records(self) -> list[ConsumedRecord]:
        """The records as :class:`ConsumedRecord` objects (built on demand, in C loops)."""
        n = len(self.values)
        keys = self.keys if self.keys is not None else repeat(None, n)
        stamps = self.timestamps
        headers = self.headers
        rows = zip(
            repeat(self.topic, n),
            repeat(self.partition, n),
            range(self.offset, self.offset + n),
            self.values,
            keys,
            repeat(self.timestamp, n) if stamps is None else stamps,
            repeat((), n) if headers is None else headers,
            strict=False,
        )
        return list(map(_new_record, repeat(ConsumedRecord, n), rows))


Deliver = RecordBatch
"""Consumer core effect: hand these records to the application, in partition order."""


@dataclass(frozen=True, slots=True)
class Acked:
    """Producer: every record of ``topic`` up to ``offset`` is durable."""

    topic: str
    offset: int


@dataclass(frozen=True, slots=True)
class DataLoss:
    """Consumer: offsets ``start`` to ``tail - 1`` of a partition cannot be delivered;
    delivery goes on from ``tail``. ``reason``: ``"retention"`` (a store's retention
    deleted them), ``"oversized"`` (a record over ``max_message_size``, refused by our
    nodes, rfc46) or ``"unserved"`` (rfc46: nobody served them while later records
    were held, see ``ConsumerCore``)."""

    topic: str
    partition: str
    start: int
    tail: int
    reason: str = "retention"


Effect = Publish | PublishRecords | RecordBatch | Acked | DataLoss

Outgoing = Publish | PublishRecords
"""What the IO shell sends for a node: the effects that are messages."""
