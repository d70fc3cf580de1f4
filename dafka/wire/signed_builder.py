"""Packing a producer's records into signed batches of the ``signed`` profile.

:class:`BatchBuilder` queues records one at a time and seals them when flushed;
:func:`seal_batches` seals a whole run of records at once with the same cuts.
Both make blobs of :mod:`.signed_batch`'s format, within its caps. Pure, no zmq
import.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from itertools import accumulate, pairwise, repeat
from operator import add
from typing import Final, NamedTuple

from ..errors import WireError
from ..security.identity import Identity
from .signed_batch import (
    BATCH_FORMATS,
    DEFAULT_BATCH_FORMAT,
    MAX_BATCH_RECORDS,
    MAX_BLOB_BYTES,
    MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
    batch_overhead,
    seal_records,
)
from .signed_checks import U64_MAX, LimitExceeded, encode_topic
from .signed_rich import MAX_BATCH_HEADERS, Codec, Header, seal_rich_columns

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_RECORDS",
    "BatchBuilder",
    "RecordExtra",
    "header_bytes",
    "needs_rich",
    "seal_batches",
    "seal_rich_batches",
]

DEFAULT_BATCH_RECORDS: Final = 8192
DEFAULT_BATCH_BYTES: Final = 1024 * 1024


class BatchBuilder:
    """Packs a producer's queued records into signed batch blobs, up to the caps.

    ``add`` queues one record and returns the offset it will have; ``flush``
    seals everything queued into as few blobs as the caps allow, in offset
    order, and clears the queue. An IO loop calls ``flush`` whenever it wakes, so
    batches stay small at low rates and grow under load. A batch holds at most
    ``max_records`` records and ``max_bytes`` bytes, except that a single record
    bigger than ``max_bytes`` travels alone (up to :data:`MAX_BLOB_BYTES`). ``fmt``
    is the batch format written (:data:`BATCH_FORMATS`; format 3 unless readers not
    yet upgraded need format 1).

    Offsets are the caller's to make durable: reserve up to :attr:`next_offset`
    (``dafka.storage.state_dir.OffsetJournal``) before publishing what ``flush`` returns.
    """

    __slots__ = (
        "_cuts",
        "_keys",
        "_open_bytes",
        "_open_count",
        "_room",
        "_topic_raw",
        "_values",
        "fmt",
        "identity",
        "max_bytes",
        "max_records",
        "next_offset",
        "pending_bytes",
        "topic",
    )

    def __init__(
        self,
        identity: Identity,
        topic: str,
        next_offset: int = 0,
        *,
        max_records: int = DEFAULT_BATCH_RECORDS,
        max_bytes: int = DEFAULT_BATCH_BYTES,
        fmt: int = DEFAULT_BATCH_FORMAT,
    ) -> None:
        self._topic_raw = encode_topic(topic)
        if fmt not in BATCH_FORMATS:
            raise ValueError(f"fmt must be one of {BATCH_FORMATS}")
        if not 1 <= max_records <= MAX_BATCH_RECORDS:
            raise ValueError(f"max_records must be 1..{MAX_BATCH_RECORDS}")
        overhead = batch_overhead(topic)
        if not overhead + 8 < max_bytes <= MAX_BLOB_BYTES:
            raise ValueError(f"max_bytes must be {overhead + 9}..{MAX_BLOB_BYTES}")
        if not 0 <= next_offset <= U64_MAX:
            raise ValueError(f"next_offset {next_offset} out of range")
        self.identity = identity
        self.fmt = fmt
        self.topic = topic
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.next_offset = next_offset
        """The offset the next :meth:`add` returns."""
        self.pending_bytes = 0
        """Encoded size of the queued records (8 + key + value each)."""
        self._room = max_bytes - overhead
        self._keys: list[bytes | None] = []
        self._values: list[bytes] = []
        self._cuts: list[int] = []
        self._open_count = 0
        self._open_bytes = 0

    @property
    def pending(self) -> int:
        """Records queued and not yet flushed."""
        return len(self._values)

    def add(self, key: bytes | None, value: bytes) -> int:
        """Queue one record; return its offset.

        ``key`` ``None`` means no key (``b""`` is an empty key). Raises
        :class:`LimitExceeded` for a key or value over the caps, ``TypeError``
        for a key or value that is not bytes-like.
        """
        if type(value) is not bytes:
            value = _as_bytes(value, "value")
        if key is not None and type(key) is not bytes:
            key = _as_bytes(key, "key")
        vlen = len(value)
        klen = 0 if key is None else len(key)
        if vlen > MAX_VALUE_BYTES:
            raise LimitExceeded(f"value is {vlen} bytes; the limit is {MAX_VALUE_BYTES}")
        if klen > MAX_KEY_BYTES:
            raise LimitExceeded(f"key is {klen} bytes; the limit is {MAX_KEY_BYTES}")
        offset = self.next_offset
        if offset > U64_MAX:
            raise WireError("the partition has used every offset")
        size = 8 + klen + vlen
        if self._open_count and (
            self._open_count >= self.max_records or self._open_bytes + size > self._room
        ):
            self._cuts.append(len(self._values))
            self._open_count = 0
            self._open_bytes = 0
        self._keys.append(key)
        self._values.append(value)
        self._open_count += 1
        self._open_bytes += size
        self.pending_bytes += size
        self.next_offset = offset + 1
        return offset

    def flush(self, timestamp_ms: int) -> list[bytes]:
        """Seal every queued record into blobs stamped ``timestamp_ms``; empty the queue."""
        keys, values = self._keys, self._values
        if not values:
            return []
        first = self.next_offset - len(values)
        bounds = [0, *self._cuts, len(values)]
        blobs = [
            seal_records(
                self.identity,
                self._topic_raw,
                first + a,
                keys[a:b],
                values[a:b],
                timestamp_ms,
                fmt=self.fmt,
            )
            for a, b in pairwise(bounds)
        ]
        self._keys, self._values, self._cuts = [], [], []
        self._open_count = self._open_bytes = self.pending_bytes = 0
        return blobs


def seal_batches(
    identity: Identity,
    topic: str,
    first_offset: int,
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes],
    timestamp_ms: int,
    *,
    max_records: int = DEFAULT_BATCH_RECORDS,
    max_bytes: int = DEFAULT_BATCH_BYTES,
    fmt: int = DEFAULT_BATCH_FORMAT,
    value_lengths: Sequence[int] | None = None,
) -> list[tuple[int, int, bytes]]:
    """Seal ``values`` (and ``keys``, or ``None`` for no keys) into signed blobs from ``first_offset``.

    Returns ``(first offset, count, blob)`` per blob, in offset order. The cuts
    follow :class:`BatchBuilder`'s rules (at most ``max_records`` records and
    ``max_bytes`` bytes per blob; a bigger record travels alone): this is the
    producer's natural batching, run on whatever was queued when its IO loop
    woke. Values and keys must be ``bytes``; ``value_lengths``, ``len`` of each
    value, when the caller has them already. ``fmt``: the batch format written
    (:data:`BATCH_FORMATS`).

    Nothing here is a Python step per record: a run of ``max_records`` records is
    one slice and one sum; only once a run is over ``max_bytes`` are the running
    sizes summed up, and the cuts found by bisection.
    """
    topic_raw = encode_topic(topic)
    count = len(values)
    if not count:
        return []
    if keys is not None and len(keys) != count:
        raise ValueError("keys and values differ in length")
    if value_lengths is not None and len(value_lengths) != count:
        raise ValueError("value lengths and values differ in length")
    if not 1 <= max_records <= MAX_BATCH_RECORDS:
        raise ValueError(f"max_records must be 1..{MAX_BATCH_RECORDS}")
    room = max_bytes - batch_overhead(topic)
    if room <= 8 or max_bytes > MAX_BLOB_BYTES:
        raise ValueError(f"max_bytes {max_bytes} out of range")
    vlens = list(map(len, values)) if value_lengths is None else value_lengths
    sizes: Sequence[int]  # key and value bytes of each record
    if keys is None or keys.count(None) == count:
        keys = None
        sizes = vlens
    elif None not in keys:
        sizes = list(map(add, vlens, map(len, keys)))  # type: ignore[arg-type]  # no None
    else:
        sizes = [n if k is None else n + len(k) for k, n in zip(keys, vlens, strict=True)]
    out: list[tuple[int, int, bytes]] = []
    ends: list[int] | None = None  # ends[i]: bytes of records [0, i), 8 each besides
    a = 0
    while a < count:
        b = min(count, a + max_records)
        if ends is None and sum(sizes[a:b]) + 8 * (b - a) > room:
            ends = list(accumulate(map(add, sizes, repeat(8)), initial=0))  # cut by size
        if ends is not None:
            # the most records from ``a`` whose bytes fit in ``room``; at least one
            b = max(a + 1, min(b, bisect_right(ends, ends[a] + room, a) - 1))
        blob = seal_records(
            identity,
            topic_raw,
            first_offset + a,
            keys[a:b] if keys is not None else None,
            values[a:b],
            timestamp_ms,
            vlens[a:b],
            fmt=fmt,
        )
        out.append((first_offset + a, b - a, blob))
        a = b
    return out


RICH_OVERHEAD: Final = struct.calcsize(">BBQQI32s") + 4
"""What a format-5 batch costs besides format 3's fixed part: codec, form, times, raw
length and root, and the payload's length (``dafka.wire.signed_rich``)."""
RICH_RECORD_OVERHEAD: Final = 19
"""A format-5 record's bytes besides its key, value and headers: flags, time, key
length, value length and header count."""


