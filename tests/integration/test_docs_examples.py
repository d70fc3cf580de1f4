"""Every runnable example of README.md and docs/*.md runs as written (issue 34, point 9).

The blocks, their markers and how ports are moved: tests/docs_examples.py. One test per
scenario (a doc's blocks that build on each other), each in its own directory and shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import docs_examples as dx

BLOCKS = dx.load()
SCENARIOS = dx.scenarios(BLOCKS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_docs_example_runs(scenario: dx.Scenario, tmp_path: Path) -> None:
    log: list[str] = []
    try:
        dx.run_scenario(scenario, tmp_path / "work", log=log)
    except dx.CommandFailed as exc:
        pytest.fail(f"{exc}\n\n--- the scenario so far ---\n" + "\n".join(log), pytrace=False)


def test_every_example_is_marked() -> None:
    """A block with commands and no run/skip marker is an example nobody runs."""
    assert dx.unmarked(BLOCKS) == []
    assert SCENARIOS, "no runnable examples found"
