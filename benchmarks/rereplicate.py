"""Re-replication: how long a fresh store takes to copy what another store holds.

    python -m benchmarks.rereplicate [--records 1000000] [--size 100] [--batch 10000]

One tower and one store (child processes); a producer (in this process) writes
``--records`` values of ``--size`` bytes to a topic with ``min_acks`` 1 and stops. Then a
second store starts on an empty data directory: it learns what the first holds by asking
it (``dafka.store._replicate``: GET-HEADS rounds, then gap FETCHes) and copies it. The
figure is the time from the second store being up to its LMDB holding the last record
(``rereplicate_s``), read by a read-only LMDB reader every 0.1 s. Issue 33, point 1.

The baseline, measured in the same run on the same machine: the write phase, the same
records sent by a producer to the first store and acknowledged after its fsync
(``write_s``). ``ratio`` is the copy rate over that rate (above 1: a fresh store refills
faster than the producer could write it). The load average before and after is recorded.

Writes JSON to benchmarks/results/rereplicate-<time>.json. Run from the root of the
tree: the child processes run its code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "rerep"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=10_000, help="values per send_many")
    ap.add_argument("--interval", type=float, default=1.0, help="the stores' replicate_interval")
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()

    from dafka import Producer
    from dafka.metadata import MetadataClient
    from tests.admin import install_admin_key
    from tests.procs import StoreProc, Tower, stored_head

    install_admin_key()  # the tower's first admin (tests.admin), to create the topic
    load_before = os.getloadavg()
    tower = Tower()
    stores: list[StoreProc] = []
    try:
        with tempfile.TemporaryDirectory() as d:
            with MetadataClient(tower.address) as admin:
                admin.create_topic(TOPIC, {"min_acks": 1})
            flags = ("--replicate-interval", str(args.interval))
            stores.append(StoreProc(Path(d) / "a", tower.address, *flags))
            value = b"x" * args.size
            start = time.monotonic()
            with Producer(TOPIC, towers=tower.address, metadata=True) as producer:
                partition = producer.node_id
                last = None
                for i in range(0, args.records, args.batch):
                    last = producer.send_many([value] * min(args.batch, args.records - i))
                assert last is not None
                last.result(args.timeout)
            write_s = time.monotonic() - start
            print(f"written {args.records:,} records in {write_s:.1f} s", file=sys.stderr)
            fresh = Path(d) / "b"
            stores.append(StoreProc(fresh, tower.address, *flags))
            up = time.monotonic()
            want = args.records - 1
            held = -1
            while held < want and time.monotonic() < up + args.timeout:
                time.sleep(0.1)
                held = stored_head(fresh, TOPIC, partition) or -1
            took = time.monotonic() - up
    finally:
        for store in stores:
            store.kill()
        tower.stop()
    result = {
        "benchmark": "rereplicate",
        "records": args.records,
        "size": args.size,
        "replicate_interval": args.interval,
        "write_s": round(write_s, 2),
        "copied": held + 1,
        "rereplicate_s": round(took, 2),
        "records_per_s": round((held + 1) / took) if took > 0 else None,
        "write_records_per_s": round(args.records / write_s) if write_s > 0 else None,
        "ratio": round(write_s / took, 2) if took > 0 and held >= want else None,
        "complete": held >= want,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(
        f"copied at {result['records_per_s']} records/s, written at "
        f"{result['write_records_per_s']} records/s: ratio {result['ratio']}",
        file=sys.stderr,
    )
    print(json.dumps(result), flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"rereplicate-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
