"""``df.write`` / ``df.writeStream`` ``.format("dafka")``: every row acknowledged, read back."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from dafka.query.client import QueryClient, records
from tests.procs import ROOT, Proc, py, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def read_values(spark, towers: str, topic: str) -> Counter[bytes]:
    df = spark.read.format("dafka").option("tower", towers).option("subscribe", topic).load()
    return Counter(bytes(r.value) for r in df.select("value").collect())


def test_batch_write_then_read_back(spark, platform) -> None:
    values = [f"w{i}".encode() for i in range(500)]
    df = spark.createDataFrame([(v,) for v in values], "value binary").repartition(2)
    df.write.format("dafka").mode("append").option("tower", platform.towers).option(
        "topic", "k.out"
    ).save()
    assert read_values(spark, platform.towers, "k.out") == Counter(values)


def test_the_topic_column_routes_each_row(spark, platform) -> None:
    rows = [(f"v{i}", "k.even" if i % 2 == 0 else "k.odd") for i in range(100)]
    df = spark.createDataFrame(rows, "value string, topic string")
    df.write.format("dafka").mode("append").option("tower", platform.towers).save()
    assert read_values(spark, platform.towers, "k.even") == Counter(
        f"v{i}".encode() for i in range(0, 100, 2)
    )
    assert read_values(spark, platform.towers, "k.odd") == Counter(
        f"v{i}".encode() for i in range(1, 100, 2)
    )


def test_stream_from_one_topic_to_another(spark, platform, tmp_path: Path) -> None:
    platform.produce("k.src", [f"event {i}".encode() for i in range(300)])
    query = (
        spark.readStream.format("dafka")
        .option("tower", platform.towers)
        .option("subscribe", "k.src")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("upper(cast(value as string)) as value")
        .writeStream.format("dafka")
        .option("tower", platform.towers)
        .option("topic", "k.dst")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    assert read_values(spark, platform.towers, "k.dst") == Counter(
        f"EVENT {i}".encode() for i in range(300)
    )


def test_a_key_under_the_rfc46_profile_fails_clearly(spark, platform) -> None:
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    with pytest.raises(Exception, match="rfc46 wire profile has no record keys"):
        (
            df.write.format("dafka")
            .mode("append")
            .option("tower", platform.towers)
            .option("topic", "k.keys")
            .option("profile", "rfc46")
            .save()
        )


def test_no_topic_anywhere_is_refused_before_running(spark, platform) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="topic"):
        df.write.format("dafka").mode("append").option("tower", platform.towers).save()


def test_the_topic_option_overrides_the_topic_column(spark, platform) -> None:
    df = spark.createDataFrame([("v1", "k.col"), ("v2", None)], "value string, topic string")
    df.write.format("dafka").mode("append").option("tower", platform.towers).option(
        "topic", "k.opt"
    ).save()
    assert read_values(spark, platform.towers, "k.opt") == Counter([b"v1", b"v2"])


def test_the_default_save_mode_is_refused_by_spark_naming_the_modes_that_work(
    spark, platform
) -> None:
    # Spark 4 refuses ErrorIfExists (the default) for every Python data source before the
    # source is asked; docs/spark.md says so. If a later Spark lets the source choose,
    # this test fails and the sink should treat the default as append, like Kafka's.
    df = spark.createDataFrame([("d1",)], "value string")
    with pytest.raises(Exception, match='"Append" or "Overwrite"'):
        df.write.format("dafka").option("tower", platform.towers).option("topic", "k.d").save()


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("partition string", "cannot choose a row's partition"),
        # issue 36: headers exist, as Spark's Kafka sink types them
        ("headers string", "'headers' column must be array<struct<key: string, value: binary>>"),
    ],
)
def test_a_partition_or_headers_column_is_refused_not_dropped(
    spark, platform, column: str, message: str
) -> None:
    df = spark.createDataFrame([("v", "x")], f"value string, {column}")
    with pytest.raises(Exception, match=message):
        df.write.format("dafka").mode("append").option("tower", platform.towers).option(
            "topic", "k.refused"
        ).save()


def test_a_null_value_is_refused_clearly(spark, platform) -> None:
    # issue 36: a null value is a tombstone, which needs the key it deletes
    df = spark.createDataFrame([("v",), (None,)], "value string")
    with pytest.raises(Exception, match="null value and no key: a null value is a tombstone"):
        df.write.format("dafka").mode("append").option("tower", platform.towers).option(
            "topic", "k.null"
        ).save()


def stored(platform, topic: str) -> tuple[Counter[bytes], set[str]]:
    """Every row the store holds of ``topic`` (as a count per value), and its partitions."""
    values: Counter[bytes] = Counter()
    partitions = set()
    with QueryClient(platform.store.query_endpoint) as client:
        for part in client.heads([topic]):
            partitions.add(part.partition)
            end = part.head + 1
            for reply in client.read_range(topic, part.partition, part.tail, end):
                values.update(rec.value for rec in records(reply, part.tail, end))
    return values, partitions


def test_a_driver_killed_mid_batch_and_restarted_writes_every_row_once(
    platform, tmp_path: Path
) -> None:
    # 200-byte rows: a Python worker flushes its output in 64 KiB blocks, so rows before the
    # held one reach the sink only if they fill some
    a = [f"a{i}-".encode() + b"x" * 200 for i in range(3000)]
    b = [f"b{i}-".encode() + b"x" * 200 for i in range(3000)]
    platform.produce("x.src", a)
    platform.produce("x.src", b)
    reached = tmp_path / "reached"
    run = py(
        "tests.spark.sink_child",
        *("--towers", platform.towers, "--src", "x.src", "--dst", "x.dst"),
        *("--checkpoint", str(tmp_path / "ckpt")),
    )
    first = Proc([*run, "--hold", a[2000].decode(), "--reached", str(reached)], cwd=ROOT)
    try:
        m = first.wait_line_stdout(r"driver (\d+) (\d+)", timeout=120)
        wait_until(reached.exists, 150, what="the first run to hold its batch")
        wait_until(
            lambda: sum(v.startswith(b"a") for v in stored(platform, "x.dst")[0]) >= 1000,
            60,
            what="part of the held task's rows to be stored",
        )
        os.kill(int(m.group(2)), signal.SIGKILL)  # the JVM: Spark's driver
        os.kill(int(m.group(1)), signal.SIGKILL)
        first.wait(30)
    finally:
        first.kill()
    before, partitions_before = stored(platform, "x.dst")
    assert 1000 <= sum(before.values()) < len(a) + len(b)  # killed mid-batch

    second = Proc(run, cwd=ROOT)
    try:
        assert second.wait(200) == 0, second.stderr
    finally:
        second.kill()
    assert "query done" in bytes(second.stdout).decode()
    after, partitions = stored(platform, "x.dst")
    duplicates = sum(after.values()) - len(after)
    assert duplicates == 0, f"{duplicates} rows written twice"
    assert after == Counter(a + b)
    assert partitions_before <= partitions and len(partitions) == 2


def test_a_lost_sink_state_is_refused_not_written_over(spark, platform, tmp_path: Path) -> None:
    import shutil

    def run() -> object:
        query = (
            spark.readStream.format("dafka")
            .option("tower", platform.towers)
            .option("subscribe", "l.src")
            .option("startingOffsets", "earliest")
            .load()
            .select("value")
            .coalesce(1)
            .writeStream.format("dafka")
            .option("tower", platform.towers)
            .option("topic", "l.dst")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            assert query.awaitTermination(180)
        except Exception as exc:  # a failed query raises here
            return exc
        return query.exception()

    platform.produce("l.src", [b"one", b"two"])
    assert run() is None
    shutil.rmtree(tmp_path / "ckpt" / "dafka-sink" / "task-0")
    platform.produce("l.src", [b"three"])
    assert "its state in the sink state directory is missing" in str(run())
    assert read_values(spark, platform.towers, "l.dst") == Counter([b"one", b"two"])
