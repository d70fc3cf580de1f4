"""Dafka is a library: an application that configured no logging hears nothing from it.

Before, every ``Producer`` without ``trusted_stores`` printed ``producer.trust_any_store``
through logging's last-resort handler, and a producer whose towers had no metadata peer
printed ``metadata.unreachable``: seven times each in a Spark pipeline's output (issue 34,
point 7). The package's logger has a ``NullHandler``; an application that does configure
logging hears each of those once per process.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.attack_mutants import mutated
from tests.procs import ROOT, free_tower_address, py

pytestmark = pytest.mark.integration


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        mutated(py("tests.integration.quiet_child", free_tower_address(), *args)),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_a_producer_without_trusted_stores_is_silent_when_the_app_configured_no_logging() -> None:
    # no tower either: its metadata is unreachable, which it says at warning too
    run = _run()
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""


def test_an_app_that_configured_logging_hears_each_warning_once_per_process() -> None:
    run = _run("logging")
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    assert sum("producer.trust_any_store" in line for line in lines) == 1, run.stderr
    assert sum("metadata.unreachable" in line for line in lines) == 1, run.stderr
