"""The producer IO thread's bounded turns: what one turn takes from the queue, and a
``send_many`` taken in parts under its one future."""

from __future__ import annotations

from types import SimpleNamespace

from dafka.config import ProducerConfig
from dafka.core.effects import Acked, Publish
from dafka.errors import ClosedError, StorageError, TopicDeletedError
from dafka.futures import BatchFuture, RecordFuture
from dafka.producer._core import ProducerCore
from dafka.producer._inflight import Continued, ManyRun, Values
from dafka.producer._io import TURN_BATCHES, TURN_TOPICS, _ProducerHandler
from dafka.security.identity import Identity
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed import verify_batch
from tests.unit.test_producer_delivery import _StubProducer

RECORDS = 4  # per batch: a turn takes TURN_BATCHES * RECORDS records at most
TURN = TURN_BATCHES * RECORDS


def _handler(
    linger_ms: float = 0.0, records: int = RECORDS
) -> tuple[_ProducerHandler, _StubProducer]:
    stub = _StubProducer(
        ProducerConfig(max_batch_records=records, max_batch_bytes=1024, linger_ms=linger_ms)
    )
    identity = Identity.generate()
    profile = SignedProfile(identity, max_batch_records=records, max_batch_bytes=1024)
    core = ProducerCore(identity.node_id, profile=profile)
    return _ProducerHandler(stub.state, core), stub


def _offsets(effects: list) -> list[tuple[int, int]]:
    return [(e.msg.offset, e.msg.count) for e in effects if isinstance(e, Publish)]


def test_a_turn_takes_at_most_its_bound_and_the_next_turn_follows_at_once() -> None:
    handler, _ = _handler(linger_ms=60_000)  # a linger that would hold a short queue
    futures = [RecordFuture() for _ in range(2 * TURN + 3)]
    handler.queue.extend(("t", b"v%d" % i, None, f) for i, f in enumerate(futures))
    assert not handler.has_pending()
    first = handler.on_commands(0.0)  # enough queued for a full batch: no linger
    assert _offsets(first) == [(0, RECORDS), (RECORDS, RECORDS)]
    assert len(handler.queue) == TURN + 3 and handler.has_pending()
    # the rest is taken at once, though less than a batch waits at the end
    assert _offsets(handler.on_commands(0.0)) == [(TURN, RECORDS), (TURN + RECORDS, RECORDS)]
    assert handler.has_pending()
    assert _offsets(handler.on_commands(0.0)) == [(2 * TURN, 3)]
    assert not handler.queue and not handler.has_pending()
    handler._resolve(Acked("t", 2 * TURN + 2))
    assert [f.result(0) for f in futures] == list(range(2 * TURN + 3))


def test_a_send_many_larger_than_a_turn_is_published_in_parts_under_its_one_future() -> None:
    handler, stub = _handler()
    many, after = BatchFuture(), RecordFuture()
    values = [b"%02d" % i for i in range(2 * TURN + 1)]  # 2 bytes each
    handler.queue.append(("t", values, None, many))
    handler.queue.append(("t", b"after", None, after))
    assert _offsets(handler.on_commands(0.0)) == [(0, RECORDS), (RECORDS, RECORDS)]
    # the rest waits in front of the queue, before the send that came after it
    rest = handler.queue[0]
    assert rest[1] == values[TURN:] and isinstance(rest[3], Continued)
    assert handler.has_pending()
    assert _offsets(handler.on_commands(0.0)) == [(TURN, RECORDS), (TURN + RECORDS, RECORDS)]
    # the last record of the send_many and the send after it share a turn and a batch
    assert _offsets(handler.on_commands(0.0)) == [(2 * TURN, 2)]
    handler._resolve(Acked("t", TURN - 1))  # the first part: its bytes are freed
    assert not many.done() and stub.released == [(TURN, 2 * TURN)]
    handler._resolve(Acked("t", 2 * TURN - 1))
    assert not many.done()
    handler._resolve(Acked("t", 2 * TURN + 1))
    assert many.result(0) == range(0, 2 * TURN + 1) and after.result(0) == 2 * TURN + 1
    assert sum(n for n, _ in stub.released) == 2 * TURN + 2
    assert sum(size for _, size in stub.released) == 2 * len(values) + len(b"after")


