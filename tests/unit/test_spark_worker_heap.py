"""A Spark Python worker's long-lived objects are frozen out of garbage collection once, by
its first read (``dafka.spark.source.freeze_worker_heap``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

# in a fresh interpreter: freezing is once per process, and not this test process's heap
CHILD = """
import gc
from dafka.errors import DafkaError
from dafka.spark.offsets import Span
from dafka.spark.options import ReadOptions
from dafka.spark.source import DafkaInputPartition, read_partition, freeze_worker_heap
from pyspark.sql.types import BinaryType, StructField, StructType

assert gc.get_freeze_count() == 0
opts = ReadOptions.parse({"subscribe": "t"}, batch=True)
schema = StructType([StructField("value", BinaryType())])
part = DafkaInputPartition(Span("t", "0" * 32, 0, 10), [])  # no store: the read fails
try:
    list(read_partition(part, opts, schema))
except DafkaError:
    pass
frozen = gc.get_freeze_count()
assert frozen > 1000, frozen  # the modules' objects
later = [[i] for i in range(100)]
assert freeze_worker_heap() is False  # once per process: what the tasks make stays collectable
assert gc.get_freeze_count() == frozen
print("ok")
"""


def test_the_first_read_freezes_the_worker_heap_once() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
