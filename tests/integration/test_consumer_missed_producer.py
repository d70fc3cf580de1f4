"""A consumer paused while a short-lived producer came and went gets its records from the
stores within seconds, not at the next minute's refresh (HEADS_AFTER_PEER).

The consumer heard the producer's beacon only after the producer had gone, so its
subscription never reached it: no live record, no HEAD. Before, only the GET-HEADS sent
every 60 s told it of the partition (this test took 64 s); CI once saw the same with an
in-process consumer starved of the CPU."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import Proc, StoreProc, Tower, py

pytestmark = pytest.mark.integration

LINES = [f"r{i}" for i in range(100)]


def test_a_consumer_paused_through_a_producers_whole_life_gets_its_records_soon(
    tower: Tower, tmp_path: Path
) -> None:
    store = StoreProc(tmp_path / "s", tower.address)
    c = Proc(py("dafka.cli.consumer", "brief", "--tower", tower.address, "--from-beginning"))
    try:
        with Producer("brief", towers=tower.address) as p:
            p.send(b"first").result(timeout=30)
        c.wait_line_stdout("first\n", 30)  # the consumer hears the store and the topic
        os.kill(c.p.pid, signal.SIGSTOP)
        try:
            with Producer("brief", towers=tower.address) as p:
                for line in LINES:
                    p.send(line.encode())
                p.flush(timeout=30)
        finally:
            os.kill(c.p.pid, signal.SIGCONT)
        resumed = time.monotonic()
        c.wait_line_stdout(LINES[-1] + "\n", 30)  # the refresh would take 60
        took = time.monotonic() - resumed
        time.sleep(0.3)
        assert bytes(c.stdout).decode().splitlines() == ["first", *LINES], took
    finally:
        c.kill()
        store.kill()
