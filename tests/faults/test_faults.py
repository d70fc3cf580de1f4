"""The bounded variant of the fault suite that ``make test`` runs: one seed, process faults,
and a short run of each issue-33 scenario flagged ``bounded`` (tests/faults/scenarios.py).

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
from tests.faults.nemesis import POWER_FAULTS, PROCESS_FAULTS, Kind, schedule
from tests.faults.run import run_once
from tests.faults.scenarios import SCENARIOS, Scenario, scenario_unavailable

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


BOUNDED = [s for s in SCENARIOS if s.bounded]


def test_every_scenario_names_its_kinds_and_what_it_waits_for() -> None:
    for s in SCENARIOS:
        assert s.kinds and (s.bounded or s.needs), s.name
        assert schedule(s.seed, s.seconds, s.kinds, 3, 2), s.name


def test_the_bounded_power_loss_run_loses_power_everywhere() -> None:
    (power,) = [s for s in SCENARIOS if s.name == "power-loss"]
    faults = schedule(power.seed, power.seconds, power.kinds, 3, 2)
    assert {f.kind for f in faults} == set(POWER_FAULTS)
    assert any(f.variant % 2 for f in faults)  # torn writeback at least once


@pytest.mark.parametrize("scenario", BOUNDED, ids=[s.name for s in BOUNDED])
def test_a_short_run_of_each_issue_33_scenario_that_passes(
    tmp_path: Path, scenario: Scenario
) -> None:
    """The scenarios flagged ``bounded`` in tests/faults/scenarios.py (power loss today)."""
    reason = scenario_unavailable(scenario)
    if reason is not None:
        pytest.skip(reason)
    result = run_once(
        tmp_path,
        scenario.seed,
        scenario.seconds,
        min_acks=scenario.min_acks,
        kinds=scenario.kinds,
        settle=10,
        options=scenario.options(drain=5),
        heal_wait=15,
    )
    assert result.report.acked > 300, result.faults
    assert result.report.ok(), (
        format_table([(scenario.name, result.report)])
        + "\n"
        + json.dumps({"examples": result.report.examples, "faults": result.faults}, indent=1)
    )
