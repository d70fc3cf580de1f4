"""Progress on long waits (issue 12 point 6): a status line on stderr only when it is a
terminal (a pty here), never in a pipe, never with --no-progress."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.procs import ROOT, Proc, StoreProc, Tower, py
from tests.spark import spark_missing

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def run_on_a_terminal(args: list[str], stdin: bytes = b"", limit: float = 60) -> tuple[int, bytes]:
    """Run ``args`` with stderr on a pseudo-terminal (stdout a pipe); its exit code and
    everything it wrote to the terminal."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=slave
    )
    os.close(slave)
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    seen = bytearray()
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, bytes(seen).replace(b"\r\n", b"\n")  # the tty turns \n into \r\n


def test_a_producer_waiting_for_acks_shows_progress_on_a_terminal_only() -> None:
    tower = Tower()
    try:
        args = py("dafka.cli.producer", "p", "--tower", tower.address, "--timeout", "2")
        code, shown = run_on_a_terminal(args, b"a\nb\n")
        assert code == 1
        assert b"\rwaiting for 2 acknowledgement(s): 0 acknowledged" in shown, shown
        # the status line is ended before the error, which starts a line of its own
        assert b"\nerror: 2 of 2 records were not acknowledged" in shown, shown
        code, quiet = run_on_a_terminal([*args, "--no-progress"], b"a\nb\n")
        assert code == 1 and b"waiting for" not in quiet and b"\r" not in quiet, quiet
        piped = Proc(args, stdin=b"a\nb\n")
        assert piped.wait() == 1
        assert "waiting for" not in piped.stderr and "\r" not in piped.stderr
    finally:
        tower.stop()


def test_a_consumer_catching_up_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        lines = b"".join(b"%d\n" % i for i in range(2000))
        p = Proc(py("dafka.cli.producer", "c", "--tower", tower.address, "-q"), stdin=lines)
        assert p.wait() == 0, p.stderr
        args = py("dafka.cli.consumer", "c", "--tower", tower.address, "-o", "0", "-e")
        code, shown = run_on_a_terminal(args)
        assert code == 0, shown
        assert b"\rcatching up: " in shown, shown
        last = shown.rsplit(b"\r", 1)[1]  # the line as it stays on the terminal
        assert last.endswith(b"\n") and last.rstrip() == b"caught up: 2000 record(s) written"
        code, quiet = run_on_a_terminal([*args, "--no-progress"])
        assert code == 0 and quiet == b"", quiet
        piped = Proc(args)
        assert piped.wait() == 0 and piped.stderr == ""
    finally:
        store.kill()
        tower.stop()


@pytest.mark.timeout(400)
@pytest.mark.skipif(spark_missing() is not None, reason=str(spark_missing()))
def test_the_spark_read_benchmark_shows_progress_on_a_terminal_unless_told_not_to() -> None:
    args = py("benchmarks.spark_read", "--records", "500", "--tasks", "2")
    written: list[Path] = []
    try:
        for extra, drawn in (([], True), (["--no-progress"], False)):
            code, shown = run_on_a_terminal([*args, *extra], limit=300)
            assert code == 0, shown[-2000:]
            written.append(Path(re.findall(rb"wrote (\S+\.json)", shown)[-1].decode()))
            for phase in (b"query client, raw: ", b"spark micro-batch: ", b"spark batch read: "):
                assert (b"\r" + phase in shown) is drawn, (phase, shown[-2000:])
            if drawn:  # each status line ends before what follows starts
                assert re.search(rb"\rspark batch read: \d+ s *\n", shown), shown[-2000:]
    finally:
        for path in written:
            path.unlink(missing_ok=True)
