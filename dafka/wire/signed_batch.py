"""The ``signed`` profile's batch format: signed record batches and gap statements.

Pure, no zmq import; see ``docs/wire.md`` §9.3. A batch blob is frame 1 of RECORD
and DIRECT-RECORD, and is stored and re-served verbatim::

    format u8 = 3 or 1 | topic len u8 | topic | partition 16 | first u64 | count u32
    | timestamp_ms u64 | key lengths count*u32 (0xFFFFFFFF = no key)
    | value lengths count*u32 | keys | values | public key 32 | signature 64

    format 3: digest = BLAKE3-256(blob without its last 64 bytes)
              signature = Ed25519(b"dafka-batch-v3\\0" + digest)
    format 1: digest = BLAKE2b-256(blob without its last 64 bytes)
              signature = Ed25519(b"dafka-batch-v1\\0" + digest)

Format 5 (``format u8 = 5``, the same first seven fields) carries records with headers,
their own times, tombstones, a codec, and a signature a store keeps valid when it compacts
the batch: :mod:`.signed_rich`, ``docs/wire.md`` §9.11. :func:`verify_batch` takes it
without decompressing; :func:`open_batch` reads the records of any format.

The two record formats 1 and 3 differ only in the digest (and so in the signing context,
which keeps a signature over one from ever verifying as the other). Producers
write format 3 (:data:`DEFAULT_BATCH_FORMAT`; BLAKE3 hashes a full batch about
eight times faster than hashlib's BLAKE2b here); every reader accepts both, so
batches stored before the upgrade keep being served and verified.

The public key must own the partition (``identity.node_id_for``), so a batch
proves its author whoever served it.

Gap statement (format 2, same place and same signature rule): the producer's
signed word that offsets ``first .. first + count - 1`` hold no records and
never will (a range a crashed producer reserved but never got stored)::

    format u8 = 2 | topic len u8 | topic | partition 16 | first u64 | count u32
    | timestamp_ms u64 | public key 32 | signature 64     (digest and context of format 1)

It travels, is stored and is served exactly like a batch, so every node keeps
the same history; :attr:`Batch.is_gap` tells it apart and it has no records.

Gap statement with its run (format 4, what producers of this version write): the same
with the producer's *run* after the timestamp, a counter its state directory raises and
fsyncs at every start (issue 33). Runs order a producer's restarts without its clock: a
store lets a gap statement replace what an earlier run published there::

    format u8 = 4 | topic len u8 | topic | partition 16 | first u64 | count u32
    | timestamp_ms u64 | run u64 | public key 32 | signature 64   (as format 2)

:func:`encode_batch` and :func:`seal_gap` make blobs, :func:`peek_batch` reads a
header unverified, :func:`verify_batch` checks a blob completely. Every function
here raises only :class:`~dafka.errors.WireError` (and its subclasses in
:mod:`.signed_checks`) on bad bytes.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter
from typing import ClassVar, Final

from blake3 import blake3

from ..errors import WireError
from ..security.identity import Identity, node_id_bytes_for, verify
from .columns import Column
from .signed_checks import (
    PUBLIC_KEY_BYTES,
    SIGNATURE_BYTES,
    U64_MAX,
    BadSignature,
    LimitExceeded,
    WrongPartition,
    WrongTopic,
    encode_topic,
)
from .signed_rich import (
    BATCH_CONTEXT_V5,
    BATCH_FORMAT_V5,
    MAX_RAW_BYTES,
    RichRecords,
    open_rich,
    verify_digest,
)

__all__ = [
    "BATCH_CONTEXT",
    "BATCH_CONTEXT_V3",
    "BATCH_FORMATS",
    "BATCH_FORMAT_V1",
    "BATCH_FORMAT_V3",
    "DEFAULT_BATCH_FORMAT",
    "GAP_FORMAT",
    "GAP_RUN_FORMAT",
    "MAX_BATCH_RECORDS",
    "MAX_BLOB_BYTES",
    "MAX_GAP_OFFSETS",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "Batch",
    "BatchHeader",
    "RecordLayout",
    "batch_overhead",
    "encode_batch",
    "open_batch",
    "peek_batch",
    "record_layout",
    "seal_gap",
    "seal_records",
    "u32s",
    "unchecked_columns",
    "verify_batch",
]

BATCH_FORMAT_V1: Final = 1
"""Records, digest BLAKE2b-256: read always, written only when asked (for old readers)."""
GAP_FORMAT: Final = 2
GAP_RUN_FORMAT: Final = 4
"""A gap statement that carries its producer's run (what producers write since issue 33)."""
GAP_FORMATS: Final = (GAP_FORMAT, GAP_RUN_FORMAT)
BATCH_FORMAT_V3: Final = 3
"""Records, digest BLAKE3-256: what producers write."""
BATCH_FORMATS: Final = (BATCH_FORMAT_V1, BATCH_FORMAT_V3)
"""The record batch formats every reader accepts (and a producer may write)."""
DEFAULT_BATCH_FORMAT: Final = BATCH_FORMAT_V3
MAX_GAP_OFFSETS: Final = 2**32 - 1

