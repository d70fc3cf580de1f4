"""What a consumer-group commit costs, against a plain acknowledged send of the same size.

    python -m benchmarks.groups [--commits 500] [--partitions 4] [--json-out FILE]

One tower and one store (fsync on, child processes). A member of group ``bench``
joins (time until it holds its partitions: ``join_s``), then commits the offsets of
``--partitions`` partitions:

* ``sync``: ``commit(offsets)`` one after the other, each returning once the store
  acknowledged it (latency percentiles and commits/s);
* ``async``: ``commit(offsets, asynchronous=True)`` back to back, then a flush
  (commits/s: what auto-commit and batching allow);
* ``baseline``: ``Producer.send(value).result()`` of a record of the commit's size on a
  plain topic, one after the other (a commit is one such record: like against like).

Prints a table on stderr and the JSON report on stdout (and to ``--json-out``), with
the machine's load average at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dafka import Consumer, Producer
from dafka.groups.records import Commit, encode
from tests.procs import StoreProc, Tower, wait_until


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "count": len(times),
        "per_s": round(len(times) / sum(times), 1),
        "mean_ms": round(statistics.fmean(times) * 1000, 3),
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 3),
        "p99_ms": round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=500)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    load_start = os.getloadavg()
    report: dict[str, object] = {"commits": args.commits, "partitions": args.partitions}
    tower = Tower()
    with tempfile.TemporaryDirectory() as tmp:
        store = StoreProc(Path(tmp) / "store", tower.address)
        producers = [Producer("data", towers=tower.address) for _ in range(args.partitions)]
        try:
            for p in producers:
                p.send(b"x").result(timeout=30)
            started = time.perf_counter()
            member = Consumer(
                "data",
                towers=tower.address,
                group="bench",
                enable_auto_commit=False,
                session_timeout=6.0,
                heartbeat_interval=1.0,
            )
            wait_until(
                lambda: len(member.assignment()) == args.partitions, 30, what="the assignment"
            )
            report["join_s"] = round(time.perf_counter() - started, 3)
            keys = member.assignment()
            sync: list[float] = []
            for i in range(args.commits):
                t0 = time.perf_counter()
                member.commit({k: i + 1 for k in keys})
                sync.append(time.perf_counter() - t0)
            report["sync"] = summary(sync)
            t0 = time.perf_counter()
            for i in range(args.commits):
                member.commit({k: args.commits + i + 1 for k in keys}, asynchronous=True)
            member.commit({k: 2 * args.commits + 1 for k in keys})  # waits for all before it
            elapsed = time.perf_counter() - t0
            report["async"] = {"per_s": round((args.commits + 1) / elapsed, 1)}
            size = len(encode(Commit(tuple((t, p, 10**6, 1) for t, p in keys))))
            report["commit_record_bytes"] = size
            member.close()
            with Producer("plain", towers=tower.address) as plain:
                base: list[float] = []
                value = b"x" * size
                for _ in range(args.commits):
                    t0 = time.perf_counter()
                    plain.send(value).result(timeout=30)
                    base.append(time.perf_counter() - t0)
            report["baseline"] = summary(base)
            report["sync_vs_baseline_latency"] = round(
                report["sync"]["mean_ms"] / report["baseline"]["mean_ms"],  # type: ignore[index]
                2,
            )
        finally:
            for p in producers:
                p.close(timeout=5)
            store.kill()
            tower.stop()
    report["load_start"] = [round(x, 2) for x in load_start]
    report["load_end"] = [round(x, 2) for x in os.getloadavg()]
    for phase in ("sync", "baseline"):
        s = report[phase]
        print(
            f"{phase:9} {s['per_s']:>9} /s  mean {s['mean_ms']} ms  p50 {s['p50_ms']} ms"  # type: ignore[index]
            f"  p99 {s['p99_ms']} ms",  # type: ignore[index]
            file=sys.stderr,
        )
    print(f"async     {report['async']['per_s']:>9} /s", file=sys.stderr)  # type: ignore[index]
    print(f"join      {report['join_s']} s", file=sys.stderr)
    text = json.dumps(report)
    if args.json_out:
        Path(args.json_out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
