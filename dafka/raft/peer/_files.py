"""File helpers of the Raft storage: whole writes, fsynced files, atomic replacement
(write ``NAME.tmp``, fsync it, rename over ``NAME``, fsync the directory), checksummed blobs."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
from pathlib import Path

from ...errors import StorageError
from ...security.private_dirs import fsync_dir

__all__ = [
    "atomic_write",
    "fsync_dir",
    "read_all",
    "split_crc",
    "with_crc",
    "write_all",
    "write_synced",
]


def write_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def atomic_write(directory: Path, name: str, chunks: Iterable[bytes]) -> None:
    tmp = directory / f"{name}.tmp"
    write_synced(tmp, chunks)
    os.replace(tmp, directory / name)
    fsync_dir(directory)


def write_synced(tmp: Path, chunks: Iterable[bytes]) -> None:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        offset = 0
        for chunk in chunks:
            write_all(fd, chunk, offset)
            offset += len(chunk)
        os.fsync(fd)
    finally:
        os.close(fd)


def with_crc(body: bytes) -> bytes:
    return body + zlib.crc32(body).to_bytes(4, "little")


def split_crc(blob: bytes, magic: bytes, what: str) -> bytes:
    if len(blob) < len(magic) + 4 or not blob.startswith(magic):
        raise StorageError(f"{what} is damaged or not a Dafka Raft file")
    body, crc = blob[:-4], int.from_bytes(blob[-4:], "little")
    if zlib.crc32(body) != crc:
        raise StorageError(f"{what} fails its checksum")
    return body[len(magic) :]


def read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks = []
    offset = 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)
