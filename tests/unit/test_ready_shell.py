"""The durability order of dafka.io.ready_shell.run_ready, written once for every node."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from dafka.core.effects import Publish
from dafka.core.messages import GetHeads
from dafka.core.ready import Ready, Resolve
from dafka.errors import StorageError
from dafka.io.ready_shell import MAX_READIES, run_ready


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


class Log:
    def __init__(self, fail: bool = False) -> None:
        self.events: list[str] = []
        self.fail = fail

    def persist(self, writes, sync: bool) -> None:
        self.events.append(f"persist {list(writes)} sync={sync}")
        if self.fail:
            raise StorageError("disk full")


def test_persist_then_publish_then_deliver_then_resolve() -> None:
    log = Log()
    fut: Future[int] = Future()
    fut.add_done_callback(lambda f: log.events.append(f"resolve {f.result()}"))
    msg = Publish(GetHeads("t", "p"))
    rd = Ready(
        persist=("w",), must_sync=True, publish=(msg,), deliver=("r",), resolve=(Resolve(fut, 7),)
    )
    core = Core([rd])
    ran = run_ready(
        core,
        log,
        send=lambda out: log.events.append(f"publish {len(out)}"),
        deliver=lambda items: log.events.append(f"deliver {list(items)}"),
    )
    assert ran == 1
    assert log.events == ["persist ['w'] sync=True", "publish 1", "deliver ['r']", "resolve 7"]
    assert core.advanced == [(rd, None)]


def test_a_failed_persist_publishes_delivers_and_resolves_nothing() -> None:
    log = Log(fail=True)
    fut: Future[int] = Future()
    rd = Ready(persist=("w",), publish=(Publish(GetHeads("t", "p")),), resolve=(Resolve(fut, 1),))
    core = Core([rd])
    run_ready(core, log, send=lambda out: log.events.append("publish"))
    assert log.events == ["persist ['w'] sync=False"]
    assert not fut.done()
    assert core.advanced[0][0] is rd and isinstance(core.advanced[0][1], StorageError)


def test_an_error_resolution_and_a_cancelled_future() -> None:
    failed: Future[int] = Future()
    cancelled: Future[int] = Future()
    cancelled.cancel()
    rd = Ready(resolve=(Resolve(failed, error=ValueError("no")), Resolve(cancelled, 1)))
    run_ready(Core([rd]), None, send=lambda out: None)
    with pytest.raises(ValueError):
        failed.result()


def test_persist_without_storage_is_a_failure_reported_to_the_core_not_a_silent_skip() -> None:
    fut: Future[int] = Future()
    rd = Ready(persist=("w",), publish=(Publish(GetHeads("t", "p")),), resolve=(Resolve(fut, 1),))
    core = Core([rd])
    sent: list[object] = []
    run_ready(core, None, send=sent.extend)
    assert sent == [] and not fut.done()
    assert core.advanced[0][0] is rd and isinstance(core.advanced[0][1], StorageError)


def test_any_error_from_persist_is_reported_and_the_ready_is_not_lost() -> None:
    # an OSError from below (or a bug) is no StorageError: the Ready it was taken from was
    # lost, never advanced, and the step after it in the producer's queue never ran
    class Broken:
        def persist(self, writes, sync: bool) -> None:
            raise OSError(5, "Input/output error")

    later = Ready(deliver=("after",))
    rd = Ready(persist=("w",), publish=(Publish(GetHeads("t", "p")),))
    core = Core([rd, later])
    sent: list[object] = []
    delivered: list[object] = []
    run_ready(core, Broken(), send=sent.extend, deliver=delivered.extend)
    assert sent == []
    assert core.advanced[0][0] is rd and isinstance(core.advanced[0][1], OSError)
    assert core.advanced[1] == (later, None) and delivered == ["after"]


class CancelledBetween(Future[int]):
    """A future its caller cancels between the shell's look at it and its answer: done()
    still says False (the look), but the cancel has landed (the event in between)."""

    def __init__(self) -> None:
        super().__init__()
        self.cancel()

    def done(self) -> bool:
        return False


def test_a_future_cancelled_between_the_check_and_the_answer_does_not_stop_the_shell() -> None:
    cancelled, fine = CancelledBetween(), Future()
    rd = Ready(resolve=(Resolve(cancelled, 1), Resolve(fine, 2)))
    core = Core([rd])
    run_ready(core, None, send=lambda out: None)  # raised InvalidStateError
    assert fine.result(timeout=0) == 2
    assert core.advanced == [(rd, None)]


def test_a_core_that_never_runs_dry_cannot_hold_the_loop() -> None:
    class Endless(Core):
        def has_ready(self) -> bool:
            return True

        def ready(self) -> Ready:
            return Ready(deliver=("x",))

    assert (
        run_ready(Endless([]), None, send=lambda out: None, deliver=lambda i: None) == MAX_READIES
    )
