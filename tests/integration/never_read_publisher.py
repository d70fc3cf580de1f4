"""A signed producer for ``test_attacks_queues``: a subscriber that never reads its topic.

    python -m tests.integration.never_read_publisher TOWER MEGABYTES

It prints its data XPUB's endpoint, waits for a line on stdin (the test has connected a
subscriber that never reads), publishes MEGABYTES of 100 kB records, each acknowledged by
a store, and prints its peak RSS (``VmHWM``) in MiB.
"""

from __future__ import annotations

import os
import sys

from dafka.producer._facade import Producer
from tests.procs import peak_rss_mib

VALUE = bytes(100_000)


def main() -> None:
    tower, megabytes = sys.argv[1], int(sys.argv[2])
    with Producer("t", towers=tower, metadata=False, trust_any_store=True) as producer:
        producer.send(b"warm up").result(60)
        print(f"endpoint {producer._loop.endpoint}", file=sys.stderr, flush=True)
        sys.stdin.readline()
        for _ in range(megabytes // 10):  # 100 records of 100 kB, then their ACKs
            for future in [producer.send(VALUE) for _ in range(100)]:
                future.result(60)
        print(f"peak_rss_mib {peak_rss_mib(os.getpid()):.0f}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
