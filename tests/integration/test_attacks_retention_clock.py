"""Retention that no clock can turn into data loss, with real processes (issue 33,
point 6): a store whose wall clock jumps an hour ahead, under libfaketime (``apt-get
install faketime``; skipped without it), and a producer whose clock is an hour behind.
The store's monotonic clock is left alone (``FAKETIME_DONT_FAKE_MONOTONIC``), as a
stepped wall clock leaves it; the offset is read from a file at every call, so it can
jump mid-run.
"""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

import pytest

from dafka.metadata import MetadataClient
from dafka.producer._facade import Producer
from dafka.query.client import QueryClient
from dafka.store._facade import Store
from tests.procs import Proc, Tower, py, wait_until

pytestmark = [pytest.mark.timeout(180)]

_LIBS = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
needs_faketime = pytest.mark.skipif(
    not _LIBS, reason="libfaketime is not installed (apt-get install faketime)"
)
TEN_MINUTES = 600_000
BEHIND = """
import runpy, sys, time
wall, wall_ns = time.time, time.time_ns
time.time = lambda: wall() - 3600.0
time.time_ns = lambda: wall_ns() - 3_600_000_000_000
sys.argv = ["dafka.cli.producer", *sys.argv[1:]]
runpy.run_module("dafka.cli.producer", run_name="__main__")
"""
"""``dafka-producer`` with its wall clock an hour behind. Not under libfaketime: with it,
``time.sleep(0)`` (which the producer calls to yield to its IO thread) fails with EINVAL."""


def faked(clock: Path, offset: str) -> dict[str, str]:
    """The environment of a process whose wall clock is ``offset`` seconds off ("+3600"),
    read again from ``clock`` at every call."""
    clock.write_text(offset + "\n")
    return {
        "LD_PRELOAD": _LIBS[0],
        "FAKETIME_TIMESTAMP_FILE": str(clock),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


def held(query: QueryClient, topic: str) -> tuple[int, int]:
    (part,) = query.heads([topic])
    return part.tail, part.head


@needs_faketime
def test_a_store_clock_jumping_an_hour_ahead_keeps_what_it_acked(tmp_path: Path) -> None:
    tower = Tower()
    clock = tmp_path / "clock"
    store = Proc(
        py("dafka.cli.store", "--data-dir", str(tmp_path / "s"), "--tower", tower.address),
        env=faked(clock, "+0"),
    )
    producer = None
    try:
        m = store.wait_line(r"store ([0-9A-F]{32}) on (tcp://\S+) query (tcp://[^\s,]+)", 60)
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ret", {"retention_ms": TEN_MINUTES})
        producer = Producer("ret", towers=tower.address, metadata=True)
        for i in range(20):  # twenty batches, each acknowledged
            producer.send_many([b"r%d" % i]).result(30)
        with QueryClient(m.group(3), timeout=10) as query:
            assert held(query, "ret") == (0, 19)
            clock.write_text("+3600\n")  # the store's clock jumps an hour ahead
            store.wait_line(r"store\.retention\.clock_ahead ahead_ms=\d+", 30)
            assert held(query, "ret") == (0, 19), "acknowledged records were trimmed"
    finally:
        if producer is not None:
            producer.close(1)
        store.kill()
        tower.stop()


def test_a_producer_an_hour_behind_keeps_its_records_after_their_acks(tmp_path: Path) -> None:
    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True, retention_interval=0.2)
    store.start()
    producer = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("ret", {"retention_ms": TEN_MINUTES})
        wait_until(lambda: "ret" in store.core.policy.retention, 15, what="the store's policy")
        producer = Proc(
            [sys.executable, "-c", BEHIND, "ret", "--tower", tower.address, "-q"],
            open_stdin=True,
        )
        stdin = producer.p.stdin
        assert stdin is not None
        with QueryClient(store.query_endpoint, timeout=10) as query:

            def head() -> int:
                parts = query.heads(["ret"])
                return parts[0].head if parts else -1

            for i in range(20):  # one batch each: the next line once the store holds this one
                stdin.write(b"r%d\n" % i)
                stdin.flush()
                wait_until(lambda i=i: head() >= i, 30, what=f"record {i} stored")
            # 5 s after the last ACK, retention checked every 0.2 s: nothing went
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                assert held(query, "ret") == (0, 19), "acknowledged records were trimmed"
                time.sleep(0.2)
        assert store.core.held is not None and store.core.held.held_ms >= 4_000
    finally:
        if producer is not None:
            producer.kill()
        store.stop()
        tower.stop()
