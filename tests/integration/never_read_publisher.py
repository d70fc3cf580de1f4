"""A signed producer for ``test_attacks_queues``: a subscriber that never reads its topic.

    python -m tests.integration.never_read_publisher TOWER MEGABYTES

It prints its data XPUB's endpoint, waits for a line on stdin (the test has connected a
subscriber that never reads), publishes MEGABYTES of 100 kB records, each acknowledged by
a store, and prints its peak RSS (``VmHWM``) in MiB.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dafka.api.producer import Producer

VALUE = bytes(100_000)


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def main() -> None:
    tower, megabytes = sys.argv[1], int(sys.argv[2])
    with Producer("t", towers=tower, metadata=False, trust_any_store=True) as producer:
        producer.send(b"warm up").result(60)
        print(f"endpoint {producer._loop.endpoint}", file=sys.stderr, flush=True)
        sys.stdin.readline()
        for _ in range(megabytes // 10):  # 100 records of 100 kB, then their ACKs
            for future in [producer.send(VALUE) for _ in range(100)]:
                future.result(60)
        print(f"peak_rss_mib {peak_rss_mib():.0f}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
