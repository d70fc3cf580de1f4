"""The producer's durability orders as Ready steps (dafka.producer._ready), alone and
as the IO handler runs them: offsets reserved before publishing, the log written before
``send`` returns, the acked bound written before futures resolve, the log released after."""

from __future__ import annotations

from typing import Any

import pytest

from dafka.config import ProducerConfig
from dafka.core import messages as m
from dafka.core.effects import Acked, Publish
from dafka.core.ready import Ready
from dafka.errors import StorageError
from dafka.futures import RecordFuture
from dafka.io.ready_shell import run_ready
from dafka.producer._core import ProducerCore
from dafka.producer._io import _ProducerHandler
from dafka.producer._ready import (
    AckedUpTo,
    Log,
    ReadyQueue,
    Release,
    Reserve,
    StatePersister,
)
from dafka.producer._state import ProducerState
from dafka.producer._wal import LoggedBatch
from dafka.security.identity import Identity
from dafka.wire.profiles import SignedProfile


class _File:
    """An offset journal or a producer log that writes into ``events``."""

    def __init__(self, name: str, events: list[tuple[str, Any]]) -> None:
        self.name, self.events, self.full = name, events, False

    def _write(self, what: str, arg: Any) -> None:
        if self.full:
            raise StorageError("No space left on device")
        self.events.append((f"{self.name}.{what}", arg))

    def reserve_many(self, offsets: dict[str, int]) -> None:
        self._write("reserve", dict(offsets))

    def append(self, batches: list[LoggedBatch]) -> None:
        self._write("append", [(b.topic, b.first, b.count) for b in batches])

    def release(self, offsets: dict[str, int]) -> None:
        self._write("release", dict(offsets))


class _Budget:
    def __init__(self, events: list[tuple[str, Any]]) -> None:
        self.events = events

    def released(self, count: int, size: int) -> None:
        self.events.append(("released", count))

    def rejected(self, count: int, size: int, error: BaseException) -> None:
        self.events.append(("rejected", count))

    def io_stopped(self) -> None:
        pass


class _LogWait:
    def __init__(self, events: list[tuple[str, Any]]) -> None:
        self.events = events

    def logged(self, count: int, error: StorageError | None) -> None:
        self.events.append(("logged", (count, error is None)))


def _state(events: list[tuple[str, Any]], durable: bool = False) -> ProducerState:
    state = ProducerState(
        ProducerConfig(max_batch_records=4, max_batch_bytes=1024, linger_ms=0.0),
        _Budget(events),
        journal=_File("journal", events),  # type: ignore[arg-type]
        acked_journal=_File("acked", events),  # type: ignore[arg-type]
        wal=_File("wal", events) if durable else None,  # type: ignore[arg-type]
    )
    state.log_wait = _LogWait(events)  # type: ignore[assignment]
    return state


# ------------------------------------------------------------- the parts alone


def test_the_persister_sends_each_write_to_its_file() -> None:
    events: list[tuple[str, Any]] = []
    persister = StatePersister(_state(events, durable=True))
    batch = LoggedBatch("t", 0, 2, b"blob")
    persister.persist(
        [Reserve({"t": 2}), Log([batch]), AckedUpTo({"t": 1}), Release({"t": 1})], True
    )
    assert events == [
        ("journal.reserve", {"t": 2}),
        ("wal.append", [("t", 0, 2)]),
        ("acked.reserve", {"t": 1}),
        ("wal.release", {"t": 1}),
    ]
    with pytest.raises(TypeError):
        persister.persist([object()], False)  # type: ignore[list-item]


def test_a_ready_queue_runs_its_steps_in_order_and_what_each_pushes_after_it() -> None:
    events: list[tuple[str, Any]] = []
    queue = ReadyQueue()
    persister = StatePersister(_state(events))
    pub = Publish(object())  # type: ignore[arg-type]

    def then(rd: Ready, failed: BaseException | None) -> None:
        events.append(("then", failed))
        queue.push(Ready(publish=(pub,)))  # the next step, run by the same call

    queue.push(Ready(persist=(Reserve({"t": 1}),), must_sync=True, deliver=("d",)), then)
    sent: list[object] = []
    delivered: list[object] = []
    assert run_ready(queue, persister, sent.extend, delivered.extend) == 2
    assert events == [("journal.reserve", {"t": 1}), ("then", None)]
    assert delivered == ["d"] and sent == [pub] and not queue.has_ready()


