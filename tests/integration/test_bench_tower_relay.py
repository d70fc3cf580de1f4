"""``benchmarks.tower_relay`` runs end to end at a tiny size and reports sane figures.

A smoke run (a few hundred calls and beacons), so the benchmark cannot rot between the times
it is run for figures; it checks what the report holds and what reached each subscriber,
never how fast anything was.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchmarks.tower_relay import (
    END_TO_END_CASES,
    PURE_CASES,
    beacons,
    subscriptions,
    thread_cpu_s,
    time_pure,
)
from dafka.wire import interest as winterest
from tower.relay import relay_messages

ROOT = Path(__file__).resolve().parents[2]


def test_each_case_is_the_beacon_it_names_from_distinct_nodes() -> None:
    outs = {case: len(relay_messages(beacons(case, 1)[0], "127.0.0.1")) for case in PURE_CASES}
    assert outs == {
        "node B": 2,
        "interest *": 2,
        "interest 1": 2,
        "interest 8": 9,
        "interest 64": 65,
    }
    batch = beacons("interest 8", 5)
    assert len({frames[1] for frames in batch}) == 5
    assert all(frames[0] == winterest.INTEREST for frames in batch)
    assert beacons("node B", 1)[0][0] == b"B"


def test_the_subscribers_are_b_a_then_one_topic_each() -> None:
    assert subscriptions(1) == [b"B"]
    assert subscriptions(4) == [b"B", b"A", b"Ttopic-000\0", b"Ttopic-001\0"]


def test_a_pure_timing_reports_positive_microseconds() -> None:
    row = time_pure("interest 8", calls=50, repeat=2)
    assert row["messages_out"] == 9 and row["calls"] == 50
    assert 0 < row["us_best"] <= row["us_median"]
    assert row["ratio_vs_300us"] == pytest.approx(row["us_best"] / 300, abs=1e-4)


def test_a_threads_cpu_is_read_from_proc() -> None:
    if thread_cpu_s(threading.get_native_id()) is None:
        pytest.skip("no /proc/self/task here")
    assert thread_cpu_s(threading.get_native_id()) >= 0  # type: ignore[operator]
    assert thread_cpu_s(None) is None and thread_cpu_s(2**31 - 1) is None


@pytest.mark.integration
def test_a_tiny_run_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "relay.json"
    args = ["--calls", "100", "--repeat", "2", "--beacons", "200", "--subscribers", "4"]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.tower_relay", *args, "--out", str(out)],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"JSON: {out}" in run.stderr and "through a Tower" in run.stderr
    report = json.loads(out.read_text())
    assert json.loads(run.stdout) == report
    assert report["reference_us"] == 300.0
    assert len(report["load_avg_start"]) == 3 and len(report["load_avg_end"]) == 3
    assert [r["case"] for r in report["pure"]] == list(PURE_CASES)
    for row in report["pure"]:
        assert 0 < row["us_best"] <= row["us_median"] < 100_000
        assert row["ratio_vs_300us"] > 0
    assert [r["case"] for r in report["end_to_end"]] == list(END_TO_END_CASES)
    for row in report["end_to_end"]:
        assert row["beacons"] == 200 and row["malformed"] == 0
        assert row["beacons_per_s"] > 0 and row["seconds"] > 0
        assert row["process_cpu_us_per_beacon"] > 0 and row["ratio_vs_300us"]["process_cpu"] > 0
        thread = row["tower_thread_cpu_us_per_beacon"]
        assert thread is None or thread >= 0  # clock ticks: a tiny run may see none
    # what reached each subscriber: a node beacon is relayed under B and A, an interest
    # beacon under B and each of its topics (8 and 64 of them: topics 0 and 1 among them)
    node, eight, sixty_four = (r["received"] for r in report["end_to_end"])
    assert node == {"B": 200, "A": 200, "Ttopic-000\0": 0, "Ttopic-001\0": 0}
    assert eight == sixty_four == {"B": 200, "A": 0, "Ttopic-000\0": 200, "Ttopic-001\0": 200}
