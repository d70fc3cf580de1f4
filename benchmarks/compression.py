"""What compression costs and saves: records/s acknowledged and bytes on disk, per codec.

    python -m benchmarks.compression [--records N] [--codecs none,zstd,lz4]
                                     [--datasets random100,json1k] [--no-progress]

For each dataset and each codec, in the same run and on the same machine: a fresh store
(fsync on, its own LMDB), a Producer with ``compression=CODEC`` sends N records with
``send_many`` and waits until the store acknowledged every one; then the store stops and
its LMDB is measured (pages in use, the same figure as ``dafka_store_lmdb_bytes``).

Datasets:

* ``random100``: 100 random bytes per record (incompressible: what a codec costs for
  nothing)
* ``json1k``: JSON events of 1.0 to 1.1 KB (an order placed: nested fields, repeated
  keys, varied values; no padding), the kind of payload compression is for

``none`` is the producer's default path (format-3 batches, no format-5 encoding); each
codec row prints its rate and its bytes on disk against ``none`` of the same dataset.
The JSON (benchmarks/results/compression-<time>.json) records the machine's load average
at the start and at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import lmdb

from dafka import Producer
from tests.procs import StoreProc, Tower

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 10_000
CODECS = ("none", "zstd", "lz4")
DATASETS = ("random100", "json1k")


def _load() -> list[str]:
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def records(dataset: str, n: int, seed: int = 36) -> list[bytes]:
    """``n`` records of ``dataset`` (deterministic for a seed)."""
    rng = random.Random(seed)
    if dataset == "random100":
        return [rng.randbytes(100) for _ in range(n)]
    cities = ["Lisbon", "Osaka", "Lagos", "Quito", "Tartu", "Perth", "Halifax", "Pune"]
    items = ["widget", "gizmo", "sprocket", "flange", "gasket", "bearing", "valve"]
    out = []
    for i in range(n):
        event = {
            "event": "order.placed",
            "order_id": f"ord-{rng.randrange(10**9):09d}",
            "sequence": i,
            "customer": {
                "id": f"cus-{rng.randrange(10**6):06d}",
                "city": rng.choice(cities),
                "tier": rng.choice(["free", "pro", "enterprise"]),
            },
            "lines": [],
            "placed_at": f"2026-12-02T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00Z",
            "note": rng.choice(["", "leave at the door", "gift wrap", "call on arrival"]),
        }
        lines: list[dict[str, object]] = event["lines"]  # type: ignore[assignment]
        raw = json.dumps(event).encode()
        while len(raw) < 1000:  # about 1 KB of real JSON, no padding
            lines.append(
                {
                    "sku": f"{rng.choice(items)}-{rng.randrange(1000):03d}",
                    "quantity": rng.randrange(1, 20),
                    "unit_price_cents": rng.randrange(100, 100_000),
                }
            )
            raw = json.dumps(event).encode()
        out.append(raw)
    return out


def lmdb_bytes(data_dir: Path) -> int:
    """Bytes of the store's LMDB map in use (pages up to the last one used)."""
    paths = [p.parent for p in data_dir.rglob("data.mdb")]
    total = 0
    for path in paths:
        env = lmdb.open(str(path), readonly=True, lock=False, max_dbs=64)
        try:
            info, stat = env.info(), env.stat()
            total += (info["last_pgno"] + 1) * stat["psize"]
        finally:
            env.close()
    return total


def run(tower: str, dataset: str, codec: str, values: list[bytes], tmp: Path) -> dict[str, float]:
    data_dir = tmp / f"store-{dataset}-{codec}"
    store = StoreProc(data_dir, tower)
    topic = f"bench-{dataset}-{codec}"
    try:
        with Producer(topic, towers=tower, trust_any_store=True, compression=codec) as producer:
            producer.send(values[0]).result(timeout=30)  # connected: discovery not timed
            t0 = time.perf_counter()
            for start in range(0, len(values), CHUNK):
                producer.send_many(values[start : start + CHUNK])
            producer.flush(timeout=900)
            seconds = time.perf_counter() - t0
    finally:
        store.stop()
    n = len(values)
    raw = sum(map(len, values))
    disk = lmdb_bytes(data_dir)
    return {
        "records": n,
        "value_bytes": raw,
        "seconds": seconds,
        "rate": n / seconds,
        "disk_bytes": disk,
        "disk_per_value_byte": disk / raw,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--no-progress", action="store_true", help="accepted for symmetry; quiet")
    args = ap.parse_args()
    codecs = args.codecs.split(",")
    datasets = args.datasets.split(",")
    for name, chosen, known in (("codecs", codecs, CODECS), ("datasets", datasets, DATASETS)):
        if bad := sorted(set(chosen) - set(known)):
            ap.error(f"--{name}: unknown {', '.join(bad)} (known: {', '.join(known)})")
    if "none" not in codecs:
        codecs.insert(0, "none")  # the baseline every codec is printed against
    results: dict[str, object] = {
        "benchmark": "compression",
        "records": args.records,
        "fsync": True,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_at_start": _load(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tower = Tower()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for dataset in datasets:
                values = records(dataset, args.records)
                rows: dict[str, dict[str, float]] = {}
                for codec in codecs:
                    print(f"{dataset}: {codec} ...", file=sys.stderr)
                    rows[codec] = run(tower.address, dataset, codec, values, Path(tmp))
                base = rows["none"]
                for row in rows.values():
                    row["rate_vs_none"] = row["rate"] / base["rate"]
                    row["disk_vs_none"] = row["disk_bytes"] / base["disk_bytes"]
                results[dataset] = rows
    finally:
        tower.stop()
    results["load_average_at_end"] = _load()
    print(
        f"{'dataset':<10} {'codec':<5} {'records/s':>10} {'x none':>7} {'disk MB':>9} {'x none':>7}"
    )
    for dataset in datasets:
        for codec, row in results[dataset].items():  # type: ignore[attr-defined]
            print(
                f"{dataset:<10} {codec:<5} {row['rate']:>10,.0f} {row['rate_vs_none']:>7.2f} "
                f"{row['disk_bytes'] / 1e6:>9.1f} {row['disk_vs_none']:>7.2f}"
            )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"compression-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
