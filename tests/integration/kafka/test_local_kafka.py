"""``dafka-local --kafka-port``: the Kafka listener as a child of the local platform."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.procs import Proc, free_tower_address, py

pytestmark = pytest.mark.integration


def local(tmp_path: Path, *args: str) -> Proc:
    return Proc(
        py(
            "dafka.cli.local",
            "--tower-bind",
            free_tower_address(),
            "--data-dir",
            str(tmp_path / "store"),
            "--tower-data-dir",
            str(tmp_path / "tower"),
            "--admin-key",
            str(tmp_path / "admin.key"),
            *args,
        ),
        cwd=tmp_path,
    )


def test_a_listener_that_cannot_start_stops_the_platform_with_one_reason(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        p = local(tmp_path, "--kafka-port", str(busy.getsockname()[1]))
        assert p.wait(60) == 1
    assert "error: the Kafka listener did not start (exit 2)" in p.stderr
    assert "cannot listen on 127.0.0.1:" in p.stderr


def test_kcat_lists_the_local_listener(tmp_path: Path) -> None:
    p = local(tmp_path, "--kafka-port", "0")
    try:
        m = p.wait_line(r"Kafka listener on (\S+)", timeout=60)
        meta = subprocess.run(
            ["/usr/bin/kcat", "-b", m.group(1), "-L"], capture_output=True, timeout=20
        )
        assert meta.returncode == 0, meta.stderr
        assert b"1 brokers" in meta.stdout
    finally:
        assert p.terminate(30) == 0, p.stderr
