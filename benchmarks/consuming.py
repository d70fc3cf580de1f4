"""The consumer core's own cost per record, in this process, best of several runs.

    python -m benchmarks.consuming [--records 1000000] [--size 100] [--runs 7]
                                   [--formats 3,5,5-zstd,5-lz4,5-headers]

Sealed batches (the Producer's default size: 8192 records or 1 MiB) go through
``ConsumerCore.handle`` as a store's answer would bring them, verified and delivered, with
no socket: ``core`` is CPU nanoseconds per record (this process's CPU time, which other
work on the machine moves less than the wall clock) for that (verifying and opening each batch,
making its runs), ``records`` for that and then :meth:`RecordBatch.records` on every run
(what ``poll_batch`` hands out), ``detached`` for that and :meth:`RecordBatch.detached`
(what ``poll_batches`` hands out). The best of ``--runs`` is kept: other work on the
machine only ever makes a run slower.

Formats: ``3`` (the fast path: keys and values as columns over the blob), ``5`` (format 5
without compression or headers, each record with its own time), ``5-zstd``, ``5-lz4``
(compressed), ``5-headers`` (a W3C ``traceparent`` header on every record). The fast
path is the figure to compare between two versions (run each, alternating); the format-5
figures are what headers, own times and compression cost a consumer.

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import RecordBatch
from dafka.security.identity import Identity
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed_rich import Codec, RichRecord, seal_rich

TOPIC = "t"
NODE = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"


def _batches(fmt: str, n: int, size: int, identity: Identity) -> list[m.Record]:
    """``n`` records of ``size`` random bytes as sealed RECORDs of the default batch size."""
    per = min(signed.DEFAULT_BATCH_RECORDS, max(1, signed.DEFAULT_BATCH_BYTES // (size + 16)))
    out: list[m.Record] = []
    values = [os.urandom(size) for _ in range(min(n, per))]
    first = 0
    while first < n:
        count = min(per, n - first)
        vals = values[:count]
        if fmt == "3":
            blob = signed.encode_batch(
                identity, TOPIC, first, [(None, v) for v in vals], 1_700_000_000_000
            )
        else:
            codec = {"5": Codec.NONE, "5-zstd": Codec.ZSTD, "5-lz4": Codec.LZ4}.get(fmt, Codec.NONE)
            headers = (("traceparent", b"00-" + b"a" * 32 + b"-" + b"b" * 16 + b"-01"),)
            recs = [
                RichRecord(None, v, 1_700_000_000_000 + i, headers if fmt == "5-headers" else ())
                for i, v in enumerate(vals)
            ]
            blob = seal_rich(identity, TOPIC.encode(), first, recs, 1_700_000_000_000, codec)
        out.append(m.Record(TOPIC, identity.node_id, first, blob, count))
        first += count
    return out


def _run(msgs: list[m.Record], then: Callable[[RecordBatch], object] | None) -> float:
    """CPU nanoseconds per record to hand ``msgs`` to a fresh consumer core (and ``then``)."""
    core = ConsumerCore(NODE, offset_reset="earliest", profile=SignedProfile())
    core.subscribe(TOPIC, 0.0)
    n = 0
    start = time.process_time_ns()
    for msg in msgs:
        for effect in core.handle(msg, 0.0):
            if type(effect) is RecordBatch:
                n += len(effect.values)
                if then is not None:
                    then(effect)
    elapsed = time.process_time_ns() - start
    expected = sum(msg.count for msg in msgs)
    if n != expected:
        raise SystemExit(f"delivered {n} of {expected} records")
    return elapsed / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--formats", default="3,5,5-zstd,5-lz4,5-headers")
    args = ap.parse_args()
    identity = Identity.generate()
    out: dict[str, object] = {"records": args.records, "size": args.size, "runs": args.runs}
    for fmt in args.formats.split(","):
        msgs = _batches(fmt, args.records, args.size, identity)
        figures: dict[str, float] = {}
        for name, then in (
            ("core", None),
            ("records", RecordBatch.records),
            ("detached", RecordBatch.detached),
        ):
            best = min(_run(msgs, then) for _ in range(args.runs))
            figures[f"{name}_ns_per_record"] = round(best, 1)
        out[f"format_{fmt}"] = figures
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