BATCH_CONTEXT: Final = b"dafka-batch-v1\0"
"""Signed before a format-1 batch's or a gap statement's digest; never sent. Keeps batch,
head and ack signatures apart."""
BATCH_CONTEXT_V3: Final = b"dafka-batch-v3\0"
"""Signed before a format-3 batch's digest: a signature over one format never verifies as
the other, whatever their digests."""

MAX_BLOB_BYTES: Final = 16 * 1024 * 1024
MAX_BATCH_RECORDS: Final = 65_536
MAX_KEY_BYTES: Final = 64 * 1024
MAX_VALUE_BYTES: Final = MAX_BLOB_BYTES - 128 * 1024
"""A record within both caps always fits one batch, whatever its topic."""

_NO_KEY = 0xFFFFFFFF
_TRAILER = PUBLIC_KEY_BYTES + SIGNATURE_BYTES
_DIGEST = 32
_CONTEXTS: Final = {
    BATCH_FORMAT_V1: BATCH_CONTEXT,
    GAP_FORMAT: BATCH_CONTEXT,
    GAP_RUN_FORMAT: BATCH_CONTEXT,
    BATCH_FORMAT_V3: BATCH_CONTEXT_V3,
    BATCH_FORMAT_V5: BATCH_CONTEXT_V5,
}

_FIRST = itemgetter(0)
_SECOND = itemgetter(1)

_BATCH_FIXED = struct.Struct(">16sQIQ")  # partition, first offset, count, timestamp
_RUN = struct.Struct(">Q")

_NO_KEYS = _NO_KEY.to_bytes(4, "big") * MAX_BATCH_RECORDS
"""The key lengths of a batch without keys (its first ``4 * count`` bytes): compared as
bytes, so a batch without keys never has its key lengths unpacked one by one."""

_BIG_ENDIAN = sys.byteorder == "big"
assert array("I").itemsize == 4, "u32 lengths are packed as C unsigned ints"

_EMPTY: Final[Column[bytes]] = Column(b"", array("I"), 0, 0)
"""The values of a gap statement."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """A batch's header as read by :func:`peek_batch`: nothing here is verified."""

    topic: str
    partition: str
    first_offset: int
    count: int
    timestamp_ms: int
    is_gap: bool = False
    """A gap statement (format 2 or 4): ``count`` offsets with no records."""
    run: int | None = None
    """The producer's run a gap statement of format 4 was made in (None: any other)."""

    @property
    def last_offset(self) -> int:
        return self.first_offset + self.count - 1


