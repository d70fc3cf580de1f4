"""What one scrape of a store's ``/metrics`` costs, by the number of topics it holds.

    python -m benchmarks.metrics_scrape [--topics 1,100,1000,10000] [--scrapes 50] [--json]

For each count a store (in this process, no tower) is opened on a fresh LMDB holding
one rfc46 record in each of that many topics (one partition each), started with
``metrics_port=0``, and scraped over HTTP ``--scrapes`` times; it prints the mean
and the 95th percentile of the wall time per scrape, the size of the answer, and the
machine's load average. The baseline in the same run is a scrape of the same HTTP
server with no node values (the same registry, its collector answering "not running"):
what prometheus_client's server costs by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from dafka import Store
from dafka.io.metrics import MetricsServer, NodeCollector, NodeMetrics
from dafka.io.node_metrics import STORE_SPECS
from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_store import LmdbStorage

PARTITION = "0123456789ABCDEF0123456789ABCDEF"


def timed_scrapes(url: str, count: int) -> tuple[list[float], int]:
    times: list[float] = []
    size = 0
    for _ in range(count):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=10) as reply:
            size = len(reply.read())
        times.append(time.perf_counter() - start)
    return times, size


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "mean_ms": round(statistics.fmean(times) * 1000, 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 3),
    }


def store_with_topics(path: Path, topics: int) -> None:
    storage = LmdbStorage(path, map_size=256 * 1024 * 1024)
    try:
        batches = [StoredBatch(f"topic-{i}", PARTITION, 0, 0, b"x", "rfc46") for i in range(topics)]
        for at in range(0, len(batches), 1000):
            storage.append(batches[at : at + 1000])
    finally:
        storage.close()


def run(topic_counts: list[int], scrapes: int) -> dict[str, object]:
    results: list[dict[str, object]] = []
    idle = NodeMetrics(NodeCollector("store", {}, lambda: None, STORE_SPECS))
    server = MetricsServer(idle.registry, "127.0.0.1", 0)
    try:
        times, size = timed_scrapes(server.url, scrapes)
        results.append(
            {"case": "baseline: server only", "topics": 0, "bytes": size, **summary(times)}
        )
    finally:
        server.close()
    for topics in topic_counts:
        with tempfile.TemporaryDirectory(prefix="dafka-metrics-bench-") as tmp:
            store_with_topics(Path(tmp), topics)
            store = Store(tmp, metadata=False, metrics_port=0, profile="rfc46").start()
            try:
                assert store.metrics is not None and store.metrics.url is not None
                times, size = timed_scrapes(store.metrics.url, scrapes)
            finally:
                store.stop()
        results.append({"case": "store", "topics": topics, "bytes": size, **summary(times)})
    return {"scrapes": scrapes, "loadavg": os.getloadavg(), "results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", default="1,100,1000,10000")
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="JSON only")
    args = parser.parse_args()
    report = run([int(t) for t in args.topics.split(",")], args.scrapes)
    print(json.dumps(report))
    if not args.json:
        print(f"{'case':<24}{'topics':>8}{'mean ms':>10}{'p95 ms':>10}{'bytes':>8}")
        for r in report["results"]:  # type: ignore[attr-defined]
            print(
                f"{r['case']:<24}{r['topics']:>8}{r['mean_ms']:>10}{r['p95_ms']:>10}{r['bytes']:>8}"
            )
        print(f"load average {report['loadavg']}")


if __name__ == "__main__":
    main()
