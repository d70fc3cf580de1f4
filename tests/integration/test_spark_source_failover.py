"""The Spark source with one of two stores dead (SIGKILL) or hung (SIGSTOP): a batch read of
ten tasks still returns every row, and quickly; the driver's HEADS round does not wait for
each silent store in turn. Runs the driver's planning (`DafkaBatchReader.partitions`, the
`_Stores` HEADS round) and the executors' `read_partition` in this process, without a
SparkSession, against real tower, store and producer processes on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from dafka import Producer  # noqa: E402
from dafka.errors import DafkaError  # noqa: E402
from dafka.query import QueryClient  # noqa: E402
from dafka.query import locator as locator_module  # noqa: E402
from dafka.spark import source  # noqa: E402
from dafka.spark.options import ReadOptions  # noqa: E402
from dafka.spark.source import DafkaBatchReader, read_partition  # noqa: E402
from tests.procs import StoreProc, Tower, wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(300)

N = 1000
TASKS = 10
LIVENESS = 90.0
"""Generous: before hedged reads each of the ten tasks waited queryTimeout (30 s) on the
dead store; now each costs at most about a second."""


def _schema():
    from pyspark.sql.types import (
        BinaryType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    return StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", StringType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
        ]
    )


def _forget_health() -> None:
    """As in a fresh executor process: no store is known to be dead yet."""
    health = getattr(locator_module, "HEALTH", None)
    if health is not None:
        health._failed.clear()


@pytest.fixture
def two_stores(tmp_path: Path):
    tower = Tower()
    stores = [StoreProc(tmp_path / f"s{i}", tower.address) for i in range(2)]
    try:
        with Producer("fo.t", towers=tower.address) as producer:
            for i in range(N):
                producer.send(f"v{i}".encode())
            producer.flush(60)
            partition = producer.partition

        def both_hold_all() -> bool:
            for s in stores:
                try:
                    with QueryClient(s.query_endpoint, timeout=5) as c:
                        heads = {(p.topic, p.partition): p.head for p in c.heads(["fo.t"])}
                except DafkaError:  # a loaded machine: ask again
                    return False
                if heads.get(("fo.t", partition)) != N - 1:
                    return False
            return True

        wait_until(both_hold_all, 60, what="both stores to hold every record")
        yield tower, stores
    finally:
        for s in stores:
            try:
                os.kill(s.proc.p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            s.kill()
        tower.stop()


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_a_batch_read_survives_a_dead_store_and_returns_every_row(two_stores, how) -> None:
    tower, stores = two_stores
    opts = ReadOptions.parse(
        {
            "tower": tower.address,
            "stores": ",".join(s.query_endpoint for s in stores),
            "subscribe": "fo.t",
            "maxRecordsPerPartition": str(N // TASKS),
        },
        batch=True,
    )
    schema = _schema()
    parts = DafkaBatchReader(opts, schema).partitions()
    assert len(parts) == TASKS
    victim = next(s for s in stores if s.query_endpoint == parts[0].stores[0])
    os.kill(victim.proc.p.pid, how)  # the store every task asks first
    values: list[bytes] = []
    t0 = time.monotonic()
    for part in parts:
        _forget_health()  # each task as in its own executor: the worst case
        for batch in read_partition(part, opts, schema):
            values.extend(batch.column("value").to_pylist())  # type: ignore[attr-defined]
    elapsed = time.monotonic() - t0
    print(
        f"failover.batch_read signal={how.name} tasks={TASKS} rows={len(values)} "
        f"seconds={elapsed:.2f}"
    )
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(N))
    assert elapsed < LIVENESS, f"{TASKS} tasks took {elapsed:.1f} s with one dead store"


def test_the_driver_asks_every_store_at_once(two_stores) -> None:
    """A HEADS round with one hung store and two that never answer (a TCP port that accepts
    and stays silent) takes about a second, not 10 s per silent store."""
    tower, stores = two_stores
    os.kill(stores[0].proc.p.pid, signal.SIGSTOP)
    silent = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    try:
        given = [stores[0].query_endpoint]
        given += [f"tcp://127.0.0.1:{s.getsockname()[1]}" for s in silent]
        given += [stores[1].query_endpoint]
        opts = ReadOptions.parse(
            {"stores": ",".join(given), "subscribe": "fo.t", "tower": tower.address},
            batch=True,
        )
        _forget_health()
        view = source._Stores(opts)
        try:
            t0 = time.monotonic()
            heads = view.heads(required=True)
            elapsed = time.monotonic() - t0
        finally:
            view.close()
        print(f"failover.heads silent=3 seconds={elapsed:.2f}")
        assert [h.head for h in heads.values()] == [N - 1]
        assert elapsed < 15, f"HEADS took {elapsed:.1f} s with three silent stores"
    finally:
        for s in silent:
            s.close()


def test_reads_are_pipelined_and_every_row_comes_back(two_stores, monkeypatch) -> None:
    """As soon as a READ is answered, the READ for the offsets after it is on its way to the
    store, before the task decodes (and yields) the answer it has."""
    tower, stores = two_stores
    with Producer("fo.p", towers=tower.address) as producer:
        for k in range(5):  # five batches: a READ of at most 1 KiB returns one each
            producer.send_many([f"p{k}.{i}".encode() for i in range(200)]).result(60)
        partition = producer.partition

    def holds_all() -> bool:
        try:
            with QueryClient(stores[0].query_endpoint, timeout=5) as c:
                heads = {(p.topic, p.partition): p.head for p in c.heads(["fo.p"])}
        except DafkaError:
            return False
        return heads.get(("fo.p", partition)) == 999

    wait_until(holds_all, 60, what="the store to hold every record")
    opts = ReadOptions.parse(
        {
            "stores": stores[0].query_endpoint,
            "subscribe": "fo.p",
            "tower": tower.address,
            "readMaxBytes": "1024",
        },
        batch=True,
    )
    schema = _schema()
    (part,) = DafkaBatchReader(opts, schema).partitions()
    sent: list[int] = []
    real_send = QueryClient.send

    def counting_send(self, req) -> None:  # type: ignore[no-untyped-def]
        sent.append(getattr(req, "from_offset", -1))
        real_send(self, req)

    monkeypatch.setattr(QueryClient, "send", counting_send)
    _forget_health()
    batches = read_partition(part, opts, schema)
    first = next(batches)
    got = first.column("offset").to_pylist()  # type: ignore[attr-defined]
    assert sent == [0, got[-1] + 1]  # the next READ went out before this batch was yielded
    for batch in batches:
        got.extend(batch.column("offset").to_pylist())  # type: ignore[attr-defined]
    assert got == list(range(1000))
    assert sent == [0, 200, 400, 600, 800]  # one READ per batch, each sent once
