"""Signed READ replies straight into Arrow columns: no Python object per record, and no
copy of the keys or values besides the one verification makes (``verify_batch`` takes
each blob as ``bytes``).

A signed batch blob keeps its records as two arrays of big-endian u32 lengths followed
by the keys and the values back to back (``docs/wire.md`` §9.3). Arrow's binary type is
an array of little-endian int32 offsets over one data buffer, so a column of a batch is
its lengths byte-swapped and summed into offsets (in C: ``array.byteswap`` and
``pyarrow.compute.cumulative_sum``) over the blob itself: the values are never copied.
Each blob is verified first, exactly once
(:func:`~dafka.wire.signed_batch.verify_batch`: the producer's signature, its key's
ownership of the partition, topic and partition), and the offsets the store claims for
it are checked against the ones the producer signed.

A format-5 batch (headers, record times, tombstones, compression, compaction;
``docs/wire.md`` §9.11) is verified the same way, then opened with
:func:`~dafka.wire.signed_batch.open_batch` within a bound on what it decompresses
(:data:`MAX_RAW`, checked against its signed raw length first) and its records checked
against the signed root; its columns are built from the opened records (a Python object
per record: the payload may be compressed, and a compacted batch has holes).

Only the columns asked for are built. The rows of one reply come out in chunks
(:func:`signed_reply_chunks`): a batch of at least :data:`CHUNK_ROWS` records is a
chunk of its own, whose binary columns point into its blob; smaller batches are
gathered until they hold that many rows and concatenated (a copy of small batches only).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import WireError
from ..query.protocol import ReadReply
from ..wire.signed_batch import RecordLayout, open_batch, record_layout, u32s, verify_batch
from ..wire.signed_rich import MAX_RAW_BYTES, RichRecords

__all__ = [
    "CHUNK_ROWS",
    "CREATE_TIME",
    "HEADERS",
    "MAX_RAW",
    "SIGNED_COLUMNS",
    "TYPES",
    "signed_reply_chunks",
]

CREATE_TIME = 0
"""``timestampType`` of a record stamped by its producer (Kafka's CreateTime): every
signed batch carries its producer's time."""

SIGNED_COLUMNS = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestampType",
    "headers",
)
"""The columns built here, with the Arrow types of :data:`TYPES` (``headers`` only with the
source's ``includeHeaders``)."""

HEADERS = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))
"""``array<struct<key: string, value: binary>>``, as Spark's Kafka source (a header
without a value has a null ``value``)."""

MAX_RAW = MAX_RAW_BYTES
"""Bytes one compressed batch may decompress to on an executor (checked, signed, before
decompressing)."""

TYPES: dict[str, pa.DataType] = {
    "key": pa.binary(),
    "value": pa.binary(),
    "topic": pa.string(),
    "partition": pa.string(),
    "offset": pa.int64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestampType": pa.int32(),
    "headers": HEADERS,
}

CHUNK_ROWS = 4096
"""A batch of at least this many records is a chunk of its own (its columns point into its
blob); smaller ones are gathered up to this many rows and concatenated."""

_NO_KEY_BYTES = RecordLayout.NO_KEY.to_bytes(4, "big")
_NO_KEY = pa.scalar(RecordLayout.NO_KEY, pa.uint32())
_ZERO = pa.scalar(0, pa.uint32())


def _lengths(blob: bytes, at: int, count: int) -> pa.Array:
    """``count`` big-endian u32 at ``blob[at:]`` as an Arrow uint32 array of ``count + 1``,
    a leading 0 first (so its cumulative sum is binary offsets)."""
    values = u32s(blob, at, count, lead=1)
    return pa.Array.from_buffers(pa.uint32(), count + 1, [None, pa.py_buffer(values)])


