"""The producer's own cost per record, in this process, best of several runs.

    python -m benchmarks.sealing [--records 1000000] [--size 100] [--runs 7] [--api many|one]

Two figures that the machine's other work moves far less than the rates of
``benchmarks.throughput`` (it only ever makes a run slower, so the best run is the one
least disturbed):

* seal       ``seal_batches`` of one full batch (the Producer's defaults: 8192 records or
             1 MiB): microseconds per batch and nanoseconds per record. The buffers are
             freed between runs and reused, so page faults are left out.
* formats    (``--formats``) one batch of 8192 records of ``--size`` bytes, random or a
             JSON event, in format 3 and in format 5 with each codec (the same records,
             without keys or headers): sealing, a store's ``verify_batch`` and a consumer's
             ``verify_batch`` + ``open_batch``, in microseconds per record, and the blob's
             bytes (docs/wire.md §9.11).
* producer   a Producer with no store (nothing acknowledges: every blob is held, as in
             the acked phase before its ACKs) takes ``--records`` records through
             ``send_many`` (chunks of 10,000) or ``send``, until all are published:
             CPU nanoseconds per record of this process, every thread (the caller's, the
             IO thread that seals and publishes, libzmq's), and the minor page faults
             per batch (the held blobs are new memory).

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Callable
from functools import partial

from benchmarks.throughput import send_records
from dafka import Producer
from dafka.io.collector import freeze_heap
from dafka.io.malloc import keep_freed_memory
from dafka.security.identity import Identity
from dafka.wire.signed_batch import batch_overhead
from dafka.wire.signed_builder import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_RECORDS,
    seal_batches,
)


def seal(size: int, runs: int) -> dict[str, float]:
    identity = Identity.generate()
    room = DEFAULT_BATCH_BYTES - batch_overhead("bench")
    count = min(DEFAULT_BATCH_RECORDS, room // (size + 8))  # a full batch, one blob
    values = [b"x" * size] * count
    best = float("inf")
    for _ in range(max(runs, 1) * 20):
        t0 = time.perf_counter()
        (batch,) = seal_batches(identity, "bench", 0, None, values, 0)
        best = min(best, time.perf_counter() - t0)
        del batch
    return {"records": count, "us_per_batch": best * 1e6, "ns_per_record": best / count * 1e9}


def formats(size: int, runs: int) -> dict[str, dict[str, float]]:
    import os

    from dafka.wire.signed_batch import open_batch, seal_records, verify_batch
    from dafka.wire.signed_rich import Codec, RichRecord, seal_rich

    identity = Identity.generate()
    count = DEFAULT_BATCH_RECORDS
    events = [
        (
            b'{"user":%d,"event":"page_view","path":"/items/%d","ms":%d}' % (i % 977, i, i * 37)
        ).ljust(size, b" ")[:size]
        for i in range(count)
    ]
    kinds = {"random": [os.urandom(size) for _ in range(count)], "json": events}
    out: dict[str, dict[str, float]] = {}

    def best(fn: Callable[[], object]) -> float:
        least = float("inf")
        for _ in range(max(runs, 1) * 3):
            t0 = time.thread_time()
            fn()
            least = min(least, time.thread_time() - t0)
        return least / count * 1e6

    for kind, values in kinds.items():
        records = [RichRecord(None, v, 1) for v in values]
        sealers: dict[str, Callable[[], bytes]] = {
            "format3": partial(seal_records, identity, b"bench", 0, None, values, 1)
        }
        for codec in Codec:
            sealers[f"format5_{codec.name.lower()}"] = partial(
                seal_rich, identity, b"bench", 0, records, 1, codec
            )
        for name, sealer in sealers.items():
            blob = sealer()

            def verify_open(blob: bytes = blob) -> object:
                return open_batch(verify_batch(blob))

            out[f"{kind}_{name}"] = {
                "seal_us_per_record": best(sealer),
                "verify_us_per_record": best(partial(verify_batch, blob)),
                "verify_open_us_per_record": best(verify_open),
                "blob_bytes": len(blob),
            }
    return out


def producer(records: int, size: int, runs: int, api: str) -> dict[str, float]:
    payload = b"x" * size
    cpu: list[float] = []
    faults: list[float] = []
    for _ in range(runs):
        with Producer(
            "bench",
            towers="127.0.0.1:1",  # nobody there: no store, nothing acknowledged
            metadata=False,
            trust_any_store=True,
            max_unacked_bytes=4 * records * (size + 128) + (1 << 20),
        ) as p:
            freeze_heap()  # as the dafka-producer command does
            handler = p._handler
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            c0 = time.process_time()
            send_records(p, records, payload, api)
            p.publish_now()
            deadline = time.monotonic() + 600
            while handler.records_sent < records and time.monotonic() < deadline:
                time.sleep(0.0005)
            cpu.append((time.process_time() - c0) / records * 1e9)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
            p.close(timeout=0)
    batches = records / DEFAULT_BATCH_RECORDS
    cpu.sort()
    return {
        "records": records,
        "api": api,  # type: ignore[dict-item]
        "cpu_ns_per_record_best": cpu[0],
        "cpu_ns_per_record_median": cpu[len(cpu) // 2],
        "minor_faults_per_batch_best": min(faults) / batches,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--api", choices=["many", "one"], default="many")
    ap.add_argument("--formats", action="store_true", help="compare batch formats 3 and 5 only")
    args = ap.parse_args()
    keep_freed_memory()  # as the dafka-producer command does
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    if args.formats:
        print(
            json.dumps({"formats": formats(args.size, args.runs), "load_average": load}, indent=2)
        )
        return
    out = {
        "seal": seal(args.size, args.runs),
        "producer": producer(args.records, args.size, args.runs, args.api),
        "load_average": load,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
