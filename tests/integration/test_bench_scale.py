"""``benchmarks.scale`` runs end to end at a tiny size and reports sane figures.

A smoke run (6 idle nodes, 2 topics, a 3 s window), so the benchmark cannot rot between the
times it is run for figures; it checks what the report holds, never how fast anything was.
The pure parts (the nodes' spread over topics, the fitted slope, the goals) are checked
without processes.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.scale import FITTED, KINDS, churn_timeline, fits, goals, node_specs, ratios, slope

ROOT = Path(__file__).resolve().parents[2]


def test_every_topic_gets_a_producer_and_a_consumer_and_kinds_alternate() -> None:
    specs = node_specs(12, 4)
    assert [s.split(":")[0] for s in specs[:3]] == ["producer", "consumer", "store"]
    for kind in ("producer", "consumer"):
        topics = {s.split(":")[1] for s in specs if s.startswith(kind)}
        assert topics == {f"scale-{t}" for t in range(4)}
    assert all(s == "store:" for s in specs if s.startswith("store"))


def test_a_fixed_number_of_stores_leaves_the_rest_to_producers_and_consumers() -> None:
    specs = node_specs(10, 2, stores=3)
    assert specs[:3] == ["store:"] * 3
    assert [s.split(":")[0] for s in specs[3:]] == ["producer", "consumer"] * 3 + ["producer"]
    assert node_specs(2, 2, stores=5) == ["store:"] * 2


def test_the_slope_is_the_exponent_of_a_power_law() -> None:
    assert slope([(50, 3 * 50**2), (100, 3 * 100**2), (200, 3 * 200**2)]) == pytest.approx(2)
    assert slope([(50, 7.0), (200, 7.0)]) == pytest.approx(0)
    assert slope([(50, 1.0)]) is None  # one N fits nothing
    assert slope([(50, 0.0), (100, 0.0)]) is None  # nothing positive to take the log of


def _row(**over: Any) -> dict[str, Any]:
    row = {
        "nodes": 500,
        "topics": 50,
        "window_s": 600.0,
        "converged": True,
        "peers_expired": 0,
        "node_cpu_s_per_s": 0.0005,
    }
    return row | over


def test_a_goal_is_met_only_by_a_run_of_its_size_and_length() -> None:
    [mesh, cpu, pause] = goals([_row()], 0)
    assert mesh["met"] and cpu["met"] and not pause["met"]  # no pause run: not met
    assert not goals([_row(window_s=20.0)], 0)[0]["met"]
    assert not goals([_row(nodes=200)], 0)[0]["met"]
    assert not goals([_row(converged=False)], 0)[0]["met"]
    assert not goals([_row(), _row(nodes=50, node_cpu_s_per_s=0.002)], 0)[1]["met"]
    held = {"pause_s": 10.0, "tcp_before": 100, "tcp_dropped": 0, "reconverge_s": 0.1}
    assert goals([_row(tower_pause=held)], 10)[2]["met"]
    assert not goals([_row(tower_pause=held | {"pause_s": 6.0})], 6)[2]["met"]
    assert not goals([_row(tower_pause=held | {"tcp_dropped": 1})], 10)[2]["met"]


@pytest.mark.integration
def test_a_tiny_run_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    args = ["--nodes", "6", "--topics", "2", "--seconds", "3", "--settle", "1"]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", *args, "--per-worker", "3", "--out", str(out)],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"JSON: {out}" in run.stderr
    report = json.loads(out.read_text())
    [row] = report["rows"]
    # a worker runs one kind (two of each here), so that each kind's cost is measured apart
    assert (row["nodes"], row["topics"], row["workers"], row["full_mesh"]) == (6, 2, 3, 5)
    by_kind = row["by_kind"]
    assert {k: v["nodes"] for k, v in by_kind.items()} == dict.fromkeys(KINDS, 2)
    # CPU is counted to the nanosecond (in 10 ms ticks, two idle nodes spent less than one
    # in 3 s, and a run of six read 0)
    assert all(0 < v["cpu_s_per_s"] < 1 for v in by_kind.values())
    assert all(v["cpu_net_s_per_s"] <= v["cpu_s_per_s"] for v in by_kind.values())
    spent = sum(v["cpu_s_per_s"] * v["nodes"] for v in by_kind.values())
    assert spent == pytest.approx(row["node_cpu_s_per_s"] * 6)  # the same workers' CPU, split
    assert row["window_s"] >= 3
    assert 0 < row["node_cpu_s_per_s"] < 1 and 0 <= row["tower_cpu_s_per_s"] < 2
    assert 0 < row["node_rss_net_mib"] < row["node_rss_mib"]  # the interpreter shared
    assert 0 < row["node_fds_net"] < row["node_fds"] and row["tower_fds"] > 6
    assert row["tcp_established"] >= 2 * 6  # at least each node's link to the tower, both ends
    # every node shares a topic (or, a store, every topic) with another: it sees one at least
    assert 1 <= row["peers_min"] <= row["peers_mean"] <= row["peers_max"] <= 5
    assert row["converge_s"] is not None and row["converged"] is True
    # expiries are counted, not required to be none: a CI machine under load may stall a
    # worker's loop past the 4 s expiry, which is what issue 39 is about, not this test
    assert isinstance(row["peers_expired"], int) and row["peers_expired"] >= 0
    assert len(row["load_avg_end"]) == 3
    churn = row["churn"]  # when the expiries fell, and the workers' stalls
    assert sum(churn["expiry_timeline"].values()) <= row["peers_expired"] + 6
    assert churn["stalls"] == len(churn["stalls_worst"]) or churn["stalls"] > 20
    [window] = churn["load_timeline"]  # a 3 s window is one bucket, cut at the window's end
    assert 2.5 <= window["at_s"] <= 4 and 0 < window["run_cpu_s_per_s"] < 4
    # the tower is one of the run's processes, the workers hold each an interpreter at least
    assert 0 < window["tower_cpu_s_per_s"] < window["run_cpu_s_per_s"]
    assert window["workers_rss_mib"] > 20 * (row["workers"] + 1)  # and the baseline worker
    assert set(report["fits"]["topics"]) == set(FITTED)  # one N: nothing to fit
    assert all(k is None for k in report["fits"]["topics"].values())
    [mesh, _, pause] = report["goals"]
    assert not mesh["met"] and not pause["met"]  # never claimed by a run this small
    assert "growth (topics mesh), metric ~ N^k" in run.stdout and "NOT MET" in run.stdout


class _Events:
    """A worker's answer to ``events``, without its process."""

    def __init__(self, expired: list[list[Any]], stalls: list[list[float]]) -> None:
        self.taken = {"expired": expired, "stalls": stalls}

    def events(self) -> dict[str, list[list[Any]]]:
        return self.taken