@dataclass(frozen=True, slots=True)
class Batch:
    """A verified batch: the partition's own key signed every byte of :attr:`blob`.

    Made by :func:`verify_batch`. ``records`` is parsed from the blob on first
    use, so a store that only keeps the blob never pays for it. ``digest`` is
    BLAKE3-256 (format 3) or BLAKE2b-256 (format 1, gap statements) of the signed
    bytes (the blob without its signature): the same records at the same offsets in
    the same format always have the same digest, so two verified batches of one
    partition overlapping in offsets with different digests are equivocation (a
    producer writes one format, and re-publishes what it logged verbatim).
    """

    topic: str
    partition: str
    first_offset: int
    count: int
    timestamp_ms: int
    public_key: bytes = field(repr=False)
    digest: bytes = field(repr=False)
    blob: bytes = field(repr=False)
    is_gap: bool = False
    """A gap statement: the producer says its offsets hold no records, ever."""
    run: int | None = None
    """The producer's run a gap statement of format 4 was made in (None: any other)."""
    _records: tuple[tuple[bytes | None, bytes], ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _value_lengths: array[int] | None = field(default=None, init=False, repr=False, compare=False)
    """The value lengths :func:`verify_batch` checked, so reading records does not unpack
    them again."""

    @property
    def last_offset(self) -> int:
        return self.first_offset + self.count - 1

    @property
    def format(self) -> int:
        """The batch format byte (1, 3 or 5; 2 or 4 for gap statements)."""
        return self.blob[0]

    @property
    def is_rich(self) -> bool:
        """A format-5 batch: read its records with :func:`open_batch`, not ``records`` or
        ``columns`` (which raise for it, so that no reader drops its headers unseen)."""
        return self.blob[0] == BATCH_FORMAT_V5

    @property
    def records(self) -> tuple[tuple[bytes | None, bytes], ...]:
        """``(key, value)`` per offset from :attr:`first_offset`; key ``None`` if absent."""
        if self.is_rich:
            raise WireError("a format-5 batch: read it with open_batch")
        records = self._records
        if records is None and self.is_gap:
            records = ()
            object.__setattr__(self, "_records", records)
        if records is None:
            records = _parse_records(
                self.blob, len(self.topic.encode()), self.count, self._value_lengths
            )
            object.__setattr__(self, "_records", records)
        return records

    def columns(self) -> tuple[Column[bytes | None] | None, Column[bytes]]:
        """``(keys, values)`` as two :class:`~dafka.wire.columns.Column` in offset order over
        :attr:`blob` (no copy); ``keys`` is ``None`` if no record has one.

        The consumer's fast path: no object per record until one is read, and no key
        column at all for batches without keys. A gap statement gives ``(None, [])``
        (an empty column).
        """
        if self.is_gap:
            return None, _EMPTY
        if self.is_rich:
            raise WireError("a format-5 batch: read it with open_batch")
        return _record_columns(self.blob, len(self.topic.encode()), self.count, self._value_lengths)


def open_batch(batch: Batch, *, max_raw: int = MAX_RAW_BYTES) -> RichRecords:
    """The records of a verified batch of any record format, with their headers and
    times: format 5 decompressed (within ``max_raw``, checked before decompressing:
    :class:`~dafka.wire.signed_rich.DecompressionBomb`) and its hash list checked
    against the signed root (:class:`~dafka.wire.signed_rich.RootMismatch`); formats 1
    and 3 as records without headers, each at the batch's seal time. A gap statement
    has none."""
    if batch.is_gap:
        return RichRecords([], [], [], [], [])
    first, count = batch.first_offset, batch.count
    if batch.is_rich:
        records_at = 2 + batch.blob[1] + _BATCH_FIXED.size
        return open_rich(batch.blob, records_at, first, count, max_raw=max_raw)
    keys, values = batch.columns()
    return RichRecords(
        list(range(first, first + count)),
        [None] * count if keys is None else list(keys),
        list(values),
        [batch.timestamp_ms] * count,
        [()] * count,
    )


def batch_overhead(topic: str) -> int:
    """Bytes a batch of ``topic`` costs besides its records (8 bytes + key + value each)."""
    return 2 + len(topic.encode()) + _BATCH_FIXED.size + _TRAILER


def seal_records(
    identity: Identity,
    topic_raw: bytes,
    first_offset: int,
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes],
    timestamp_ms: int,
    value_lengths: Sequence[int] | None = None,
    fmt: int = DEFAULT_BATCH_FORMAT,
) -> bytes:
    """Encode and sign one batch; ``topic_raw`` is already checked (:func:`encode_topic`).

    ``keys``: one per value (``None`` for no key), or ``None`` when no record has one.
    ``value_lengths``: ``len`` of each value, when the caller has them already.
    ``fmt``: one of :data:`BATCH_FORMATS`."""
    if fmt != BATCH_FORMAT_V3 and fmt != BATCH_FORMAT_V1:
        raise ValueError(f"batch format {fmt!r} is not one of {BATCH_FORMATS}")
    count = len(values)
    check_batch_range(count, first_offset, timestamp_ms)
    vlens = list(map(len, values)) if value_lengths is None else value_lengths
    value_bytes = sum(vlens)
    if value_bytes > MAX_VALUE_BYTES and max(vlens) > MAX_VALUE_BYTES:  # else none can be
        raise LimitExceeded(f"a value is {max(vlens)} bytes; the limit is {MAX_VALUE_BYTES}")
    absent = count if keys is None else keys.count(None)
    if keys is None or absent == count:
        key_lengths = _NO_KEYS[: 4 * count]
        key_bytes = 0
        key_data = b""
    else:
        klens: list[int]
        if absent == 0:
            klens = list(map(len, keys))  # type: ignore[arg-type]  # absent == 0: no None
            real: Iterable[int] = klens
        else:
            klens = [_NO_KEY if k is None else len(k) for k in keys]
            real = [len(k) for k in keys if k is not None]
        longest = max(real)
        if longest > MAX_KEY_BYTES:
            raise LimitExceeded(f"a key is {longest} bytes; the limit is {MAX_KEY_BYTES}")
        key_data = b"".join(filter(None, keys))
        key_bytes = len(key_data)
        key_lengths = _pack_u32(klens)
    size = 2 + len(topic_raw) + _BATCH_FIXED.size + 8 * count + key_bytes + value_bytes + _TRAILER
    if size > MAX_BLOB_BYTES:
        raise LimitExceeded(f"batch is {size} bytes; the limit is {MAX_BLOB_BYTES}")
    head = (
        bytes((fmt, len(topic_raw)))
        + topic_raw
        + _BATCH_FIXED.pack(identity.node_id_bytes, first_offset, count, timestamp_ms)
        + key_lengths
        + _pack_u32(vlens)
        + key_data
    )
    signed = b"".join(chain((head,), values, (identity.public_key,)))
    return signed + identity.sign(_CONTEXTS[fmt] + _digest(fmt, signed))


