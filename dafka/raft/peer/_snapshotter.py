"""A peer's own snapshots written off the loop thread.

The loop takes the state machine's snapshot (it must not change meanwhile) and hands
the bytes to :class:`BackgroundSnapshot`, whose thread writes and fsyncs them beside
the stored snapshot (:meth:`FileStorage.stage_snapshot`). The loop keeps serving; once
the thread is done it installs the file (one rename, one directory fsync), then
compacts the log, as before. At most one snapshot is in the works at a time.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..codec import SnapshotMeta
from ._storage import FileStorage

__all__ = ["BackgroundSnapshot"]


class BackgroundSnapshot:
    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._job: tuple[SnapshotMeta, bytes] | None = None
        self._staged: Path | None = None
        self._error: BaseException | None = None

    @property
    def busy(self) -> bool:
        """A snapshot was started and not taken yet."""
        return self._thread is not None

    def start(self, storage: FileStorage, meta: SnapshotMeta, data: bytes) -> None:
        assert self._thread is None, "one snapshot at a time"
        self._job, self._staged, self._error = (meta, data), None, None

        def write() -> None:
            try:
                self._staged = storage.stage_snapshot(meta, data)
            except BaseException as exc:  # handed to the loop by take()
                self._error = exc

        self._thread = threading.Thread(target=write, name=f"raft-snapshot-{meta.index}")
        self._thread.start()

    def done(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def take(self) -> tuple[SnapshotMeta, bytes, Path]:
        """The finished job (meta, data, staged file); re-raises the thread's error."""
        assert self._thread is not None and self._job is not None
        self._thread.join()
        self._thread = None
        if self._error is not None:
            raise self._error
        assert self._staged is not None
        return self._job[0], self._job[1], self._staged

    def join(self) -> None:
        """Wait for a running write (before the storage is closed)."""
        if self._thread is not None:
            self._thread.join()