def test_a_send_many_is_split_by_bytes_too() -> None:
    handler, _ = _handler()
    many = BatchFuture()
    values = [b"x" * 300] * TURN  # the turn's 2 KiB hold 6 of them
    handler.queue.append(("t", values, None, many))
    handler.on_commands(0.0)
    (part,) = handler.inflight["t"]
    assert isinstance(part, ManyRun) and part.count == 2048 // 300 and not part.last
    while handler.has_pending():
        handler.on_commands(0.0)
    handler._resolve(Acked("t", TURN - 1))
    assert many.result(0) == range(0, TURN)


def test_a_split_send_many_fails_with_any_of_its_parts() -> None:
    handler, stub = _handler()
    published, queued = BatchFuture(), BatchFuture()
    handler.queue.append(("t", [b"a"] * (TURN + 1), None, published))
    handler.queue.append(("u", [b"b"] * (TURN + 1), None, queued))
    handler.on_commands(0.0)  # the first part of the first send_many only
    handler.topic_deleted("t", 3)
    assert isinstance(published.exception(0), TopicDeletedError)
    assert [(n, size) for n, size, _ in stub.rejected] == [(TURN, TURN)]
    # the rest of the first is never published (what failed is not sent later either);
    # the turn takes the first part of the second instead
    effects = handler.on_commands(0.0)
    assert {e.msg.topic for e in effects if isinstance(e, Publish)} == {"u"}
    assert not handler.inflight.get("t")
    assert [(n, size) for n, size, _ in stub.rejected] == [(TURN, TURN), (1, 1)]
    assert isinstance(published.exception(0), TopicDeletedError)
    handler.on_stop()  # the rest of the second is still queued
    assert isinstance(queued.exception(0), ClosedError)


class _Journal:
    """The offset journal of a producer's state directory, on a disk that fills."""

    def __init__(self) -> None:
        self.full = False

    def reserve_many(self, upto: dict[str, int]) -> None:
        if self.full:
            raise StorageError("No space left on device")


def test_a_send_many_refused_after_its_first_parts_says_which_offsets_they_took() -> None:
    handler, stub = _handler()
    journal = stub.state.journal = _Journal()  # type: ignore[assignment]
    many, after = BatchFuture(), RecordFuture()
    handler.queue.append(("t", [b"m"] * (3 * TURN), None, many))
    handler.queue.append(("t", b"after", None, after))
    assert _offsets(handler.on_commands(0.0)) == [(0, RECORDS), (RECORDS, RECORDS)]
    journal.full = True
    assert handler.on_commands(0.0) == []  # the second part: refused
    error = many.exception(0)
    assert isinstance(error, StorageError)
    assert f"its first {TURN} were published earlier, offsets 0..{TURN - 1}" in str(error)
    journal.full = False
    # the third part is never published, and the send after it takes the next offset
    assert _offsets(handler.on_commands(0.0)) == [(TURN, 1)]
    assert [(n, size) for n, size, _ in stub.rejected] == [(TURN, TURN), (TURN, TURN)]
    handler._resolve(Acked("t", TURN))
    assert after.result(0) == TURN and many.exception(0) is error


def test_a_send_many_refused_in_its_first_part_is_not_sent_at_all() -> None:
    handler, stub = _handler()
    journal = stub.state.journal = _Journal()  # type: ignore[assignment]
    journal.full = True
    many = BatchFuture()
    handler.queue.append(("t", [b"m"] * (TURN + 3), None, many))
    assert handler.on_commands(0.0) == []
    assert "the record was not sent" in str(many.exception(0))
    journal.full = False
    assert _offsets(handler.on_commands(0.0)) == [] and not handler.queue
    assert sum(n for n, _, _ in stub.rejected) == TURN + 3