def check_batch_range(count: int, first_offset: int, timestamp_ms: int) -> None:
    """What every record batch format checks before sealing: 1 to MAX_BATCH_RECORDS
    records, offsets and seal time within u64."""
    if count == 0:
        raise WireError("a batch holds at least one record")
    if count > MAX_BATCH_RECORDS:
        raise LimitExceeded(f"{count} records in one batch; the limit is {MAX_BATCH_RECORDS}")
    if first_offset < 0 or first_offset + count - 1 > U64_MAX:
        raise WireError(f"offsets {first_offset}..+{count} out of range")
    if not 0 <= timestamp_ms <= U64_MAX:
        raise WireError(f"timestamp {timestamp_ms} out of range")


def _digest(fmt: int, signed: bytes | memoryview) -> bytes:
    """The digest a blob of format ``fmt`` (already checked) signs: BLAKE3-256 for format
    3, BLAKE2b-256 for format 1 and gap statements."""
    if fmt == BATCH_FORMAT_V3:
        return blake3(signed).digest()
    return hashlib.blake2b(signed, digest_size=_DIGEST).digest()


def _pack_u32(numbers: Sequence[int]) -> bytes:
    """``numbers`` as big-endian u32 (each must fit), in C rather than one by one."""
    packed = array("I", numbers)
    if not _BIG_ENDIAN:
        packed.byteswap()
    return packed.tobytes()


def encode_batch(
    identity: Identity,
    topic: str,
    first_offset: int,
    records: Sequence[tuple[bytes | None, bytes]],
    timestamp_ms: int,
    *,
    fmt: int = DEFAULT_BATCH_FORMAT,
) -> bytes:
    """One signed batch blob of ``records`` (``(key or None, value)``) from ``first_offset``.

    The partition is ``identity``'s node ID; ``fmt`` is one of :data:`BATCH_FORMATS`
    (format 1 only for readers not yet upgraded). Raises :class:`WireError` for what the
    profile cannot carry (no records, a bad topic, offsets or timestamp out of
    u64) and :class:`LimitExceeded` for counts and sizes over the caps.
    """
    topic_raw = encode_topic(topic)
    if not records:
        raise WireError("a batch holds at least one record")
    try:
        keys = list(map(_FIRST, records))
        values = list(map(_SECOND, records))
    except (TypeError, IndexError, KeyError) as exc:
        raise TypeError("records must be (key, value) pairs") from exc
    return seal_records(identity, topic_raw, first_offset, keys, values, timestamp_ms, fmt=fmt)


