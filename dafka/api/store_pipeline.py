"""The store's writer thread: a drain's commit overlapped with the receipt of the next.

Without it the store's IO thread receives a drain, ingests it, commits it (the page-cache
copy and fdatasync: over half its time) and only then reads the next; nothing arrives or
is verified while it commits. With it (:class:`StorePipeline`):

* **Verify ahead, ingest after.** Drain N's records are appended by a
  :class:`WriterThread` while the IO thread receives drain N+1 and runs only the pure
  checks on it (:meth:`StoreCore.verify_ahead`: shape, BLAKE3, Ed25519). Drain N+1 is
  ingested (ordering, gaps, equivocation, heads) only once N's commit is reported, so the
  core never sees a head that is not committed.
* **One drain ahead at most.** What arrives while a commit is in flight is gathered into
  one waiting drain (each piece verified as it comes), committed as one once the commit
  before it is reported: group commit, as the synchronous loop's next drain was. When
  it reaches a drain's bounds (``MAX_DRAIN_BYTES``, ``MAX_DRAIN`` messages)
  :meth:`StorePipeline.accepting` is False and the IO loop stops reading the data SUB
  (and :meth:`StorePipeline.drain_budget` caps what one turn reads up to there): at most
  the drain being committed and one more are held.
* **ACK after commit.** A commit's end reaches the IO thread as a ``NodeLoop.call``;
  there the storage's cached heads move (:meth:`LmdbStorage.applied`), then the core's
  (:meth:`StoreCore.committed`), then the drain's ACKs go out. A failed commit takes the
  synchronous path's way (:meth:`StoreCore.commit_failed`: nothing stored, gaps noted,
  ACKs paused on a full disk and the records fetched again).
* **One writer of the environment.** Only the writer thread writes while a commit is in
  flight; everything else that writes (retention, topic deletion, a superseding gap
  statement's truncation, which happens in an ingest) runs on the IO thread with no
  commit in flight (:meth:`StorePipeline.settle` waits for it first), and the map grows
  on the IO thread between turns (no read open), the commit then written again.
"""

from __future__ import annotations

import bisect
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import overload

from ..core import messages as m
from ..core.effects import Publish
from ..core.read_guard import Sender
from ..core.store import StoreCore
from ..core.store.state import SenderSources, _Batch
from ..errors import StorageError
from ..io.node import MAX_DRAIN, MAX_DRAIN_BYTES
from ..storage.lmdb_store import LmdbStorage, PlannedAppend

log = logging.getLogger(__name__)

__all__ = ["StorePipeline", "WriterThread"]

Call = Callable[[Callable[[float], list[Publish]]], None]
"""``NodeLoop.call``: run a function on the IO thread."""

SETTLE_TIMEOUT = 60.0
"""Seconds :meth:`StorePipeline.settle` waits for one commit before it gives up (a stuck
disk): the commit then stays in flight, reported whenever it returns."""


class WriterThread:
    """One thread running jobs in order (a store's LMDB commits); a daemon, so a commit
    stuck in the kernel does not keep the process alive."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False

    def submit(self, job: Callable[[], None]) -> None:
        if not self._started:
            self._started = True
            self._thread.start()
        self._jobs.put(job)

    def stop(self, timeout: float = 5.0) -> None:
        if self._started:
            self._jobs.put(None)
            self._thread.join(timeout)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except Exception:  # a job reports its own errors; this is a bug
                log.exception("store.writer.crashed")


_CARRIERS = (m.Record, m.DirectRecord)
"""The messages with content (the others are counted for ``MESSAGE_OVERHEAD`` only)."""
MESSAGE_OVERHEAD = 64
"""Bytes a waiting message is counted for besides its content (a HEAD, a FETCH)."""


class _Sources(Sequence[str]):
    """The sources of the pieces of a waiting drain, as one sequence (each piece's looked
    up only when asked for, see ``dafka.io.bounds.FrameSources``)."""

    __slots__ = ("_pieces", "_starts")

    def __init__(self) -> None:
        self._pieces: list[Sequence[str]] = []
        self._starts: list[int] = []

    def add(self, start: int, sources: Sequence[str]) -> None:
        self._pieces.append(sources)
        self._starts.append(start)

    def __len__(self) -> int:
        return self._starts[-1] + len(self._pieces[-1]) if self._pieces else 0

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not 0 <= index < len(self):
            raise IndexError(index)
        at = bisect.bisect_right(self._starts, index) - 1
        piece = self._pieces[at]
        offset = index - self._starts[at]
        return piece[offset] if offset < len(piece) else ""

    def sender(self, index: int) -> Sender | None:
        """The node whose connection message ``index`` came on (``FrameSources.sender``)."""
        if not 0 <= index < len(self):
            return None
        at = bisect.bisect_right(self._starts, index) - 1
        piece = self._pieces[at]
        if not isinstance(piece, SenderSources):
            return None
        return piece.sender(index - self._starts[at])


class _Waiting:
    """What arrived while a commit was in flight: one drain, verified piece by piece."""

    __slots__ = ("bytes", "checked", "msgs", "sources")

    def __init__(self) -> None:
        self.msgs: list[m.Message] = []
        self.sources = _Sources()
        self.checked: dict[int, tuple[object, Exception | None]] = {}
        self.bytes = 0

    def add(
        self,
        msgs: Sequence[m.Message],
        sources: Sequence[str],
        checked: dict[int, tuple[object, Exception | None]],
    ) -> None:
        start = len(self.msgs)
        self.msgs.extend(msgs)
        self.sources.add(start, sources)
        for i, verdict in checked.items():
            self.checked[start + i] = verdict
        size = MESSAGE_OVERHEAD * len(msgs)
        for msg in msgs:
            if isinstance(msg, _CARRIERS):
                size += len(msg.content)
        self.bytes += size

    @property
    def full(self) -> bool:
        return self.bytes >= MAX_DRAIN_BYTES or len(self.msgs) >= MAX_DRAIN


class _Commit:
    """One drain's commit: planned on the IO thread, written on the writer thread."""

    __slots__ = ("batch", "done", "planned", "result")

    def __init__(self, batch: _Batch, planned: PlannedAppend) -> None:
        self.batch = batch
        self.planned = planned
        self.done = threading.Event()
        # True: written; False: the map is full (grow, write again); or the error
        self.result: bool | StorageError = False


