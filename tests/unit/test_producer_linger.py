"""The producer's linger (``linger_ms``): records wait for others to share their batch,
up to the linger, a full batch, or a flush; the IO handler's deadline wakes the loop."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from dafka.config import DEFAULT_LINGER_MS, ProducerConfig
from dafka.core.effects import Publish
from dafka.errors import ConfigError
from dafka.futures import BatchFuture, RecordFuture
from dafka.producer._core import ProducerCore
from dafka.producer._facade import Producer
from dafka.producer._io import _ProducerHandler
from dafka.producer._linger import Linger
from dafka.producer._state import ProducerState
from dafka.security.identity import Identity
from dafka.wire.profiles import SignedProfile


def test_without_a_linger_whatever_is_queued_goes_at_once() -> None:
    linger = Linger(0.0, 100)
    assert linger.ready(1, 10.0)
    assert linger.ready(1, 10.0001)
    assert linger.deadline() is None


def test_a_record_to_an_idle_producer_goes_at_once() -> None:
    linger = Linger(0.005, 100)
    assert linger.ready(1, 10.0)  # never published: idle
    assert linger.deadline() == pytest.approx(10.005)  # the window it opened
    linger.idle(10.005)  # its end came with nothing queued: closed
    assert linger.deadline() is None
    assert linger.ready(1, 10.005)  # a quiet linger since the last publication
    assert linger.ready(1, 20.0)


def test_what_comes_within_the_linger_of_a_publication_waits_for_its_end() -> None:
    linger = Linger(0.005, 100)
    assert linger.ready(1, 10.0)
    assert not linger.ready(1, 10.002)
    assert linger.deadline() == pytest.approx(10.005)
    assert not linger.ready(3, 10.004)  # more arrived: the same end
    assert linger.deadline() == pytest.approx(10.005)
    assert linger.ready(3, 10.005)
    assert linger.deadline() == pytest.approx(10.010)  # the window of this publication
    assert not linger.ready(1, 10.006)  # counted from the publication at 10.005
    assert linger.deadline() == pytest.approx(10.010)


def test_at_most_one_batch_per_linger_and_no_record_waits_longer() -> None:
    """A record every 0.1 ms for 100 ms and a linger of 1 ms; the IO thread turns at each
    record (``send`` wakes it) and at the linger's deadline."""
    linger = Linger(0.001, 10_000)
    queued: list[float] = []  # when each waiting record was sent
    batches: list[int] = []
    waits: list[float] = []

    def publish(now: float) -> None:
        batches.append(len(queued))
        waits.extend(now - sent for sent in queued)
        queued.clear()

    for k in range(1000):
        now = k * 0.0001
        due = linger.deadline()
        if due is not None and due <= now and linger.ready(len(queued), due):
            publish(due)  # the loop's poll timed out at the deadline
        queued.append(now)
        if linger.ready(len(queued), now):
            publish(now)
    assert len(batches) <= 101  # one per linger, not one per record
    assert sum(batches) + len(queued) == 1000
    assert max(waits) <= 0.001 + 1e-9
    assert sum(waits) / len(waits) == pytest.approx(0.0005, abs=0.0001)


def test_a_full_batch_ends_the_wait() -> None:
    linger = Linger(1.0, 4)
    assert linger.ready(1, 0.0)
    assert not linger.ready(3, 0.001)
    assert linger.ready(4, 0.002)  # as many queued items as a batch holds
    assert linger.deadline() == pytest.approx(1.002)
    assert not linger.ready(1, 0.003)
    assert linger.ready(1, 0.004, full=True)  # one send_many of a full batch


def test_hurry_ends_one_wait_then_the_linger_resumes() -> None:
    linger = Linger(1.0, 100)
    assert linger.ready(1, 0.0)
    assert not linger.ready(1, 0.001)
    linger.hurry()
    assert linger.ready(1, 0.002)
    assert not linger.ready(1, 0.003)  # hurry was for what was queued then


