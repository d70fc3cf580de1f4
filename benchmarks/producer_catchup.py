"""Readers catching up from a producer no store has acknowledged: how long, and how it stalls.

    python -m benchmarks.producer_catchup [--unacked-mib 512] [--total-mib 480]
                                          [--size 65536] [--consumers 1 | --store]

One tower (a child process) and a producer (another) with ``max_unacked_bytes`` of
``--unacked-mib`` sends ``--total-mib`` of values and holds them: no store acknowledges.
Then either ``--consumers`` consumers (each a process, ``offset_reset="earliest"``) start
at once and read everything, served by the producer alone; each prints when its first
records came, how long the rest took (``catchup_s``) and its longest waits between two
polls that returned records (``gaps_over_0.5s``, ``max_gaps``); or, with ``--store``, a
store starts and the producer prints when everything is acknowledged (``acked_after_s``,
from the store being up) and each wait over 0.5 s between two acknowledgements. The
producer prints its FETCH counters at the end (``paced``: FETCHes that waited for the
requester's bytes). Past the burst a producer serves 64 MiB/s per reader
(``dafka.producer._serve``); a FETCH dropped there was asked again a second later.
Run from the root of the tree to measure: the child processes run its code.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIB = 1024 * 1024


def _producer(args: argparse.Namespace) -> None:
    from dafka import Producer

    n = args.total_mib * MIB // args.size
    with Producer("catchup", towers=args.towers, max_unacked_bytes=args.unacked_mib * MIB) as p:
        value = b"x" * args.size
        start = time.monotonic()
        for i in range(0, n, 1000):
            p.send_many([value] * min(1000, n - i))
        p.publish_now()
        core = p._core
        while core.next_offset("catchup") < n:
            time.sleep(0.05)
        sent = {"sent": n, "seconds": round(time.monotonic() - start, 2)}
        print(json.dumps({**sent, "held_bytes": core.unacked_bytes}), flush=True)
        if args.store:
            sys.stdin.readline()  # the store is up
            up = last = time.monotonic()
            seen, stalls = 0, []
            while p.acknowledged < n and time.monotonic() < up + args.timeout:
                time.sleep(0.01)
                now, acked = time.monotonic(), p.acknowledged
                if acked != seen:
                    if now - last > 0.5:
                        stalls.append(round(now - last, 2))
                    last, seen = now, acked
            report = {"acked": seen, "acked_after_s": round(last - up, 2)}
            print(json.dumps({**report, "stalls_over_0.5s": stalls}), flush=True)
        sys.stdin.readline()
        st = core.stats
        counts = {"fetches_served": st.fetches_served, "fetches_limited": st.fetches_limited}
        print(json.dumps({**counts, "paced": getattr(st, "fetches_paced", None)}), flush=True)
        p.close(timeout=0.1)


def _consumer(args: argparse.Namespace) -> None:
    from dafka import Consumer

    got = 0
    first: float | None = None
    last: float | None = None
    gaps: list[float] = []
    with Consumer("catchup", towers=args.towers, offset_reset="earliest") as c:
        start = time.monotonic()
        while got < args.expect and time.monotonic() < start + args.timeout:
            for run in c.poll_batches(timeout=0.2):
                now = time.monotonic()
                first = now if first is None else first
                if last is not None:
                    gaps.append(now - last)
                last = now
                got += len(run.values)
    gaps.sort(reverse=True)
    first = start if first is None else first
    report: dict[str, object] = {"records": got, "first_after": round(first - start, 2)}
    report["catchup_s"] = round((last or first) - first, 2)
    report["gaps_over_0.5s"] = sum(g > 0.5 for g in gaps)
    report["max_gaps"] = [round(g, 2) for g in gaps[:5]]
    print(json.dumps(report), flush=True)


def _line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def _tell(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--role", choices=["main", "producer", "consumer"], default="main")
    ap.add_argument("--towers")
    ap.add_argument("--unacked-mib", type=int, default=512)
    ap.add_argument("--total-mib", type=int, default=480)
    ap.add_argument("--size", type=int, default=64 * 1024)
    ap.add_argument("--consumers", type=int, default=1)
    ap.add_argument("--store", action="store_true")
    ap.add_argument("--expect", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    if args.role == "producer":
        return _producer(args)
    if args.role == "consumer":
        return _consumer(args)
    from tests.procs import StoreProc, Tower

    tower = Tower()
    me = [sys.executable, "-m", "benchmarks.producer_catchup", "--towers", tower.address]
    me += ["--size", str(args.size), "--timeout", str(args.timeout)]
    role = ["--role", "producer", "--unacked-mib", str(args.unacked_mib)]
    role += ["--total-mib", str(args.total_mib)] + (["--store"] if args.store else [])
    prod = subprocess.Popen(me + role, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = _line(prod)
        print("producer", line, flush=True)
        n = json.loads(line)["sent"]
        if args.store:
            with tempfile.TemporaryDirectory() as d:
                store = StoreProc(Path(d) / "store", tower.address)
                _tell(prod)
                print("store", _line(prod), flush=True)
                store.kill()
        else:
            role = ["--role", "consumer", "--expect", str(n)]
            readers = [
                subprocess.Popen(me + role, stdout=subprocess.PIPE, text=True)
                for _ in range(args.consumers)
            ]
            for reader in readers:
                print("consumer", _line(reader), flush=True)
                reader.wait()
        _tell(prod)
        print("producer", _line(prod), flush=True)
        prod.wait(timeout=20)
    finally:
        if prod.poll() is None:
            prod.kill()
        tower.stop()


if __name__ == "__main__":
    main()
