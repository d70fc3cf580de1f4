"""The producer's durability orders as :class:`~dafka.core.ready.Ready` batches.

A producer with a state directory writes it before it lets anything out
(``docs/architecture.md``, the one contract):

* a turn's offsets are reserved in the offset journal (:class:`Reserve`) before its
  records are sealed and published: a restart never reuses an offset;
* in durable mode, what a turn publishes is logged (:class:`Log`) before the ``send``
  calls that queued it return (a failed log still publishes: the records were sealed,
  and the ``send`` calls are told they are not in the log);
* how far each topic is acknowledged is written to the acked journal (:class:`AckedUpTo`)
  before the futures resolve: a restart never declares an acknowledged offset a gap;
* then the log forgets what is acknowledged (:class:`Release`, not a gate).

The IO handler (:mod:`.producer_io`) puts each step in a :class:`ReadyQueue` with what
follows it (a continuation, called by ``advance``), and runs the queue with
:func:`dafka.io.ready_shell.run_ready` and a :class:`StatePersister`: the order persist,
publish, deliver is written once, there. One Ready per step of a turn, never per record.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, Protocol

from ..core.ready import Ready
from ..storage.state_dir import OffsetJournal
from ._wal import LoggedBatch, ProducerLog

__all__ = ["AckedUpTo", "Log", "ReadyQueue", "Release", "Reserve", "StateFiles", "StatePersister"]


class Reserve(NamedTuple):
    """Reserve offsets below these (per topic) in the offset journal (one fsync)."""

    offsets: Mapping[str, int]


class Log(NamedTuple):
    """Log these batches in the durable producer's WAL (one fsync)."""

    batches: Sequence[LoggedBatch]


class AckedUpTo(NamedTuple):
    """Record in the acked journal that each topic is acknowledged below these (one fsync)."""

    offsets: Mapping[str, int]


class Release(NamedTuple):
    """Let the WAL forget what is acknowledged below these (per topic)."""

    offsets: Mapping[str, int]


Write = Reserve | Log | AckedUpTo | Release


class StateFiles(Protocol):
    """A producer's state directory's files (:class:`~dafka.producer._state.ProducerState`)."""

    journal: OffsetJournal | None
    acked_journal: OffsetJournal | None
    wal: ProducerLog | None


class StatePersister:
    """Makes a producer's writes durable in its state directory (the shell's Persister):
    each kind of write goes to its file (asking for one the producer has not opened is a
    bug); a failure raises :class:`~dafka.errors.StorageError`."""

    def __init__(self, files: StateFiles) -> None:
        self.files = files
        """Where the files are: read at each write (they are opened before the IO thread
        starts, and a test may give them later)."""

    def persist(self, writes: Sequence[Write], sync: bool) -> None:
        # each file below fsyncs what it writes: ``sync`` is true of every gate
        for w in writes:
            files = self.files
            if isinstance(w, Reserve):
                assert files.journal is not None
                files.journal.reserve_many(w.offsets)
            elif isinstance(w, Log):
                assert files.wal is not None
                files.wal.append(w.batches)
            elif isinstance(w, AckedUpTo):
                assert files.acked_journal is not None
                files.acked_journal.reserve_many(w.offsets)
            elif isinstance(w, Release):
                assert files.wal is not None
                files.wal.release(w.offsets)
            else:
                raise TypeError(f"not a producer write: {w!r}")


Then = Callable[[Ready, BaseException | None], None]
"""What follows a Ready once the shell ran it (``failed``: its persist raised, and
nothing else of it ran); it may push the next step."""


def _nothing(rd: Ready, failed: BaseException | None) -> None:
    pass


class ReadyQueue:
    """A :class:`~dafka.core.ready.ReadyCore` of steps in order, each with what follows it.

    ``push(rd, then)`` queues a step; the shell takes it (``ready``), executes it and
    calls ``advance(rd, failed)``, which calls ``then``: that may push the next step,
    which the same :func:`~dafka.io.ready_shell.run_ready` call then runs."""

    __slots__ = ("_steps", "_running")

    def __init__(self) -> None:
        self._steps: deque[tuple[Ready, Then]] = deque()
        self._running: tuple[Ready, Then] | None = None

    def push(self, rd: Ready, then: Then = _nothing) -> None:
        self._steps.append((rd, then))

    def has_ready(self) -> bool:
        return bool(self._steps)

    def ready(self) -> Ready:
        step = self._running = self._steps.popleft()
        return step[0]

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        step, self._running = self._running, None
        assert step is not None and step[0] is rd, "advance() of a Ready not taken last"
        step[1](rd, failed)

    def __len__(self) -> int:
        return len(self._steps)
