"""The table view's own cost (``Consumer.table()``, ``dafka-consumer --table``), in this
process, best of several runs.

    python -m benchmarks.table_fold [--records 1000000] [--keys 100000] [--runs 5]

* fold     ``KeyTable.add`` of ``--records`` records over ``--keys`` keys in 4 partitions
           (what the read does with each record delivered): nanoseconds per record;
* proof    ``add_dropped`` of the same records as dropped entries of compacted batches
           but the newest of each key, then ``table()`` (the proof check and the fold
           across partitions): nanoseconds per entry;
* entries  the table's entries and the resident memory they add (MiB, from the peak RSS);
* dict     a plain ``dict`` store per record, the same number of times: on a loaded machine
           the ratio of the figures above to it says more than the figures.

What it leaves out: verifying and delivering the records (the consumer's cost, the same as
reading the topic with ``-e``). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from dafka.consumer._kv_table import KeyTable
from dafka.wire.signed_rich import Dropped

PARTS = [f"{i:032X}" for i in range(1, 5)]
HASH = bytes(32)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(records: int, keys: int) -> dict[str, float]:
    names = [b"key-%08d" % i for i in range(keys)]
    now = 1_800_000_000_000
    table: KeyTable[object] = KeyTable(max_keys=4 * keys + 1)
    item = object()
    before = _rss_mib()
    start = time.perf_counter()
    for i in range(records):
        table.add(PARTS[i & 3], i >> 2, names[i % keys], False, now - records + i, item)
    fold = time.perf_counter() - start
    grown = _rss_mib() - before
    proof: KeyTable[object] = KeyTable(max_keys=4 * keys + 1)
    cut = records - keys  # the last ``keys`` records are the newest of each key: kept
    dropped = [Dropped(i >> 2, names[i % keys], False, now - records + i, HASH) for i in range(cut)]
    start = time.perf_counter()
    for part in range(4):
        proof.add_dropped(PARTS[part], dropped[part::4], now)
    for i in range(cut, records):
        proof.add(PARTS[i & 3], i >> 2, names[i % keys], False, now - records + i, item)
    result = proof.table(now)
    check = time.perf_counter() - start
    assert len(result) == keys
    plain: dict[bytes, tuple[int, object]] = {}
    start = time.perf_counter()
    for i in range(records):
        plain[names[i % keys]] = (i, item)
    baseline = time.perf_counter() - start
    return {
        "dict_ns_per_record": baseline / records * 1e9,
        "fold_ns_per_record": fold / records * 1e9,
        "proof_ns_per_entry": check / records * 1e9,
        "entries": float(len(table)),
        "rss_growth_mib": grown,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = [run(args.records, args.keys) for _ in range(args.runs)]
    best = {
        "dict_ns_per_record": min(r["dict_ns_per_record"] for r in runs),
        "fold_ns_per_record": min(r["fold_ns_per_record"] for r in runs),
        "proof_ns_per_entry": min(r["proof_ns_per_entry"] for r in runs),
        "entries": runs[0]["entries"],
        "rss_growth_mib": runs[0]["rss_growth_mib"],
    }
    print(json.dumps({"records": args.records, "keys": args.keys, **best}, indent=2))


if __name__ == "__main__":
    main()
