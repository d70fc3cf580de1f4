"""A streaming pipeline: events -> Spark windowed counts per user -> a topic -> a consumer.

    python examples/spark_pipeline.py                  # or: make pipeline
    python examples/spark_pipeline.py --tower 127.0.0.1:5556 --seconds 20

Three parts run together:

* a producer writes click events, JSON like ``{"user": "alice", "t": 1700000000.1,
  "amount": 3.5}``, to the topic ``clicks-RUN`` (``--rate`` per second for
  ``--seconds``);
* a Spark structured streaming query reads ``clicks-RUN`` with
  ``readStream.format("dafka")``, counts clicks and sums amounts per user in
  5-second event-time windows (watermark 1 s) and writes each closed window as
  JSON to the topic ``user-counts-RUN`` with ``writeStream.format("dafka")``;
* a consumer prints ``user-counts-RUN`` as windows close.

``RUN`` is new for every run (``--run`` names it), so a run on a cluster that earlier
runs used reads and checks only what it produced itself.

RFC 46 records have no keys, so the events are grouped by a field of the value.
Without ``--tower`` the script runs its own tower and store on 127.0.0.1
(ephemeral ports, data in a temporary directory). At the end the producer sends
one heartbeat event past the last window so that the watermark closes it; the
script then checks that the printed totals add up to what was produced and
exits 0 (1 if not).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

USERS = ("alice", "bob", "carol", "dave")
WINDOW = "5 seconds"


@contextmanager
def local_platform(tower: str | None) -> Iterator[str]:
    """The given tower, or a tower and a store of our own for the run."""
    if tower:
        yield tower
        return
    from dafka import Store
    from dafka.config import TowerAddress
    from tower.relay import Tower

    relay = Tower(TowerAddress("127.0.0.1", 0)).start()
    with tempfile.TemporaryDirectory(prefix="dafka-pipeline-") as data:
        store = Store(data, towers=str(relay.address)).start()
        try:
            print(f"local tower {relay.address}, store {store.node_id}", file=sys.stderr)
            yield str(relay.address)
        finally:
            store.stop()
            relay.stop()


def produce(
    towers: str,
    topic: str,
    seconds: float,
    rate: float,
    expected: Counter[str],
    done: threading.Event,
):
    """Click events with event time = now; then one heartbeat to close the last window."""
    from dafka import Producer

    rng = random.Random(46)
    with Producer(topic, towers=towers) as producer:
        start = time.time()
        sent = 0
        while time.time() - start < seconds:
            user = rng.choice(USERS)
            producer.send(json.dumps({"user": user, "t": time.time(), "amount": rng.randint(1, 9)}))
            expected[user] += 1
            sent += 1
            time.sleep(max(0.0, start + sent / rate - time.time()))
        producer.send(json.dumps({"user": None, "t": time.time() + 30, "amount": 0}))
        producer.flush(60)
    print(f"producer: {sent} clicks are durable", file=sys.stderr)
    done.set()


LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""
"""Spark's logging for the run: errors only, from the JVM's start (``setLogLevel`` comes
after Spark has warned of what a local run lacks: no native Hadoop library)."""


def spark_session(workdir: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this interpreter
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    log4j2 = os.path.join(workdir, "log4j2.properties")
    with open(log4j2, "w") as f:
        f.write(LOG4J2)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dafka-pipeline")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j2}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def start_query(spark, towers: str, run: str, checkpoint: str):
    from pyspark.sql import functions as F

    clicks = (
        spark.readStream.format("dafka")  # no register call: pyspark_dafka is installed
        .option("tower", towers)
        .option("subscribe", f"clicks-{run}")
        .option("startingOffsets", "earliest")
        .load()
        .select(
            F.from_json(F.col("value").cast("string"), "user string, t double, amount long").alias(
                "e"
            )
        )
        .select("e.user", F.timestamp_seconds("e.t").alias("time"), "e.amount")
    )
    counts = (
        clicks.withWatermark("time", "1 second")
        # The heartbeat (no user) only moves the watermark. The filter names the
        # event-time column so that Spark keeps it after the watermark.
        .where(F.col("user").isNotNull() | F.col("time").isNull())
        .groupBy(F.window("time", WINDOW), "user")
        .agg(F.count("*").alias("clicks"), F.sum("amount").alias("amount"))
    )
    out = counts.select(
        F.to_json(
            F.struct(
                F.date_format("window.start", "HH:mm:ss").alias("window"),
                "user",
                "clicks",
                "amount",
            )
        ).alias("value")
    )
    return (
        out.writeStream.format("dafka")
        .option("tower", towers)
        .option("topic", f"user-counts-{run}")
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .trigger(processingTime="1 second")
        .start()
    )


def stop_between_batches(query, timeout: float = 30.0) -> None:
    """Stop the query while no micro-batch runs. The last windows reach the consumer as
    the sink writes them, before their batch commits: stopping then cancels the batch's
    tasks, which Spark logs as ERRORs with stack traces (a clean run is not an error)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and query.isActive and query.status["isTriggerActive"]:
        time.sleep(0.05)
    query.stop()


def consume(towers: str, topic: str, printed: Counter[str], stop: threading.Event) -> None:
    from dafka import Consumer

    with Consumer(topic, towers=towers, offset_reset="earliest") as consumer:
        while not stop.is_set():
            for record in consumer.poll_batch(1000, timeout=0.2):
                row = json.loads(record.value)
                printed[row["user"]] += row["clicks"]
                print(
                    f"window {row['window']} +{WINDOW:<10} {row['user']:<6} "
                    f"{row['clicks']:>4} clicks  amount {row['amount']:>5}",
                    flush=True,
                )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tower", default=None, help="use this tower (default: run our own)")
    ap.add_argument("--seconds", type=float, default=12.0, help="how long to produce events")
    ap.add_argument("--rate", type=float, default=100.0, help="events per second")
    ap.add_argument("--timeout", type=float, default=120.0, help="give up after this long")
    ap.add_argument(
        "--run", default=None, help="suffix of this run's topics (default: a new random one)"
    )
    args = ap.parse_args()
    run = args.run or secrets.token_hex(4)
    print(f"run {run}: topics clicks-{run} -> user-counts-{run}", file=sys.stderr)

    expected: Counter[str] = Counter()
    printed: Counter[str] = Counter()
    produced, stop = threading.Event(), threading.Event()
    with local_platform(args.tower) as towers, tempfile.TemporaryDirectory() as work:
        spark = spark_session(work)
        query = start_query(spark, towers, run, os.path.join(work, "checkpoint"))
        threads = [
            threading.Thread(
                target=produce,
                args=(towers, f"clicks-{run}", args.seconds, args.rate, expected, produced),
            ),
            threading.Thread(
                target=consume, args=(towers, f"user-counts-{run}", printed, stop), daemon=True
            ),
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + args.timeout
        try:
            while time.monotonic() < deadline and query.exception() is None:
                if produced.is_set() and printed == expected:
                    break
                time.sleep(0.2)
        finally:
            stop.set()
            stop_between_batches(query)
            threads[0].join(10)
            spark.stop()
    ok = produced.is_set() and printed == expected
    total = sum(printed.values())
    print(
        f"{'all' if ok else 'NOT all'} {sum(expected.values())} clicks counted "
        f"({total} in printed windows)",
        file=sys.stderr,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
