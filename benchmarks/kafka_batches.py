"""What Kafka record batches cost to decode and encode, in records/s.

    python -m benchmarks.kafka_batches [--records N] [--size B] [--rounds R]

Encodes N records of B random bytes each (a 10-byte key, no headers) as one batch with
:func:`dafka.kafka.batches.encode_batch`, then decodes it with
:func:`~dafka.kafka.batches.decode_produce`, uncompressed and with zstd; prints one JSON
object: the best of R rounds of each, in records/s.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from dafka.kafka.batches import decode_produce, encode_batch
from dafka.kafka.model import KafkaRecord


def _best(rounds: int, run: object) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(37)
    now = 1_700_000_000_000
    records = [
        KafkaRecord(i, now + i, b"key-%06d" % i, rng.randbytes(args.size))
        for i in range(args.records)
    ]
    out: dict[str, object] = {"records": args.records, "value_bytes": args.size}
    for codec in (None, "zstd"):
        name = codec or "none"
        data = encode_batch(records, compression=codec)
        encode = _best(args.rounds, lambda c=codec: encode_batch(records, compression=c))
        decode = _best(
            args.rounds,
            lambda d=data: decode_produce(d, max_records=10**6, max_uncompressed=1 << 30),
        )
        out[f"encode_{name}_records_per_s"] = round(args.records / encode)
        out[f"decode_{name}_records_per_s"] = round(args.records / decode)
        out[f"batch_{name}_bytes"] = len(data)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
