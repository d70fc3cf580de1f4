"""Honest failures at the edges: a shared data directory, no tower, a tower that lies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.procs import Proc, StoreProc, Tower, py

pytestmark = pytest.mark.e2e


def assert_one_line_error(proc: Proc, code: int, fragment: str) -> None:
    assert proc.wait() == code, proc.stderr
    lines = [line for line in proc.stderr_lines if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def test_a_second_store_on_the_same_data_dir_exits_with_one_line(tmp_path: Path) -> None:
    tower = Tower()
    data = tmp_path / "db"
    first = StoreProc(data, tower.address)
    try:
        second = Proc(py("dafka.cli.store", "--data-dir", str(data), "--tower", tower.address))
        assert_one_line_error(
            second, 2, f"data directory {data} is in use by another store (pid {first.proc.p.pid})"
        )
        assert first.proc.p.poll() is None  # the first one goes on
    finally:
        first.kill()
        tower.stop()
