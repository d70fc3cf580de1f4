"""Spark's entry point for Dafka: ``spark.read.format("dafka")`` and friends.

Spark (4.x) imports every installed top-level module named ``pyspark_*`` and
registers its ``DefaultSource`` under ``DefaultSource.name()``, so installing
``dafka[spark]`` is enough: no ``spark.dataSource.register`` call. The source
itself lives in :mod:`dafka.spark.source`.
"""

from dafka.spark.source import DafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
