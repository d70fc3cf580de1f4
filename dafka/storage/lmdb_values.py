"""How a batch is kept in LMDB's ``batches`` database and checked when it is read
(``dafka.storage.lmdb_store``, ``dafka.storage.integrity``): ``first offset u64 |
digest 4 | blob``, the digest the CRC-32 of the key and ``first | blob``."""

from __future__ import annotations

import logging
import struct
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .base import StoredBatch
from .integrity import DIGEST_SIZE
from .keys import partition_prefix

__all__ = [
    "HEAD_ENTRY_SIZE",
    "BadBatch",
    "head_entry",
    "read_head_entry",
    "IntegrityStats",
    "batch_items",
    "batch_record_time",
    "batch_timestamp",
    "checked_blob",
    "keyed_batches",
    "value_of",
]

log = logging.getLogger(__name__)

_U64 = struct.Struct(">Q")
_BLOB_AT = 8 + DIGEST_SIZE
_DIGEST = struct.Struct(">I")
_LOG_PERIOD = 5.0


@dataclass(frozen=True, slots=True)
class BadBatch:
    """A stored batch whose digest did not match: never served until replaced."""

    topic: str
    partition: str
    first: int
    last: int
    found_by: str  # "read" (a fetch or query) or "scrub"


@dataclass(slots=True)
class IntegrityStats:
    """What the digests found (``docs/metrics.md``); the scrub's progress beside it."""

    verified: int = 0
    """Batches whose digest was checked (reads and scrub)."""
    bad_found: int = 0
    """Distinct batches found bad (a copy replaced and found bad again counts again)."""
    repaired: int = 0
    """Bad batches replaced by a good copy from another store."""
    scrub_bytes: int = 0
    """Bytes the scrub has read and checked."""
    scrub_passes: int = 0
    """Passes of the scrub over everything held, completed."""
    _last_log: float = -_LOG_PERIOD
    _unlogged: int = 0

    def log_bad(self, path: Path, bad: BadBatch) -> None:
        """One line per bad batch, at most one every few seconds (the rest counted)."""
        now = time.monotonic()
        if now - self._last_log < _LOG_PERIOD:
            self._unlogged += 1
            return
        self._last_log = now
        log.error(
            "store.batch_corrupt path=%s topic=%s partition=%s first=%d last=%d found_by=%s "
            "not_logged=%d action=not-served,repair-from-other-stores",
            path,
            bad.topic,
            bad.partition,
            bad.first,
            bad.last,
            bad.found_by,
            self._unlogged,
        )
        self._unlogged = 0


def batch_items(keyed: Sequence[tuple[bytes, StoredBatch]]) -> Iterator[tuple[bytes, bytes]]:
    """The ``(key, first offset u64 | digest | blob)`` pairs of ``keyed`` for ``putmulti``,
    each value made only when LMDB takes it.

    A value is a copy of its blob (py-lmdb cannot write one from several buffers), and
    LMDB copies it again into its own page. Made one at a time, each value is freed before
    the next is made: its memory is the next one's, still in the CPU's cache and mapped,
    where a list of every value of a drain (up to 64 MiB) was written, then read back
    from memory by LMDB's copy, and held all at once.
    """
    pack = _U64.pack
    crc = zlib.crc32
    for key, batch in keyed:
        first = pack(batch.first_offset)
        blob = batch.blob
        yield key, first + _DIGEST.pack(crc(blob, crc(first, crc(key)))) + blob


def value_of(key: bytes, first: int, blob: bytes, digested: bool = True) -> bytes:
    """One stored value (:func:`batch_items` for one batch; ``digested`` False: the schema 2
    form, for a batch below its partition's ``digests from``)."""
    head = _U64.pack(first)
    if not digested:
        return head + blob
    crc = zlib.crc32
    return head + _DIGEST.pack(crc(blob, crc(head, crc(key)))) + blob


def checked_blob(
    key: bytes | memoryview,
    value: bytes | memoryview,
    digested: bool,
    stats: IntegrityStats,
) -> memoryview | None:
    """The blob of a stored value, or None if its digest does not match (``digested``
    False: a schema 2 value, returned as it is)."""
    view = memoryview(value)
    if not digested:
        return view[8:]
    if len(view) < _BLOB_AT:
        return None
    crc = zlib.crc32
    blob = view[_BLOB_AT:]
    stats.verified += 1
    # guard: store-checks-batch-against-digest
    if crc(blob, crc(view[:8], crc(key))) != _DIGEST.unpack_from(view, 8)[0]:
        return None
    return blob


