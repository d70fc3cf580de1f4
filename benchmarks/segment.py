"""An append-only segment file written from one reused, page-aligned buffer: what the raw
store's ``O_DIRECT`` variant does (``benchmarks.workers``), and two of the ways
``benchmarks.disk`` compares."""

from __future__ import annotations

import mmap
import os

__all__ = ["Segment"]

_STEP = 8 << 20
"""The buffer grows in steps this large (it starts at one)."""


class Segment:
    """Batches are :meth:`append`\\ ed into one page-aligned buffer (the one copy a store
    makes of them); :meth:`sync` writes it at the file's end and ``fdatasync``\\ s.

    ``direct``: through ``O_DIRECT``, which skips the page cache and wants the address, the
    length and the file offset aligned: the buffer is an anonymous mapping (page-aligned),
    and each write is padded up to whole pages. Otherwise through the page cache, unpadded.
    ``at``: where the next append lands in the file. Opening or writing raises
    :class:`OSError` where the file system refuses ``O_DIRECT``."""

    def __init__(self, path: str | os.PathLike[str], direct: bool) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | (os.O_DIRECT if direct else 0)
        self._fd = os.open(path, flags, 0o600)
        self._direct = direct
        self._buf = mmap.mmap(-1, _STEP)
        self._used = 0
        self._written = 0
        self.at = 0

    def append(self, blob: bytes | memoryview) -> None:
        end = self._used + len(blob)
        if end > len(self._buf):
            grown = mmap.mmap(-1, -(-end // _STEP) * _STEP)
            grown[: self._used] = self._buf[: self._used]
            self._buf.close()
            self._buf = grown
        self._buf[self._used : end] = blob
        self._used = end
        self.at += len(blob)

    def sync(self) -> None:
        size = self._used
        if self._direct:
            size = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
        with memoryview(self._buf) as out:
            os.pwrite(self._fd, out[:size], self._written)
        os.fdatasync(self._fd)
        self._written += size
        self.at = self._written
        self._used = 0

    def close(self) -> None:
        os.close(self._fd)
        self._buf.close()
