"""The throughput benchmark runs end to end and reports every phase against its baselines.

A smoke run (few records), so the benchmark cannot rot between the times it is run for
figures; it asserts what the report contains, never how fast anything was.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench(module: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m benchmarks.MODULE ARGS`` from the project's root; it must exit 0."""
    run = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def printed_path(run: subprocess.CompletedProcess[str]) -> str:
    """Where a benchmark wrote its JSON report: the path it printed last on stderr."""
    return run.stderr.rsplit("JSON: ", 1)[1]


def take_report(path: str) -> dict[str, Any]:
    """The JSON report a benchmark wrote at ``path`` (as printed), removed once read."""
    out = Path(path.strip())
    try:
        return json.loads(out.read_text())
    finally:
        out.unlink()


@pytest.mark.integration
def test_the_throughput_benchmark_reports_phases_against_both_baselines() -> None:
    run = bench(
        "throughput",
        "--records",
        "20000",
        "--phases",
        "baseline,batched,lmdb,raw_store,raw_direct,acked,catch_up,memory",
        "--growth-records",
        "20000",
        timeout=300,
    )
    report = take_report(printed_path(run))
    assert report["records_per_batch"] > 1
    assert report["batched"]["messages"] == -(-20000 // report["records_per_batch"])
    assert report["lmdb"]["transactions"] == report["batched"]["messages"]
    floor = report["raw_store"]  # every batch stored and acknowledged, in commits of 1-4
    assert floor["messages"] == report["batched"]["messages"]
    assert floor["messages"] / 4 <= floor["commits"] <= floor["messages"]
    assert floor["ratio_to_batched"] == pytest.approx(floor["rate"] / report["batched"]["rate"])
    direct = report["raw_direct"]  # the same, through O_DIRECT and an LMDB index
    assert direct["messages"] == floor["messages"]
    assert direct["messages"] / 4 <= direct["commits"] <= direct["messages"]
    assert report["acked"]["ratio_to_raw_store"] == pytest.approx(
        report["acked"]["rate"] / floor["rate"]
    )
    assert "against raw_store" in run.stderr
    for phase in ("acked", "catch_up"):
        r = report[phase]
        assert r["ratio_to_batched"] == pytest.approx(r["rate"] / report["batched"]["rate"])
    mem = report["memory"]
    assert mem["producer"]["queued_records"] > 0 and mem["producer"]["rss_full"] > 0
    assert len(mem["store_rss_per_million"]) == 2  # before, and after the 20,000 records
    assert mem["slow_store"]["sent_records"] > 0 and mem["slow_store"]["rss_peak"] > 0
    assert len(report["load_average_at_start"]) == len(report["load_average_at_end"]) == 3
    assert "vs raw batched" in run.stderr
    acked = report["acked"]  # CPU per record of the producer and of the store
    assert acked["producer_cpu_us_per_record"] > 0
    # the store's comes from /proc in clock ticks (10 ms): 20,000 records at about 0.3 us
    # each may not fill one, so 0 is a true reading here (it was > 0 once that was slower)
    assert acked["store_cpu_us_per_record"] >= 0
    assert "CPU us/record: producer, store" in run.stderr
    assert acked["producer_minor_faults_per_million"] >= 0


@pytest.mark.integration
def test_the_sealing_benchmark_reports_the_producers_cost_per_record() -> None:
    run = bench("sealing", "--records", "20000", "--runs", "1")
    report = json.loads(run.stdout)
    assert report["seal"]["records"] == 8192  # the defaults' full batch of 100-byte records
    assert report["seal"]["us_per_batch"] > 0 and report["seal"]["ns_per_record"] > 0
    producer = report["producer"]
    assert producer["records"] == 20000 and producer["cpu_ns_per_record_best"] > 0
    assert producer["cpu_ns_per_record_median"] >= producer["cpu_ns_per_record_best"]
    assert producer["minor_faults_per_batch_best"] >= 0
    assert len(report["load_average"]) == 3


@pytest.mark.integration
def test_the_groups_benchmark_reports_commits_against_a_plain_send() -> None:
    run = bench("groups", "--commits", "20", "--partitions", "2")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["sync"]["count"] == report["baseline"]["count"] == 20
    assert report["async"]["per_s"] > 0 and report["join_s"] > 0
    assert report["sync_vs_baseline_latency"] > 0
    assert len(report["load_start"]) == len(report["load_end"]) == 3


@pytest.mark.integration
def test_the_rereplicate_benchmark_reports_the_time_a_fresh_store_takes_to_copy() -> None:
    run = bench("rereplicate", "--records", "2000", "--batch", "500", "--interval", "0.2")
    report = take_report(printed_path(run))
    assert report == json.loads(run.stdout.strip().splitlines()[-1])
    assert report["copied"] == report["records"] == 2000 and report["complete"]
    assert report["rereplicate_s"] > 0


@pytest.mark.integration
@pytest.mark.parametrize("reader", [["--consumers", "2"], ["--store"]])
def test_the_producer_catchup_benchmark_reports_readers_served_by_the_producer(
    reader: list[str],
) -> None:
    run = bench("producer_catchup", "--unacked-mib", "4", "--total-mib", "2", *reader)
    lines = [line.split(" ", 1) for line in run.stdout.strip().splitlines()]
    sent = json.loads(lines[0][1])["sent"]
    assert sent == 2 * 1024 * 1024 // 65536
    reports = {role: json.loads(text) for role, text in lines[1:-1]}
    if "--store" in reader:
        assert reports["store"]["acked"] == sent
    else:
        assert [role for role, _ in lines[1:-1]] == ["consumer", "consumer"]
        assert reports["consumer"]["records"] == sent
    assert json.loads(lines[-1][1])["fetches_served"] >= 1


@pytest.mark.integration
def test_the_raft_benchmark_reports_ours_beside_the_floor_of_replications_io() -> None:
    quick = "--updates 2000 --latency-updates 50 --fsync-appends 50 --rtt-round-trips 50"
    run = bench("raft", *quick.split(), "--failovers", "0", "--no-reference", timeout=180)
    report = take_report(run.stdout.rsplit("wrote ", 1)[1])
    ours, floor = report["window_in_flight"], report["floor"]["window_in_flight"]
    assert ours["updates"] == floor["updates"] == 2000
    assert floor["commits_per_s"] > 0 and floor["cpu_us_per_update"]["total"] > 0
    assert set(floor["cpu_us_per_update"]) == {"p1", "p2", "p3", "client", "total"}
    assert report["vs_floor"]["ours_over_floor"] == pytest.approx(
        ours["commits_per_s"] / floor["commits_per_s"]
    )
    assert "floor (the I/O of replication alone" in run.stdout


def test_repeated_runs_are_summarized_per_phase_with_ratios_taken_within_each_run() -> None:
    from benchmarks.repeat import Target, summarize

    nan = float("nan")
    # as benchmarks.throughput reports them: each ratio taken within its own run
    runs = [
        {
            "baseline": {"rate": 80.0, "ratio_to_batched": 0.8},
            "lmdb": {"rate": 80.0, "ratio_to_batched": 0.8},
            "batched": {"rate": 100.0},
            "raw_store": {"rate": 50.0, "ratio_to_batched": 0.5},
            "acked": {
                "rate": 40.0,
                "ratio_to_baseline": 0.5,
                "ratio_to_batched": 0.4,
                "ratio_to_raw_store": 0.8,
            },
            "latency": {"rate": 10.0, "p50_us": 900.0, "p99_us": 1800.0},
            "load_average_at_start": ["0.1", "0.1", "0.1"],
        },
        {
            "baseline": {"rate": nan},  # not run
            "batched": {"rate": 200.0},
            "acked": {"rate": 50.0, "ratio_to_baseline": nan, "ratio_to_batched": 0.25},
            "latency": {"rate": 10.0, "p50_us": 1000.0, "p99_us": 2500.0},
        },
        {
            "batched": {"rate": 150.0},
            "raw_store": {"rate": 75.0, "ratio_to_batched": 0.5},
            "acked": {"rate": 60.0, "ratio_to_batched": 0.4, "ratio_to_raw_store": 0.8},
            "catch_up": {"rate": 300.0, "ratio_to_batched": 2.0},
        },
    ]
    targets = [Target("acked", "batched", 0.35), Target("acked", "baseline", 0.6)]
    summary = summarize(runs, [*targets, Target("live", "batched", 0.35)])
    assert set(summary) == {
        *("baseline", "batched", "lmdb", "raw_store", "acked", "catch_up", "latency")
    }  # those that ran
    acked = summary["acked"]
    assert acked["runs"] == 3
    assert acked["rate"] == {"median": 50.0, "min": 40.0, "max": 60.0}
    # the median of each run's own ratio (0.4, 0.25, 0.4), not the medians' (50 / 150)
    assert acked["ratio_to_batched"] == {"median": 0.4, "min": 0.25, "max": 0.4}
    assert acked["ratio_to_raw_store"] == {"median": 0.8, "min": 0.8, "max": 0.8}
    assert acked["ratio_to_baseline"] == {"median": 0.5, "min": 0.5, "max": 0.5}  # run 1
    assert acked["targets"] == [
        {"against": "batched", "ratio": 0.35, "runs": 2},
        {"against": "baseline", "ratio": 0.6, "runs": 0},
    ]
    assert summary["raw_store"]["ratio_to_batched"]["median"] == 0.5
    assert "ratio_to_raw_store" not in summary["raw_store"]
    assert set(summary["batched"]) == {"runs", "rate"}
    for raw in ("baseline", "lmdb"):  # against raw batched only
        assert set(summary[raw]) == {"runs", "rate", "ratio_to_batched"}
    assert "ratio_to_raw_store" not in summary["catch_up"]  # the store writes nothing then
    assert summary["catch_up"]["ratio_to_batched"]["median"] == 2.0
    latency = summary["latency"]  # its rate is the pace it was sent at: left out
    assert "rate" not in latency and latency["runs"] == 2
    assert latency["p99_us"] == {"median": 2150.0, "min": 1800.0, "max": 2500.0}


@pytest.mark.integration
def test_the_repeat_benchmark_runs_the_throughput_benchmark_and_summarizes_its_phases() -> None:
    run = bench(
        "repeat",
        *("--runs", "2", "--target", "acked=0.01"),
        *("--", "--records", "20000", "--phases", "batched,acked"),
        timeout=300,
    )
    report = take_report(printed_path(run))
    assert len(report["runs"]) == 2
    for one in report["runs"]:  # each run's own report, kept whole, then removed here
        take_report(one["json"])
        assert one["acked"]["ratio_to_batched"] > 0
    acked = report["summary"]["acked"]
    ratios = sorted(one["acked"]["ratio_to_batched"] for one in report["runs"])
    assert acked["ratio_to_batched"]["min"] == ratios[0]
    assert acked["ratio_to_batched"]["max"] == ratios[1]
    assert acked["runs"] == 2
    reached = [one["acked"]["ratio_to_batched"] >= 0.01 for one in report["runs"]]
    assert acked["targets"] == [{"against": "batched", "ratio": 0.01, "runs": sum(reached)}]
    assert "over 2 runs" in run.stderr and "run 2 of 2: load" in run.stderr


@pytest.mark.integration
def test_the_disk_benchmark_reports_each_way_of_writing_or_why_it_could_not() -> None:
    run = bench(
        "disk",
        *("--batches", "8", "--batch-kib", "64", "--per-sync", "2", "--rounds", "2"),
        "--no-progress",
        timeout=120,
    )
    report = take_report(printed_path(run))
    assert len(report["rounds"]) == 2
    summary = report["summary"]
    assert set(summary) == {"lmdb", "buffered", "direct"}
    assert "unsupported" not in summary["buffered"] and "unsupported" not in summary["lmdb"]
    for way, entry in summary.items():
        if "unsupported" in entry:  # O_DIRECT on a file system that refuses it
            assert way == "direct" and "unsupported here" in run.stderr
            continue
        assert entry["cpu_us_per_batch"]["min"] > 0 and entry["mb_per_second"]["min"] > 0
        for one in report["rounds"]:
            assert one[way]["batches"] == 8
    assert "cpu_vs_buffered" in summary["lmdb"] and "cpu_vs_buffered" not in summary["buffered"]
    assert not list(ROOT.glob("dafka-disk-*"))  # its files are gone


def test_peered_towers_benchmark_reports_each_mode() -> None:
    run = bench(
        "peered_towers", "--nodes", "20", "--topics", "2", "--seconds", "1.5", "--settle", "1"
    )
    results = {r["mode"]: r for r in json.loads(run.stdout)}
    assert set(results) == {"one", "unpeered", "peered"}
    assert len(results["one"]["tower_cpu_percent"]) == 1
    assert len(results["peered"]["tower_cpu_percent"]) == 2
    # a node hears each beacon once per tower it listens to: twice on unpeered towers
    assert results["unpeered"]["copies_per_beacon"] > 1.5
    assert 0.8 < results["peered"]["copies_per_beacon"] < 1.2
