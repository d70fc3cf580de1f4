"""What compaction costs and the space it returns, measured in one run.

    python -m benchmarks.compaction [--records N] [--keys K] [--size 100] [--batch 100]
                                    [--codecs none,zstd] [--json FILE]

For each codec: ``N`` keyed records over ``K`` keys (values of ``--size`` bytes, random
text), sealed as a producer seals them (format 5, ``--batch`` records a batch, each
key's versions spread over the whole run) and appended to a store's LMDB (one synced
transaction per 64 batches, as a store commits a drain); then one compaction pass over
the partition with no rate limit (``dafka.store._compaction.Compactor``: index, then
each batch rewritten in one transaction), timed. Reported per codec: the pass's
seconds, the MB/s it went through (bytes held before the pass / its duration), the
batches rewritten, the bytes of the batches held before and after (what a reader is
served, and what LMDB's pages hold: the file keeps its size, LMDB reuses the pages
freed for later writes), and the machine's load average before and after.

The store process is not involved (no sockets): the pass is the store's code over the
store's storage, run in this process, so the figure is the job's own cost, which the
store spreads over time at ``--compaction-rate``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
import tempfile
import time
from pathlib import Path


def _phase(codec_name: str, records: int, keys: int, size: int, per_batch: int) -> dict:
    from dafka.security.identity import Identity
    from dafka.storage.base import StoredBatch
    from dafka.storage.lmdb_store import LmdbStorage
    from dafka.store._compaction import Compactor, CompactSettings
    from dafka.store._state import StoreStats
    from dafka.wire.signed_rich import RichRecord, codec_named, seal_rich

    producer = Identity.from_seed(bytes(range(32)))
    partition = producer.node_id
    codec = codec_named(codec_name)
    rng = random.Random(36)
    alphabet = (string.ascii_letters + string.digits + " ,:{}").encode()
    now = int(time.time() * 1000)
    with tempfile.TemporaryDirectory() as d:
        storage = LmdbStorage(Path(d), map_size=1 << 30, node_id=partition)
        try:
            batches: list[StoredBatch] = []
            seal_start = time.perf_counter()
            for first in range(0, records, per_batch):
                n = min(per_batch, records - first)
                recs = [
                    RichRecord(
                        b"key-%08d" % rng.randrange(keys),
                        bytes(rng.choice(alphabet) for _ in range(size)),
                        now,
                    )
                    for _ in range(n)
                ]
                blob = seal_rich(producer, b"compacted", first, recs, now, codec)
                batches.append(
                    StoredBatch("compacted", partition, first, first + n - 1, blob, "signed")
                )
                if len(batches) == 64:
                    storage.append(batches)
                    batches = []
            if batches:
                storage.append(batches)
            seal_seconds = time.perf_counter() - seal_start
            held_before = sum(len(b.blob) for b in storage.read("compacted", partition, 0, 10**9))
            pages_before = storage.usage()[0]
            stats = StoreStats()
            job = Compactor(
                storage,
                {"compacted": CompactSettings(86_400_000)},
                stats,
                rate=1e15,
                min_pass=1e9,
            )
            t = 0.0
            job.step(t, now)
            start = time.perf_counter()
            while stats.compaction_passes == 0:
                t += 1.0
                job.step(t, now)
            seconds = time.perf_counter() - start
            held_after = sum(len(b.blob) for b in storage.read("compacted", partition, 0, 10**9))
            pages_after = storage.usage()[0]
        finally:
            storage.close()
    return {
        "codec": codec_name,
        "records": records,
        "keys": keys,
        "value_bytes": size,
        "batch_records": per_batch,
        "write_seconds": round(seal_seconds, 3),
        "pass_seconds": round(seconds, 3),
        "pass_mb_per_s": round(held_before / seconds / 1e6, 2),
        "batches_rewritten": stats.compaction_batches,
        "held_bytes_before": held_before,
        "held_bytes_after": held_after,
        "returned_bytes": held_before - held_after,
        "returned_fraction": round(1 - held_after / held_before, 4),
        "lmdb_bytes_in_use_before": pages_before,
        "lmdb_bytes_in_use_after": pages_after,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--codecs", default="none,zstd")
    ap.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = ap.parse_args()
    report: dict = {
        "benchmark": "compaction",
        "machine": {"cpus": os.cpu_count(), "load_avg_before": os.getloadavg()},
        "phases": [],
    }
    for codec in args.codecs.split(","):
        phase = _phase(codec.strip(), args.records, args.keys, args.size, args.batch)
        report["phases"].append(phase)
        print(
            f"{phase['codec']:>5}: pass {phase['pass_seconds']} s "
            f"({phase['pass_mb_per_s']} MB/s), {phase['batches_rewritten']} batches rewritten, "
            f"held {phase['held_bytes_before']} -> {phase['held_bytes_after']} bytes "
            f"({100 * phase['returned_fraction']:.1f}% returned)",
            file=sys.stderr,
        )
    report["machine"]["load_avg_after"] = os.getloadavg()
    text = json.dumps(report, indent=1)
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