def test_a_ready_queue_step_whose_persist_fails_runs_nothing_else_and_is_told() -> None:
    events: list[tuple[str, Any]] = []
    state = _state(events)
    state.journal.full = True  # type: ignore[union-attr]
    queue = ReadyQueue()
    told: list[BaseException | None] = []
    queue.push(
        Ready(persist=(Reserve({"t": 1}),), must_sync=True, deliver=("d",)),
        lambda rd, failed: told.append(failed),
    )
    delivered: list[object] = []
    run_ready(queue, StatePersister(state), lambda _: None, delivered.extend)
    assert delivered == [] and len(told) == 1 and isinstance(told[0], StorageError)


# ------------------------------------------------------------- the IO handler


def _handler(events: list[tuple[str, Any]], durable: bool = False) -> _ProducerHandler:
    identity = Identity.generate()
    core = ProducerCore(
        identity.node_id,
        profile=SignedProfile(identity, max_batch_records=4, max_batch_bytes=1024),
    )
    return _ProducerHandler(_state(events, durable), core)


def test_offsets_are_reserved_before_the_turn_is_published_and_acked_before_resolving() -> None:
    events: list[tuple[str, Any]] = []
    handler = _handler(events)
    fut = RecordFuture()
    fut.add_done_callback(lambda f: events.append(("resolved", f.result())))
    handler.queue.append(("t", b"v", None, fut))
    out = handler.on_commands(0.0)
    assert events == [("journal.reserve", {"t": 1})] and len(out) == 1
    handler._durable([Acked("t", 0)], 0.0)
    handler._run([])
    assert events[1:] == [("acked.reserve", {"t": 1}), ("resolved", 0), ("released", 1)]


def test_a_durable_turn_is_logged_before_its_sends_return_and_released_after_its_ack() -> None:
    events: list[tuple[str, Any]] = []
    handler = _handler(events, durable=True)
    handler.queue.append(("t", [b"a", b"b"], None, RecordFuture()))
    out = handler.on_commands(0.0)
    assert len(out) == 1
    assert events == [
        ("journal.reserve", {"t": 2}),
        ("wal.append", [("t", 0, 2)]),
        ("logged", (1, True)),
    ]
    events.clear()
    handler._durable([Acked("t", 1)], 0.0)
    handler._run([])
    assert events == [("acked.reserve", {"t": 2}), ("released", 2), ("wal.release", {"t": 2})]


def test_a_turn_that_cannot_be_logged_is_published_all_the_same_and_says_so() -> None:
    events: list[tuple[str, Any]] = []
    handler = _handler(events, durable=True)
    handler.state.wal.full = True  # type: ignore[union-attr]
    handler.queue.append(("t", b"a", None, RecordFuture()))
    out = handler.on_commands(0.0)
    assert len(out) == 1  # sealed: it goes out
    assert events == [("journal.reserve", {"t": 1}), ("logged", (1, False))]
    assert handler.trouble.error is not None


def test_acks_that_cannot_be_recorded_wait_and_resolve_once_they_are() -> None:
    events: list[tuple[str, Any]] = []
    handler = _handler(events)
    fut = RecordFuture()
    handler.queue.append(("t", b"v", None, fut))
    handler.on_commands(0.0)
    handler.state.acked_journal.full = True  # type: ignore[union-attr]
    handler._durable([Acked("t", 0)], 0.0)
    handler._run([])
    assert not fut.done() and handler.trouble.error is not None
    handler.state.acked_journal.full = False  # type: ignore[union-attr]
    handler.on_tick(10.0)  # tried again
    assert fut.result(0) == 0 and handler.trouble.error is None


# ------------------------------------------------------------- the core's contract


def test_the_core_steps_messages_into_one_ready_of_answers_then_acks() -> None:
    """ProducerCore.step keeps what handle makes; ready() hands it over once, in order:
    FETCH answers to publish, Acked to deliver; a core with nothing made has no Ready."""
    node = "A" * 32
    core = ProducerCore(node)  # rfc46: anonymous ACKs, min_acks 1
    core.publish("t", [b"a", b"b", b"c"], 0.0)
    assert not core.has_ready()
    core.step(m.Fetch(node, "C" * 32, "t", 0, 2), 0.0)
    core.step(m.Ack(node, "t", 0), 0.0)
    core.step(m.Ack(node, "t", 1), 0.0)
    core.step(m.Ack(node, "t", 9), 0.0)  # never published: refused, nothing made
    assert core.has_ready()
    rd = core.ready()
    assert rd.persist == () and not rd.must_sync
    answers = [e.msg for e in rd.publish if isinstance(e, Publish)]
    assert [(a.offset, a.content) for a in answers] == [(0, b"a"), (1, b"b")]  # type: ignore[union-attr]
    assert rd.deliver == (Acked("t", 0), Acked("t", 1))
    core.advance(rd)
    assert not core.has_ready() and core.unacked_count("t") == 1
