"""One local SparkSession for every Spark test, and a tower and store to read from.

The session is ``local[2]`` with the UI off, bound to 127.0.0.1 only, and runs
Python workers with this interpreter (``PYSPARK_PYTHON``), so the executors
import the same ``dafka`` as the tests. Tests are skipped (with the reason
shown) when PySpark or a Java runtime is missing; ``make test`` installs both.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import StoreProc, Tower
from tests.spark import spark_missing

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = spark_missing()
    if reason is None:
        return
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("dafka-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


class Platform:
    """A tower and a store (child processes) that every Spark test of a module shares."""

    def __init__(self, root: Path) -> None:
        self.tower = Tower()
        self.towers = self.tower.address
        self.store = StoreProc(root / "store", self.towers)

    def produce(self, topic: str, values: list[bytes]) -> str:
        """Write ``values`` with a new producer (a new partition); return the partition."""
        with Producer(topic, towers=self.towers) as p:
            for v in values:
                p.send(v)
            p.flush(30)
            return p.partition

    def stop(self) -> None:
        self.store.kill()
        self.tower.stop()


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    p = Platform(tmp_path_factory.mktemp("platform"))
    yield p
    p.stop()
