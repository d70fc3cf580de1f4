"""The shell's writer-thread option (:class:`ReadyWriter`): a Ready's persist on a writer
thread, everything after it on the loop thread once the write is reported.

:func:`dafka.io.ready_shell.run_ready` persists on the loop thread: nothing is received
while a write (the page-cache copy and fdatasync) runs. :class:`ReadyWriter` executes the
same order, *persist, then publish, then deliver/resolve, then advance*, for any
:class:`~dafka.core.ready.ReadyCore`, with step 1 handed to a :class:`WriterThread`:

* **One write in flight.** A Ready with writes is planned on the loop thread
  (:meth:`PlannedPersister.plan`), written on the writer thread
  (:meth:`PlannedPersister.write`) and reported back through the loop's ``call``; no
  other Ready is taken from the core until then, so the core never sees its writes
  acted on before they are durable. Meanwhile the loop goes on receiving: a core that
  wants to keep what arrives meanwhile does so itself (the store verifies it ahead and
  gathers it into one drain, ``dafka.store``).
* **Publish after the write.** The Ready's publish, deliver and resolve run on the loop
  thread only once its write was reported done: ``applied`` first (the persister's
  cached state moves), then the effects, then ``advance``. A write that fails is
  reported to the core (``advance(rd, failed=error)``) and nothing else of that Ready
  happens, as in ``run_ready``.
* **One writer.** Only the writer thread writes while a write is in flight; a shell that
  must write from the loop thread itself first calls :meth:`ReadyWriter.settle`. A write
  that cannot be done for want of room (an LMDB map full) is reported as such and the
  persister recovers on the loop thread (:meth:`PlannedPersister.recover`, no read open)
  before the write is handed over again.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..core.effects import Outgoing
from ..core.ready import Persister, Ready, ReadyCore
from ..errors import StorageError
from .ready_shell import MAX_READIES, resolve_all

log = logging.getLogger(__name__)

__all__ = ["PlannedPersister", "ReadyWriter", "WriterThread", "planned"]

Call = Callable[[Callable[[float], list[Any]]], None]
"""``NodeLoop.call``: run a function on the loop thread (it returns what to send)."""

SETTLE_TIMEOUT = 60.0
"""Seconds :meth:`ReadyWriter.settle` waits for one write before it gives up (a stuck
disk): the write then stays in flight, reported whenever it returns."""


class WriterThread:
    """One thread running jobs in order (a node's writes); a daemon, so a write stuck in
    the kernel does not keep the process alive."""

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
                log.exception("writer.crashed")


class PlannedPersister(Protocol):
    """A :class:`~dafka.core.ready.Persister` split for a writer thread."""

    def plan(self, writes: Sequence[Any], sync: bool) -> Any | None:
        """On the loop thread: what to write (None: nothing, done). Raises StorageError."""
        ...

    def write(self, plan: Any) -> bool:
        """On the writer thread: write ``plan`` durably; False if it could not for want of
        room (nothing written: :meth:`recover`, then write again). Raises StorageError."""
        ...

    def recover(self) -> None:
        """On the loop thread, with no read open: make room (:meth:`write` returned False)."""
        ...

    def applied(self, plan: Any) -> None:
        """On the loop thread: ``plan`` was written; move what is cached of it."""
        ...


class _Plain:
    """A plain :class:`Persister` as a :class:`PlannedPersister` (its whole persist on the
    writer thread, nothing to recover or apply)."""

    def __init__(self, persister: Persister) -> None:
        self._persister = persister

    def plan(self, writes: Sequence[Any], sync: bool) -> Any | None:
        return (writes, sync)

    def write(self, plan: Any) -> bool:
        self._persister.persist(*plan)
        return True

    def recover(self) -> None:
        pass

    def applied(self, plan: Any) -> None:
        pass


def planned(persister: Persister) -> PlannedPersister:
    """``persister`` run on a writer thread as a whole."""
    return _Plain(persister)


class _Write:
    """One Ready's write: planned on the loop thread, written on the writer thread."""

    __slots__ = ("done", "plan", "rd", "result")

    def __init__(self, rd: Ready, plan: Any) -> None:
        self.rd = rd
        self.plan = plan
        self.done = threading.Event()
        # True: written; False: no room (recover, write again); or the error
        self.result: bool | StorageError = False


class ReadyWriter:
    """Runs a core's Readies with their persist on a writer thread (see the module).

    ``submit``: how a write is handed to the writer (:meth:`WriterThread.submit`);
    ``call``: how the writer reports to the loop thread (``NodeLoop.call``); ``deliver``:
    where a Ready's ``deliver`` goes; ``at``: told the loop's time before a reported
    write's Ready is advanced (a core reads no clock). Every method but the write itself
    runs on the loop thread."""

    def __init__(
        self,
        core: ReadyCore,
        persister: PlannedPersister,
        submit: Callable[[Callable[[], None]], None],
        call: Call,
        deliver: Callable[[Sequence[Any]], None] | None = None,
        at: Callable[[float], None] | None = None,
    ) -> None:
        self.core = core
        self.persister = persister
        self._submit = submit
        self._call = call
        self._deliver = deliver
        self._at = at
        self._inflight: _Write | None = None
        self.writes = 0
        """Writes handed to the writer thread."""

    @property
    def in_flight(self) -> bool:
        """Whether a write is being made (its Ready not executed yet)."""
        return self._inflight is not None

    def run(self) -> list[Outgoing]:
        """Execute the core's Readies until one has a write (handed to the writer) or none
        is left; returns what to publish now. Nothing while a write is in flight."""
        out: list[Outgoing] = []
        core = self.core
        ran = 0
        while self._inflight is None and ran < MAX_READIES and core.has_ready():
            rd = core.ready()
            ran += 1
            if rd.persist:
                try:
                    plan = self.persister.plan(rd.persist, rd.must_sync)
                except StorageError as exc:
                    core.advance(rd, failed=exc.with_traceback(None))
                    continue
                if plan is not None:
                    self._start(_Write(rd, plan))
                    break
            self._execute(rd, out)
        return out

    def settle(self, now: float, timeout: float = SETTLE_TIMEOUT) -> list[Outgoing]:
        """Wait for the write in flight and report it, and the same for any write the core
        starts after it: afterwards no write is in flight (unless one took over
        ``timeout`` seconds), and the loop thread may write itself."""
        out: list[Outgoing] = []
        while (job := self._inflight) is not None:
            if not job.done.wait(timeout):
                log.error("writer.stuck after_s=%.0f", timeout)
                break
            out.extend(self._reported(job, now))
        return out

    def _execute(self, rd: Ready, out: list[Outgoing]) -> None:
        """Steps 2-4 of a Ready whose writes are durable."""
        if rd.publish:
            out.extend(rd.publish)
        if rd.deliver and self._deliver is not None:
            self._deliver(rd.deliver)
        if rd.resolve:
            resolve_all(rd.resolve)
        self.core.advance(rd)

    def _start(self, job: _Write) -> None:
        self._inflight = job
        job.done.clear()
        self.writes += 1
        self._submit(lambda: self._write(job))

    def _write(self, job: _Write) -> None:
        """On the writer thread: the write, then its report to the loop thread."""
        try:
            job.result = self.persister.write(job.plan)
        except StorageError as exc:
            # no traceback: its frame holds the job (a drain's blobs) in a cycle
            job.result = exc.with_traceback(None)
        except Exception as exc:  # a bug must not leave the write unreported
            log.exception("writer.failed")
            job.result = StorageError(f"write failed: {exc!r}")
        job.done.set()
        self._call(lambda now: self._reported(job, now))

    def _reported(self, job: _Write, now: float) -> list[Outgoing]:
        """On the loop thread: ``job`` returned. Its Ready's effects (if written), then the
        Readies after it."""
        if self._inflight is not job or not job.done.is_set():
            return []  # reported already (settle), or written again after recovering
        self._inflight = None
        result = job.result
        if result is False:
            try:
                self.persister.recover()  # here: no read is open between the loop's turns
            except StorageError as exc:
                result = exc.with_traceback(None)  # no cycle through this frame
            else:
                self._start(job)
                return []
        if self._at is not None:
            self._at(now)
        out: list[Outgoing] = []
        if result is True:
            self.persister.applied(job.plan)
            self._execute(job.rd, out)
        else:
            assert isinstance(result, StorageError)
            self.core.advance(job.rd, failed=result)
        out.extend(self.run())
        return out