def test_the_churn_timeline_buckets_the_windows_expiries_and_names_its_stalls() -> None:
    start = 1000.0
    one = _Events(
        [[999.0, "a", "tcp://x:1"], [1001.0, "a", "tcp://x:1"], [1031.0, "b", "tcp://x:2"]],
        [[1030.0, 1.5], [990.0, 9.0]],
    )
    two = _Events([[1035.0, "c", "tcp://x:1"], [1200.0, "c", "tcp://x:1"]], [[1040.0, 4.0]])
    churn = churn_timeline([one, two], start, 1100.0)  # type: ignore[list-item]
    # the one before the window and the one after it are not the window's
    assert churn["expiry_timeline"] == {"0": 1, "30": 2}
    assert churn["expiring_nodes"] == 3
    assert churn["expired_most"][0] == ("tcp://x:1", 2)
    assert churn["stalls"] == 2 and churn["stall_max_s"] == 4.0
    assert churn["stalls_worst"][0] == {"at_s": 40.0, "worker": 1, "late_s": 4.0}


def test_the_meshes_are_compared_like_against_like() -> None:
    def row(n: int, mesh: str, tcp: int) -> dict[str, Any]:
        figures = dict.fromkeys(FITTED, 1.0)
        return figures | {
            "nodes": n,
            "mesh": mesh,
            "tcp_established": tcp,
            "node_fds": 40.0,
            "peers_mean": 10.0,
            "tower_cpu_s_per_s": 0.0,
        }

    rows = [row(50, "topics", 500), row(50, "full", 5000), row(100, "topics", 900)]
    [only] = ratios(rows)  # N=100 ran in one mesh only: no ratio
    assert only == {
        "nodes": 50,
        "tcp_established": 0.1,
        "node_fds": 1.0,
        "peers_mean": 1.0,
        "tower_cpu_s_per_s": None,
    }
    rows.append(row(100, "full", 9000))
    fitted = fits(rows)
    assert set(fitted) == {"full", "topics"}
    assert fitted["full"]["tcp_established"] == pytest.approx(math.log(9000 / 5000, 2))