def _offsets(sizes: pa.Array) -> tuple[pa.Buffer, int]:
    """The int32 offsets of a binary array whose value sizes follow a leading 0 in ``sizes``
    (uint32; a null's is 0), and the values' total size.

    Their running sum is the offsets: uint32 never wraps here (a blob is at most 16 MiB),
    and below 2**31 its bits are the int32 offsets Arrow's binary type holds."""
    ends = pc.cumulative_sum(sizes)
    return ends.buffers()[1], ends[len(ends) - 1].as_py()


def _values(blob: bytes, layout: RecordLayout) -> pa.Array:
    """The values of one verified blob: a binary array over the blob, no copy."""
    n = layout.count
    offsets, total = _offsets(_lengths(blob, layout.lengths_at + 4 * n, n))
    data = pa.py_buffer(blob).slice(layout.values_end - total, total)
    return pa.Array.from_buffers(pa.binary(), n, [None, offsets, data])


def _keys(blob: bytes, layout: RecordLayout) -> pa.Array:
    """The keys of one verified blob (null where a record has none), over the blob."""
    n = layout.count
    at = layout.lengths_at
    if memoryview(blob)[at : at + 4 * n] == _NO_KEY_BYTES * n:
        return pa.nulls(n, pa.binary())
    sizes = _lengths(blob, at, n)
    present = pc.not_equal(sizes.slice(1), _NO_KEY)
    valid = None
    if not pc.all(present).as_py():
        bitmap = pc.if_else(present, True, False)  # a fresh array: its bitmap starts at bit 0
        assert bitmap.offset == 0
        valid = bitmap.buffers()[1]
        sizes = pc.if_else(pc.not_equal(sizes, _NO_KEY), sizes, _ZERO)
    offsets, total = _offsets(sizes)
    data = pa.py_buffer(blob).slice(layout.keys_at, total)
    return pa.Array.from_buffers(pa.binary(), n, [valid, offsets, data])


@dataclass(slots=True)
class _Piece:
    """Rows ``a..b-1`` of one verified blob (offsets ``first + a ..``)."""

    blob: bytes
    layout: RecordLayout
    first: int
    a: int
    b: int
    timestamp_ms: int

    @property
    def rows(self) -> int:
        return self.b - self.a


@dataclass(slots=True)
class _RichPiece:
    """Records ``a..b-1`` (positions in ``records``, a compacted batch's holes left out)
    of one verified, opened format-5 blob."""

    records: RichRecords
    a: int
    b: int

    @property
    def rows(self) -> int:
        return self.b - self.a


def _no_headers(rows: int) -> pa.Array:
    """``rows`` empty header lists (records of format 1 or 3)."""
    offsets = pa.py_buffer(bytes(4 * (rows + 1)))
    values = pa.array([], HEADERS.value_type)
    return pa.Array.from_buffers(HEADERS, rows, [None, offsets], children=[values])


def _rich_column(name: str, piece: _RichPiece) -> pa.Array:
    recs, a, b = piece.records, piece.a, piece.b
    if name == "value":
        return pa.array(recs.values[a:b], pa.binary())  # a tombstone is null
    if name == "key":
        return pa.array(recs.keys[a:b], pa.binary())
    if name == "offset":
        return pa.array(recs.offsets[a:b], pa.int64())
    if name == "headers":
        return pa.array(
            [[{"key": k, "value": v} for k, v in hs] for hs in recs.headers[a:b]], HEADERS
        )
    return pa.array([ts * 1000 for ts in recs.timestamps[a:b]], TYPES["timestamp"])


def _piece_column(name: str, piece: _Piece | _RichPiece) -> pa.Array:
    """Column ``name`` (binary, offset, timestamp or headers) of one piece."""
    if isinstance(piece, _RichPiece):
        return _rich_column(name, piece)
    a, rows = piece.a, piece.rows
    if name == "value":
        column = _values(piece.blob, piece.layout)
    elif name == "key":
        column = _keys(piece.blob, piece.layout)
    elif name == "offset":
        return pa.arange(piece.first + a, piece.first + piece.b)
    elif name == "headers":
        return _no_headers(rows)
    else:
        stamp = pa.scalar(piece.timestamp_ms * 1000, TYPES["timestamp"])
        return pa.repeat(stamp, rows)
    return column if a == 0 and rows == piece.layout.count else column.slice(a, rows)


