"""The leader's log fsync off the loop thread (Raft thesis §10.2.1).

A leader's loop writes new entries to its log file (``FileStorage.append(sync=False)``:
into the page cache), sends the AppendEntries at once and hands the write's number
(``Ready.write``) to :class:`LogSyncer`, whose thread runs ``fdatasync`` on the log and
reports the last write it covered. One ``fdatasync`` covers every write made before it
started, so while one runs the writes of the next loop turns pile up and the next one
covers them all. The loop learns of finished syncs through a pipe it polls
(:attr:`LogSyncer.fileno`) and tells the core (``RaftCore.log_durable``), which counts
its own log towards a commit only up to there.

Only the fsync runs on the thread: :class:`~dafka.raft.peer.FileStorage` stays the
loop's. The loop waits for the thread (:meth:`LogSyncer.drain`) before anything that
truncates, rewrites or closes the log file, and before any Ready that is not a plain
leader append (a follower, a term or vote change, a snapshot): those keep the usual
"persist, then send" order.

A failed fsync, or the thread dying, ends the peer: :meth:`LogSyncer.take` and
:meth:`LogSyncer.drain` raise :class:`~dafka.errors.StorageError` on the loop thread
(the entries' durability is unknown; the loop dies and its process exits non-zero).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable

from ...errors import StorageError

__all__ = ["LogSyncer"]

log = logging.getLogger(__name__)


class LogSyncer:
    """One thread that fsyncs the log on request; see the module docstring."""

    def __init__(self, sync: Callable[[], None], name: str = "raft-logsync") -> None:
        self._sync = sync
        self._cond = threading.Condition()
        self._wanted = 0  # the last write handed over
        self._done = 0  # the last write durable
        self._error: BaseException | None = None
        self._stopping = False
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def fileno(self) -> int:
        """Readable when a sync finished (or the thread failed): then call :meth:`take`."""
        return self._read_fd

    @property
    def done(self) -> int:
        """The last write durable (as :meth:`take`, without reading the pipe or raising)."""
        return self._done

    @property
    def wanted(self) -> int:
        """The last write handed over."""
        return self._wanted

    @property
    def pending(self) -> bool:
        """A write was handed over and is not durable yet."""
        return self._wanted > self._done

    def request(self, write: int) -> None:
        """Make write number ``write`` (and every earlier one) durable."""
        with self._cond:
            self._raise_if_failed()
            if write > self._wanted:
                self._wanted = write
                self._cond.notify()

    def take(self) -> int:
        """The last write durable (empties the pipe); raises if the thread failed."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self._read_fd, 4096):
                pass
        with self._cond:
            self._raise_if_failed()
            return self._done

    def drain(self) -> int:
        """Wait until every write handed over is durable; returns the last one."""
        with self._cond:
            while self._done < self._wanted:
                self._raise_if_failed()
                self._cond.wait(0.5)
            self._raise_if_failed()
            return self._done

    def check(self) -> None:
        """Raise if the thread failed or is gone (the loop calls it every tick)."""
        with self._cond:
            self._raise_if_failed()

    def close(self) -> None:
        """Finish the writes handed over, stop the thread, close the pipe."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join()
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._read_fd = self._write_fd = -1

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise StorageError(f"the log fsync failed: {self._error!r}") from self._error
        if not self._thread.is_alive() and not self._stopping:
            raise StorageError("the log fsync thread is gone")

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self._wanted > self._done or self._stopping)
                    if self._wanted <= self._done:
                        return  # stopping, nothing left to sync
                    target = self._wanted
                self._sync()  # outside the lock: the loop keeps handing over writes
                with self._cond:
                    self._done = target
                    self._cond.notify_all()
                self._wake()
        except BaseException as exc:  # the loop finds it in take() / drain()
            log.exception("raft.logsync.failed")
            with self._cond:
                self._error = exc
                self._cond.notify_all()
            self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._write_fd, b"\0")
