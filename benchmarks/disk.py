"""What writing a store's batches durably costs this machine's CPU, three ways, alternated.

    python -m benchmarks.disk [--batches 600] [--batch-kib 900] [--per-sync 4] [--rounds 3]
                              [--dir DIR] [--no-progress]

Each way writes the same bytes, ``--per-sync`` batches between two syncs, as a store commits
what one drain brought:

* ``lmdb``      a synced LMDB transaction putting the batches (what our store does);
* ``buffered``  one ``pwrite`` of them to a file, then ``fdatasync``: the kernel copies
                every byte into the page cache first;
* ``direct``    the same through ``O_DIRECT`` from a page-aligned buffer (the batches
                copied into it first, in user space): the device reads the buffer itself,
                with no page-cache copy.

The three alternate, ``--rounds`` times, each round starting with the next of them, so that
a machine whose speed drifts during the run treats them alike: on this VM the copy into
the page cache costs up to ten times more on pages the guest has not used lately
(``docs/performance.md``), and the first way of a round gets those. Prints CPU per batch and MB/s of each way (median over the rounds, least and most),
each way's CPU against ``buffered``'s in the same round, and the load average before and
after; writes JSON to benchmarks/results/disk-<time>.json. A file system that refuses
``O_DIRECT`` (tmpfs before Linux 6.6) reports ``direct`` as unsupported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.repeat import spread
from benchmarks.segment import Segment

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
WAYS = ("lmdb", "buffered", "direct")


class Unsupported(Exception):
    """The file system refuses this way of writing."""


def _lmdb(directory: Path, batch: bytes, batches: int, per_sync: int) -> None:
    import lmdb

    env = lmdb.open(str(directory / "lmdb"), map_size=2 * len(batch) * batches + (64 << 20))
    try:
        key = 0
        for _ in range(batches // per_sync):
            with env.begin(write=True) as txn:  # synced on commit: LMDB's default
                for _ in range(per_sync):
                    txn.put(key.to_bytes(8, "big"), batch, append=True)
                    key += 1
    finally:
        env.close()


def _file(directory: Path, batch: bytes, batches: int, per_sync: int, direct: bool) -> None:
    try:
        segment = Segment(directory / ("direct" if direct else "buffered"), direct)
    except OSError as exc:
        if direct:
            raise Unsupported(f"open: {exc.strerror}") from exc
        raise
    try:
        for _ in range(batches // per_sync):
            for _ in range(per_sync):
                segment.append(batch)
            try:
                segment.sync()
            except OSError as exc:
                if direct:
                    raise Unsupported(f"pwrite: {exc.strerror}") from exc
                raise
    finally:
        segment.close()


def measure(
    way: str, directory: Path, batch: bytes, batches: int, per_sync: int
) -> dict[str, float | str]:
    """Write ``batches`` copies of ``batch`` one ``way``: CPU a batch (us), MB/s."""
    write: Callable[[], None]
    if way == "lmdb":
        write = lambda: _lmdb(directory, batch, batches, per_sync)  # noqa: E731
    else:
        write = lambda: _file(directory, batch, batches, per_sync, way == "direct")  # noqa: E731
    written = batches // per_sync * per_sync
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        write()
    except Unsupported as exc:
        return {"unsupported": str(exc)}
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "batches": written,
        "seconds": seconds,
        "cpu_us_per_batch": cpu / written * 1e6,
        "mb_per_second": written * len(batch) / seconds / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=600, help="batches each way, each round")
    ap.add_argument("--batch-kib", type=int, default=900, help="a batch's size (8192 x 100 B)")
    ap.add_argument("--per-sync", type=int, default=4, help="batches between two syncs")
    ap.add_argument("--rounds", type=int, default=3, help="times the three ways alternate")
    ap.add_argument("--dir", type=Path, default=ROOT, help="write under this directory")
    ap.add_argument("--no-progress", action="store_true", help="no line per round on stderr")
    args = ap.parse_args()
    if min(args.batches, args.batch_kib, args.per_sync, args.rounds) < 1:
        ap.error("--batches, --batch-kib, --per-sync and --rounds must be at least 1")
    if args.batches < args.per_sync:
        ap.error("--batches must be at least --per-sync")
    batch = os.urandom(args.batch_kib * 1024)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    rounds: list[dict[str, dict[str, float | str]]] = []
    for r in range(args.rounds):
        got: dict[str, dict[str, float | str]] = {}
        # each round starts with the next way: the first to write in a round gets the
        # page-cache pages nobody used lately (on this VM, given back to the host and slow
        # to touch again); the ways after it reuse the pages their predecessors freed
        for way in WAYS[r % len(WAYS) :] + WAYS[: r % len(WAYS)]:
            with tempfile.TemporaryDirectory(dir=args.dir, prefix="dafka-disk-") as tmp:
                got[way] = measure(way, Path(tmp), batch, args.batches, args.per_sync)
        rounds.append(got)  # in the order they ran
        if not args.no_progress:
            print(
                f"round {r + 1} of {args.rounds}: "
                + ", ".join(
                    f"{way} {m['cpu_us_per_batch']:,.0f} us"
                    if "cpu_us_per_batch" in m
                    else f"{way} unsupported"
                    for way, m in got.items()
                ),
                file=sys.stderr,
            )
    with open("/proc/loadavg") as f:
        end_load = f.read().split()[:3]
    summary: dict[str, dict[str, object]] = {}
    for way in WAYS:
        ran = [g[way] for g in rounds if "cpu_us_per_batch" in g[way]]
        if not ran:
            summary[way] = {"unsupported": rounds[0][way].get("unsupported", "")}
            continue
        entry: dict[str, object] = {
            "cpu_us_per_batch": spread([float(m["cpu_us_per_batch"]) for m in ran]),
            "mb_per_second": spread([float(m["mb_per_second"]) for m in ran]),
        }
        against = [  # this way's CPU over buffered's, round by round
            float(g[way]["cpu_us_per_batch"]) / float(g["buffered"]["cpu_us_per_batch"])
            for g in rounds
            if "cpu_us_per_batch" in g[way] and "cpu_us_per_batch" in g["buffered"]
        ]
        if way != "buffered" and against:
            entry["cpu_vs_buffered"] = spread(against)
        summary[way] = entry
    report = {
        "benchmark": "disk",
        "batch_bytes": len(batch),
        "batches": args.batches,
        "per_sync": args.per_sync,
        "directory": str(args.dir),
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
        "load_average_at_end": end_load,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rounds": rounds,
        "summary": summary,
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"disk-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"load average {' '.join(load)} at the start, {' '.join(end_load)} at the end "
        f"({os.cpu_count()} CPUs); {args.batches} batches of {len(batch):,} B a way a round, "
        f"synced every {args.per_sync}; median (least - most) over {args.rounds} rounds:",
        file=sys.stderr,
    )
    for way, entry in summary.items():
        if "unsupported" in entry:
            print(f"{way:<9} unsupported here ({entry['unsupported']})", file=sys.stderr)
            continue
        cpu, mbs = entry["cpu_us_per_batch"], entry["mb_per_second"]
        assert isinstance(cpu, dict) and isinstance(mbs, dict)
        line = (
            f"{way:<9} CPU {cpu['median']:>7,.0f} us a batch ({cpu['min']:,.0f} - "
            f"{cpu['max']:,.0f})   {mbs['median']:>6,.0f} MB/s ({mbs['min']:,.0f} - "
            f"{mbs['max']:,.0f})"
        )
        vs = entry.get("cpu_vs_buffered")
        if isinstance(vs, dict):
            line += f"   CPU {vs['median']:.2f}x buffered's ({vs['min']:.2f} - {vs['max']:.2f})"
        print(line, file=sys.stderr)
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
