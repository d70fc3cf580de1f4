"""Child processes for the benchmarks: each prints one JSON line with its timings."""

from __future__ import annotations

import argparse
import json
import sys
import time

import zmq


def raw_sub(endpoint: str, count: int) -> dict[str, float]:
    """Baseline receiver: a plain pyzmq SUB counting messages."""
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(endpoint)
    print(json.dumps({"ready": True}), flush=True)
    first = 0.0
    got = 0
    while got < count:
        sub.recv_multipart()
        if got == 0:
            first = time.perf_counter()
        got += 1
    return {"first": first, "last": time.perf_counter(), "count": got}


def dafka_consume(tower: str, topic: str, count: int, reset: str) -> dict[str, float]:
    from dafka import Consumer

    with Consumer(topic, towers=tower, offset_reset=reset) as consumer:  # type: ignore[arg-type]
        print(json.dumps({"ready": True}), flush=True)
        got = 0
        first = 0.0
        started = time.perf_counter()
        while got < count:
            batch = consumer.poll_batch(10_000, timeout=60)
            if not batch:
                break
            if got == 0:
                first = time.perf_counter()
            got += len(batch)
        return {"first": first, "last": time.perf_counter(), "count": got, "started": started}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["raw-sub", "consume"])
    ap.add_argument("--endpoint", default="")
    ap.add_argument("--tower", default="")
    ap.add_argument("--topic", default="bench")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--reset", default="latest")
    a = ap.parse_args()
    if a.kind == "raw-sub":
        result = raw_sub(a.endpoint, a.count)
    else:
        result = dafka_consume(a.tower, a.topic, a.count, a.reset)
    print(json.dumps(result), flush=True)
    sys.exit(0 if result["count"] >= a.count else 1)


if __name__ == "__main__":
    main()
