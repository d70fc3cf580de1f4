"""A service that consumes a topic and keeps a running count per partition.

    python examples/consumer_service.py --topic metrics --tower 127.0.0.1:5556 --from-beginning

Records of each partition arrive in offset order with no gaps; the service
prints a summary line every few seconds and a final one on Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import time
from collections import Counter

from dafka import Consumer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topic", action="append", default=None)
    ap.add_argument("--tower", default="127.0.0.1:5556")
    ap.add_argument("--from-beginning", action="store_true")
    ap.add_argument("--count", type=int, default=0, help="stop after N records (0: run forever)")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between summaries")
    args = ap.parse_args()
    topics = args.topic or ["metrics"]

    # A signal handler runs on the main thread between two of its bytecodes: it only notes
    # the signal and takes no lock (a threading.Event's may be held by the code it interrupts)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _: stopping.append(signum))

    per_partition: Counter[tuple[str, str]] = Counter()
    reset = "earliest" if args.from_beginning else "latest"
    total = 0
    next_report = time.monotonic() + args.every
    with Consumer(topics, towers=args.tower, offset_reset=reset) as consumer:
        while not stopping and (args.count == 0 or total < args.count):
            record = consumer.poll(timeout=0.5)
            if record is not None:
                per_partition[(record.topic, record.partition)] += 1
                total += 1
            if time.monotonic() >= next_report:
                print(f"{total} records from {len(per_partition)} partitions", flush=True)
                next_report = time.monotonic() + args.every
    for (topic, partition), n in sorted(per_partition.items()):
        print(f"{topic} {partition} {n}")
    print(f"total {total}", flush=True)


if __name__ == "__main__":
    main()
