"""dafka-producer accounts for every line: too-big lines, SIGINT, SIGTERM, no store.

The counts it prints are checked against what a consumer then reads back from the store.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka.producer._budget import RECORD_OVERHEAD
from tests.procs import Proc, StoreProc, Tower, py, stored_head, wait_until

pytestmark = pytest.mark.e2e

LINES = 500_000
HELD = 20_000 // (7 + RECORD_OVERHEAD)
"""Records of 7 bytes that a 20,000-byte unacknowledged budget holds."""
INTERRUPTED = r"interrupted by (SIG\w+): (\d+) records acknowledged, (\d+) not acknowledged"


def line(i: int) -> bytes:
    return b"%07d\n" % i


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[tuple[Tower, StoreProc]]:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    yield tower, store
    store.kill()
    tower.stop()


class Writer(threading.Thread):
    """Writes ``count`` lines into a producer's stdin and leaves the pipe open."""

    def __init__(self, proc: Proc, count: int) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.count = count
        self.written = 0
        self.start()

    def run(self) -> None:
        pipe = self.proc.p.stdin
        assert pipe is not None
        try:
            for start in range(0, self.count, 1_000):
                pipe.write(b"".join(line(i) for i in range(start, start + 1_000)))
                pipe.flush()
                self.written = start + 1_000
        except (OSError, ValueError):  # the producer exited
            return


def producer(towers: str, topic: str, *args: str) -> Proc:
    return Proc(
        py("dafka.cli.producer", topic, "--tower", towers, "--log-level", "info", *args),
        open_stdin=True,
    )


def read_back(towers: str, topic: str) -> bytes:
    c = Proc(py("dafka.cli.consumer", topic, "--tower", towers, "--from-beginning", "-e"))
    assert c.wait(90) == 0, c.stderr
    return bytes(c.stdout)


def interrupted(p: Proc, sig: signal.Signals, timeout: float = 60.0) -> tuple[int, int]:
    rc = p.wait(timeout)
    assert rc == 128 + sig, p.stderr
    assert "Traceback" not in p.stderr
    found = [m for m in map(re.compile(INTERRUPTED).search, p.stderr_lines) if m]
    assert len(found) == 1, p.stderr
    assert found[0].group(1) == sig.name
    return int(found[0].group(2)), int(found[0].group(3))


@pytest.mark.parametrize(
    ("sig", "lines", "after"),
    [(signal.SIGINT, 10 * LINES, 20_000), (signal.SIGTERM, LINES, 1_000)],
)
def test_signal_mid_stream_counts_what_the_store_has(
    platform: tuple[Tower, StoreProc], sig: signal.Signals, lines: int, after: int
) -> None:
    tower, store = platform
    topic = f"stream-{sig.name.lower()}"
    p = producer(tower.address, topic, "--grace", "30")
    partition = p.wait_line(r"producer\.start id=([0-9A-F]{32})").group(1)
    Writer(p, lines)
    wait_until(
        lambda: (stored_head(store.data_dir, topic, partition) or 0) >= after,
        60,
        what=f"{after} records on the store",
    )
    p.p.send_signal(sig)
    acked, missing = interrupted(p, sig)
    assert missing == 0, p.stderr  # the store is up: everything sent is acknowledged in grace
    assert "(every line read was acknowledged)" in p.stderr
    assert after <= acked <= lines
    if sig is signal.SIGINT:  # 5,000,000 lines: the signal surely came mid-stream
        assert acked < lines
    assert read_back(tower.address, topic) == b"".join(map(line, range(acked)))


def test_sigint_without_a_store_counts_every_record_as_not_acknowledged() -> None:
    tower = Tower()
    p: Proc | None = None
    try:
        # a small buffer: the producer ends up blocked in send(), waiting for room
        p = producer(tower.address, "void", "--grace", "1", "--max-unacked-bytes", "20000")
        p.wait_line(r"producer\.start id=")
        writer = Writer(p, LINES)
        # more lines than the pipe holds (64 KiB of 8-byte lines) plus the records the
        # buffer takes (each counts its 7 bytes plus RECORD_OVERHEAD), so the producer has
        # read past its buffer
        wait_until(
            lambda: writer.written > 65_536 // 8 + HELD,
            60,
            what="the producer to fill its buffer",
        )
        started = time.monotonic()
        p.p.send_signal(signal.SIGINT)
        acked, missing = interrupted(p, signal.SIGINT, timeout=30)
        assert time.monotonic() - started < 15
        # what the buffer held, and the line whose send() was waiting for room
        assert acked == 0 and missing >= HELD
    finally:
        if p is not None:  # a failed assertion must not leave the producer running
            p.kill()
        tower.stop()


def test_a_second_signal_stops_at_once() -> None:
    tower = Tower()
    p: Proc | None = None
    try:
        p = producer(tower.address, "void", "--grace", "120")
        p.wait_line(r"producer\.start id=")
        writer = Writer(p, 200_000)
        # past the pipe's buffer: the producer has read lines it cannot get acknowledged
        wait_until(lambda: writer.written >= 20_000, 30, what="the producer to read lines")
        p.p.send_signal(signal.SIGTERM)
        p.wait_line(r"stopping on SIGTERM")
        p.p.send_signal(signal.SIGINT)
        assert p.wait(30) == 128 + signal.SIGINT, p.stderr
        assert re.search(r"aborted by a second SIGINT: 0 records acknowledged, \d+ not", p.stderr)
    finally:
        if p is not None:
            p.kill()
        tower.stop()


def test_a_17_mb_line_is_reported_and_the_lines_around_it_are_acknowledged(
    platform: tuple[Tower, StoreProc],
) -> None:
    tower, _ = platform
    data = b"a\nb\n" + b"x" * (17 * 1024 * 1024) + b"\nc\n"
    p = Proc(py("dafka.cli.producer", "big", "--tower", tower.address), stdin=data)
    assert p.wait(60) == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert re.search(r"line 3 not sent: a line of 17825792 bytes is over", p.stderr), p.stderr
    assert "3 records acknowledged, 1 failed on topic 'big'" in p.stderr
    assert read_back(tower.address, "big") == b"a\nb\nc\n"


def test_a_key_over_the_limit_is_reported_with_its_line(platform: tuple[Tower, StoreProc]) -> None:
    tower, _ = platform
    data = b"k1:a\n" + b"k" * (64 * 1024 + 1) + b":v\nk3:c\n"
    p = Proc(py("dafka.cli.producer", "keys", "--tower", tower.address, "-K", ":"), stdin=data)
    assert p.wait(60) == 1, p.stderr
    assert re.search(r"line 2 not sent: a record key of 65537 bytes", p.stderr), p.stderr
    assert "2 records acknowledged, 1 failed" in p.stderr
    assert read_back(tower.address, "keys") == b"a\nc\n"
