"""The consumer IO thread's handler on its own: what it counts for the metrics."""

from __future__ import annotations

from dafka.api.consumer_io import _ConsumerHandler
from dafka.core import messages as m
from dafka.core.effects import RecordBatch


class _StubCore:
    node_id = "C" * 32

    def handle(self, msg: m.Message, now: float, source: str = "") -> list[RecordBatch]:
        return [RecordBatch("t", "P" * 32, 0, [b"ab", b"cde"])]


class _StubConsumer:
    def __init__(self) -> None:
        self.delivered: list[RecordBatch] = []

    def _deliver(self, runs: list[RecordBatch]) -> None:
        self.delivered.extend(runs)


def test_delivered_bytes_are_counted_only_for_the_metrics() -> None:
    """Summing every value's length costs a pass over the records: only when a metrics
    endpoint reads it (Consumer sets count_bytes with metrics_port)."""
    consumer = _StubConsumer()
    handler = _ConsumerHandler(consumer, _StubCore())  # type: ignore[arg-type]
    msg = m.Head("t", "P" * 32, 1)
    handler.on_messages([msg], 0.0)
    assert handler.delivered_bytes == 0 and len(consumer.delivered) == 1
    handler.count_bytes = True
    handler.on_messages([msg], 0.0)
    assert handler.delivered_bytes == 5 and len(consumer.delivered) == 2
