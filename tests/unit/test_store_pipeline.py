"""The store's writer thread (dafka.store._pipeline): a drain's commit overlapped with
the receipt and verification of the next, ACKs only after the commit that holds them.

Most tests drive the pipeline by hand: what it hands the writer is run when the test says
so (``Driver.write``), and what the writer reports to the IO thread is run when the test
says so (``Driver.report``), so each step between a commit's start and its report is
visible. One test runs the real :class:`WriterThread` with a commit held back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from dafka.core import messages as m
from dafka.core.effects import Publish
from dafka.errors import StorageError, StoreFullError
from dafka.query.server import QueryService
from dafka.storage.lmdb_store import LmdbStorage, PlannedAppend
from dafka.store import StoreCore
from dafka.store import _pipeline as store_pipeline
from dafka.store._facade import _StoreHandler
from dafka.store._pipeline import StorePipeline, WriterThread
from dafka.wire.profiles import SignedProfile
from dafka.wire.rfc46 import Subscription
from tests.procs import wait_until
from tests.signing import CONSUMER, STORE, P, blob, from_blob, record, tampered

FULL = StoreFullError("append failed: disk full", path="/data", need_bytes=4096, free_bytes=0)


class TestStorage(LmdbStorage):
    """LMDB whose writes can fail (``fail``) or wait (``gate``), counted."""

    __test__ = False

    def __init__(self, path: Path, **kw: object) -> None:
        super().__init__(path, **kw)  # type: ignore[arg-type]
        self.fail: StorageError | None = None
        self.gate: threading.Event | None = None
        self.writes = 0
        self.grown = 0

    def write(self, planned: PlannedAppend) -> bool:
        self.writes += 1
        if self.gate is not None:
            assert self.gate.wait(10.0)
        if self.fail is not None:
            raise self.fail
        return super().write(planned)

    def grow(self) -> None:
        self.grown += 1
        super().grow()


class CountingProfile(SignedProfile):
    """The store's profile, counting the batches it verifies."""

    def __init__(self) -> None:
        super().__init__(STORE)
        self.checks = 0

    def check_records(self, msg: m.Record | m.DirectRecord) -> None:
        self.checks += 1
        super().check_records(msg)


class Driver:
    """A pipeline whose writer and reports run when the test says so."""

    def __init__(self, tmp_path: Path, **kw: object) -> None:
        self.storage = TestStorage(tmp_path / "lmdb", **kw)
        self.profile = CountingProfile()
        self.core = StoreCore(STORE.node_id, self.storage, profile=self.profile)
        self.jobs: list[Callable[[], None]] = []
        self.calls: list[Callable[[float], list[Publish]]] = []
        self.pipe = StorePipeline(self.core, self.storage, self.jobs.append, self.calls.append)

    def write(self) -> None:
        """Run what the writer was given."""
        jobs, self.jobs[:] = list(self.jobs), []
        for job in jobs:
            job()

    def report(self, now: float = 1.0) -> list[m.Message]:
        """Run what the writer told the IO thread."""
        out: list[Publish] = []
        calls, self.calls[:] = list(self.calls), []
        for call in calls:
            out.extend(call(now))
        return [e.msg for e in out]

    def heads(self) -> dict[tuple[str, str], int]:
        return {k: v[0] for k, v in self.storage.heads().items()}


def acks(out: list) -> list[int]:
    return [msg.offset for msg in (getattr(e, "msg", e) for e in out) if isinstance(msg, m.Ack)]


def fetches(out: list) -> list[tuple[int, int]]:
    msgs = [getattr(e, "msg", e) for e in out]
    return [(f.offset, f.count) for f in msgs if isinstance(f, m.Fetch)]


