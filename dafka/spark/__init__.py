"""Spark support: the ``dafka`` data source and sink (needs the ``spark`` extra).

:mod:`dafka.spark.offsets` (options and offset arithmetic) needs no Spark;
:mod:`dafka.spark.source` imports PySpark. ``pyspark_dafka.DefaultSource`` is
what Spark registers as format ``dafka``; see ``docs/spark.md``.
"""
