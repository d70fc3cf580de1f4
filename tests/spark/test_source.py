"""``spark.read`` / ``spark.readStream`` ``.format("dafka")`` against a real tower and store."""

from __future__ import annotations

import datetime
import inspect
import json
import math
import re
import threading
from pathlib import Path

import pytest

from dafka import Producer, Store
from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_store import LmdbStorage
from tests.procs import StoreProc, Tower, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

COLUMNS = [
    ("key", "binary"),
    ("value", "binary"),
    ("topic", "string"),
    ("partition", "string"),
    ("offset", "bigint"),
    ("timestamp", "timestamp"),
    ("timestampType", "int"),
]


def reader(spark, towers: str, topic: str, *, stream: bool = False, **options: object):
    r = (spark.readStream if stream else spark.read).format("dafka").option("tower", towers)
    if "subscribePattern" not in options:
        r = r.option("subscribe", topic)
    for key, value in options.items():
        r = r.option(key, str(value))
    return r.load()


def by_partition(rows) -> dict[str, list[tuple[int, bytes]]]:
    out: dict[str, list[tuple[int, bytes]]] = {}
    for r in rows:
        out.setdefault(r.partition, []).append((r.offset, bytes(r.value)))
    return {p: sorted(v) for p, v in out.items()}


def run_available_now(spark, df, checkpoint: Path) -> list[tuple[int, list]]:
    """Run ``df`` to completion with Trigger.AvailableNow; return each micro-batch's rows."""
    batches: list[tuple[int, list]] = []

    def collect(batch, batch_id: int) -> None:
        batches.append(
            (batch_id, [(r.partition, r.offset, bytes(r.value)) for r in batch.collect()])
        )

    query = (
        df.writeStream.foreachBatch(collect)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    assert query.awaitTermination(180), "the AvailableNow query did not finish"
    assert query.exception() is None
    return batches


def test_batch_read_gives_every_record_with_every_column(spark, platform) -> None:
    a = [f"a{i}".encode() for i in range(300)]
    b = [f"b{i}".encode() for i in range(120)]
    pa = platform.produce("s.batch", a)
    pb = platform.produce("s.batch", b)
    platform.produce("s.batch.other", [b"not subscribed"])
    df = reader(spark, platform.towers, "s.batch")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema] == COLUMNS
    rows = df.collect()
    assert len(rows) == 420
    assert {r.topic for r in rows} == {"s.batch"}
    assert all(r.key is None for r in rows)  # none were sent
    # the producer's batch time under the signed profile; rfc46 records carry none
    now = datetime.datetime.now()
    assert all(r.timestamp is None or abs(now - r.timestamp).total_seconds() < 600 for r in rows)
    assert by_partition(rows) == {pa: list(enumerate(a)), pb: list(enumerate(b))}
    # Kafka's CreateTime (0) wherever the producer stamped the batch
    assert all(r.timestampType == (None if r.timestamp is None else 0) for r in rows)


def test_batch_offset_ranges_and_subscribe_pattern(spark, platform) -> None:
    values = [f"r{i}".encode() for i in range(100)]
    p = platform.produce("s.range", values)
    df = reader(
        spark,
        platform.towers,
        "s.range",
        startingOffsets=json.dumps({"s.range": {p: 10}}),
        endingOffsets=json.dumps({"s.range": {p: 20}}),
    )
    assert by_partition(df.collect()) == {p: [(i, values[i]) for i in range(10, 20)]}
    # a partition range split into several tasks still reads each record once
    split = reader(spark, platform.towers, "s.range", maxRecordsPerPartition=30)
    assert split.rdd.getNumPartitions() == 4
    assert by_partition(split.collect()) == {p: list(enumerate(values))}
    pattern = reader(spark, platform.towers, "", subscribePattern=r"s\.rang.")
    assert pattern.count() == 100


def test_stream_available_now_reads_everything_once(spark, platform, tmp_path: Path) -> None:
    a = platform.produce("s.avail", [f"x{i}".encode() for i in range(250)])
    b = platform.produce("s.avail", [f"y{i}".encode() for i in range(150)])
    df = reader(spark, platform.towers, "s.avail", stream=True, startingOffsets="earliest")
    batches = run_available_now(spark, df, tmp_path / "ckpt")
    rows = [row for _, rs in batches for row in rs]
    assert sorted((p, o) for p, o, _ in rows) == sorted(
        [(a, i) for i in range(250)] + [(b, i) for i in range(150)]
    )


