"""The Spark sink's writing path over CURVE, without a SparkSession: a task's
``write_at_least_once`` and ``write_exactly_once`` (with a stand-in TaskContext), run in
this process against real tower, store and consumer processes on 127.0.0.1 whose towers
are given with their keys (docs/spark.md "CURVE")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

import pyspark  # noqa: E402

from dafka.spark import sink  # noqa: E402
from dafka.spark.options import WriteOptions  # noqa: E402
from dafka.spark.sink_state import BatchRecord, read_record, write_record  # noqa: E402
from tests.integration.test_attacks_curve import CurveTower, Store, consume  # noqa: E402

VALUES = [f"row {i}".encode() for i in range(200)]
WANTED = b"".join(v + b"\n" for v in VALUES)


def _batches() -> Iterator[Any]:
    yield pa.record_batch({"value": pa.array(VALUES, pa.binary())})


def _read(towers: str, topic: str) -> bytes:
    c = consume(towers, topic, "--curve", "--timeout", "30")
    assert c.wait(60) == 0, c.stderr
    return bytes(c.stdout)


class _Task:
    """What write_exactly_once asks of pyspark's TaskContext."""

    def __init__(self, batch: int) -> None:
        self.batch = batch

    def getLocalProperty(self, name: str) -> str | None:  # noqa: N802  (pyspark's name)
        return str(self.batch) if name == "streaming.sql.batchId" else None

    def partitionId(self) -> int:  # noqa: N802
        return 0


@pytest.fixture
def curve_store(tmp_path: Path) -> Iterator[CurveTower]:
    tower = CurveTower()
    store = Store(tmp_path / "store", tower.address, "--curve")
    try:
        yield tower
    finally:
        for producer in sink._producers.values():
            producer.close(timeout=5)
        sink._producers.clear()
        store.kill()
        tower.proc.kill()


def test_the_at_least_once_sink_writes_over_curve(curve_store: CurveTower) -> None:
    opts = WriteOptions.parse({"tower": curve_store.address, "topic": "sealed"})
    done = sink.write_at_least_once(_batches(), opts)
    assert done.records == len(VALUES)
    assert _read(curve_store.address, "sealed") == WANTED


def test_the_exactly_once_sink_writes_and_reads_back_over_curve(
    curve_store: CurveTower, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pyspark.TaskContext, "get", staticmethod(lambda: _Task(0)))
    opts = WriteOptions.parse({"tower": curve_store.address, "topic": "once"})
    root = tmp_path / "sink"
    secret = bytes(range(32))
    first = sink.write_exactly_once(_batches(), opts, root, secret)
    assert (first.records, first.stored) == (len(VALUES), 0)
    # as if killed after its rows were acknowledged and before it recorded so: the replay
    # reads back what the stores hold, over CURVE with the task's key, and sends nothing
    task_dir = root / "task-0"
    record = read_record(task_dir)
    assert record is not None and record.done
    write_record(task_dir, BatchRecord(record.batch, record.starts))
    again = sink.write_exactly_once(_batches(), opts, root, secret)
    assert (again.records, again.stored, again.partition) == (0, len(VALUES), first.partition)
    assert _read(curve_store.address, "once") == WANTED
