"""Bit rot at rest: flip bits in files a node left on its disk (while it is down).

Each function finds what it damages from the file's own format (read here for the
fault suite only: nothing is imported from the code under test), flips bits in place,
fsyncs, and says where. They work on any path, on a powerfs mount too.
"""

from __future__ import annotations

import os
import random
import re
import struct
import zlib
from pathlib import Path

# a workload value (tests.faults.checker.content) as it sits in a stored batch
VALUE = re.compile(rb"p\d+\.\d+\.\d+\.([a-z]{24})\.[0-9a-f]{8}")

# producer journals (dafka.storage.state_dir): magic | size u32 BE | payload | crc32 u32 BE;
# 0xd4 a record of earlier versions, 0xd5 one copy of a record written twice in a row
JOURNAL_MAGICS = (b"\xd4", b"\xd5")
JOURNAL_TWICE = b"\xd5"
JOURNAL_HEAD = struct.Struct(">cI")
# a tower's Raft log (dafka.raft.peer._storage): a 20-byte header, then records of
# magic | crc u32 | length u32 | index u64 | batch u64 | entry (little-endian)
RAFT_HEADER = 20
RAFT_MAGIC = b"\xd5RL\x01"
RAFT_TAIL = struct.Struct("<IQQ")
RAFT_RECORD_HEAD = 8 + RAFT_TAIL.size


def _flip(path: Path, positions: list[int], rng: random.Random) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        for pos in positions:
            byte = os.pread(fd, 1, pos)[0]
            os.pwrite(fd, bytes((byte ^ (1 << rng.randrange(8)),)), pos)
        os.fsync(fd)
    finally:
        os.close(fd)


def rot_values(path: Path, rng: random.Random, count: int = 5) -> list[int]:
    """Flip one bit in ``count`` stored workload values of an LMDB ``data.mdb`` (in the
    padding of each value, so neither the B-tree nor the page headers are touched); the
    file positions flipped."""
    data = path.read_bytes()
    spots = [m.start(1) + rng.randrange(24) for m in VALUE.finditer(data)]
    chosen = sorted(rng.sample(spots, min(count, len(spots))))
    _flip(path, chosen, rng)
    return chosen


def journal_frames(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of each valid frame from the start of a producer journal."""
    frames: list[tuple[int, int]] = []
    pos = 0
    while pos + JOURNAL_HEAD.size <= len(data):
        magic, size = JOURNAL_HEAD.unpack_from(data, pos)
        end = pos + JOURNAL_HEAD.size + size + 4
        if magic not in JOURNAL_MAGICS or end > len(data):
            break
        (crc,) = struct.unpack_from(">I", data, end - 4)
        if zlib.crc32(data[pos : end - 4]) != crc:
            break
        frames.append((pos, end))
        pos = end
    return frames


def rot_last_journal_frame(path: Path, rng: random.Random) -> int | None:
    """Flip one bit in the payload of the last (long since synced) frame of a producer
    journal, and half of the time, when the record is written twice (0xd5), one bit in its
    other copy too (the record can then be read from neither); the last position flipped
    (None: no frame)."""
    data = path.read_bytes()
    frames = journal_frames(data)
    if not frames:
        return None
    start, end = frames[-1]
    spots = [rng.randrange(start + JOURNAL_HEAD.size, end - 4)]
    twin = frames[-2] if len(frames) >= 2 else None
    if (
        twin is not None
        and data[start : start + 1] == JOURNAL_TWICE
        and data[twin[0] : twin[1]] == data[start:end]
        and rng.random() < 0.5
    ):
        spots.insert(0, rng.randrange(twin[0] + JOURNAL_HEAD.size, twin[1] - 4))
    _flip(path, spots, rng)
    return spots[-1]


def raft_records(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of each well-formed record of a Raft log."""
    records: list[tuple[int, int]] = []
    pos = RAFT_HEADER
    while pos + RAFT_RECORD_HEAD <= len(data) and data[pos : pos + 4] == RAFT_MAGIC:
        (crc,) = struct.unpack_from("<I", data, pos + 4)
        length, _index, _batch = RAFT_TAIL.unpack_from(data, pos + 8)
        end = pos + RAFT_RECORD_HEAD + length
        if end > len(data) or zlib.crc32(data[pos + 8 : end]) != crc:
            break
        records.append((pos, end))
        pos = end
    return records


def rot_last_raft_record(path: Path, rng: random.Random) -> int | None:
    """Flip one bit in the entry of the last record of a Raft log (acknowledged and
    synced long ago); the position flipped (None: no record with an entry)."""
    records = [(s, e) for s, e in raft_records(path.read_bytes()) if e > s + RAFT_RECORD_HEAD]
    if not records:
        return None
    start, end = records[-1]
    pos = rng.randrange(start + RAFT_RECORD_HEAD, end)
    _flip(path, [pos], rng)
    return pos


def find(root: Path, name: str) -> list[Path]:
    """Files called ``name`` under ``root``."""
    return sorted(p for p in root.rglob(name) if p.is_file())
