"""Bookkeeping of records that fail: isolation in the IO handler, and the CLI's line reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dafka.cli.feed import Feed, Tally, read_lines
from dafka.config import ProducerConfig
from dafka.core.effects import Acked, Publish
from dafka.errors import RecordTooLargeError, TopicDeletedError
from dafka.futures import BatchFuture, RecordFuture
from dafka.producer._core import ProducerCore
from dafka.producer._io import _ProducerHandler
from dafka.producer._state import ProducerState
from dafka.security.identity import Identity
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed import MAX_VALUE_BYTES, LimitExceeded


class _StubProducer:
    """What the handler calls back on the producer: the bookkeeping only (also used by
    ``test_producer_turns``, with a config of its own). ``state`` is what the handler is
    given, its budget recording here."""

    def __init__(self, config: ProducerConfig | None = None) -> None:
        self.config = config if config is not None else ProducerConfig()
        self.released: list[tuple[int, int]] = []
        self.rejected: list[tuple[int, int, BaseException]] = []
        self.state = ProducerState(self.config, _Accounts(self))


class _Accounts:
    def __init__(self, stub: _StubProducer) -> None:
        self.stub = stub

    def released(self, count: int, size: int) -> None:
        self.stub.released.append((count, size))

    def rejected(self, count: int, size: int, error: BaseException) -> None:
        self.stub.rejected.append((count, size, error))

    def io_stopped(self) -> None:
        pass


def _handler() -> tuple[_ProducerHandler, _StubProducer]:
    stub = _StubProducer()
    identity = Identity.generate()
    core = ProducerCore(identity.node_id, profile=SignedProfile(identity))
    return _ProducerHandler(stub.state, core), stub


def test_a_record_that_does_not_seal_fails_alone() -> None:
    handler, stub = _handler()
    good1, bad, good2 = RecordFuture(), RecordFuture(), BatchFuture()
    huge = b"x" * (MAX_VALUE_BYTES + 1)  # past send()'s check, as a defence in depth
    handler.queue.extend(
        [
            ("t", b"before", None, good1),
            ("t", huge, None, bad),
            ("t", [b"after1", b"after2"], None, good2),
        ]
    )
    effects = handler.on_commands(0.0)
    assert isinstance(bad.exception(0), LimitExceeded)
    assert not good1.done() and not good2.done()
    assert [(n, size) for n, size, _ in stub.rejected] == [(1, len(huge))]
    published = [e.msg for e in effects if isinstance(e, Publish)]
    assert [(r.offset, r.count) for r in published] == [(0, 1), (1, 2)]
    # the records kept have the offsets the ACKs will name
    assert [(run.first, run.count) for run in handler.inflight["t"]] == [(0, 1), (1, 2)]
    assert handler.core.next_offset("t") == 3


def test_other_topics_are_not_affected() -> None:
    handler, stub = _handler()
    ok, bad = RecordFuture(), RecordFuture()
    handler.queue.extend([("t", b"x" * (MAX_VALUE_BYTES + 1), None, bad), ("u", b"fine", None, ok)])
    handler.on_commands(0.0)
    assert bad.done() and not ok.done()
    assert handler.core.next_offset("u") == 1 and handler.core.next_offset("t") == 0


def test_records_of_a_deleted_topic_count_as_failed_not_acknowledged() -> None:
    handler, stub = _handler()
    fut = RecordFuture()
    handler.queue.append(("t", b"doomed", None, fut))
    handler.on_commands(0.0)
    handler.topic_deleted("t", 7)
    assert isinstance(fut.exception(0), TopicDeletedError)
    assert stub.released == []
    assert [(n, size) for n, size, _ in stub.rejected] == [(1, 6)]


def test_acks_resolve_each_send_with_its_offset_run_by_run() -> None:
    """Sends and send_many calls mixed in one turn; ACKs that end inside a run of sends
    resolve that run's futures up to the ACK only, and free exactly their bytes."""
    handler, stub = _handler()
    singles = [RecordFuture() for _ in range(5)]
    many = BatchFuture()
    later = RecordFuture()
    handler.queue.extend([("t", b"a" * (k + 1), None, f) for k, f in enumerate(singles[:3])])
    handler.queue.append(("t", [b"m1", b"m2"], None, many))  # offsets 3, 4
    handler.queue.extend([("t", b"b" * 10, None, f) for f in singles[3:]])  # 5, 6
    handler.queue.append(("u", b"other", None, later))
    handler.on_commands(0.0)
    handler._resolve(Acked("t", 1))  # inside the first run
    assert [f.result(0) for f in singles[:2]] == [0, 1] and not singles[2].done()
    assert stub.released == [(2, 1 + 2)]
    handler._resolve(Acked("t", 3))  # the rest of the run; send_many waits for offset 4
    assert singles[2].result(0) == 2 and not many.done()
    handler._resolve(Acked("t", 5))
    assert many.result(0) == range(3, 5) and singles[3].result(0) == 5
    assert not singles[4].done() and not later.done()
    assert stub.released == [(2, 3), (1, 3), (3, 4 + 10)]
    handler.topic_deleted("t", 1)
    assert isinstance(singles[4].exception(0), TopicDeletedError)
    assert [(n, size) for n, size, _ in stub.rejected] == [(1, 10)]
    assert not handler.inflight.get("t")
    handler._resolve(Acked("u", 0))
    assert later.result(0) == 0


