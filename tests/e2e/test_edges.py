"""Honest failures at the edges: a shared data directory, no tower, a tower that lies."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.procs import Proc, StoreProc, Tower, py
from tower.metadata import free_port_block

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


def test_a_tower_whose_id_names_another_address_is_refused(tmp_path: Path) -> None:
    mine, other = free_port_block("127.0.0.1"), free_port_block("127.0.0.1")
    peers = f"t1=127.0.0.1:{mine},t2=127.0.0.1:{other}"
    t = Proc(
        py(
            "tower",
            "--bind",
            f"127.0.0.1:{mine}",
            "--id",
            "t2",
            "--raft-peers",
            peers,
            "--raft-insecure-null",  # so that the ID is what is wrong
            "--data-dir",
            str(tmp_path / "t"),
        )
    )
    assert_one_line_error(
        t,
        2,
        f"--id t2 is 127.0.0.1:{other} in --raft-peers, but this tower binds "
        f"127.0.0.1:{mine}: give the ID of this tower's own address (t1)",
    )


def test_a_raft_peer_list_naming_one_id_twice_is_refused(tmp_path: Path) -> None:
    t = Proc(
        py(
            "tower",
            "--bind",
            "127.0.0.1:0",
            "--raft-peers",
            "t1=127.0.0.1:7100,t1=127.0.0.1:7200",
            "--id",
            "t1",
            "--data-dir",
            str(tmp_path / "t"),
        )
    )
    assert_one_line_error(t, 2, "every tower needs an ID and an address of its own")


def unused_port() -> int:
    """A port nothing listens on (nor on the next one, the tower's relay port)."""
    return free_port_block("127.0.0.1", 2)


def consumer(towers: str, *args: str) -> Proc:
    return Proc(py("dafka.cli.consumer", *args, "--tower", towers))


def test_a_consumer_with_no_tower_says_so_and_gives_up_with_e() -> None:
    port = unused_port()
    started = time.monotonic()
    c = consumer(f"127.0.0.1:{port}", "t", "-e", "--wait", "4")
    c.wait_line(rf"^warning: no tower answered at 127\.0\.0\.1:{port}; still trying", 6)
    noticed = time.monotonic() - started
    assert c.wait(15) == 1, c.stderr
    ended = time.monotonic() - started
    assert noticed < 4 <= ended < 10, (noticed, ended)
    lines = [line for line in c.stderr_lines if line.startswith(("error:", "warning:"))]
    assert lines == [
        f"warning: no tower answered at 127.0.0.1:{port}; still trying "
        "(-e gives up after 4 s, --wait)",
        f"error: no tower answered at 127.0.0.1:{port} within 4 s; "
        "is dafka-tower (or dafka-local) running there? (--tower)",
    ]
    assert "Traceback" not in c.stderr
    assert bytes(c.stdout) == b""


def test_a_tailing_consumer_with_no_tower_says_so_and_keeps_trying() -> None:
    port = unused_port()
    c = consumer(f"127.0.0.1:{port}", "t", "--wait", "1")
    try:
        c.wait_line(rf"^warning: no tower answered at 127\.0\.0\.1:{port}; still trying$", 6)
        assert c.p.poll() is None  # --wait applies to -e only: tailing goes on waiting
    finally:
        c.kill()


def test_a_consumer_with_e_and_no_store_gives_up_with_one_line() -> None:
    tower = Tower()
    try:
        c = consumer(tower.address, "t", "-e", "--wait", "3")
        assert c.wait(15) == 1, c.stderr
        lines = [line for line in c.stderr_lines if line.startswith(("error:", "warning:"))]
        assert lines == [
            "warning: no store answered; still trying (-e gives up after 3 s, --wait)",
            "error: no store answered within 3 s; -e needs a store to know where the end is: "
            "is dafka-store running?",
        ]
        assert "Traceback" not in c.stderr
    finally:
        tower.stop()
