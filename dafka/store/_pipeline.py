"""The store's writer thread: a drain's commit overlapped with the receipt of the next.

The store core speaks the one contract (:mod:`dafka.core.ready`): a drain's records come
out as a Ready to persist (``must_sync``), its ACKs as the Ready after it.
:class:`StorePipeline` runs those Readies with the shell's writer-thread option
(:class:`dafka.io.ready_writer.ReadyWriter`) over LMDB's split append
(:class:`LmdbWrites`: planned on the IO thread, written on the writer, applied on the IO
thread); what is store-specific here is only the bound of the waiting drain.

Without it the store's IO thread receives a drain, ingests it, commits it (the page-cache
copy and fdatasync: over half its time) and only then reads the next; nothing arrives or
is verified while it commits. With it (:class:`StorePipeline`):

* **Verify ahead, ingest after.** Drain N's records are appended by a
  :class:`~dafka.io.ready_writer.WriterThread` while the IO thread receives drain N+1 and runs only the pure
  checks on it (:meth:`StoreCore.verify_ahead`: shape, BLAKE3, Ed25519; :meth:`StoreCore.step` does so
  while its commit's Ready is not advanced). Drain N+1 is ingested (ordering, gaps,
  equivocation, heads) only once N's commit is reported, so the core never sees a head
  that is not committed.
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
* **Serving does not wait.** What a tick, a subscription, a replication round or a
  repair makes goes through the core's Readies too (:meth:`StoreCore.push`); with a
  commit in flight those Readies publish only, and :meth:`StorePipeline.run` runs them
  at once: nothing in them depends on that commit (its ACKs are made when it is reported).
* **One writer of the environment.** Only the writer thread writes while a commit is in
  flight; everything else that writes (retention, topic deletion, a superseding gap
  statement's truncation, which happens in an ingest) runs on the IO thread with no
  commit in flight (:meth:`StorePipeline.settle` waits for it first), and the map grows
  on the IO thread between turns (no read open), the commit then written again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..core import messages as m
from ..core.effects import Publish
from ..io.node import MAX_DRAIN, MAX_DRAIN_BYTES
from ..io.ready_shell import run_ready
from ..io.ready_writer import SETTLE_TIMEOUT, Call, ReadyWriter, WriterThread
from ..storage.lmdb_heads import PlannedAppend
from ..storage.lmdb_store import LmdbStorage
from . import StoreCore

log = logging.getLogger(__name__)

__all__ = ["LmdbWrites", "StorePipeline", "WriterThread"]


class LmdbWrites:
    """LMDB's append split for a writer thread (:class:`~dafka.io.ready_writer.
    PlannedPersister`): planned on the cached heads, written in one synced transaction,
    the map grown on the IO thread when full, the cached heads moved once written."""

    def __init__(
        self, storage: LmdbStorage, observe: Callable[[float], None] | None = None
    ) -> None:
        self.storage = storage
        self.observe = observe
        """Given the seconds each write transaction that committed took (metrics)."""

    def plan(self, writes: Sequence[Any], sync: bool) -> PlannedAppend | None:
        return self.storage.plan_append(writes)  # always synced

    def write(self, plan: PlannedAppend) -> bool:
        observe = self.observe
        if observe is None:
            return self.storage.write(plan)
        start = time.perf_counter()
        done = self.storage.write(plan)
        if done:  # not a transaction aborted for want of room (written again)
            observe(time.perf_counter() - start)
        return done

    def recover(self) -> None:
        self.storage.grow()

    def applied(self, plan: PlannedAppend) -> None:
        self.storage.applied(plan)


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
        observe_commit: Callable[[float], None] | None = None,
    ) -> None:
        self.core = core
        self.storage = storage
        writes = LmdbWrites(storage, observe_commit)
        self.writer = ReadyWriter(core, writes, submit, call, at=core.at)

    @property
    def in_flight(self) -> bool:
        """Whether a commit is being written (the heads are those of the one before)."""
        return self.writer.in_flight

    @property
    def commits(self) -> int:
        """Commits handed to the writer thread."""
        return self.writer.writes

    @property
    def verified_ahead(self) -> int:
        """Pieces of drains verified while the drain before them was being committed."""
        return self.core.verified_ahead

    def accepting(self) -> bool:
        """False while the drain waiting for the commit before it is full: read no more."""
        msgs, nbytes = self.core.waiting
        # guard: store-holds-bounded-drain-while
        return not (nbytes >= MAX_DRAIN_BYTES or msgs >= MAX_DRAIN)

    def drain_budget(self) -> int:
        """Bytes the IO loop may read in its next turn: what the waiting drain has room for."""
        return max(1, MAX_DRAIN_BYTES - self.core.waiting[1])

    def on_messages(
        self, msgs: Sequence[m.Message], now: float, sources: Sequence[str] = ()
    ) -> list[Publish]:
        """One drain: ingested and its commit started, or, if a commit is in flight,
        verified and kept until that commit is reported."""
        out: list[Publish] = []
        if not self.accepting():
            out = self.settle(now)  # the loop reads while not accepting(): not expected
        self.core.step(msgs, now, sources)
        out.extend(self.writer.run())  # type: ignore[arg-type]  # the store publishes only
        return out

    def run(self) -> list[Publish]:
        """Execute the core's Readies now; returns what to publish. With no commit in flight
        the writer runs them (a commit among them is handed to the writer thread); with
        one, the core's Readies publish only (serving, gap FETCHes, greetings, replication
        rounds: :meth:`StoreCore.push`) and run here at once, so serving never waits for
        a commit. The ACKs of the commit in flight are not among them: the core makes
        them when the commit is reported, and the writer sends them then."""
        if not self.writer.in_flight:
            return self.writer.run()  # type: ignore[return-value]  # the store publishes only
        out: list[Publish] = []
        # no persister: a core asking to persist while its commit is in flight is a bug
        run_ready(self.core, None, out.extend)  # type: ignore[arg-type]
        return out

    def settle(self, now: float, timeout: float = SETTLE_TIMEOUT) -> list[Publish]:
        """Wait for the commit in flight and report it, then the same for the drain that
        waited for it: afterwards no commit is in flight (unless one took over ``timeout``
        seconds), and the environment may be written from this thread."""
        return self.writer.settle(now, timeout)  # type: ignore[return-value]