def test_a_send_wakes_the_io_thread_unless_it_turns_at_a_deadline_still_to_come() -> None:
    linger = Linger(0.001, 100)
    assert linger.wakes(0.0)  # nothing published: the record may go at once
    assert linger.ready(1, 0.0)
    assert not linger.wakes(0.0002)  # the window is open: the IO thread turns at 0.001
    assert linger.wakes(0.0002, full=True)  # a full batch goes at once
    linger.idle(0.0003)  # a turn before the end with nothing queued: still open
    assert not linger.wakes(0.0004)
    assert linger.deadline() == pytest.approx(0.001)
    assert not linger.ready(1, 0.0005)
    assert not linger.wakes(0.0005)
    assert linger.wakes(0.001)  # the deadline has come: do not wait for the poll timeout
    assert linger.ready(2, 0.001)
    assert not linger.wakes(0.0011)  # a new window
    linger.idle(0.002)  # its end, nothing queued: closed
    assert linger.deadline() is None
    assert linger.wakes(0.0021)  # idle: this record wakes the IO thread and goes at once


def test_idle_drops_the_deadline_once_the_window_ends() -> None:
    linger = Linger(1.0, 100)
    linger.ready(1, 0.0)
    linger.ready(1, 0.1)
    assert linger.deadline() == pytest.approx(1.0)
    linger.idle(0.5)  # what waited was failed: the window stays open to its end
    assert linger.deadline() == pytest.approx(1.0)
    linger.idle(1.0)
    assert linger.deadline() is None


def test_without_a_linger_no_window_opens() -> None:
    linger = Linger(0.0, 100)
    assert linger.ready(1, 1.0)
    assert linger.wakes(1.0)
    assert linger.deadline() is None


def _handler(linger_ms: float) -> _ProducerHandler:
    identity = Identity.generate()
    core = ProducerCore(identity.node_id, profile=SignedProfile(identity))
    state = ProducerState(ProducerConfig(linger_ms=linger_ms), None)  # type: ignore[arg-type]  # no budget: never called
    return _ProducerHandler(state, core)


def _batches(effects: object) -> list[tuple[int, int]]:
    return [(e.msg.offset, e.msg.count) for e in effects if isinstance(e, Publish)]  # type: ignore[attr-defined]


def test_records_sent_within_the_linger_share_one_signed_batch() -> None:
    handler = _handler(linger_ms=2.0)
    futures = [RecordFuture() for _ in range(6)]
    handler.queue.append(("t", b"first", None, futures[0]))
    assert _batches(handler.on_commands(100.0)) == [(0, 1)]  # an idle producer: at once
    for k, fut in enumerate(futures[1:4]):
        handler.queue.append(("t", b"r%d" % k, None, fut))
        assert handler.on_commands(100.0005 + k * 0.0005) == []
    deadline = handler.command_deadline()
    assert deadline == pytest.approx(100.002)  # the linger after the last publication
    for k, fut in enumerate(futures[4:]):
        handler.queue.append(("t", b"s%d" % k, None, fut))
    assert handler.on_commands(deadline - 0.0001) == []
    assert _batches(handler.on_commands(deadline)) == [(1, 5)]
    assert handler.command_deadline() == pytest.approx(100.004)  # the window it opened
    assert not handler.queue
    assert handler.on_commands(100.004) == []  # nothing came in it: closed
    assert handler.command_deadline() is None


def test_a_send_many_of_a_full_batch_does_not_wait() -> None:
    handler = _handler(linger_ms=2.0)
    handler.queue.append(("t", b"first", None, RecordFuture()))
    assert _batches(handler.on_commands(100.0)) == [(0, 1)]
    handler.queue.append(("t", b"one", None, RecordFuture()))
    assert handler.on_commands(100.0001) == []
    full = handler.state.config.max_batch_records
    handler.queue.append(("t", [b"x"] * full, None, BatchFuture()))
    assert _batches(handler.on_commands(100.0002)) == [(1, full), (full + 1, 1)]
    # after it, the linger counts again from that publication
    handler.queue.append(("t", [b"y"] * (full - 1), None, BatchFuture()))
    assert handler.on_commands(100.0003) == []
    assert handler.command_deadline() == pytest.approx(100.0022)


def test_without_a_linger_each_wake_up_publishes_its_own_batch() -> None:
    handler = _handler(linger_ms=0.0)
    out = []
    for k in range(3):
        handler.queue.append(("t", b"r%d" % k, None, RecordFuture()))
        out += _batches(handler.on_commands(100.0 + k * 0.0005))
    assert out == [(0, 1), (1, 1), (2, 1)]


