"""``dafka-consumer -G`` and ``dafka groups`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_cli import assert_one_line_error
from tests.procs import Proc, StoreProc, Tower, py

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
