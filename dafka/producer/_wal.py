"""The durable producer's write-ahead log: what it published, until it is acknowledged.

``Producer(durable=True)`` seals records into batches, appends them here and
fsyncs (one write and one ``fdatasync`` per IO-loop turn: a group commit), and
only then publishes them and lets ``send()`` return. After a crash the batches
above the acknowledged bound are read back and published again, verbatim and
at the same offsets, so stores that already hold them take them as replays.

A frame is ``magic u32 | payload length u32 | payload | crc32 u32`` with the
payload ``topic length u8 | topic | first offset u64 | count u32 | content``
(a signed batch blob, or under rfc46 one record's value). A torn last frame (a
crash mid-write) is cut off; damage followed by valid frames is corruption and
raises :class:`~dafka.errors.StorageError` rather than re-publish a guess.

Acknowledged frames are dropped by truncating the file once everything in it
is acknowledged (the usual case when stores keep up), or by rewriting it with
the live frames once the dead ones are most of a large file.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import zlib
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StorageError
from ..storage.state_dir import open_durable, replay_frames, write_atomic

__all__ = ["LoggedBatch", "ProducerLog"]

log = logging.getLogger(__name__)

_MAGIC = 0x44574C31  # "DWL1"
_HEAD = struct.Struct(">II")
_CRC = struct.Struct(">I")
_FIXED = struct.Struct(">QI")
_MAX_PAYLOAD = 17 * 1024 * 1024
REWRITE_BYTES = 64 * 1024 * 1024
"""Dead bytes that make a rewrite worth it (when they are also most of the file)."""


@dataclass(frozen=True, slots=True)
class LoggedBatch:
    """Offsets ``first .. first + count - 1`` of ``topic``, as published."""

    topic: str
    first: int
    count: int
    content: bytes = field(repr=False)

    @property
    def end(self) -> int:
        return self.first + self.count


def _frame(batch: LoggedBatch) -> bytes:
    raw = batch.topic.encode()
    payload = bytes((len(raw),)) + raw + _FIXED.pack(batch.first, batch.count) + batch.content
    body = _HEAD.pack(_MAGIC, len(payload)) + payload
    return body + _CRC.pack(zlib.crc32(body))


def _parse(data: bytes, pos: int) -> tuple[LoggedBatch, int] | None:
    end_head = pos + _HEAD.size
    if end_head > len(data):
        return None
    magic, size = _HEAD.unpack_from(data, pos)
    if magic != _MAGIC or size > _MAX_PAYLOAD:
        return None
    end = end_head + size + _CRC.size
    if (
        end > len(data)
        or zlib.crc32(data[pos : end - _CRC.size]) != _CRC.unpack_from(data, end - _CRC.size)[0]
    ):
        return None
    tlen = data[end_head] if size else 0
    at = end_head + 1 + tlen
    if not tlen or at + _FIXED.size > end - _CRC.size:
        return None
    try:
        topic = data[end_head + 1 : at].decode()
    except UnicodeDecodeError:
        return None
    first, count = _FIXED.unpack_from(data, at)
    content = data[at + _FIXED.size : end - _CRC.size]
    return LoggedBatch(topic, first, count, content), end


class ProducerLog:
    """An append-only, fsynced log of published batches (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            fd = open_durable(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            raise StorageError(f"cannot open {self.path}: {exc.strerror or exc}") from exc
        self._fd: int | None = fd
        self._live: deque[tuple[LoggedBatch, int]] = deque()  # (batch, frame size)
        self._live_bytes = 0
        try:
            self._size = self._replay(fd)
        except BaseException:
            os.close(fd)
            raise

    def _replay(self, fd: int) -> int:
        frames, end = replay_frames(
            fd,
            self.path,
            _parse,
            "refusing to re-publish a guess (move the file away to start without it)",
        )
        self._live.extend(frames)
        self._live_bytes = sum(size for _, size in frames)
        return end

    # ------------------------------------------------------------------ API

    def pending(self, acked_next: Mapping[str, int]) -> list[LoggedBatch]:
        """Logged batches not acknowledged yet: ends above ``acked_next[topic]`` (0 if absent)."""
        return [b for b, _ in self._live if b.end > acked_next.get(b.topic, 0)]

    def ends(self) -> dict[str, int]:
        """One past the last logged offset per topic."""
        out: dict[str, int] = {}
        for b, _ in self._live:
            out[b.topic] = max(out.get(b.topic, 0), b.end)
        return out

    def append(self, batches: Iterable[LoggedBatch]) -> None:
        """Log ``batches`` with one write and one fsync; durable when it returns."""
        framed = [(b, _frame(b)) for b in batches]
        if not framed:
            return
        data = b"".join(f for _, f in framed)
        fd = self._require_fd()
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, "short write: is the disk full?")
            os.fdatasync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, self._size)
            except OSError:
                log.exception("wal.rollback_failed path=%s", self.path)
            raise StorageError(
                f"cannot write producer log {self.path}: {exc.strerror or exc}"
            ) from exc
        self._size += len(data)
        for b, f in framed:
            self._live.append((b, len(f)))
            self._live_bytes += len(f)

    def release(self, acked_next: Mapping[str, int]) -> None:
        """Forget batches acknowledged below ``acked_next``; shrink the file when worth it.

        Batches of one topic are logged in offset order, so acknowledged ones
        are a prefix per topic; the log as a whole is released from its front.
        """
        live = self._live
        while live and live[0][0].end <= acked_next.get(live[0][0].topic, 0):
            _, size = live.popleft()
            self._live_bytes -= size
        if live and any(b.end <= acked_next.get(b.topic, 0) for b, _ in live):
            kept = [(b, s) for b, s in live if b.end > acked_next.get(b.topic, 0)]
            live.clear()
            live.extend(kept)
            self._live_bytes = sum(s for _, s in kept)
        if not live and self._size:
            self._truncate()
        elif self._size - self._live_bytes > max(REWRITE_BYTES, self._live_bytes):
            self._rewrite()

    @property
    def size(self) -> int:
        """Bytes in the file (for tests and metrics)."""
        return self._size

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    # ------------------------------------------------------------- internals

    def _require_fd(self) -> int:
        if self._fd is None:
            raise StorageError(f"producer log {self.path} is closed")
        return self._fd

    def _truncate(self) -> None:
        fd = self._require_fd()
        try:
            os.ftruncate(fd, 0)
            os.fsync(fd)
        except OSError as exc:
            raise StorageError(f"cannot truncate {self.path}: {exc.strerror or exc}") from exc
        self._size = 0

    def _rewrite(self) -> None:
        data = b"".join(_frame(b) for b, _ in self._live)
        try:
            write_atomic(self.path, data)
            new_fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        except OSError as exc:
            raise StorageError(f"cannot rewrite {self.path}: {exc.strerror or exc}") from exc
        old, self._fd = self._fd, new_fd
        if old is not None:
            os.close(old)
        self._size = len(data)
