"""The bounded variant of the fault suite that ``make test`` runs: one seed, process faults.

Seed 489 over 25 s kills a producer, pauses one past the beacon expiry, kills the Raft
leader tower, kills a producer while every store is down, and kills a store (see
``schedule``); every count must be zero. ``make faults`` runs the long suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.faults.checker import format_table
from tests.faults.cluster import Options
from tests.faults.nemesis import PROCESS_FAULTS, Kind, schedule
from tests.faults.run import run_once

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

SEED, SECONDS = 489, 25.0


def test_the_schedule_covers_the_process_faults() -> None:
    kinds = {f.kind for f in schedule(SEED, SECONDS, PROCESS_FAULTS, 3, 2)}
    assert {Kind.KILL_PRODUCER, Kind.PAUSE_PRODUCER, Kind.KILL_LEADER} <= kinds
    assert {Kind.KILL_PRODUCER_IN_OUTAGE, Kind.KILL_STORE} <= kinds


def test_a_short_seeded_run_loses_nothing_and_gets_stuck_nowhere(tmp_path: Path) -> None:
    result = run_once(
        tmp_path,
        SEED,
        SECONDS,
        min_acks=1,
        kinds=PROCESS_FAULTS,
        settle=10,
        options=Options(min_acks=1, drain=5),
    )
    assert result.report.acked > 500, result.faults
    assert result.report.ok(), (
        format_table([(f"seed{SEED}", result.report)])
        + "\n"
        + json.dumps({"examples": result.report.examples, "faults": result.faults}, indent=1)
    )