def test_the_ack_goes_out_only_when_the_commit_is_reported(tmp_path: Path) -> None:
    d = Driver(tmp_path)
    assert acks(d.pipe.on_messages([record(0, 4)], 0.0)) == []
    assert d.pipe.in_flight and d.jobs and d.heads() == {}
    d.write()  # written and synced, not reported yet: nothing moves on the IO thread
    assert acks([]) == [] and d.heads() == {} and d.core.stats.acks_sent == 0
    assert d.pipe.in_flight
    assert acks(d.report()) == [3]
    assert d.heads() == {("t", P): 3} and not d.pipe.in_flight


def test_the_next_drain_is_verified_while_the_commit_runs_and_ingested_after(
    tmp_path: Path,
) -> None:
    d = Driver(tmp_path)
    d.pipe.on_messages([record(0, 2)], 0.0)
    checks = d.profile.checks
    # arrives while 0..1 commits: verified now, not ingested (nothing of it ACKed, no
    # commit started for it)
    assert d.pipe.on_messages([record(2, 2), record(4, 1)], 0.1) == []
    assert d.profile.checks == checks + 2 and d.pipe.verified_ahead == 1
    assert len(d.jobs) == 1 and d.pipe.accepting()
    d.write()
    assert acks(d.report()) == [1]  # the first commit's ACK; the next commit started
    assert d.profile.checks == checks + 2  # ingested on the verdicts found ahead
    assert d.pipe.in_flight and d.heads() == {("t", P): 1}
    d.write()
    assert acks(d.report()) == [4]
    assert d.heads() == {("t", P): 4}


def test_a_forgery_verified_ahead_is_rejected_when_ingested(tmp_path: Path) -> None:
    d = Driver(tmp_path)
    d.pipe.on_messages([record(0, 1)], 0.0)
    d.pipe.on_messages([from_blob(tampered(blob(1, 2)))], 0.1)
    d.write()
    assert acks(d.report()) == [0]
    assert d.core.stats.rejected == 1 and not d.pipe.in_flight and d.heads() == {("t", P): 0}


def test_a_replay_below_the_committing_head_is_not_verified_ahead(tmp_path: Path) -> None:
    d = Driver(tmp_path)
    d.pipe.on_messages([record(0, 2)], 0.0)
    checks = d.profile.checks
    d.pipe.on_messages([record(0, 2)], 0.1)  # the same batch again: compared, not verified
    assert d.profile.checks == checks
    d.write()
    assert acks(d.report()) == [1, 1]  # the commit's ACK, then the replay's re-ACK
    assert d.core.stats.duplicates == 1


def test_a_commit_that_fails_while_the_next_drain_waits_acks_neither(tmp_path: Path) -> None:
    d = Driver(tmp_path)
    d.pipe.on_messages([record(0, 2)], 0.0)
    d.pipe.on_messages([record(2, 2)], 0.1)  # verified ahead, waits
    d.storage.fail = FULL
    d.write()
    out = d.report(1.0)
    # nothing stored, no ACK for either; the waiting drain was ingested on the old heads:
    # it is held (a gap before it) and what the failed commit held is fetched again
    assert acks(out) == [] and d.heads() == {} and d.core.head("t", P) is None
    assert not d.pipe.in_flight and d.jobs == []
    assert fetches(out) == [(0, 2)]
    assert d.core.stats.append_failures == 1 and d.core.last_storage_error is FULL
    # room again: the fetched batch is committed with the held one after it, then ACKed
    d.storage.fail = None
    assert acks(d.pipe.on_messages([record(0, 2)], 2.0)) == []
    d.write()
    assert acks(d.report(2.0)) == [3]
    assert d.heads() == {("t", P): 3}


def test_a_full_disk_pauses_the_acks_until_a_commit_succeeds(tmp_path: Path) -> None:
    d = Driver(tmp_path)
    d.pipe.on_messages([record(0, 1)], 0.0)
    d.write()
    assert acks(d.report()) == [0]
    d.storage.fail = FULL
    for now in (1.0, 2.0, 3.0):  # the producer sends it again; each commit fails
        d.pipe.on_messages([record(1, 1)], now)
        d.write()
        assert acks(d.report(now)) == []
    assert d.core.stats.append_failures == 3 and d.heads() == {("t", P): 0}
    d.storage.fail = None
    d.pipe.on_messages([record(1, 1)], 4.0)
    d.write()
    assert acks(d.report(4.0)) == [1]
    assert d.heads() == {("t", P): 1}


