"""``df.write`` / ``df.writeStream`` ``.format("dafka")``: every row acknowledged, read back."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

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