def test_max_offsets_per_trigger_bounds_every_micro_batch(spark, platform, tmp_path) -> None:
    platform.produce("s.rate", [b"r"] * 1000)
    platform.produce("s.rate", [b"s"] * 250)
    df = reader(
        spark,
        platform.towers,
        "s.rate",
        stream=True,
        startingOffsets="earliest",
        maxOffsetsPerTrigger=300,
    )
    batches = run_available_now(spark, df, tmp_path / "ckpt")
    sizes = [len(rows) for _, rows in batches if rows]
    assert sum(sizes) == 1250
    assert max(sizes) <= 300
    assert len(sizes) == math.ceil(1250 / 300)
    assert len({(p, o) for _, rows in batches for p, o, _ in rows}) == 1250


def test_a_partition_that_appears_mid_stream_is_read_from_its_start(
    spark, platform, tmp_path: Path
) -> None:
    first = platform.produce("s.grow", [f"f{i}".encode() for i in range(200)])
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()

    def collect(batch, batch_id: int) -> None:
        rows = [(r.partition, r.offset) for r in batch.collect()]
        with lock:
            seen.extend(rows)

    df = reader(spark, platform.towers, "s.grow", stream=True, startingOffsets="earliest")
    query = (
        df.writeStream.foreachBatch(collect)
        .trigger(processingTime="200 milliseconds")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    try:
        wait_until(lambda: len(seen) >= 200, 90, what="the first partition")
        second = platform.produce("s.grow", [f"s{i}".encode() for i in range(150)])
        wait_until(lambda: len(seen) >= 350, 90, what="the new partition")
    finally:
        query.stop()
    assert query.exception() is None
    assert sorted(seen) == sorted(
        [(first, i) for i in range(200)] + [(second, i) for i in range(150)]
    )


def test_restart_from_a_checkpoint_resumes_exactly_where_it_stopped(
    spark, platform, tmp_path: Path
) -> None:
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    with Producer("s.resume", towers=platform.towers) as producer:
        for i in range(600):
            producer.send(f"early {i}".encode())
        producer.flush(30)
        p1 = producer.partition

        def start(**trigger: object):
            df = reader(
                spark,
                platform.towers,
                "s.resume",
                stream=True,
                startingOffsets="earliest",
                maxOffsetsPerTrigger=100,
            )
            return (
                df.selectExpr("partition", "offset", "value")
                .writeStream.format("parquet")
                .option("path", str(out))
                .option("checkpointLocation", str(ckpt))
                .trigger(**trigger)
                .start()
            )

        # run a while, then stop it part way through the topic
        first = start(processingTime="100 milliseconds")
        try:
            wait_until(
                lambda: sum(p["numInputRows"] for p in first.recentProgress) >= 200,
                90,
                what="two micro-batches",
            )
        finally:
            first.stop()
        assert first.exception() is None
        done = spark.read.parquet(str(out)).count()
        assert 200 <= done < 600, "the first run should stop part way"

        # more data while it is stopped: the same partition, and a new one
        for i in range(300):
            producer.send(f"late {i}".encode())
        producer.flush(30)
    p2 = platform.produce("s.resume", [f"new {i}".encode() for i in range(100)])

    second = start(availableNow=True)
    assert second.awaitTermination(180)
    assert second.exception() is None

    rows = spark.read.parquet(str(out)).collect()
    keys = [(r.partition, r.offset) for r in rows]
    assert len(keys) == len(set(keys)), "a record was read twice"
    assert sorted(keys) == sorted([(p1, i) for i in range(900)] + [(p2, i) for i in range(100)])


def test_data_below_the_retention_tail_fails_clearly_or_is_skipped(spark, tmp_path: Path) -> None:
    partition = "3F2504E04F8911D39A0C0305E82C3301"
    # an rfc46 store (its blobs are plain values) that holds only offsets 50..79
    rfc46 = ("--profile", "rfc46") if "profile" in inspect.signature(Store).parameters else ()
    tower = Tower()
    StoreProc(tmp_path / "retained", tower.address, *rfc46).kill()
    storage = LmdbStorage(tmp_path / "retained")  # as if retention deleted 0..49
    storage.append(
        [StoredBatch("s.lost", partition, i, i, f"kept {i}".encode()) for i in range(50, 80)]
    )
    storage.close()
    store = StoreProc(tmp_path / "retained", tower.address, *rfc46)
    try:
        from_zero = json.dumps({"s.lost": {partition: 0}})
        df = reader(spark, tower.address, "s.lost", startingOffsets=from_zero)
        with pytest.raises(Exception, match="below the retention tail") as err:
            df.collect()
        assert "failOnDataLoss=false" in str(err.value)
        kept = reader(
            spark, tower.address, "s.lost", startingOffsets=from_zero, failOnDataLoss="false"
        ).collect()
        assert sorted(r.offset for r in kept) == list(range(50, 80))
        # earliest starts at the tail: nothing is lost, nothing fails
        assert reader(spark, tower.address, "s.lost").count() == 30
        if rfc46:  # rfc46 records carry no time: a timestamp option says so
            with pytest.raises(Exception, match="startingTimestamp needs record timestamps.*rfc46"):
                reader(spark, tower.address, "s.lost", startingTimestamp=0).collect()
    finally:
        store.kill()
        tower.stop()


@pytest.mark.skipif(
    "profile" not in inspect.signature(Store).parameters, reason="stores speak rfc46 only"
)
def test_signed_batches_are_verified_and_give_keys_and_timestamps(spark, tmp_path: Path) -> None:
    from dafka.security.identity import Identity
    from dafka.wire import signed

    producer = Identity.generate()
    part = producer.node_id
    good = signed.encode_batch(
        producer, "s.signed", 0, [(b"k0", b"v0"), (None, b"v1")], 1_700_000_000_000
    )
    forged = bytearray(
        signed.encode_batch(producer, "s.signed", 2, [(b"k2", b"v2")], 1_700_000_001_000)
    )
    forged[forged.index(b"v2")] ^= 1  # a store altered the producer's record
    tower = Tower()
    data = tmp_path / "signed"
    StoreProc(data, tower.address, "--profile", "signed").kill()
    storage = LmdbStorage(data)
    storage.append(
        [
            StoredBatch("s.signed", part, 0, 1, good),
            StoredBatch("s.signed", part, 2, 2, bytes(forged)),
        ]
    )
    storage.close()
    store = StoreProc(data, tower.address, "--profile", "signed")
    try:
        upto = json.dumps({"s.signed": {part: 2}})
        rows = reader(spark, tower.address, "s.signed", endingOffsets=upto).collect()
        assert [(r.offset, r.key, bytes(r.value)) for r in rows] == [
            (0, b"k0", b"v0"),
            (1, None, b"v1"),
        ]
        assert all(r.timestamp is not None for r in rows)
        with pytest.raises(Exception, match="signature"):
            reader(spark, tower.address, "s.signed").collect()
    finally:
        store.kill()
        tower.stop()


def failure(call) -> str:
    """The message of the error ``call`` raises (Spark wraps the source's own)."""
    with pytest.raises(Exception) as err:
        call()
    return str(err.value)


def test_options_spark_does_not_mean_are_refused_by_name(spark, platform) -> None:
    p = platform.produce("s.opts", [f"o{i}".encode() for i in range(20)])
    towers = platform.towers
    for options, expect in [
        ({"startingOffset": "earliest"}, "unknown option startingOffset.*startingOffsets"),
        ({"kafka.bootstrap.servers": "h:9092"}, "kafka.bootstrap.servers is a Kafka client"),
        ({"includeHeaders": "perhaps"}, "includeHeaders must be true or false"),
        ({"endingOffsets": json.dumps({"s.opts": {p: -2}})}, "not allowed as an ending offset"),
        ({"startingOffsets": json.dumps({"s.opts": {"0": 1}})}, "'0' is not a Dafka partition"),
        # a partition no store holds was ignored, and the whole topic read
        ({"startingOffsets": json.dumps({"s.opts": {"C" * 32: 5}})}, "which no store holds"),
        # beyond the head: not yet written, not lost
        ({"endingOffsets": json.dumps({"s.opts": {p: 25}})}, "20..24 do not exist yet"),
    ]:
        message = failure(lambda o=options: reader(spark, towers, "s.opts", **o).collect())
        assert re.search(expect, message, re.IGNORECASE), (options, message[:2000])


def test_assign_and_min_partitions(spark, platform) -> None:
    a = platform.produce("s.assign", [f"a{i}".encode() for i in range(40)])
    platform.produce("s.assign", [f"b{i}".encode() for i in range(30)])
    df = (
        spark.read.format("dafka")
        .option("tower", platform.towers)
        .option("assign", json.dumps({"s.assign": [a]}))
        .option("minPartitions", "4")
        .load()
    )
    assert df.rdd.getNumPartitions() >= 4
    rows = df.collect()
    assert by_partition(rows) == {a: [(i, f"a{i}".encode()) for i in range(40)]}


def test_timestamp_options_find_offsets_by_the_producers_batch_time(spark, platform) -> None:
    import time

    with Producer("s.time", towers=platform.towers) as producer:
        for i in range(30):
            producer.send(f"early {i}".encode())
        producer.flush(30)
        part = producer.partition
        mark = int(time.time() * 1000) + 5
        wait_until(lambda: time.time() * 1000 > mark + 5, 5, what="the clock to pass the mark")
        for i in range(20):
            producer.send(f"late {i}".encode())
        producer.flush(30)
    stamps = {
        r.offset: r.ms
        for r in reader(spark, platform.towers, "s.time")
        .selectExpr("offset", "unix_millis(timestamp) as ms")
        .collect()
    }
    first_late = min(o for o, ms in stamps.items() if ms >= mark)
    assert first_late <= 30 and all(stamps[o] < mark for o in range(first_late))
    late = reader(spark, platform.towers, "s.time", startingTimestamp=mark).collect()
    assert sorted(r.offset for r in late) == list(range(first_late, 50))
    early = reader(spark, platform.towers, "s.time", endingTimestamp=mark).collect()
    assert sorted(r.offset for r in early) == list(range(first_late))
    by_time = json.dumps({"s.time": {part: mark}})
    assert (
        reader(spark, platform.towers, "s.time", startingOffsetsByTimestamp=by_time).count()
        == 50 - first_late
    )
    # an hour ahead: no record is that new; Spark's default strategy fails, "latest" reads none
    ahead = int(time.time() * 1000) + 3_600_000
    message = failure(
        lambda: reader(spark, platform.towers, "s.time", startingTimestamp=ahead).collect()
    )
    assert "is stamped at or after" in message
    none = reader(
        spark,
        platform.towers,
        "s.time",
        startingTimestamp=ahead,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert none.count() == 0


def test_min_offsets_per_trigger_waits_for_enough_records(spark, platform, tmp_path) -> None:
    platform.produce("s.min", [b"m"] * 10)
    sizes: list[int] = []
    lock = threading.Lock()

    def collect(batch, batch_id: int) -> None:
        n = batch.count()
        with lock:
            sizes.append(n)

    df = reader(
        spark,
        platform.towers,
        "s.min",
        stream=True,
        startingOffsets="earliest",
        minOffsetsPerTrigger=50,
        maxTriggerDelay="1h",
    )
    query = (
        df.writeStream.foreachBatch(collect)
        .trigger(processingTime="200 milliseconds")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    try:
        # like Spark's Kafka source, the first micro-batch is not delayed
        wait_until(lambda: sum(sizes) >= 10, 90, what="the first micro-batch")
        platform.produce("s.min", [b"n"] * 30)  # 30 < 50: no micro-batch for these alone
        platform.produce("s.min", [b"o"] * 30)  # now 60 >= 50
        wait_until(lambda: sum(sizes) >= 60, 90, what="a micro-batch of at least 50")
    finally:
        query.stop()
    assert query.exception() is None
    assert sizes[0] == 10 and all(n >= 50 for n in sizes[1:] if n), sizes


def test_the_query_progress_reports_the_latest_offsets_so_lag_shows(
    spark, platform, tmp_path: Path
) -> None:
    """Each micro-batch's progress names the newest offsets the stores hold (the source's
    reportLatestOffset), beside where the batch ended: the lag, as the Kafka source shows."""
    p = platform.produce("s.progress", [b"v"] * 50)
    df = reader(
        spark,
        platform.towers,
        "s.progress",
        stream=True,
        startingOffsets="earliest",
        maxOffsetsPerTrigger=20,
    )
    query = (
        df.writeStream.format("noop")
        .trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    assert query.awaitTermination(120)
    sources = [
        s for progress in query.recentProgress for s in progress["sources"] if s["endOffset"]
    ]
    assert [json.loads(s["endOffset"]) for s in sources] == [
        {"s.progress": {p: end}} for end in (20, 40, 50)
    ]
    assert all(json.loads(s["latestOffset"]) == {"s.progress": {p: 50}} for s in sources)


def test_a_user_schema_reads_only_the_columns_it_names(spark, platform, tmp_path) -> None:
    values = [f"u{i}".encode() for i in range(50)]
    platform.produce("s.schema", values)
    towers = platform.towers
    df = (
        spark.read.format("dafka")
        .schema("offset long, value binary")
        .option("tower", towers)
        .option("subscribe", "s.schema")
        .load()
    )
    assert [f.name for f in df.schema] == ["offset", "value"]
    assert sorted((r.offset, bytes(r.value)) for r in df.collect()) == list(enumerate(values))
    stream = (
        spark.readStream.format("dafka")
        .schema("value binary")
        .option("tower", towers)
        .option("subscribe", "s.schema")
        .option("startingOffsets", "earliest")
        .load()
    )
    rows: list[bytes] = []
    query = (
        stream.writeStream.foreachBatch(
            lambda b, _id: rows.extend(bytes(r.value) for r in b.collect())
        )
        .trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )
    assert query.awaitTermination(180) and query.exception() is None
    assert sorted(rows) == sorted(values)
    for schema, expect in [
        ("valeu binary", "no column 'valeu'.*its columns are key, value"),
        ("value string", "column 'value' of the dafka source is binary, not string"),
        ("value binary, value binary", "names column 'value' twice"),
    ]:
        r = spark.read.format("dafka").schema(schema).option("tower", towers)
        message = failure(lambda r=r: r.option("subscribe", "s.schema").load().collect())
        assert re.search(expect, message), (schema, message[:2000])
