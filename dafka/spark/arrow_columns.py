"""Signed READ replies straight into Arrow columns: no Python object per record.

A signed batch blob keeps its records as two arrays of big-endian u32 lengths followed
by the keys and the values back to back (``docs/wire.md`` §9.3). Arrow's binary type is
an array of little-endian int32 offsets over one data buffer, so a column of a batch is
its lengths byte-swapped and summed into offsets over a slice of the blob itself; the
values are never copied one by one. Each blob is verified first
(:func:`~dafka.wire.signed_batch.verify_batch`: the producer's signature, its key's
ownership of the partition, topic and partition), once, and the offsets the store
claims for it are checked against the ones the producer signed.
"""

from __future__ import annotations

import sys
from array import array

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import WireError
from ..query.protocol import ReadReply
from ..wire.signed_batch import RecordLayout, record_layout, verify_batch

__all__ = ["signed_reply_columns"]

_SWAP = sys.byteorder == "little"


def _u32_be(blob: bytes, at: int, count: int) -> pa.Array:
    """``count`` big-endian u32 at ``blob[at:]`` as an Arrow uint32 array."""
    values = array("I")
    assert values.itemsize == 4
    values.frombytes(blob[at : at + 4 * count])
    if _SWAP:
        values.byteswap()
    return pa.Array.from_buffers(pa.uint32(), count, [None, pa.py_buffer(values)])


def _binary(data: pa.Buffer, lengths: pa.Array, valid: pa.Array | None) -> pa.Array:
    """A binary array of ``lengths`` consecutive values in ``data`` (nulls where not valid)."""
    ends = pc.cumulative_sum(lengths.cast(pa.int64()))
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), ends.cast(pa.int32())])
    bitmap = None
    if valid is not None:
        bitmap = valid.buffers()[1]
    return pa.Array.from_buffers(pa.binary(), len(lengths), [bitmap, offsets.buffers()[1], data])


def _columns(blob: bytes, layout: RecordLayout) -> tuple[pa.Array, pa.Array]:
    """``(keys, values)`` of one verified blob."""
    n = layout.count
    buf = pa.py_buffer(blob)
    klens = _u32_be(blob, layout.lengths_at, n)
    vlens = _u32_be(blob, layout.lengths_at + 4 * n, n)
    value_bytes = pc.sum(vlens.cast(pa.int64())).as_py() or 0
    values_at = layout.values_end - value_bytes
    values = _binary(buf.slice(values_at, value_bytes), vlens, None)
    present = pc.not_equal(klens, pa.scalar(RecordLayout.NO_KEY, pa.uint32()))
    has = pc.sum(present.cast(pa.int64())).as_py() or 0
    if has == 0:
        keys = pa.nulls(n, pa.binary())
    else:
        key_bytes = values_at - layout.keys_at
        sizes = klens if has == n else pc.if_else(present, klens, pa.scalar(0, pa.uint32()))
        keys = _binary(buf.slice(layout.keys_at, key_bytes), sizes, None if has == n else present)
    return keys, values


def signed_reply_columns(reply: ReadReply, lo: int, hi: int) -> list[pa.Array] | None:
    """Columns ``key, value, topic, partition, offset, timestamp`` (ms) for offsets
    ``lo..hi-1`` of a signed READ reply; ``None`` when it holds none of them.

    Raises :class:`~dafka.errors.WireError` (or a subclass) for a blob that does not
    verify or that holds other offsets than the store said.
    """
    keys: list[pa.Array] = []
    values: list[pa.Array] = []
    offsets: list[pa.Array] = []
    stamps: list[pa.Array] = []
    for first, last, blob in reply.batches():
        batch = verify_batch(blob, topic=reply.topic, partition=reply.partition)
        if batch.first_offset != first or batch.last_offset != last:
            raise WireError(
                f"{reply.topic}/{reply.partition}: stored batch {first}..{last} holds offsets "
                f"{batch.first_offset}..{batch.last_offset}"
            )
        if batch.is_gap:
            continue
        a, b = max(0, lo - first), min(batch.count, hi - first)
        if b <= a:
            continue
        k, v = _columns(batch.blob, record_layout(batch))
        keys.append(k.slice(a, b - a))
        values.append(v.slice(a, b - a))
        offsets.append(pa.arange(first + a, first + b))
        stamps.append(pa.repeat(pa.scalar(batch.timestamp_ms * 1000, pa.int64()), b - a))
    if not values:
        return None
    n = sum(len(v) for v in values)
    return [
        pa.concat_arrays(keys),
        pa.concat_arrays(values),
        pa.repeat(pa.scalar(reply.topic, pa.string()), n),
        pa.repeat(pa.scalar(reply.partition, pa.string()), n),
        pa.concat_arrays(offsets),
        pa.concat_arrays(stamps).cast(pa.timestamp("us", tz="UTC")),
    ]
