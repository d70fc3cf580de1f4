"""The InstallSnapshot byte stream of a state machine snapshot (see :mod:`dafka.raft.peer`)::

    b"DAFKRSX1" | u32 meta length | meta | state machine data | u32 crc32

meta being msgpack ``[index, term, config frame]``.
"""

from __future__ import annotations

import struct
import zlib

import msgpack

from ..errors import StorageError
from .frames import decode_config, encode_config
from .types import SnapshotMeta

__all__ = ["pack_snapshot", "unpack_snapshot"]

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
