"""Spark reading from a store: one micro-batch of N records through ``format("dafka")``.

    python -m benchmarks.spark_read [--records 1000000] [--size 100] [--tasks 4]

One tower and one store (child processes, fsync on); a Producer writes N
records of SIZE bytes to one partition. Then, in one run:

* baseline    the query client (the store's pull endpoint, no Spark) reads the
              whole range in READs of at most 4 MiB, then decodes the batches as an
              executor does (checking signatures under the signed profile): records/s;
              the same without decoding is reported as the raw READ rate
* micro-batch a streaming query (``readStream.format("dafka")``, startingOffsets
              earliest, Trigger.AvailableNow) whose first micro-batch holds all N
              records, counted and summed in ``foreachBatch``: time from start()
              to the first batch, and rows/s of that batch
* batch       ``spark.read.format("dafka")`` of the same range: rows/s

The ratio is Spark's rows/s over the baseline's. Prints a table and writes JSON
to benchmarks/results/spark_read-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def write_records(towers: str, topic: str, n: int, size: int) -> tuple[str, float]:
    from dafka import Producer

    payload = b"x" * size
    with Producer(topic, towers=towers) as producer:
        producer.send(b"w" * size).result(timeout=60)  # connected to the store
        t0 = time.perf_counter()
        for _ in range(n - 1):
            producer.send(payload)
        producer.flush(600)
        return producer.partition, (n - 1) / (time.perf_counter() - t0)


def baseline(endpoint: str, topic: str, partition: str, n: int, verify: bool) -> dict[str, float]:
    """Read offsets 0..n-1 with the raw query client; ``verify``: also decode (and, for
    signed batches, check every signature) as an executor does."""
    from dafka.query import QueryClient, verified_batches

    t0 = time.perf_counter()
    first_reply = None
    count = 0
    with QueryClient(endpoint, timeout=60) as client:
        for reply in client.read_range(topic, partition, 0, n):
            if first_reply is None:
                first_reply = time.perf_counter() - t0
            if verify:
                count += sum(len(recs) for _, _, recs in verified_batches(reply))
            else:
                count += reply.next_offset - reply.first  # type: ignore[operator]
    seconds = time.perf_counter() - t0
    assert count == n, (count, n)
    return {
        "records": count,
        "seconds": seconds,
        "rate": count / seconds,
        "first_reply_seconds": first_reply,
        "profile": reply.profile,
    }


def spark_session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dafka-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def micro_batch(spark, towers: str, topic: str, n: int, tasks: int) -> dict[str, float]:
    from pyspark.sql import functions as F

    seen: dict[str, float] = {}

    def on_batch(df, batch_id: int) -> None:
        if "first" in seen:
            return
        seen["first"] = time.perf_counter()
        row = df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).first()
        seen["done"] = time.perf_counter()
        seen["rows"] = row["n"]
        seen["bytes"] = row["bytes"]

    with tempfile.TemporaryDirectory() as ckpt:
        t0 = time.perf_counter()
        query = (
            spark.readStream.format("dafka")
            .option("tower", towers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxRecordsPerPartition", str(-(-n // tasks)))
            .load()
            .writeStream.foreachBatch(on_batch)
            .trigger(availableNow=True)
            .option("checkpointLocation", ckpt)
            .start()
        )
        query.awaitTermination(900)
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
    assert seen.get("rows") == n, seen
    seconds = seen["done"] - seen["first"]
    return {
        "records": n,
        "time_to_first_batch": seen["first"] - t0,
        "batch_seconds": seconds,
        "rate": n / seconds,
        "end_to_end_seconds": seen["done"] - t0,
    }


def batch_read(spark, towers: str, topic: str, n: int, tasks: int) -> dict[str, float]:
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    df = (
        spark.read.format("dafka")
        .option("tower", towers)
        .option("subscribe", topic)
        .option("maxRecordsPerPartition", str(-(-n // tasks)))
        .load()
    )
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).first()
    seconds = time.perf_counter() - t0
    assert row["n"] == n, row
    return {"records": n, "seconds": seconds, "rate": n / seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=4, help="Spark tasks the range is split into")
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.procs import StoreProc, Tower

    n, topic = args.records, "bench.spark"
    tower = Tower()
    with tempfile.TemporaryDirectory(prefix="dafka-bench-") as data:
        store = StoreProc(Path(data) / "store", tower.address)
        try:
            print(f"writing {n} records of {args.size} B ...", file=sys.stderr)
            partition, write_rate = write_records(tower.address, topic, n, args.size)
            print("raw query client ...", file=sys.stderr)
            raw = baseline(store.query_endpoint, topic, partition, n, verify=False)
            base = baseline(store.query_endpoint, topic, partition, n, verify=True)
            print("spark ...", file=sys.stderr)
            spark = spark_session()
            try:
                mb = micro_batch(spark, tower.address, topic, n, args.tasks)
                br = batch_read(spark, tower.address, topic, n, args.tasks)
            finally:
                spark.stop()
        finally:
            store.kill()
            tower.stop()

    result = {
        "benchmark": "spark_read",
        "records": n,
        "size": args.size,
        "profile": base["profile"],
        "tasks": args.tasks,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "write_rate": write_rate,
        "baseline_query_client_raw": raw,
        "baseline_query_client": base,
        "micro_batch": mb,
        "batch_read": br,
        "ratio_micro_batch_to_baseline": mb["rate"] / base["rate"],
        "ratio_batch_read_to_baseline": br["rate"] / base["rate"],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"spark_read-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'phase':<28}{'rows/s':>12}{'seconds':>10}")
    print(f"{'producer write (acked)':<28}{write_rate:>12,.0f}{'':>10}")
    print(f"{'query client, raw READs':<28}{raw['rate']:>12,.0f}{raw['seconds']:>10.2f}")
    print(f"{'baseline: + decode/verify':<28}{base['rate']:>12,.0f}{base['seconds']:>10.2f}")
    print(f"{'spark micro-batch':<28}{mb['rate']:>12,.0f}{mb['batch_seconds']:>10.2f}")
    print(f"{'  time to first batch':<28}{'':>12}{mb['time_to_first_batch']:>10.2f}")
    print(f"{'spark batch read':<28}{br['rate']:>12,.0f}{br['seconds']:>10.2f}")
    print(f"ratio micro-batch / baseline: {result['ratio_micro_batch_to_baseline']:.2f}")
    print(json.dumps(result))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
