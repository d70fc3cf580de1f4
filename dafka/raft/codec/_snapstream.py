"""The InstallSnapshot byte stream of a state machine snapshot (see :mod:`dafka.raft.peer._peer`)::

    b"DAFKRSX1" | u32 meta length | meta | state machine data | u32 crc32

meta being msgpack ``[index, term, config frame]``.

RequestEntries (status 3) streams a reader the state machine's own bytes from our peers,
but this stream from a ØMQ RAFT reference peer that got the snapshot from one of our
leaders (it stores and serves the bytes as it was sent them): :func:`served_state` takes
either.
"""

from __future__ import annotations

import struct
import zlib

import msgpack

from ...errors import StorageError
from ._frames import RaftWireError, decode_config, encode_config
from ._types import SnapshotMeta

__all__ = ["pack_snapshot", "served_state", "unpack_snapshot"]

_SNAP_MAGIC = b"DAFKRSX1"
_U32 = struct.Struct("<I")


def pack_snapshot(meta: SnapshotMeta, data: bytes) -> bytes:
    """The InstallSnapshot byte stream for a state machine snapshot (see the module doc)."""
    head = msgpack.packb([meta.index, meta.term, encode_config(meta.config)], use_bin_type=True)
    body = b"".join((_SNAP_MAGIC, _U32.pack(len(head)), head, data))
    return body + _U32.pack(zlib.crc32(body))


def unpack_snapshot(blob: bytes) -> tuple[SnapshotMeta, bytes]:
    """Inverse of :func:`pack_snapshot`; :class:`StorageError` if damaged."""
    if len(blob) < len(_SNAP_MAGIC) + 8 or not blob.startswith(_SNAP_MAGIC):
        raise StorageError("not a Dafka Raft snapshot stream")
    body, (crc,) = blob[:-4], _U32.unpack(blob[-4:])
    if zlib.crc32(body) != crc:
        raise StorageError("snapshot stream fails its checksum")
    (size,) = _U32.unpack_from(body, len(_SNAP_MAGIC))
    start = len(_SNAP_MAGIC) + 4
    try:
        index, term, config = msgpack.unpackb(body[start : start + size], raw=False)
        meta = SnapshotMeta(index, term, decode_config(config))
    except Exception as exc:
        raise StorageError(f"snapshot stream meta does not decode: {exc}") from exc
    return meta, body[start + size :]


def served_state(blob: bytes, index: int) -> bytes:
    """The state machine bytes of a snapshot at ``index`` streamed by RequestEntries: the
    bytes as they are (our peers), or unpacked from this module's stream (a reference peer
    serving the one our leader sent it), checked (CRC, and the index the answer named).
    No state machine of ours writes bytes starting with the stream's magic (MessagePack)."""
    if not blob.startswith(_SNAP_MAGIC):
        return blob
    try:
        meta, data = unpack_snapshot(blob)
    except StorageError as exc:
        raise RaftWireError(f"a served snapshot stream that does not unpack: {exc}") from None
    # guard: raft-served-snapshot-stream-another
    if meta.index != index:
        raise RaftWireError(f"a served snapshot stream of index {meta.index}, announced {index}")
    return data