def test_an_empty_queue_has_no_deadline_past_the_window() -> None:
    handler = _handler(linger_ms=5.0)
    handler.queue.append(("t", b"x", None, RecordFuture()))
    handler.on_commands(1.0)
    handler.queue.append(("t", b"y", None, RecordFuture()))
    assert handler.on_commands(1.001) == []
    handler.queue.clear()  # failed on stop, say
    assert handler.on_commands(1.002) == []
    assert handler.command_deadline() == pytest.approx(1.005)  # the window's end
    assert handler.on_commands(1.005) == []
    assert handler.command_deadline() is None


@pytest.mark.parametrize("linger_ms", [-1.0, 60_001.0])
def test_a_linger_out_of_range_is_refused(linger_ms: float) -> None:
    with pytest.raises(ConfigError, match="linger_ms must be between 0 and 60,000"):
        dataclasses.replace(ProducerConfig(), linger_ms=linger_ms).validate()


def test_a_durable_producer_refuses_a_linger(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="does not apply to a durable producer"):
        Producer("t", towers="127.0.0.1:1", state_dir=str(tmp_path), durable=True, linger_ms=1)


@pytest.mark.parametrize(
    "options, linger_ms",
    [
        ({}, DEFAULT_LINGER_MS),
        ({"profile": "rfc46"}, 0.0),  # a message per record anyway: a linger only delays
        ({"durable": True}, 0.0),
        ({"linger_ms": 0.0}, 0.0),
    ],
)
def test_the_default_linger(tmp_path: Path, options: dict, linger_ms: float) -> None:
    with Producer(
        "t", towers="127.0.0.1:1", metadata=False, state_dir=str(tmp_path), **options
    ) as producer:
        assert producer.config.linger_ms == linger_ms
        assert producer._handler.linger.seconds == linger_ms / 1000
    assert DEFAULT_LINGER_MS == 1.0


def test_a_flush_with_nothing_lingering_leaves_no_hurry_for_the_next_record() -> None:
    """A flush (publish_now) after the IO thread published everything must not leave the
    hurry set: the next record, sent any time later, would skip its linger (seen as a
    20-record send published as 1 + 19 after a warm-up's flush)."""
    from tests.procs import wait_until

    p = Producer("t", towers="127.0.0.1:9", metadata=False, linger_ms=60_000)
    try:
        linger = p._handler.linger
        p.send(b"first")  # to an idle producer: published at once
        wait_until(lambda: linger.last is not None and not p._handler.queue, 10, what="publish")
        p.publish_now()
        assert not linger.hurried
        p.send(b"second")  # within the linger of the first: waits
        wait_until(lambda: linger.waiting, 10, what="the linger")
        p.publish_now()  # ends it
        wait_until(lambda: not linger.waiting and not p._handler.queue, 10, what="publish")
        assert not linger.hurried
    finally:
        p.close(timeout=0.1)  # no store: nothing is acknowledged


def _wait_sent(producer: Producer, count: int, seconds: float = 5.0) -> int:
    deadline = time.monotonic() + seconds
    while producer._handler.records_sent < count and time.monotonic() < deadline:
        time.sleep(0.001)
    return producer._handler.records_sent


def test_records_sent_in_an_open_window_are_published_at_its_end_without_a_flush() -> None:
    """No store, no flush: the records go out by the IO thread's own turns alone (one
    sent inside a publication's window does not wake it, and must not be left queued)."""
    p = Producer("t", towers="127.0.0.1:1", metadata=False, trust_any_store=True, linger_ms=50.0)
    try:
        p.send(b"first")  # an idle producer: published at once
        assert _wait_sent(p, 1) == 1
        first_at = p._handler.linger.last
        assert first_at is not None
        p.send(b"second")  # inside the first's window: no wake-up
        p.send(b"third")
        assert _wait_sent(p, 3) == 3
        second_at = p._handler.linger.last  # when the IO thread published them
        assert second_at is not None and second_at >= first_at + 0.05  # at the window's end
        deadline = time.monotonic() + 5
        while p._handler.linger.open and time.monotonic() < deadline:
            time.sleep(0.005)  # the turn at the end of the last window closes it
        assert not p._handler.linger.open
        p.send(b"fourth")  # idle again: woken, published at once
        assert _wait_sent(p, 4) == 4
    finally:
        p.close(0)
