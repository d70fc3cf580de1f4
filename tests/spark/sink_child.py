"""A streaming query from one Dafka topic to another, run as its own Spark driver so that
a test can SIGKILL it mid-batch and restart it from its checkpoint.

``--hold VALUE`` stops the rows of the task that meets VALUE there (a UDF waits), after
writing ``--reached``: the test then kills this driver while the sink holds part of the
batch. Prints ``driver PID JVM_PID`` first, and ``query done`` when the query finishes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--towers", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--hold", default=None)
    ap.add_argument("--reached", default=None)
    args = ap.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dafka-sink-child")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "200")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
    print(f"driver {os.getpid()} {jvm_pid}", flush=True)

    events = (
        spark.readStream.format("dafka")
        .option("tower", args.towers)
        .option("subscribe", args.src)
        .option("startingOffsets", "earliest")
        .load()
    )
    if args.hold is not None:
        hold, reached = args.hold.encode(), args.reached

        @udf("binary")
        def gate(value: bytes) -> bytes:
            if bytes(value) == hold:
                with open(reached, "w") as f:
                    f.write("reached\n")
                deadline = time.monotonic() + 120  # the test kills the driver before
                while time.monotonic() < deadline:
                    time.sleep(0.05)
            return value

        events = events.select(gate("value").alias("value"))
    query = (
        events.select("value")
        .writeStream.format("dafka")
        .option("tower", args.towers)
        .option("topic", args.dst)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        print(f"query failed: {query.exception()}", file=sys.stderr, flush=True)
        return 1
    print("query done", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
