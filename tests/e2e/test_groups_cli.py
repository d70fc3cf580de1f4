"""``dafka-consumer -G`` and ``dafka groups`` as a user runs them."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_cli import assert_one_line_error
from tests.procs import Proc, StoreProc, Tower, py, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def run(*args: str, stdin: bytes | None = None) -> Proc:
    return Proc(py(*args), stdin=stdin)


def ok(proc: Proc) -> str:
    assert proc.wait(60) == 0, proc.stderr
    return bytes(proc.stdout).decode()


def test_a_group_consumer_resumes_where_the_last_one_stopped_and_describe_shows_it(
    tmp_path: Path,
) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "s", tower.address)
    try:
        t = tower.address
        lines = b"".join(f"line {i}\n".encode() for i in range(10))
        ok(run("dafka.cli.producer", "ev", "--tower", t, stdin=lines))
        consumer = ("dafka.cli.consumer", "ev", "--tower", t, "-G", "app")
        first = ok(run(*consumer, "-o", "beginning", "-c", "4"))
        assert first.splitlines() == [f"line {i}" for i in range(4)]
        second = ok(run(*consumer, "-o", "stored", "-c", "6"))
        assert second.splitlines() == [f"line {i}" for i in range(4, 10)]
        # -e: the end of what the group assigns (nothing new: it exits at once)
        assert ok(run(*consumer, "-e")) == ""
        # a new producer is a new partition, with nothing committed: -o says where it starts
        ok(run("dafka.cli.producer", "ev", "--tower", t, stdin=b"new 0\n"))
        assert ok(run(*consumer, "-e", "-o", "beginning")) == "new 0\n"
        listed = ok(run("dafka.cli.admin", "groups", "list", "--tower", t))
        assert listed.split() == ["app"]
        described = json.loads(
            ok(run("dafka.cli.admin", "groups", "describe", "app", "--tower", t, "--json"))
        )
        rows = {
            (r["topic"], r["current_offset"], r["log_end_offset"], r["lag"])
            for r in described["partitions"]
        }
        assert rows == {("ev", 10, 10, 0), ("ev", 1, 1, 0)}
        assert described["members"] == []  # both left
        table = ok(run("dafka.cli.admin", "groups", "describe", "app", "--tower", t))
        assert "CURRENT-OFFSET" in table and "LOG-END-OFFSET" in table and "LAG" in table
        empty = run("dafka.cli.admin", "groups", "describe", "nobody", "--tower", t)
        assert empty.wait(60) == 0, empty.stderr
        assert "no members and no committed offsets" in empty.stderr
        # -o stored without a group is a one-line error
        bad = run("dafka.cli.consumer", "ev", "--tower", t, "-o", "stored")
        assert_one_line_error(bad, 2, "-o stored needs a group")
    finally:
        store.kill()
        tower.stop()


def test_records_polled_but_not_printed_when_sigterm_comes_are_read_again_by_the_group(
    tmp_path: Path,
) -> None:
    """``dafka-consumer -G`` into a pipe nobody reads yet: its write blocks in the middle of
    a batch, and SIGTERM (KeyboardInterrupt there, as Ctrl-C) stops it; leaving, the group
    commits the member's positions. Before, they included the records polled and not
    printed, and the next member started after them: thousands lost to the group. Now they
    are read again: every record is printed by one of the two (some perhaps twice)."""
    tower = Tower()
    store = StoreProc(tmp_path / "s", tower.address)
    n = 30_000
    try:
        t = tower.address
        lines = b"".join(f"{i:06d} {'x' * 90}\n".encode() for i in range(n))
        ok(run("dafka.cli.producer", "big", "--tower", t, stdin=lines))
        consumer = ("dafka.cli.consumer", "big", "--tower", t, "-G", "slow")
        first = subprocess.Popen(
            [*py(*consumer, "-o", "beginning")], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert first.stdout is not None and first.stderr is not None
        printed = first.stdout.read(8192)  # the rest waits in the pipe: the writer blocks
        wait_until(lambda: _blocked_writing(first.pid), 30, what="the consumer to block")
        first.send_signal(signal.SIGTERM)
        printed += first.stdout.read()  # to EOF: the consumer exits
        assert first.wait(30) == 130, first.stderr.read()
        first.stderr.close()
        first.stdout.close()
        seen = {int(line.split()[0]) for line in printed.decode().splitlines() if line}
        assert len(seen) < n  # stopped in the middle
        second = ok(run(*consumer, "-o", "stored", "-e"))
        seen |= {int(line.split()[0]) for line in second.splitlines()}
        assert len(seen) == n, f"{n - len(seen)} records lost to the group"
    finally:
        store.kill()
        tower.stop()


def _blocked_writing(pid: int) -> bool:
    """The process's main thread sleeps in a write to a full pipe."""
    return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()  # anon_pipe_write, pipe_write