def seal_gap(
    identity: Identity,
    topic: str,
    first_offset: int,
    count: int,
    timestamp_ms: int,
    run: int | None = None,
) -> bytes:
    """A signed gap statement: offsets ``first_offset .. + count - 1`` of ``identity``'s
    partition hold no records, ever (see the module docstring); format 4 with ``run``,
    format 2 without."""
    topic_raw = encode_topic(topic)
    if not 1 <= count <= MAX_GAP_OFFSETS:
        raise WireError(f"a gap covers 1 to {MAX_GAP_OFFSETS} offsets, not {count}")
    if first_offset < 0 or first_offset + count - 1 > U64_MAX:
        raise WireError(f"offsets {first_offset}..+{count} out of range")
    if not 0 <= timestamp_ms <= U64_MAX:
        raise WireError(f"timestamp {timestamp_ms} out of range")
    if run is not None and not 0 <= run <= U64_MAX:
        raise WireError(f"run {run} out of range")
    fmt = GAP_FORMAT if run is None else GAP_RUN_FORMAT
    signed = (
        bytes((fmt, len(topic_raw)))
        + topic_raw
        + _BATCH_FIXED.pack(identity.node_id_bytes, first_offset, count, timestamp_ms)
        + (b"" if run is None else _RUN.pack(run))
        + identity.public_key
    )
    return signed + identity.sign(BATCH_CONTEXT + _digest(fmt, signed))


def _header(blob: bytes) -> tuple[str, bytes, int, int, int, int]:
    """``(topic, partition raw, first, count, timestamp, records_at)`` after shape checks.

    A gap statement (``blob[0] == GAP_FORMAT``) has no records: its size is
    exactly ``records_at`` plus the trailer.
    """
    size = len(blob)
    # guard: blob-size-cap
    if size > MAX_BLOB_BYTES:
        raise LimitExceeded(f"batch is {size} bytes; the limit is {MAX_BLOB_BYTES}")
    if size < 2:
        raise WireError("truncated batch header")
    fmt = blob[0]
    if (
        fmt != BATCH_FORMAT_V3
        and fmt != BATCH_FORMAT_V1
        and fmt != GAP_FORMAT
        and fmt != GAP_RUN_FORMAT
        and fmt != BATCH_FORMAT_V5
    ):
        raise WireError(f"unknown batch format {fmt}")
    topic_end = 2 + blob[1]
    records_at = topic_end + _BATCH_FIXED.size
    if fmt == GAP_RUN_FORMAT:
        records_at += _RUN.size  # the run, where a batch's records start
        fmt = GAP_FORMAT
    if fmt == GAP_FORMAT:
        if size != records_at + _TRAILER:
            raise WireError("a gap statement is not exactly its header and trailer")
    elif size < records_at + 8 + _TRAILER:
        raise WireError("truncated batch")
    topic_raw = blob[2:topic_end]
    if not topic_raw or b"\0" in topic_raw:
        raise WireError("batch topic is empty or contains NUL")
    try:
        topic = topic_raw.decode()
    except UnicodeDecodeError as exc:
        raise WireError("batch topic is not UTF-8") from exc
    partition, first, count, timestamp = _BATCH_FIXED.unpack_from(blob, topic_end)
    if count == 0:
        raise WireError("batch with no records")
    if first + count - 1 > U64_MAX:
        raise WireError("batch offsets run past 2**64 - 1")
    if fmt == GAP_FORMAT:
        return topic, partition, first, count, timestamp, records_at
    if count > MAX_BATCH_RECORDS:
        raise LimitExceeded(f"{count} records in one batch; the limit is {MAX_BATCH_RECORDS}")
    if fmt != BATCH_FORMAT_V5 and size < records_at + 8 * count + _TRAILER:
        raise WireError("truncated batch")
    return topic, partition, first, count, timestamp, records_at


def peek_batch(blob: bytes) -> BatchHeader:
    """The header of ``blob`` without verifying anything but its shape (O(1)).

    For routing and dropping duplicates before paying for :func:`verify_batch`;
    never act on these values otherwise.
    """
    blob = bytes(blob)
    topic, partition, first, count, timestamp, records_at = _header(blob)
    fmt = blob[0]
    return BatchHeader(
        topic,
        partition.hex().upper(),
        first,
        count,
        timestamp,
        fmt in GAP_FORMATS,
        _gap_run(blob, records_at),
    )