def test_a_full_map_grows_on_the_io_thread_and_the_commit_is_written_again(
    tmp_path: Path,
) -> None:
    d = Driver(tmp_path, map_size=64 * 1024)
    big = [bytes([i]) * 30_000 for i in range(8)]
    d.pipe.on_messages([from_blob(blob(0, 8, values=big))], 0.0)
    out: list[m.Message] = []
    for _ in range(10):
        d.write()  # the writer never grows the map: it reports it full
        out += d.report()
        if not d.pipe.in_flight:
            break
    assert d.storage.grown >= 1 and d.storage.writes == d.storage.grown + 1
    assert acks(out) == [7] and d.heads() == {("t", P): 7}


def test_the_waiting_drain_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_pipeline, "MAX_DRAIN", 3)
    d = Driver(tmp_path)
    d.pipe.on_messages([record(0, 1)], 0.0)
    assert d.pipe.accepting() and d.pipe.drain_budget() == store_pipeline.MAX_DRAIN_BYTES
    d.pipe.on_messages([record(1, 1), record(2, 1)], 0.1)
    assert d.pipe.accepting()
    assert d.pipe.drain_budget() < store_pipeline.MAX_DRAIN_BYTES  # what it holds is counted
    d.pipe.on_messages([record(3, 1)], 0.2)
    assert not d.pipe.accepting()  # full: the loop reads no more until the commit returns
    d.write()
    assert acks(d.report()) == [0]
    assert d.pipe.accepting()  # the waiting drain is the one committing now
    d.write()
    assert acks(d.report()) == [3]


def test_settle_reports_the_commit_in_flight_and_the_drain_after_it(tmp_path: Path) -> None:
    storage = TestStorage(tmp_path / "lmdb")
    core = StoreCore(STORE.node_id, storage, profile=SignedProfile(STORE))
    writer = WriterThread("test-writer")
    calls: list[Callable[[float], list[Publish]]] = []
    pipe = StorePipeline(core, storage, writer.submit, calls.append)
    try:
        storage.gate = threading.Event()
        pipe.on_messages([record(0, 2)], 0.0)
        pipe.on_messages([record(2, 2)], 0.1)
        storage.gate.set()
        out = pipe.settle(1.0)  # what retention or a topic deletion does before it writes
        assert acks(out) == [1, 3] and not pipe.in_flight
        assert [c(2.0) for c in calls] == [[], []]  # reported once only
    finally:
        writer.stop()
        storage.close()


def test_a_slow_commit_holds_its_ack_back_on_the_real_writer_thread(tmp_path: Path) -> None:
    storage = TestStorage(tmp_path / "lmdb")
    core = StoreCore(STORE.node_id, storage, profile=SignedProfile(STORE))
    writer = WriterThread("test-writer")
    calls: list[Callable[[float], list[Publish]]] = []
    lock = threading.Lock()

    def call(fn: Callable[[float], list[Publish]]) -> None:
        with lock:
            calls.append(fn)

    pipe = StorePipeline(core, storage, writer.submit, call)
    try:
        storage.gate = threading.Event()  # fdatasync takes as long as the test says
        assert acks(pipe.on_messages([record(0, 3)], 0.0)) == []
        wait_until(lambda: storage.writes == 1, 5.0)
        assert acks(pipe.on_messages([record(3, 1)], 0.1)) == []  # verified ahead
        assert calls == [] and storage.heads() == {} and core.head("t", P) is None
        storage.gate.set()
        wait_until(lambda: len(calls) == 1, 5.0)
        assert acks(calls.pop()(1.0)) == [2]
        wait_until(lambda: len(calls) == 1, 5.0)
        assert acks(calls.pop()(1.1)) == [3]
        assert {k: v[0] for k, v in storage.heads().items()} == {("t", P): 3}
    finally:
        if storage.gate is not None:
            storage.gate.set()
        writer.stop()
        storage.close()