class StorePipeline:
    """A store core's drains, each commit on the writer thread (see the module).

    ``call``: how the writer reports to the IO thread (``NodeLoop.call``); ``submit``: how
    a commit is handed to the writer (:meth:`WriterThread.submit`). Every other method
    runs on the IO thread."""

    def __init__(
        self,
        core: StoreCore,
        storage: LmdbStorage,
        submit: Callable[[Callable[[], None]], None],
        call: Call,
    ) -> None:
        self.core = core
        self.storage = storage
        self._submit = submit
        self._call = call
        self._inflight: _Commit | None = None
        self._waiting: _Waiting | None = None
        self.commits = 0
        """Commits handed to the writer thread."""
        self.verified_ahead = 0
        """Pieces of drains verified while the drain before them was being committed."""

    @property
    def in_flight(self) -> bool:
        """Whether a commit is being written (the heads are those of the one before)."""
        return self._inflight is not None

    def accepting(self) -> bool:
        """False while the drain waiting for the commit before it is full: read no more."""
        return self._waiting is None or not self._waiting.full

    def drain_budget(self) -> int:
        """Bytes the IO loop may read in its next turn: what the waiting drain has room for."""
        if self._waiting is None:
            return MAX_DRAIN_BYTES
        return max(1, MAX_DRAIN_BYTES - self._waiting.bytes)

    def on_messages(
        self, msgs: Sequence[m.Message], now: float, sources: Sequence[str] = ()
    ) -> list[Publish]:
        """One drain: ingested and its commit started, or, if a commit is in flight,
        verified and kept until that commit is reported."""
        out: list[Publish] = []
        if self._waiting is not None and self._waiting.full:
            out = self.settle(now)  # the loop reads while not accepting(): not expected
        if self._inflight is not None:
            checked = self.core.verify_ahead(msgs, self._inflight.batch)
            if self._waiting is None:
                self._waiting = _Waiting()
            self._waiting.add(msgs, sources, checked)
            self.verified_ahead += 1
            return out
        out.extend(self._ingest(msgs, now, sources, None))
        return out

    def settle(self, now: float, timeout: float = SETTLE_TIMEOUT) -> list[Publish]:
        """Wait for the commit in flight and report it, then the same for the drain that
        waited for it: afterwards no commit is in flight (unless one took over ``timeout``
        seconds), and the environment may be written from this thread."""
        out: list[Publish] = []
        while (job := self._inflight) is not None:
            if not job.done.wait(timeout):
                log.error("store.commit_stuck after_s=%.0f", timeout)
                break
            out.extend(self._reported(job, now))
        return out

    def _ingest(
        self, msgs: Sequence[m.Message], now: float, sources: Sequence[str], checked: dict | None
    ) -> list[Publish]:
        core = self.core
        b = core.ingest(msgs, now, sources, checked)
        if not b.accepted:
            return core.finish(b, True, now)
        try:
            planned = self.storage.plan_append(b.accepted)
        except StorageError as exc:
            return core.finish(b, core.commit_failed(b, exc, now), now)
        if planned is None:
            return core.finish(b, core.committed(b, now), now)
        self._start(_Commit(b, planned))
        return []

    def _start(self, job: _Commit) -> None:
        self._inflight = job
        job.done.clear()
        self.commits += 1
        self._submit(lambda: self._write(job))

    def _write(self, job: _Commit) -> None:
        """On the writer thread: the commit, then its report to the IO thread."""
        try:
            job.result = self.storage.write(job.planned)
        except StorageError as exc:
            # no traceback: its frame holds the job (a drain's blobs) in a cycle
            job.result = exc.with_traceback(None)
        except Exception as exc:  # a bug must not leave the drain unreported
            log.exception("store.writer.failed")
            job.result = StorageError(f"commit failed: {exc!r}")
        job.done.set()
        self._call(lambda now: self._reported(job, now))

    def _reported(self, job: _Commit, now: float) -> list[Publish]:
        """On the IO thread: ``job`` returned. Its ACKs (if stored), then the drain that
        waited for it is ingested and its own commit started."""
        if self._inflight is not job or not job.done.is_set():
            return []  # reported already (settle), or written again after the map grew
        self._inflight = None
        core, b = self.core, job.batch
        result = job.result
        if result is False:
            try:
                self.storage.grow()  # here: no read is open between the loop's turns
            except StorageError as exc:
                result = exc.with_traceback(None)  # no cycle through this frame
            else:
                self._start(job)
                return []
        if result is True:
            self.storage.applied(job.planned)
            out = core.finish(b, core.committed(b, now), now)
        else:
            assert isinstance(result, StorageError)
            out = core.finish(b, core.commit_failed(b, result, now), now)
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            out.extend(self._ingest(waiting.msgs, now, waiting.sources, waiting.checked))
        return out
