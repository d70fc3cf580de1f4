"""Sum up py-spy raw profiles (``py-spy record -f raw``): where the time goes, per process.

    python -m benchmarks.profile DIR [--top 20] [--json]

For each ``DIR/*.raw`` it prints the share of samples per leaf frame (the
function that was running; native frames show as py-spy names them) and per
"area": crypto (PyNaCl, the batch digest: BLAKE3 or BLAKE2b), zmq, LMDB, the wire
codec, the node cores, the IO shell, futures and locks, idle (waiting in poll/select
or for the GIL).
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

STORE_CORE = (
    "core credits gaps ingest partitions policy repair replicate serve state waiting".split()
)
"""The store core's modules (``dafka/store/_*.py`` but for the facade and the writer pipeline)."""

AREAS = [
    (
        "crypto",
        (
            "nacl",
            "crypto_sign",
            "blake2b",
            "blake3",
            "hashlib",
            "verify (dafka/identity",
            "_digest (dafka/wire/signed_batch",
        ),
    ),
    ("wire codec", ("dafka/wire/",)),
    ("lmdb", ("lmdb", "putmulti", "lmdb_store")),
    ("zmq send/recv", ("zmq/sugar/socket", "send_multipart", "recv_multipart", "Socket.send")),
    ("idle (poll, waits)", ("poll (zmq", "Poller.poll", "wait (threading", "select", "sleep")),
    ("producer core", ("dafka/producer/_core", "dafka/producer/_serve", "dafka/producer/_runs")),
    (
        "consumer core",
        (
            "dafka/consumer/_core",
            "dafka/consumer/_table",
            "dafka/consumer/_buffer",
            "dafka/consumer/_delivery",
            "dafka/consumer/_fetch",
            "dafka/consumer/_heads",
            "dafka/consumer/_end",
            "dafka/consumer/_partition",
        ),
    ),
    ("store core", (*(f"dafka/store/_{m}" for m in STORE_CORE), "dafka/storage/")),
    ("profiles (adapter)", ("dafka/wire/profiles",)),
    ("IO shell", ("dafka/io/",)),
    ("effects/records", ("dafka/core/effects",)),
    (
        "facades",
        (
            "dafka/producer/_facade",
            "dafka/producer/_io",
            "dafka/consumer/_facade",
            "dafka/consumer/_io",
            "dafka/store/_facade",
        ),
    ),
    ("futures/locks", ("dafka/futures", "threading.py")),
    ("benchmark harness", ("benchmarks/",)),
]


def area_of(stack: list[str]) -> str:
    """The area of a sample: its innermost frame that belongs to one."""
    for frame in reversed(stack):
        for area, needles in AREAS:
            if any(needle in frame for needle in needles):
                return area
    return "other"


def summarize(path: Path, top: int) -> dict[str, object]:
    leaf: collections.Counter[str] = collections.Counter()
    areas: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack_text, _, count_text = line.rstrip().rpartition(" ")
        if not stack_text:
            continue
        count = int(count_text)
        stack = [f for f in stack_text.split(";") if f]
        if stack and stack[0].startswith(("thread (", "process ")):
            stack = stack[1:]
        if not stack:
            continue
        total += count
        leaf[stack[-1]] += count
        areas[area_of(stack)] += count
    return {
        "samples": total,
        "areas": {k: round(100 * v / total, 1) for k, v in areas.most_common()},
        "leaf": [(k, round(100 * v / total, 1)) for k, v in leaf.most_common(top)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    report = {p.stem: summarize(p, args.top) for p in sorted(args.directory.glob("*.raw"))}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, r in report.items():
        print(f"== {name}: {r['samples']} samples")
        for area, share in r["areas"].items():  # type: ignore[attr-defined]
            print(f"   {share:5.1f}%  {area}")
        print("   leaf frames:")
        for frame, share in r["leaf"]:  # type: ignore[attr-defined]
            print(f"   {share:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
