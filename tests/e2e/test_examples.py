"""The programs in examples/ run as documented."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.procs import ROOT, Proc, StoreProc, Tower

pytestmark = pytest.mark.e2e


def test_producer_service_then_consumer_service(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        prod = Proc(
            [
                sys.executable,
                str(ROOT / "examples" / "producer_service.py"),
                "--topic",
                "metrics",
                "--tower",
                tower.address,
                "--rate",
                "500",
                "--count",
                "50",
            ]
        )
        assert prod.wait(60) == 0, prod.stderr
        assert "all 50 samples are durable" in prod.stderr
        cons = Proc(
            [
                sys.executable,
                str(ROOT / "examples" / "consumer_service.py"),
                "--topic",
                "metrics",
                "--tower",
                tower.address,
                "--from-beginning",
                "--count",
                "50",
            ]
        )
        assert cons.wait(60) == 0, cons.stderr
        out = bytes(cons.stdout).decode()
        assert "total 50" in out
        assert out.count("metrics ") == 1  # one partition, one summary row
    finally:
        store.kill()
        tower.stop()
