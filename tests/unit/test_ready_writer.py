"""The shell's writer-thread option (dafka.io.ready_writer): a Ready's persist on a writer
thread, its publish, deliver and resolve on the loop thread only once the write is
reported; one write in flight; a failed write publishes nothing; a write without room is
recovered from on the loop thread and made again; settle() reports what is in flight."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from dafka.core.effects import Publish
from dafka.core.messages import GetHeads
from dafka.core.ready import Ready, Resolve
from dafka.errors import StorageError
from dafka.io.ready_writer import ReadyWriter, WriterThread, planned
from tests.procs import wait_until


class Core:
    def __init__(self, readies: list[Ready]) -> None:
        self.readies = readies
        self.advanced: list[tuple[Ready, BaseException | None]] = []

    def has_ready(self) -> bool:
        return bool(self.readies)

    def ready(self) -> Ready:
        return self.readies.pop(0)

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        self.advanced.append((rd, failed))


class Writes:
    """A PlannedPersister that logs each step; ``full`` writes report no room."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.fail: StorageError | None = None
        self.full = 0

    def plan(self, writes: Any, sync: bool) -> Any:
        self.events.append(f"plan {list(writes)}")
        return list(writes)

    def write(self, plan: Any) -> bool:
        self.events.append(f"write {plan}")
        if self.fail is not None:
            raise self.fail
        if self.full:
            self.full -= 1
            return False
        return True

    def recover(self) -> None:
        self.events.append("recover")

    def applied(self, plan: Any) -> None:
        self.events.append(f"applied {plan}")


def pub(topic: str) -> Publish:
    return Publish(GetHeads(topic, "P"))


class Driver:
    def __init__(self, readies: list[Ready]) -> None:
        self.core = Core(readies)
        self.writes = Writes()
        self.jobs: list[Callable[[], None]] = []
        self.calls: list[Callable[[float], list[Any]]] = []
        self.times: list[float] = []
        self.w = ReadyWriter(
            self.core, self.writes, self.jobs.append, self.calls.append, at=self.times.append
        )

    def write(self) -> None:
        jobs, self.jobs[:] = list(self.jobs), []
        for job in jobs:
            job()

    def report(self, now: float = 1.0) -> list[Any]:
        out: list[Any] = []
        calls, self.calls[:] = list(self.calls), []
        for call in calls:
            out.extend(call(now))
        return out


def test_publish_waits_for_the_write_and_the_next_ready_for_the_report() -> None:
    fut: Future[int] = Future()
    first = Ready(persist=("a",), must_sync=True, publish=(pub("a"),), resolve=(Resolve(fut, 1),))
    second = Ready(publish=(pub("b"),))
    d = Driver([first, second])
    assert d.w.run() == []  # handed to the writer; the second Ready waits
    assert d.w.in_flight and d.core.readies == [second] and d.writes.events == ["plan ['a']"]
    d.write()
    assert d.core.advanced == [] and not fut.done()  # written, not reported yet
    assert d.w.run() == []  # nothing while a write is in flight
    out = d.report(2.0)
    assert out == [pub("a"), pub("b")] and fut.result() == 1
    assert d.writes.events == ["plan ['a']", "write ['a']", "applied ['a']"]
    assert d.core.advanced == [(first, None), (second, None)] and d.times == [2.0]
    assert not d.w.in_flight and d.calls == []


def test_a_ready_without_writes_runs_at_once() -> None:
    d = Driver([Ready(publish=(pub("x"),))])
    assert d.w.run() == [pub("x")] and d.jobs == [] and d.w.writes == 0


def test_a_failed_write_publishes_nothing_and_tells_the_core() -> None:
    fut: Future[int] = Future()
    rd = Ready(persist=("a",), publish=(pub("a"),), resolve=(Resolve(fut, 1),))
    d = Driver([rd])
    d.w.run()
    d.writes.fail = StorageError("disk full")
    d.write()
    assert d.report() == [] and not fut.done()
    assert d.core.advanced[0][0] is rd and isinstance(d.core.advanced[0][1], StorageError)
    assert "applied ['a']" not in d.writes.events


def test_a_failed_plan_is_reported_on_the_loop_thread() -> None:
    class Refusing(Writes):
        def plan(self, writes: Any, sync: bool) -> Any:
            raise StorageError("refused")

    d = Driver([Ready(persist=("a",), publish=(pub("a"),)), Ready(publish=(pub("b"),))])
    d.w.persister = Refusing()
    assert d.w.run() == [pub("b")] and d.jobs == []
    assert isinstance(d.core.advanced[0][1], StorageError)


def test_a_write_without_room_is_recovered_on_the_loop_thread_and_made_again() -> None:
    d = Driver([Ready(persist=("a",), publish=(pub("a"),))])
    d.writes.full = 1
    d.w.run()
    d.write()
    assert d.report() == [] and d.w.in_flight and d.writes.events[-1] == "recover"
    d.write()
    assert d.report() == [pub("a")] and d.w.writes == 2


def test_settle_reports_the_write_in_flight_on_the_real_writer_thread() -> None:
    gate = threading.Event()

    class Slow(Writes):
        def write(self, plan: Any) -> bool:
            assert gate.wait(10.0)
            return super().write(plan)

    writer = WriterThread("test-ready-writer")
    calls: list[Callable[[float], list[Any]]] = []
    lock = threading.Lock()

    def call(fn: Callable[[float], list[Any]]) -> None:
        with lock:
            calls.append(fn)

    core = Core([Ready(persist=("a",), publish=(pub("a"),)), Ready(persist=("b",))])
    w = ReadyWriter(core, Slow(), writer.submit, call)
    try:
        assert w.run() == [] and w.in_flight
        threading.Timer(0.05, gate.set).start()
        assert w.settle(0.0) == [pub("a")]  # and the second write too
        assert not w.in_flight and len(core.advanced) == 2
        wait_until(lambda: len(calls) == 2, 5.0)
        assert [c(1.0) for c in calls] == [[], []]  # reported once only
    finally:
        gate.set()
        writer.stop()


def test_a_plain_persister_runs_whole_on_the_writer() -> None:
    persisted: list[tuple[list[str], bool]] = []

    class Plain:
        def persist(self, writes: Any, sync: bool) -> None:
            persisted.append((list(writes), sync))

    core = Core([Ready(persist=("a",), must_sync=True, publish=(pub("a"),))])
    jobs: list[Callable[[], None]] = []
    calls: list[Callable[[float], list[Any]]] = []
    w = ReadyWriter(core, planned(Plain()), jobs.append, calls.append)
    w.run()
    jobs.pop()()
    assert persisted == [(["a"], True)] and calls.pop()(0.0) == [pub("a")]
