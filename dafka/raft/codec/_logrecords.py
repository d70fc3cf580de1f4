"""The records of the Raft log file (:mod:`dafka.raft.peer._storage` has the file's format and
its recovery rules): encoding, parsing, and telling rot in a complete record from a
torn write (:mod:`dafka.raft.codec._rot`)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import NamedTuple

from ...errors import StorageError
from ._frames import RaftWireError, encode_entry
from ._rot import single_byte_rot
from ._types import Entry

__all__ = [
    "MAX_RECORD",
    "REC_HEADER_SIZE",
    "REC_MAGIC",
    "LostEntries",
    "Record",
    "encode_records",
    "parse_record",
    "rotten_record",
]

REC_MAGIC = b"\xd5RL\x01"
REC_TAIL = struct.Struct("<IQQ")  # length, index, batch
REC_HEADER_SIZE = 8 + REC_TAIL.size  # magic + crc + tail
MAX_RECORD = 1 << 30
_U32 = struct.Struct("<I")


class LostEntries(NamedTuple):
    """Fsynced log records found damaged at open (``FileStorage(recover=True)``)."""

    first: int
    """The index of the damaged record: the log is cut before it."""
    last: int
    """The highest index the log held (of any valid record past the damage, or ``first``):
    this peer may have acknowledged entries up to here."""
    offset: int
    dropped_bytes: int


class Record(NamedTuple):
    log_index: int
    batch: int
    entry: bytes
    end: int


def parse_record(buf: bytes, pos: int) -> Record | None:
    """The record at ``pos`` if it is complete and its checksum holds, else None."""
    if len(buf) - pos < REC_HEADER_SIZE or buf[pos : pos + 4] != REC_MAGIC:
        return None
    (crc,) = _U32.unpack_from(buf, pos + 4)
    length, index, batch = REC_TAIL.unpack_from(buf, pos + 8)
    end = pos + REC_HEADER_SIZE + length
    if length > MAX_RECORD or end > len(buf):
        return None
    if zlib.crc32(memoryview(buf)[pos + 8 : end]) != crc:
        return None
    return Record(index, batch, buf[pos + REC_HEADER_SIZE : end], end)


def rotten_record(buf: bytes, pos: int) -> bool:
    """Whether the bad record at ``pos`` was complete on disk and one of its bytes rotted
    (:mod:`dafka.raft.codec._rot`): its magic, its CRC, its length or a byte its CRC covers
    differs by one byte that reads nonzero, and the record is valid once it is fixed."""
    if len(buf) - pos < REC_HEADER_SIZE:
        return False
    magic_diff = [k for k in range(4) if buf[pos + k] != REC_MAGIC[k]]
    (crc,) = _U32.unpack_from(buf, pos + 4)
    (length,) = _U32.unpack_from(buf, pos + 8)
    end = pos + REC_HEADER_SIZE + length
    view = memoryview(buf)
    if magic_diff:  # a rotten magic: the rest verifies as it is
        return (
            len(magic_diff) == 1
            and buf[pos + magic_diff[0]] != 0
            and length <= MAX_RECORD
            and end <= len(buf)
            and zlib.crc32(view[pos + 8 : end]) == crc
        )
    if length <= MAX_RECORD and end <= len(buf):
        region = view[pos + 8 : end]
        if single_byte_rot(region, zlib.crc32(region), crc) is not None:
            return True
    # a rotten length: the record ends where the file or a next record starts
    ends = [len(buf)]
    at = buf.find(REC_MAGIC, pos + REC_HEADER_SIZE)
    while at != -1 and len(ends) < 8:
        ends.append(at)
        at = buf.find(REC_MAGIC, at + 1)
    for true_end in ends:
        true_length = true_end - pos - REC_HEADER_SIZE
        if not 0 <= true_length <= MAX_RECORD or true_length == length:
            continue
        diff = [k for k in range(4) if ((true_length ^ length) >> (8 * k)) & 0xFF]
        if len(diff) != 1 or not (length >> (8 * diff[0])) & 0xFF:
            continue
        fixed = zlib.crc32(view[pos + 12 : true_end], zlib.crc32(_U32.pack(true_length)))
        if fixed == crc:
            return True
    return False


def encode_records(entries: Sequence[Entry], batch: int, pos: int) -> tuple[bytes, list[int]]:
    """The records of ``entries``, and the file offset of each when written at ``pos``.
    Raises :class:`StorageError` unless the entries' indexes are consecutive (checked in
    the same pass: a leader's or a follower's whole batch goes through here)."""
    parts: list[bytes] = []
    offsets: list[int] = []
    crc32, tail_of, magic, crc_of = zlib.crc32, REC_TAIL.pack, REC_MAGIC, _U32.pack
    expected = entries[0].index if entries else 0
    for entry in entries:
        index = entry.index
        if index != expected:
            raise StorageError(f"entries are not consecutive at index {index}")
        try:
            body = encode_entry(entry)
        except RaftWireError as exc:
            raise StorageError(f"entry {index} cannot be stored: {exc}") from exc
        length = len(body)
        if length > MAX_RECORD:  # recovery would take it for a torn write and drop it
            raise StorageError(f"entry {index} has {length} bytes, over {MAX_RECORD}")
        tail = tail_of(length, index, batch)
        parts += (magic, crc_of(crc32(body, crc32(tail))), tail, body)
        offsets.append(pos)
        pos += REC_HEADER_SIZE + length
        expected = index + 1
    return b"".join(parts), offsets