def test_a_durable_producer_never_splits_a_send_many() -> None:
    """Its send_many returns once the whole of it is logged: LogWait counts queued items."""

    class _Log:
        def __init__(self) -> None:
            self.records = 0

        def append(self, batches: list) -> None:
            self.records += sum(b.count for b in batches)

    handler, stub = _handler()
    logged: list[int] = []
    stub.state.wal = wal = _Log()  # type: ignore[assignment]
    stub.state.log_wait = SimpleNamespace(logged=lambda count, error: logged.append(count))  # type: ignore[assignment]
    handler.queue.append(("t", [b"a"] * (TURN + 1), None, BatchFuture()))
    handler.on_commands(0.0)
    assert wal.records == TURN + 1 and logged == [1] and not handler.queue


def test_a_measured_send_many_is_sealed_with_its_lengths_in_every_part() -> None:
    """send_many queues its values with their lengths (Values): every part a turn takes,
    and the rest it queues again, carries the lengths of its own values, so the batches
    say the lengths of the records they hold."""
    handler, stub = _handler()
    many = BatchFuture()
    values = [b"v" * (i % 5) + b"%d" % i for i in range(2 * TURN + 3)]  # lengths differ
    lengths = list(map(len, values))
    handler.queue.append(("t", Values(values, lengths, sum(lengths)), None, many))
    published = handler.on_commands(0.0)
    (rest,) = handler.queue
    assert type(rest[1]) is Values and rest[1] == values[TURN:]
    assert (rest[1].lengths, rest[1].size) == (lengths[TURN:], sum(lengths[TURN:]))
    while handler.has_pending():
        published += handler.on_commands(0.0)
    got = []
    for effect in published:
        batch = verify_batch(effect.msg.content, topic="t")  # its lengths add up
        got.extend(batch.columns()[1])
    assert got == values
    handler._resolve(Acked("t", len(values) - 1))
    assert many.result(0) == range(len(values))
    assert sum(size for _, size in stub.released) == sum(lengths)


def test_a_turn_publishes_at_most_turn_topics_topics_and_the_rest_go_next() -> None:
    """A record to each of many topics is a batch, so a message, each: the data XPUB's mark
    counts messages and hears of reads only between turns, so one turn publishes to at
    most TURN_TOPICS topics (200 at once were dropped past the mark on the way to a store)."""
    handler, _ = _handler(records=100)  # a turn's records are not the bound here
    topics = [f"t{i}" for i in range(TURN_TOPICS + 10)]
    handler.queue.extend((t, b"v", None, RecordFuture()) for t in topics)
    handler.queue.append(("t0", b"again", None, RecordFuture()))
    first = [e.msg.topic for e in handler.on_commands(0.0) if isinstance(e, Publish)]
    assert first == topics[:TURN_TOPICS]
    assert handler.has_pending()  # the rest follow at once, in their order
    second = [
        (e.msg.topic, e.msg.offset) for e in handler.on_commands(0.0) if isinstance(e, Publish)
    ]
    assert second == [(t, 0) for t in topics[TURN_TOPICS:]] + [("t0", 1)]
    assert not handler.queue and not handler.has_pending()


def test_a_fetch_is_stepped_with_the_sender_its_sources_name() -> None:
    """on_messages asks the turn's MessageSources for the sender of a FETCH (the node
    whose connection it came on), and of nothing else: no probing of what it was given."""
    from dafka.core import messages as m
    from dafka.io.node_plugins import MessageSources

    class Sources(MessageSources):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
            return "10.0.0.1"

        def sender(self, index: int):  # type: ignore[no-untyped-def, override]
            asked.append(index)
            return f"sender-{index}"

    asked: list[int] = []
    handler, _ = _handler()
    stepped: list[tuple[str, object]] = []
    handler.core.step = lambda msg, now, sender=None, wall_ms=0: stepped.append(  # type: ignore[method-assign]
        (type(msg).__name__, sender)
    )
    fetch = m.Fetch(handler.core.node_id, "C" * 32, "t", 0, 1)
    handler.on_messages([m.Ack("P" * 32, "t", 0), fetch], 1.0, Sources())
    assert stepped == [("Ack", None), ("Fetch", "sender-1")]
    assert asked == [1]  # looked up for the request only (a cost per frame otherwise)