class RecordExtra(NamedTuple):
    """What a record carries besides its key and value, for format 5: its own time
    (``None``: the seal time), its headers (checked, ``check_headers``) and whether it
    is a tombstone (its value, queued as ``b""``, is then none)."""

    timestamp_ms: int | None = None
    headers: tuple[Header, ...] = ()
    tombstone: bool = False
    header_bytes: int = 0
    """The headers' encoded size (6 bytes, key and value each): :func:`header_bytes`."""


def header_bytes(headers: Sequence[Header]) -> int:
    """The encoded size of checked ``headers`` (as ``check_headers`` bounds it)."""
    return sum(6 + len(k.encode()) + (0 if v is None else len(v)) for k, v in headers)


def needs_rich(extras: Mapping[int, RecordExtra] | None, codec: Codec, compacted: bool) -> bool:
    """Whether a batch must be sealed in format 5: a record of it has headers, its own
    time or is a tombstone (``extras``), the producer compresses (``codec``), or its
    topic is compacted (a store may have to drop records from it). Otherwise format 3
    (or the producer's ``batch_format``): readers not yet upgraded keep reading it."""
    # guard: producer-seals-rich-when-needed
    return bool(extras) or codec is not Codec.NONE or compacted


def seal_rich_batches(
    identity: Identity,
    topic: str,
    first_offset: int,
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes],
    timestamp_ms: int,
    extras: Mapping[int, RecordExtra] | None,
    codec: Codec = Codec.NONE,
    *,
    max_records: int = DEFAULT_BATCH_RECORDS,
    max_bytes: int = DEFAULT_BATCH_BYTES,
) -> list[tuple[int, int, bytes]]:
    """Seal ``values`` (``keys``: one per value, or ``None``) as format-5 blobs from
    ``first_offset``: ``(first offset, count, blob)`` per blob, cut as
    :func:`seal_batches` cuts (records and bytes; the bytes counted before compression,
    so a compressed batch is never bigger than the cap allows). ``extras[i]`` is what
    record ``i`` carries besides (none: it is stamped ``timestamp_ms``, has no headers).
    A batch that ``codec`` would make bigger than a blob may be (incompressible data at
    the cap) is sealed uncompressed instead. The producer's slow path: a step per record."""
    topic_raw = encode_topic(topic)
    count = len(values)
    if not count:
        return []
    if keys is not None and len(keys) != count:
        raise ValueError("keys and values differ in length")
    if not 1 <= max_records <= MAX_BATCH_RECORDS:
        raise ValueError(f"max_records must be 1..{MAX_BATCH_RECORDS}")
    room = max_bytes - batch_overhead(topic) - RICH_OVERHEAD
    if room <= RICH_RECORD_OVERHEAD or max_bytes > MAX_BLOB_BYTES:
        raise ValueError(f"max_bytes {max_bytes} out of range")
    # columns, not a RichRecord per record (see seal_rich_columns)
    if keys is None:
        sizes = [RICH_RECORD_OVERHEAD + len(value) for value in values]
    else:
        sizes = [
            RICH_RECORD_OVERHEAD + len(value) + (0 if key is None else len(key))
            for key, value in zip(keys, values, strict=True)
        ]
    column: Sequence[bytes | None] = values
    times: list[int] | None = None
    headers: list[tuple[Header, ...]] | None = None
    if extras:
        extra_of = extras.get
        column = list(values)
        times = [timestamp_ms] * count
        headers = [()] * count
        for i in range(count):
            extra = extra_of(i)
            if extra is not None:
                if extra.timestamp_ms is not None:
                    times[i] = extra.timestamp_ms
                if extra.tombstone:
                    column[i] = None
                headers[i] = extra.headers
                sizes[i] += extra.header_bytes
    ends = list(accumulate(sizes, initial=0))
    # the headers before each record: a batch holds at most MAX_BATCH_HEADERS of them
    hends = None if headers is None else list(accumulate(map(len, headers), initial=0))
    out: list[tuple[int, int, bytes]] = []
    a = 0
    while a < count:
        b = min(count, a + max_records)
        # the most records from ``a`` whose bytes fit in ``room``; at least one
        b = max(a + 1, min(b, bisect_right(ends, ends[a] + room, a) - 1))
        if hends is not None:  # and whose headers fit in a batch's (one record's always do)
            b = max(a + 1, min(b, bisect_right(hends, hends[a] + MAX_BATCH_HEADERS, a) - 1))
        part = (
            None if keys is None else keys[a:b],
            column[a:b],
            None if times is None else times[a:b],
            None if headers is None else headers[a:b],
        )
        try:
            blob = seal_rich_columns(
                identity, topic_raw, first_offset + a, *part, timestamp_ms, codec
            )
        except LimitExceeded:
            if codec is Codec.NONE:
                raise
            blob = seal_rich_columns(identity, topic_raw, first_offset + a, *part, timestamp_ms)
        out.append((first_offset + a, b - a, blob))
        a = b
    return out


def _as_bytes(data: object, what: str) -> bytes:
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"record {what} must be bytes, not {type(data).__name__}")
