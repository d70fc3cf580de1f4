"""The consumer IO thread's handler on its own: what it counts for the metrics."""

from __future__ import annotations

from dafka.consumer._io import _ConsumerHandler
from dafka.consumer._shared import ConsumerShared
from dafka.core import messages as m
from dafka.core.effects import RecordBatch
from dafka.core.ready import Ready


class _StubCore:
    """Delivers one run of two records per message, through the Ready contract."""

    node_id = "C" * 32

    def __init__(self) -> None:
        self.pending: list[RecordBatch] = []

    def step(self, msg: m.Message, now: float, source: str = "") -> None:
        self.pending.append(RecordBatch("t", "P" * 32, 0, [b"ab", b"cde"]))

    def has_ready(self) -> bool:
        return bool(self.pending)

    def ready(self) -> Ready:
        return Ready(deliver=tuple(self.pending))

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        self.pending.clear()


def test_delivered_bytes_are_counted_only_for_the_metrics() -> None:
    """Summing every value's length costs a pass over the records: only when a metrics
    endpoint reads it (Consumer sets count_bytes with metrics_port)."""
    shared = ConsumerShared()
    handler = _ConsumerHandler(shared, _StubCore())  # type: ignore[arg-type]
    msg = m.Head("t", "P" * 32, 1)
    handler.on_messages([msg], 0.0)
    assert handler.delivered_bytes == 0 and len(shared.ready) == 1
    handler.count_bytes = True
    handler.on_messages([msg], 0.0)
    assert handler.delivered_bytes == 5 and len(shared.ready) == 2
