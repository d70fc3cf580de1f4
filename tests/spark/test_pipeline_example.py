"""``examples/spark_pipeline.py`` runs as the README says, start to finish."""

from __future__ import annotations

import re
import sys

import pytest

from tests.procs import ROOT, Proc

pytestmark = [pytest.mark.spark, pytest.mark.e2e, pytest.mark.timeout(240)]


def test_the_spark_pipeline_counts_every_click() -> None:
    proc = Proc(
        [sys.executable, str(ROOT / "examples" / "spark_pipeline.py"), "--seconds", "4"],
        env={"PYSPARK_PYTHON": sys.executable},
    )
    assert proc.wait(200) == 0, proc.stderr
    assert "clicks are durable" in proc.stderr
    assert re.search(r"all \d+ clicks counted \(\d+ in printed windows\)", proc.stderr)
    out = bytes(proc.stdout).decode()
    assert "window " in out and " clicks  amount " in out
