"""The Spark source's reading path over CURVE, without a SparkSession: the driver's planning
(`DafkaBatchReader.partitions`) and an executor's `read_partition`, run in this process
against real tower, store and producer processes on 127.0.0.1 (docs/spark.md "CURVE")."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql.types import (  # noqa: E402
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from dafka.errors import DafkaError  # noqa: E402
from dafka.metadata import MetadataClient  # noqa: E402
from dafka.security import identity  # noqa: E402
from dafka.spark.options import ReadOptions  # noqa: E402
from dafka.spark.source import DafkaBatchReader, read_partition  # noqa: E402
from tests.integration.test_attacks_curve import LINES, Store, keys, produce  # noqa: E402
from tests.integration.test_attacks_curve_keys import RaftCurveTower  # noqa: E402

SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", StringType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
)


def _values(opts: ReadOptions) -> bytes:
    reader = DafkaBatchReader(opts, SCHEMA)
    out = b""
    for partition in reader.partitions():
        for batch in read_partition(partition, opts, SCHEMA):
            out += b"".join(v + b"\n" for v in batch.column("value").to_pylist())  # type: ignore[attr-defined]
    return out


def test_the_spark_source_reads_an_acl_topic_over_curve_with_the_named_key(
    tmp_path: Path,
) -> None:
    tower = RaftCurveTower()
    try:
        k = keys(tmp_path, "store", "reader")
        reader = identity.load(k["reader"][0])
        with MetadataClient(tower.address) as admin:
            admin.trust_store(k["store"][1])  # an ACL topic's records reach trusted stores only
            admin.create_topic("sealed", {"consumers": [reader.node_id]})
        store = Store(k["store"][0], tower.address, "--curve")
        try:
            produce(tower.address, "sealed")
            base = {"subscribe": "sealed", "tower": tower.address, "locateTimeout": "2"}
            key_file = str(k["reader"][0] / identity.KEY_FILE)
            mine = ReadOptions.parse({**base, "curveKeyFile": key_file}, batch=True)
            assert _values(mine) == LINES
            # the store's key given by hand instead of heard from its beacon
            given = {
                "subscribe": "sealed",
                "stores": f"{store.query_endpoint}@{k['store'][1]}",
                "curveKeyFile": key_file,
            }
            assert _values(ReadOptions.parse(given, batch=True)) == LINES
            with pytest.raises(DafkaError, match="may not read topic 'sealed'"):
                _values(ReadOptions.parse(base, batch=True))  # a fresh key
        finally:
            store.kill()
    finally:
        tower.proc.kill()
