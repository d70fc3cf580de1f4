"""Throughput of the rfc46 profile against raw pyzmq PUB/SUB, measured in one run.

    python -m benchmarks.throughput [--records N] [--size 100]

Phases (each a fresh topic on one tower and one store, fsync on):

* baseline   raw pyzmq PUB → SUB in another process, N messages of SIZE bytes
* acked      a Producer sends N records; time until every one is acknowledged
* live       the same with a live consumer in another process; records/s delivered
* catch-up   a consumer started afterwards reads all N from the store

Prints a table and writes JSON to benchmarks/results/throughput-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq

from dafka import Producer
from tests.procs import StoreProc, Tower

RESULTS = Path(__file__).resolve().parent / "results"


def _worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.workers", *args],
        stdout=subprocess.PIPE,
        text=True,
    )


def _ready(p: subprocess.Popen[str]) -> None:
    assert p.stdout is not None
    line = p.stdout.readline()
    if '"ready"' not in line:
        raise RuntimeError(f"worker did not start: {line!r}")


def _result(p: subprocess.Popen[str], timeout: float = 600) -> dict[str, float]:
    out, _ = p.communicate(timeout=timeout)
    return json.loads(out.strip().splitlines()[-1])


def baseline(n: int, size: int) -> dict[str, float]:
    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.SNDHWM, 0)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    worker = _worker("raw-sub", "--endpoint", f"tcp://127.0.0.1:{port}", "--count", str(n))
    _ready(worker)
    # an XPUB hears the SUB's subscription: only then is the path open
    if not pub.poll(30_000, zmq.POLLIN):
        raise RuntimeError("baseline subscriber never subscribed")
    pub.recv()
    payload = b"x" * size
    header = b"M" + b"bench" + b"\0\x01" + b"\x20" + b"A" * 32 + b"\x05bench" + bytes(8)
    t0 = time.perf_counter()
    for _ in range(n):
        pub.send_multipart([header, payload])
    r = _result(worker)
    pub.close(0)
    return {"records": n, "seconds": r["last"] - t0, "rate": n / (r["last"] - t0)}


def acked(tower: str, topic: str, n: int, size: int) -> dict[str, float]:
    payload = b"x" * size
    with Producer(topic, towers=tower) as producer:
        warm = producer.send(b"warm-up")
        warm.result(timeout=30)  # the store is connected: exclude discovery from timing
        t0 = time.perf_counter()
        for _ in range(n):
            producer.send(payload)
        producer.flush(timeout=600)
        t1 = time.perf_counter()
    return {"records": n, "seconds": t1 - t0, "rate": n / (t1 - t0)}


def live(tower: str, topic: str, n: int, size: int) -> dict[str, float]:
    payload = b"x" * size
    consumer = _worker("consume", "--tower", tower, "--topic", topic, "--count", str(n + 1))
    _ready(consumer)
    with Producer(topic, towers=tower) as producer:
        # the consumer is subscribed once it receives our warm-up record
        producer.send(b"warm-up").result(timeout=30)
        time.sleep(1.5)  # discovery settles (beacon interval 1 s); excluded from timing
        t0 = time.perf_counter()
        for _ in range(n):
            producer.send(payload)
        producer.flush(timeout=600)
        t_acked = time.perf_counter()
    r = _result(consumer)
    delivered = r["count"] - 1
    seconds = r["last"] - t0
    return {
        "records": delivered,
        "seconds": seconds,
        "rate": delivered / seconds,
        "acked_rate": n / (t_acked - t0),
    }


def catch_up(tower: str, topic: str, n: int) -> dict[str, float]:
    consumer = _worker(
        "consume", "--tower", tower, "--topic", topic, "--count", str(n), "--reset", "earliest"
    )
    _ready(consumer)
    r = _result(consumer)
    seconds = r["last"] - r["first"]
    return {
        "records": r["count"],
        "seconds": seconds,
        "rate": r["count"] / seconds,
        "time_to_first": r["first"] - r["started"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args()
    n, size = args.records, args.size
    results: dict[str, object] = {
        "benchmark": "throughput-rfc46",
        "records": n,
        "record_size": size,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(f"baseline: raw pyzmq PUB/SUB, {n} x {size} B ...", file=sys.stderr)
    base = baseline(n, size)
    results["baseline"] = base
    tower = Tower()
    with tempfile.TemporaryDirectory() as tmp:
        store = StoreProc(Path(tmp) / "store", tower.address)
        try:
            print("acked: producer → store (fsync) ...", file=sys.stderr)
            results["acked"] = acked(tower.address, "bench-acked", n, size)
            print("live: producer → store + live consumer ...", file=sys.stderr)
            results["live"] = live(tower.address, "bench-live", n, size)
            print("catch-up: consumer from the beginning ...", file=sys.stderr)
            results["catch_up"] = catch_up(tower.address, "bench-acked", n + 1)
        finally:
            store.kill()
            tower.stop()
    for phase in ("acked", "live", "catch_up"):
        r = results[phase]
        assert isinstance(r, dict)
        r["ratio_to_baseline"] = r["rate"] / base["rate"]
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"throughput-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(f"\n{'phase':<10} {'records/s':>12} {'vs raw PUB/SUB':>16}", file=sys.stderr)
    print(f"{'baseline':<10} {base['rate']:>12,.0f} {1.0:>16.3f}", file=sys.stderr)
    for phase in ("acked", "live", "catch_up"):
        r = results[phase]
        assert isinstance(r, dict)
        print(f"{phase:<10} {r['rate']:>12,.0f} {r['ratio_to_baseline']:>16.3f}", file=sys.stderr)
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