def _chunk(
    pieces: list[_Piece | _RichPiece], names: Collection[str], reply: ReadReply
) -> dict[str, pa.Array]:
    """Columns ``names`` of the rows of ``pieces``: over the blob for one piece,
    concatenated (copied) for several."""
    n = sum(p.rows for p in pieces)
    out: dict[str, pa.Array] = {}
    for name in names:
        if name == "topic":
            out[name] = pa.repeat(pa.scalar(reply.topic, pa.string()), n)
        elif name == "partition":
            out[name] = pa.repeat(pa.scalar(reply.partition, pa.string()), n)
        elif name == "timestampType":
            out[name] = pa.repeat(pa.scalar(CREATE_TIME, pa.int32()), n)
        elif len(pieces) == 1:
            out[name] = _piece_column(name, pieces[0])
        else:
            out[name] = pa.concat_arrays([_piece_column(name, p) for p in pieces])
    return out


def signed_reply_chunks(
    reply: ReadReply,
    lo: int,
    hi: int,
    names: Collection[str] = SIGNED_COLUMNS,
    *,
    chunk_rows: int = CHUNK_ROWS,
    max_raw: int = MAX_RAW,
) -> Iterator[dict[str, pa.Array]]:
    """The rows of offsets ``lo..hi-1`` of a signed READ reply, in offset order, as chunks
    of columns ``names`` (of :data:`SIGNED_COLUMNS`; types :data:`TYPES`); none when the
    reply holds none of them. A column not named is never built. A batch of at least
    ``chunk_rows`` rows is a chunk of its own, over its blob; smaller ones are gathered.

    Every batch of the reply is verified, before any row of the reply is given: raises
    :class:`~dafka.errors.WireError` (or a subclass) for a blob that does not verify or
    that holds other offsets than the store said. A format-5 batch (headers, record
    times, tombstones, compression) is then opened with
    :func:`~dafka.wire.signed_batch.open_batch`: decompressed only if its signed raw
    length is within ``max_raw`` (:class:`~dafka.wire.signed_rich.DecompressionBomb`),
    its records checked against the signed root
    (:class:`~dafka.wire.signed_rich.RootMismatch`); a compacted batch's dropped records
    give no row; a tombstone's value is null.
    """
    unknown = set(names) - set(SIGNED_COLUMNS)
    if unknown:
        raise ValueError(f"no such column: {', '.join(sorted(unknown))}")
    pieces: list[_Piece | _RichPiece] = []
    for first, last, blob in reply.batches():
        batch = verify_batch(blob, topic=reply.topic, partition=reply.partition)
        if batch.first_offset != first or batch.last_offset != last:
            raise WireError(
                f"{reply.topic}/{reply.partition}: stored batch {first}..{last} holds offsets "
                f"{batch.first_offset}..{batch.last_offset}"
            )
        if batch.is_gap:
            continue
        if batch.is_rich:
            # guard: spark-opens-rich-within-bound
            recs = open_batch(batch, max_raw=max_raw)
            a = bisect_left(recs.offsets, lo)
            b = bisect_left(recs.offsets, hi)
            if b > a:
                pieces.append(_RichPiece(recs, a, b))
            continue
        a, b = max(0, lo - first), min(batch.count, hi - first)
        if b > a:
            pieces.append(_Piece(batch.blob, record_layout(batch), first, a, b, batch.timestamp_ms))
    pending: list[_Piece | _RichPiece] = []
    rows = 0
    for piece in pieces:
        if piece.rows >= chunk_rows:
            if pending:
                yield _chunk(pending, names, reply)
                pending, rows = [], 0
            yield _chunk([piece], names, reply)
            continue
        pending.append(piece)
        rows += piece.rows
        if rows >= chunk_rows:
            yield _chunk(pending, names, reply)
            pending, rows = [], 0
    if pending:
        yield _chunk(pending, names, reply)