def test_a_future_its_caller_dropped_is_not_kept_but_its_record_is_counted() -> None:
    handler, stub = _handler()
    held = RecordFuture()
    handler.queue.append(("t", b"kept", None, held))
    handler.queue.append(("t", b"dropped", None, RecordFuture()))  # the queue's reference only
    seen: list[int] = []
    called = RecordFuture()
    called.add_done_callback(lambda f: seen.append(f.result()))
    handler.queue.append(("t", b"called", None, called))
    del called  # dropped, but its callback must still run
    handler.on_commands(0.0)
    (run,) = handler.inflight["t"]
    assert run.futures[:2] == [held, None]  # type: ignore[union-attr]  # a RecordRun
    handler._resolve(Acked("t", 2))
    assert held.result(0) == 0 and seen == [2]
    assert stub.released == [(3, len(b"kept") + len(b"dropped") + len(b"called"))]


def _lines(tmp_path: Path, data: bytes, max_line: int, read_bytes: int) -> list[bytes | int]:
    path = tmp_path / "in"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return [line for chunk in read_lines(fd, max_line, read_bytes) for line in chunk]
    finally:
        os.close(fd)


@pytest.mark.parametrize("read_bytes", [1, 2, 3, 5, 7, 64])
def test_read_lines_across_reads(tmp_path: Path, read_bytes: int) -> None:
    data = b"a\n\nbcd\r\n" + b"L" * 20 + b"\nefg\n" + b"M" * 11 + b"\nlast"
    assert _lines(tmp_path, data, 10, read_bytes) == [b"a", b"", b"bcd\r", 20, b"efg", 11, b"last"]


@pytest.mark.parametrize("read_bytes", [1, 4, 64])
def test_read_lines_ends(tmp_path: Path, read_bytes: int) -> None:
    assert _lines(tmp_path, b"", 10, read_bytes) == []
    assert _lines(tmp_path, b"\n", 10, read_bytes) == [b""]
    assert _lines(tmp_path, b"x" * 10, 10, read_bytes) == [b"x" * 10]
    assert _lines(tmp_path, b"x" * 11, 10, read_bytes) == [11]
    assert _lines(tmp_path, b"x" * 30 + b"\n", 10, read_bytes) == [30]


def test_tally_counts_what_was_not_acknowledged() -> None:
    assert Tally(read=10, acknowledged=6, failed=1).unacknowledged == 3


class _SendStub:
    """A producer that acknowledges every record at once and refuses values over 5 bytes."""

    failed = 0

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, bytes | None]] = []
        self.feed: Feed | None = None
        self.stop_at = -1

    @property
    def acknowledged(self) -> int:
        return len(self.sent)

    def send(self, value: bytes, key: bytes | None = None) -> None:
        if len(value) > 5:
            raise RecordTooLargeError(f"a record of {len(value)} bytes is over", len(value), 5)
        self.sent.append((value, key))
        if len(self.sent) == self.stop_at and self.feed is not None:
            self.feed.stop()  # as the first SIGINT does


def _feed(tmp_path: Path, data: bytes, stub: _SendStub, **kw: object) -> tuple[Feed, list[str]]:
    path = tmp_path / "in"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    reports: list[str] = []
    feed = Feed(stub, fd, max_line=20, report=reports.append, **kw)  # type: ignore[arg-type]
    stub.feed = feed
    try:
        feed.start()
        assert feed.done.wait(10)
    finally:
        os.close(fd)
    return feed, reports


def test_feed_counts_every_line(tmp_path: Path) -> None:
    stub = _SendStub()
    data = b"a\r\nk:v\ntoolong\n" + b"x" * 30 + b"\nlast"
    feed, reports = _feed(tmp_path, data, stub, separator=b":")
    assert feed.error is None
    assert stub.sent == [(b"a", None), (b"v", b"k"), (b"last", None)]
    assert reports == [
        "error: line 3 not sent: a record of 7 bytes is over",
        "error: line 4 not sent: a line of 30 bytes is over the record size limit",
    ]
    assert feed.tally() == Tally(read=5, acknowledged=3, failed=2)
    assert feed.tally().unacknowledged == 0


def test_feed_stops_reading_but_sends_the_lines_it_took(tmp_path: Path) -> None:
    """Lines already taken from the input would be lost if dropped: they are sent, and
    nothing more is read."""
    stub = _SendStub()
    stub.stop_at = 2
    feed, _ = _feed(tmp_path, b"1\n2\n3\n4\n", stub, separator=None)  # one read
    assert [v for v, _ in stub.sent] == [b"1", b"2", b"3", b"4"]
    assert feed.tally() == Tally(read=4, acknowledged=4, failed=0)
    assert feed.quiesce()


def test_send_lets_go_of_the_gil_once_per_yield_every_records_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread sending flat out gives the IO thread the GIL at least every YIELD_EVERY
    queued records instead of holding it for CPython's whole switch interval."""
    from types import SimpleNamespace

    from dafka import Producer
    from dafka.producer import _facade as producer_module

    yields: list[float] = []
    monkeypatch.setattr(producer_module, "time", SimpleNamespace(sleep=yields.append))
    with Producer("t", towers="127.0.0.1:9", metadata=False, trust_any_store=True) as p:
        p._handler.on_commands = lambda now: []  # type: ignore[method-assign]  # keep them queued
        for _ in range(2 * producer_module.YIELD_EVERY + 1):
            p.send(b"x")
        assert yields == [0, 0]
        p.close(timeout=0)
