"""Run the throughput benchmark several times and report each phase's spread.

    python -m benchmarks.repeat [--runs 5] [--target PHASE[/BASE]=RATIO ...] -- THROUGHPUT-ARGS

On a shared virtual machine one run's figures move by a factor of two or more from one run
to the next, baselines included (``docs/performance.md``), so one run says little about a
ratio near its goal. Each run here is a whole ``python -m benchmarks.throughput``, with its
own baselines measured in it: every ratio is taken within one run, like against like, and
only then summarized over the runs (median, least and most). The load average before and
after each run is kept beside its figures.

``--target acked=0.35`` counts the runs whose ``acked`` phase reached 0.35x of raw batched
(``batched``); ``--target acked/baseline=0.6`` 0.6x of raw PUB/SUB one message per record
(``baseline``), the rfc46 goal; ``/raw_store``, of the raw store. Writes JSON to
benchmarks/results/repeat-<time>.json: every run's report and the summary.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Target", "spread", "summarize"]

ROOT = Path(__file__).resolve().parents[1]

BASELINES = {
    "baseline": "ratio_to_baseline",
    "batched": "ratio_to_batched",
    "raw_store": "ratio_to_raw_store",
}
"""The baselines a target may be measured against, and the ratio a run's report gives for
it (``benchmarks.throughput`` says which phase is measured against which)."""
MEASURES = ("rate", *BASELINES.values(), "p50_us", "p99_us")
"""What is summarized of a phase, where its report has it."""


@dataclass(frozen=True, slots=True)
class Target:
    """A goal: ``phase`` at ``ratio`` x the ``base`` phase of the same run at least."""

    phase: str
    base: str
    ratio: float

    def met(self, measured: Mapping[str, float]) -> bool:
        return measured.get(BASELINES[self.base], 0.0) >= self.ratio


def spread(values: Sequence[float]) -> dict[str, float]:
    """The median, the least and the most of ``values``."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _measures(report: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Per phase of one run's report: its :data:`MEASURES` that are there and finite (a
    phase not run reports NaN; a latency phase's rate is only the pace it was sent at)."""
    out: dict[str, dict[str, float]] = {}
    for name, result in report.items():
        if not isinstance(result, Mapping):
            continue
        got = {
            key: float(value)
            for key in MEASURES
            if isinstance(value := result.get(key), int | float) and math.isfinite(value)
        }
        if "p99_us" in got:
            got.pop("rate", None)
        if got:
            out[name] = got
    return out


def summarize(
    reports: Sequence[Mapping[str, Any]], targets: Sequence[Target] = ()
) -> dict[str, dict[str, Any]]:
    """Per phase: the spread over ``reports`` (the throughput benchmark's JSON, one per
    run) of its rate, of its ratios to the baselines (as each run's report gives them, taken
    within that run), and of a latency phase's percentiles; ``runs``, how many reports have the phase;
    for a phase in ``targets``, in how many of them its ratio reached each."""
    per_phase: dict[str, list[dict[str, float]]] = {}
    for report in reports:
        for name, got in _measures(report).items():
            per_phase.setdefault(name, []).append(got)
    out: dict[str, dict[str, Any]] = {}
    for name, runs in per_phase.items():
        entry: dict[str, Any] = {"runs": len(runs)}
        for key in MEASURES:
            values = [got[key] for got in runs if key in got]
            if values:
                entry[key] = spread(values)
        reached = [
            {"against": t.base, "ratio": t.ratio, "runs": sum(1 for got in runs if t.met(got))}
            for t in targets
            if t.phase == name
        ]
        if reached:
            entry["targets"] = reached
        out[name] = entry
    return out


def _target(text: str) -> Target:
    """``--target PHASE[/BASE]=RATIO``."""
    left, sep, ratio = text.partition("=")
    phase, _, base = left.partition("/")
    try:
        if not sep or not phase or (base or "batched") not in BASELINES:
            raise ValueError(text)
        return Target(phase, base or "batched", float(ratio))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give PHASE[/BASE]=RATIO, as acked=0.35 or acked/baseline=0.6 (BASE: "
            + ", ".join(BASELINES)
            + ")"
        ) from None


def _run_once(args: Sequence[str], timeout: float) -> dict[str, Any]:
    """One throughput run; its JSON report (the path it prints last), or exit with why."""
    try:
        run = subprocess.run(
            [sys.executable, "-m", "benchmarks.throughput", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        sys.exit(f"repeat: a throughput run took more than {timeout:g} s (--timeout)")
    if run.returncode != 0 or "JSON: " not in run.stderr:
        tail = run.stderr.strip().splitlines()[-1:] or ["(nothing on stderr)"]
        sys.exit(f"repeat: the throughput benchmark failed (exit {run.returncode}): {tail[0]}")
    path = Path(run.stderr.rsplit("JSON: ", 1)[1].strip())
    report: dict[str, Any] = json.loads(path.read_text())
    report["json"] = str(path)
    return report


def _print(summary: Mapping[str, Mapping[str, Any]], runs: int) -> None:
    print(f"over {runs} runs, median (least - most):", file=sys.stderr)
    for name, entry in summary.items():
        line = f"{name:<16}"
        rate = entry.get("rate")
        if rate is not None:
            line += f" {rate['median']:>12,.0f} records/s ({rate['min']:,.0f} - {rate['max']:,.0f})"
        for key, label in (
            ("ratio_to_baseline", "x raw 1/msg"),
            ("ratio_to_batched", "x raw batched"),
            ("ratio_to_raw_store", " of raw_store"),
        ):
            r = entry.get(key)
            if r is not None:
                line += f"   {r['median']:.3f}{label} ({r['min']:.3f} - {r['max']:.3f})"
        for key in ("p50_us", "p99_us"):
            r = entry.get(key)
            if r is not None:
                line += f"   {key[:3]} {r['median']:,.0f} us ({r['min']:,.0f} - {r['max']:,.0f})"
        for t in entry.get("targets", ()):
            line += f"   >= {t['ratio']:g}x {t['against']} in {t['runs']} of {entry['runs']} runs"
        print(line, file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        usage="python -m benchmarks.repeat [--runs N] [--target PHASE[/BASE]=RATIO] -- ARGS",
    )
    ap.add_argument("--runs", type=int, default=5, help="throughput runs (default 5)")
    ap.add_argument(
        "--target",
        type=_target,
        action="append",
        default=[],
        help="PHASE[/BASE]=RATIO: count the runs whose PHASE reached RATIO x BASE (default "
        "batched; or baseline, raw_store)",
    )
    ap.add_argument("--timeout", type=float, default=1800, help="seconds a run may take")
    ap.add_argument("throughput", nargs=argparse.REMAINDER, help="-- then the benchmark's args")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    passed = list(args.throughput)
    if passed[:1] == ["--"]:
        del passed[0]
    if "--no-progress" not in passed:
        passed.append("--no-progress")
    reports = []
    for i in range(args.runs):
        report = _run_once(passed, args.timeout)
        reports.append(report)
        print(
            f"run {i + 1} of {args.runs}: load {' '.join(report['load_average_at_start'])}"
            f" -> {' '.join(report['load_average_at_end'])}; {report['json']}",
            file=sys.stderr,
        )
    summary = summarize(reports, args.target)
    _print(summary, args.runs)
    out = ROOT / "benchmarks" / "results" / f"repeat-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"args": passed, "runs": reports, "summary": summary}, indent=2) + "\n"
    )
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