def keyed_batches(batches: Sequence[StoredBatch]) -> list[tuple[bytes, StoredBatch]]:
    """Each batch with its key in ``batches``, sorted by key so the B-tree is filled in order.

    Keys are not globally monotonic (partitions interleave, and other
    partitions' keys may sort after), so ``append=True`` cannot be used.
    """
    pack = _U64.pack
    prefixes: dict[tuple[str, str], bytes] = {}
    keyed: list[tuple[bytes, StoredBatch]] = []
    add = keyed.append
    topic: str | None = None
    partition: str | None = None
    prefix = b""
    for batch in batches:
        # runs of one partition (rfc46: a batch per record) reuse the previous prefix
        if batch.partition != partition or batch.topic != topic:
            topic, partition = batch.topic, batch.partition
            pkey = (topic, partition)
            known = prefixes.get(pkey)
            if known is None:
                known = prefixes[pkey] = partition_prefix(topic, partition)
            prefix = known
        add((prefix + pack(batch.last_offset), batch))
    if len(prefixes) > 1:
        keyed.sort(key=_first)
    return keyed


def batch_timestamp(value: memoryview | bytes, blob_at: int) -> int | None:
    """The producer timestamp of a stored signed batch (its blob at ``blob_at``), read
    in place: the blob is ``format u8 | topic length u8 | topic | partition 16 | first u64 |
    count u32 | timestamp u64 | ...`` (``dafka.wire.signed_batch``)."""
    if len(value) < blob_at + 2:
        return None
    at = blob_at + 2 + value[blob_at + 1] + 16 + 8 + 4
    if len(value) < at + 8:
        return None
    return int(_U64.unpack_from(value, at)[0])


_RICH_FORMAT = 5
_RICH_TIMES = struct.Struct(">BBQQ")  # codec, form, min time, max time


def batch_record_time(value: memoryview | bytes, blob_at: int) -> int | None:
    """The newest of a stored format-5 batch's records' own times, read in place from its
    signed header (``dafka.wire.signed_rich``: after the fields :func:`batch_timestamp`
    reads come ``codec u8 | form u8 | min time u64 | max time u64``), when it differs
    from the seal stamp; None for other formats, or when every record is at the seal
    time. Retention ages the batch by it (``dafka.storage.retention``)."""
    if len(value) < blob_at + 2 or value[blob_at] != _RICH_FORMAT:
        return None
    at = blob_at + 2 + value[blob_at + 1] + 16 + 8 + 4
    if len(value) < at + 8 + _RICH_TIMES.size:
        return None
    (seal,) = _U64.unpack_from(value, at)
    _codec, _form, _lo, hi = _RICH_TIMES.unpack_from(value, at + 8)
    return None if hi == seal else int(hi)


def _first(item: tuple[bytes, StoredBatch]) -> bytes:
    return item[0]


_HEAD_FIELDS = struct.Struct(">QQBQ")  # head, tail, profile, digests from
HEAD_ENTRY_SIZE = _HEAD_FIELDS.size + _DIGEST.size
"""A partition's entry in the ``heads`` database: its fields and their CRC-32 (with the
key). Without it one flipped bit in "digests from" switched the digest check off for the
whole partition (the digests were then served as record bytes), and one in the head made
the store wait for, or equivocate over, offsets it never held (a red-team pass)."""


def head_entry(key: bytes, head: int, tail: int, profile: int, since: int) -> bytes:
    """The ``heads`` value of the partition keyed ``key``."""
    fields = _HEAD_FIELDS.pack(head, tail, profile, since)
    return fields + _DIGEST.pack(zlib.crc32(fields, zlib.crc32(key)))


def read_head_entry(key: bytes, value: bytes) -> tuple[int, int, int, int] | None:
    """``(head, tail, profile, since)`` from a :func:`head_entry` value; None if its
    checksum does not hold (the entry is damaged)."""
    if len(value) != HEAD_ENTRY_SIZE:
        return None
    fields = value[: _HEAD_FIELDS.size]
    # guard: store-checks-partition-heads-entry
    if _DIGEST.unpack_from(value, _HEAD_FIELDS.size)[0] != zlib.crc32(fields, zlib.crc32(key)):
        return None
    head, tail, profile, since = _HEAD_FIELDS.unpack(fields)
    return head, tail, profile, since