def _gap_run(blob: bytes, records_at: int) -> int | None:
    """The run of a format-4 gap statement whose shape :func:`_header` checked (it ends
    where a batch's records would start); None for any other blob."""
    if blob[0] != GAP_RUN_FORMAT:
        return None
    run: int = _RUN.unpack_from(blob, records_at - _RUN.size)[0]
    return run


def _keyless(blob: bytes, records_at: int, count: int) -> bool:
    """Whether no record of the batch has a key (every key length is ``_NO_KEY``)."""
    return blob[records_at : records_at + 4 * count] == _NO_KEYS[: 4 * count]


def u32s(blob: bytes, at: int, count: int, *, lead: int = 0) -> array[int]:
    """``count`` big-endian u32 from ``blob[at:]`` in native order, unpacked in C (no int
    object each, no copy of the slice), after ``lead`` zeros (a leading 0 makes the running
    sum of lengths the offsets Arrow wants)."""
    numbers = array("I", bytes(4 * lead))
    assert numbers.itemsize == 4
    numbers.frombytes(memoryview(blob)[at : at + 4 * count])
    if not _BIG_ENDIAN:
        numbers.byteswap()
    return numbers


def _key_lengths_of(blob: bytes, records_at: int, count: int) -> array[int]:
    return u32s(blob, records_at, count)


def _value_lengths_of(blob: bytes, records_at: int, count: int) -> array[int]:
    return u32s(blob, records_at + 4 * count, count)


def _key_lengths(klens: array[int], count: int) -> tuple[int, int] | None:
    """``(total, longest)`` of the present keys; None when no record has a key."""
    if _NO_KEY not in klens:
        return sum(klens), max(klens)
    absent = klens.count(_NO_KEY)
    if absent == count:
        return None
    real = [k for k in klens if k != _NO_KEY]
    return sum(real), max(real)


def verify_batch(blob: bytes, *, topic: str | None = None, partition: str | None = None) -> Batch:
    """Check ``blob`` completely and return it as a :class:`Batch`.

    Raises :class:`WireError` for a malformed blob, :class:`LimitExceeded` for one
    over the caps, :class:`WrongTopic` / :class:`WrongPartition` when it is not of
    the ``topic`` / ``partition`` given (the ones it was sent under or fetched
    for), :class:`WrongPartition` when its key does not own its partition, and
    :class:`BadSignature` when the signature does not verify. Costs one hash pass
    over the blob (BLAKE3 for format 3, BLAKE2b for format 1 and gap statements: the
    format byte is signed, and picks the digest and the signing context) and one
    Ed25519 verification; records are parsed only when :attr:`Batch.records` is
    first read.
    """
    blob = bytes(blob)
    b_topic, b_partition, first, count, timestamp, records_at = _header(blob)
    if topic is not None and b_topic != topic:
        raise WrongTopic(f"batch of topic {b_topic!r} where {topic!r} was expected")
    partition_id = b_partition.hex().upper()
    if partition is not None and partition_id != partition:
        raise WrongPartition(f"batch of partition {partition_id} where {partition} was expected")
    end = len(blob) - SIGNATURE_BYTES
    public_key = blob[end - PUBLIC_KEY_BYTES : end]
    # guard: key-partition-binding
    if node_id_bytes_for(public_key) != b_partition:
        raise WrongPartition(f"batch signed by a key that does not own partition {partition_id}")
    fmt = blob[0]
    gap = fmt in GAP_FORMATS
    if fmt == BATCH_FORMAT_V5:
        vlens = None
        digest = verify_digest(blob, records_at, end - PUBLIC_KEY_BYTES, first, count)
    else:
        vlens = None if gap else _check_lengths(blob, records_at, count, end)
        # guard: batch-format-picks-digest
        digest = _digest(fmt, memoryview(blob)[:end])
    # guard: batch-signature
    if not verify(public_key, _CONTEXTS[fmt] + digest, blob[end:]):
        raise BadSignature(f"batch of partition {partition_id} has a bad signature")
    batch = Batch(
        b_topic,
        partition_id,
        first,
        count,
        timestamp,
        public_key,
        digest,
        blob,
        gap,
        _gap_run(blob, records_at),
    )
    object.__setattr__(batch, "_value_lengths", vlens)
    return batch


