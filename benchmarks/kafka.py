"""The Kafka front door's throughput against the native API, measured in one run.

    python -m benchmarks.kafka [--records 1000000] [--size 100] [--partitions 1]
                               [--json FILE]

One tower, one store (fsync on) and one ``dafka-kafka`` listener, as separate processes on
127.0.0.1. Four phases, each ``--records`` records of ``--size`` bytes:

* native_produce  ``Producer.send_many`` (chunks of 10,000), until every record is
                  acknowledged by the store (``flush``)
* native_consume  a ``Consumer`` from the beginning, ``poll_batches`` (columns: no object
                  per record), until it has them all
* kafka_produce   confluent-kafka (librdkafka) through the listener, ``acks=all``, until
                  every delivery report came back (``flush``): what the listener signed,
                  stored and had acknowledged
* kafka_consume   a confluent-kafka consumer from offset 0 through the listener, until it
                  has them all

The topic of the Kafka phases has ``--partitions`` numbered partitions (default 1: one
Dafka producer identity, as the native phase has one producer). Prints the records/s of
each phase, the ratios kafka/native, the machine's load average before and after, and the
issue's goals (issue 37: at least 300,000 records/s acknowledged through one listener, and
at least half the native rate) as met or not met: a measurement, never an assertion.
Writes the report as JSON to stdout, to benchmarks/results/kafka-<time>.json, and to
``--json FILE`` if given.
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

from dafka import Consumer, Producer
from tests.admin import install_admin_key
from tests.integration.kafka.listener import Listener, start_listener
from tests.procs import StoreProc, Tower, wait_until

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 10_000
GOAL_RATE = 300_000
GOAL_RATIO = 0.5


def _rate(n: int, seconds: float) -> dict[str, float]:
    return {"records": n, "seconds": round(seconds, 3), "rate": round(n / seconds, 1)}


def native_produce(towers: str, topic: str, n: int, size: int) -> dict[str, float]:
    chunk = [b"x" * size] * CHUNK
    with Producer(topic, towers=towers, trust_any_store=True) as p:
        p.send(b"warm-up").result(timeout=30)  # the store is found: not timed
        t0 = time.perf_counter()
        for start in range(0, n, CHUNK):
            p.send_many(chunk if n - start >= CHUNK else chunk[: n - start])
        p.flush(timeout=900)
        return _rate(n, time.perf_counter() - t0)


def native_consume(towers: str, topic: str, n: int) -> dict[str, float]:
    want = n + 1  # and the warm-up record
    got = 0
    with Consumer(topic, towers=towers, offset_reset="earliest") as c:
        t0 = time.perf_counter()
        deadline = time.monotonic() + 900
        while got < want and time.monotonic() < deadline:
            for run in c.poll_batches(100_000, timeout=1.0):
                got += len(run.values)
        seconds = time.perf_counter() - t0
    if got < want:
        sys.exit(f"native_consume: {got:,} of {want:,} records in 900 s")
    return _rate(n, seconds)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(30)

    def shown() -> bool:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        return t is not None and t.error is None and len(t.partitions) == partitions

    wait_until(shown, 30, interval=0.1, what=f"{topic} with {partitions} partitions")


def kafka_produce(bootstrap: str, topic: str, n: int, size: int) -> dict[str, float]:
    import confluent_kafka

    errors: list[str] = []

    def done(err: object, _msg: object) -> None:
        if err is not None and len(errors) < 10:
            errors.append(str(err))

    p = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    p.produce(topic, b"warm-up", on_delivery=done)
    if p.flush(30) != 0:
        sys.exit("kafka_produce: the warm-up record was not acknowledged in 30 s")
    value = b"x" * size
    produce, poll = p.produce, p.poll
    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                produce(topic, value, on_delivery=done)
                break
            except BufferError:
                poll(0.01)
    left = p.flush(900)
    seconds = time.perf_counter() - t0
    if left or errors:
        sys.exit(f"kafka_produce: {left} records unacknowledged, errors {errors}")
    return _rate(n, seconds)


def kafka_consume(bootstrap: str, topic: str, n: int, partitions: int) -> dict[str, float]:
    import confluent_kafka

    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-kafka-read",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 * 2**20,
            "max.partition.fetch.bytes": 16 * 2**20,
        }
    )
    want = n + 1  # and the warm-up record
    got = 0
    try:
        c.assign([confluent_kafka.TopicPartition(topic, q, 0) for q in range(partitions)])
        t0 = time.perf_counter()
        deadline = time.monotonic() + 900
        while got < want and time.monotonic() < deadline:
            got += sum(1 for m in c.consume(10_000, 1.0) if m.error() is None)
        seconds = time.perf_counter() - t0
    finally:
        c.close()
    if got < want:
        sys.exit(f"kafka_consume: {got:,} of {want:,} records in 900 s")
    return _rate(n, seconds)


def goals(report: dict) -> list[str]:
    produced = report["phases"]["kafka_produce"]["rate"]
    ratio = report["ratios"]["produce_kafka_over_native"]
    return [
        f"goal: >= {GOAL_RATE:,} records/s acknowledged through one listener: "
        f"{produced:,.0f} ({'met' if produced >= GOAL_RATE else 'not met'})",
        f"goal: >= {GOAL_RATIO:.0%} of the native rate: {ratio:.2f} "
        f"({'met' if ratio >= GOAL_RATIO else 'not met'})",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = ap.parse_args()
    n, size = args.records, args.size
    report: dict = {
        "benchmark": "kafka",
        "records": n,
        "size": size,
        "partitions": args.partitions,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_before": os.getloadavg(),
        },
        "phases": {},
    }
    admin = install_admin_key()  # the towers' first admin; the listener creates the topic
    tower = Tower()
    listener: Listener | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="bench-kafka-") as tmp:
            store = StoreProc(Path(tmp) / "store", tower.address)
            try:
                listener = start_listener(
                    Path(tmp) / "kafka", "--tower", tower.address, "--admin-key", str(admin)
                )
                phases = report["phases"]
                phases["native_produce"] = native_produce(tower.address, "bench-native", n, size)
                phases["native_consume"] = native_consume(tower.address, "bench-native", n)
                create_topic(listener.address, "bench-kafka", args.partitions)
                phases["kafka_produce"] = kafka_produce(listener.address, "bench-kafka", n, size)
                phases["kafka_consume"] = kafka_consume(
                    listener.address, "bench-kafka", n, args.partitions
                )
                for phase, r in phases.items():
                    print(f"{phase:>15}: {r['rate']:>12,.0f} records/s", file=sys.stderr)
            finally:
                if listener is not None:
                    listener.proc.kill()
                store.kill()
    finally:
        tower.stop()
    phases = report["phases"]
    report["ratios"] = {
        "produce_kafka_over_native": round(
            phases["kafka_produce"]["rate"] / phases["native_produce"]["rate"], 3
        ),
        "consume_kafka_over_native": round(
            phases["kafka_consume"]["rate"] / phases["native_consume"]["rate"], 3
        ),
    }
    report["machine"]["load_avg_after"] = os.getloadavg()
    report["goals"] = goals(report)
    for line in report["goals"]:
        print(line, file=sys.stderr)
    text = json.dumps(report, indent=1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"kafka-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(text + "\n")
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