def hello(consumer: str = CONSUMER) -> Subscription:
    """A consumer subscribing to this store's STORE-HELLOs."""
    return Subscription(True, b"L", consumer.encode())


def served(out: list) -> list[int]:
    return [e.msg.offset for e in out if type(e.msg) is m.DirectRecord]


def test_serving_and_greetings_go_on_while_a_commit_is_in_flight_and_its_ack_waits(
    tmp_path: Path,
) -> None:
    """What the handler's tick and subscriptions make runs through the core's Readies
    (StoreCore.push) and goes out at once with a commit in flight; that commit's ACK goes
    only when it is reported."""
    storage = TestStorage(tmp_path / "lmdb")
    core = StoreCore(STORE.node_id, storage, serve_chunk=10)  # rfc46: one record a batch
    jobs: list[Callable[[], None]] = []
    calls: list[Callable[[float], list[Publish]]] = []
    handler = _StoreHandler(core, QueryService(storage))
    handler.pipeline = StorePipeline(core, storage, jobs.append, calls.append)

    def commit(now: float) -> list[Publish]:
        for job in jobs:
            job()
        jobs.clear()
        out = [e for call in calls for e in call(now)]
        calls.clear()
        return out

    try:
        handler.on_messages([m.Record("t", P, i, b"v%d" % i) for i in range(30)], 0.0)
        assert acks(commit(0.1)) == [29]
        assert served(handler.on_messages([m.Fetch(P, CONSUMER, "t", 0, 30)], 1.0)) == list(
            range(10)
        )
        assert served(handler.on_tick(1.0)) == list(range(10, 20))  # retention ran: not due again
        assert handler.on_messages([m.Record("t", P, 30, b"v30")], 2.0) == []
        assert handler.pipeline.in_flight and jobs
        out = handler.on_tick(2.1)  # the next chunk, not held behind the commit
        assert served(out) == list(range(20, 30)) and acks(out) == []
        greeted = handler.on_subscription(hello(), 2.2)
        assert [e.msg for e in greeted] == [m.StoreHello(CONSUMER, STORE.node_id)]
        assert handler.pipeline.in_flight and jobs and acks(handler.on_tick(2.3)) == []
        assert core.head("t", P) == 29  # the commit in flight is not acted on
        assert acks(commit(2.4)) == [30] and not handler.pipeline.in_flight
    finally:
        storage.close()


def test_a_greeting_goes_out_while_the_real_writer_thread_is_stuck_in_a_commit(
    tmp_path: Path,
) -> None:
    storage = TestStorage(tmp_path / "lmdb")
    core = StoreCore(STORE.node_id, storage, profile=SignedProfile(STORE))
    writer = WriterThread("test-writer")
    calls: list[Callable[[float], list[Publish]]] = []
    lock = threading.Lock()

    def call(fn: Callable[[float], list[Publish]]) -> None:
        with lock:
            calls.append(fn)

    handler = _StoreHandler(core, QueryService(storage, profile="signed"))
    handler.pipeline = StorePipeline(core, storage, writer.submit, call)
    try:
        storage.gate = threading.Event()  # fdatasync takes as long as the test says
        assert acks(handler.on_messages([record(0, 3)], 0.0)) == []
        wait_until(lambda: storage.writes == 1, 5.0)
        greeted = handler.on_subscription(hello(), 0.1)  # the writer is inside the commit
        assert [e.msg for e in greeted] == [m.StoreHello(CONSUMER, STORE.node_id)]
        assert calls == [] and core.head("t", P) is None
        storage.gate.set()
        wait_until(lambda: len(calls) == 1, 5.0)
        assert acks(calls.pop()(1.0)) == [2]
    finally:
        if storage.gate is not None:
            storage.gate.set()
        writer.stop()
        storage.close()