def _check_lengths(blob: bytes, records_at: int, count: int, end: int) -> array[int]:
    """The per-record lengths of a record blob (format 1 or 3) are within the caps and add up; returns
    the value lengths. (No length is over a cap when their total is not.)"""
    key_total = 0
    if not _keyless(blob, records_at, count):
        keys = _key_lengths(_key_lengths_of(blob, records_at, count), count)
        key_total, key_longest = keys if keys is not None else (0, 0)
        if key_longest > MAX_KEY_BYTES:
            raise LimitExceeded(f"a key is {key_longest} bytes; the limit is {MAX_KEY_BYTES}")
    vlens = _value_lengths_of(blob, records_at, count)
    value_total = sum(vlens)
    if value_total > MAX_VALUE_BYTES and max(vlens) > MAX_VALUE_BYTES:
        raise LimitExceeded(f"a value is {max(vlens)} bytes; the limit is {MAX_VALUE_BYTES}")
    if records_at + 8 * count + key_total + value_total != end - PUBLIC_KEY_BYTES:
        raise WireError("batch record lengths do not add up to its size")
    return vlens


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """Where a record blob (format 1 or 3) keeps its records (byte positions in the blob).

    ``count`` key lengths then ``count`` value lengths (u32, big-endian; a key length
    of :attr:`NO_KEY` means no key) start at ``lengths_at``; the keys follow back to
    back from ``keys_at``, then the values, which end at ``values_end`` (so they start
    at ``values_end`` minus their total length). For decoders that build columns
    without a Python object per record.
    """

    count: int
    lengths_at: int
    keys_at: int
    values_end: int

    NO_KEY: ClassVar[int] = _NO_KEY


def record_layout(batch: Batch) -> RecordLayout:
    """The :class:`RecordLayout` of a verified (so well-formed) record batch."""
    if batch.is_gap:
        raise WireError("a gap statement holds no records")
    lengths_at = 2 + batch.blob[1] + _BATCH_FIXED.size
    return RecordLayout(
        batch.count, lengths_at, lengths_at + 8 * batch.count, len(batch.blob) - _TRAILER
    )


def unchecked_columns(blob: bytes) -> tuple[Column[bytes | None] | None, Column[bytes]]:
    """``(keys, values)`` of a blob checked for shape but **not** for its signature.

    For readers of blobs that were verified when they were stored (a store's
    query endpoint reading its own LMDB). Raises :class:`WireError` for a blob
    whose shape or lengths are wrong.
    """
    blob = bytes(blob)
    _topic, _partition, _first, count, _ts, records_at = _header(blob)
    if blob[0] in GAP_FORMATS:
        return None, _EMPTY
    if blob[0] == BATCH_FORMAT_V5:
        raise WireError("a format-5 batch: read it with open_batch")
    vlens = _check_lengths(blob, records_at, count, len(blob) - SIGNATURE_BYTES)
    return _record_columns(blob, blob[1], count, vlens)


def _record_columns(
    blob: bytes, topic_len: int, count: int, vlens: array[int] | None = None
) -> tuple[Column[bytes | None] | None, Column[bytes]]:
    """Keys (``None`` if no record has one) and values of a checked blob, as columns over
    it (``vlens``: its value lengths, if they were read already)."""
    records_at = 2 + topic_len + _BATCH_FIXED.size
    if vlens is None:
        vlens = _value_lengths_of(blob, records_at, count)
    keys_at = records_at + 8 * count
    values_end = len(blob) - _TRAILER
    if _keyless(blob, records_at, count):
        return None, Column(blob, vlens, keys_at, values_end)
    klens = _key_lengths_of(blob, records_at, count)
    values_at = keys_at + sum(klens) - _NO_KEY * klens.count(_NO_KEY)
    keys: Column[bytes | None] = Column(blob, klens, keys_at, values_at, nullable=True)
    return keys, Column(blob, vlens, values_at, values_end)


def _parse_records(
    blob: bytes, topic_len: int, count: int, vlens: array[int] | None = None
) -> tuple[tuple[bytes | None, bytes], ...]:
    """The records of a blob whose lengths :func:`verify_batch` already checked."""
    keys, values = _record_columns(blob, topic_len, count, vlens)
    return tuple(zip(repeat(None, count) if keys is None else keys, values, strict=False))
