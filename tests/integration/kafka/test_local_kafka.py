"""``dafka-local --kafka-port``: the Kafka listener as a child of the local platform."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from tests.procs import Proc, free_tower_address, py

pytestmark = pytest.mark.integration

HAS_BACKEND = importlib.util.find_spec("dafka.kafka.dafka_backend") is not None


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


@pytest.mark.skipif(HAS_BACKEND, reason="this build has the Dafka backend")
def test_without_the_backend_the_platform_stops_with_one_reason(tmp_path: Path) -> None:
    p = local(tmp_path, "--kafka-port", "0")
    assert p.wait(60) == 1
    assert "error: the Kafka listener did not start (exit 2)" in p.stderr
    assert "no Dafka backend" in p.stderr


@pytest.mark.skipif(not HAS_BACKEND, reason="the Dafka backend is not in this build")
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
