"""``python -m tests.faults --seeds 10 --seconds 120 --min-acks 1``: the fault-injection suite.

Runs one seeded nemesis run per seed and ``min_acks`` value, prints a table of the counts
and a JSON document (also written to ``--json``), and exits 1 if any count is not zero.

With network namespaces (root, ``--netns on``; ``auto`` uses them when possible with
``--faults all``) every run gets its own namespaces, every node its own address, and the
harness re-runs itself inside the ``harness`` namespace (``--inside``) to reach them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.faults import netns
from tests.faults.checker import Report, format_table
from tests.faults.cluster import Options, node_names
from tests.faults.nemesis import PROCESS_FAULTS, Kind, disk_faults_unavailable
from tests.faults.run import run_once
from tests.faults.scenarios import SCENARIOS, Scenario, by_name, scenario_unavailable


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.faults", description=__doc__)
    parser.add_argument("--seeds", type=int, default=10, help="runs per min_acks value")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=120.0, help="nemesis time per run")
    parser.add_argument(
        "--min-acks", type=int, action="append", help="repeat for several (default: 1)"
    )
    parser.add_argument(
        "--faults",
        choices=("process", "all"),
        default="all",
        help="process: kills and pauses only; all: also full disks and partitions where possible",
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated fault kinds to use instead ("
        + ", ".join(k.value for k in Kind)
        + ")",
    )
    parser.add_argument(
        "--scenario",
        default=None,
        help="run issue 33's scenarios instead (all, or comma-separated: "
        + ", ".join(s.name for s in SCENARIOS)
        + "); without namespaces",
    )
    parser.add_argument("--netns", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs and data here")
    parser.add_argument("--json", type=Path, default=None, help="write the results here too")
    parser.add_argument("--inside", default=None, help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # so that every finally stops processes and namespaces


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(message)s",
    )
    if args.scenario is not None:
        try:
            chosen = by_name(args.scenario)
        except ValueError as exc:
            parser.error(str(exc))
        return _run_scenarios(args, chosen)
    kinds: tuple[Kind, ...] = PROCESS_FAULTS
    skipped: list[str] = []
    use_netns = False
    if args.faults == "all" or args.netns == "on":
        reason = netns.unavailable()
        if reason is None and args.netns != "off":
            use_netns = True
        elif args.netns == "on":
            parser.error(f"network namespaces cannot be used here: {reason}")
        else:
            skipped.append(f"partitions skipped: {reason or '--netns off'}")
    if args.faults == "all":
        reason = disk_faults_unavailable()
        if reason is None:
            kinds = (*kinds, Kind.FILL_DISK, Kind.FILL_PRODUCER_DISK)
        else:
            skipped.append(f"fill-disk and fill-producer-disk skipped: {reason}")
        if use_netns:
            kinds = (*kinds, Kind.PARTITION)
    if args.only:
        try:
            kinds = tuple(Kind(k.strip()) for k in args.only.split(","))
        except ValueError as exc:
            parser.error(str(exc))
        disk_kinds = {Kind.FILL_DISK, Kind.FILL_PRODUCER_DISK}
        if disk_kinds & set(kinds) and disk_faults_unavailable() is not None:
            parser.error(f"the fill-disk faults cannot run here: {disk_faults_unavailable()}")
        if Kind.PARTITION in kinds and not use_netns:
            parser.error("partition needs network namespaces (root, --netns on)")
    if args.inside is None:
        for line in skipped:
            print(line, file=sys.stderr)
    base = args.workdir or Path(tempfile.mkdtemp(prefix="dafka-faults-"))
    runs: list[dict] = []
    for min_acks in args.min_acks or [1]:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            t0 = time.monotonic()
            workdir = base / f"acks{min_acks}-seed{seed}"
            if args.inside is None and workdir.exists():  # old logs would be read as new
                shutil.rmtree(workdir)
            if use_netns and args.inside is None:
                doc = _run_in_namespaces(args, seed, min_acks, base, workdir)
            else:
                topo = None
                if args.inside is not None:
                    topo = netns.Topology(node_names(_options(min_acks, kinds)), args.inside)
                result = run_once(
                    workdir,
                    seed,
                    args.seconds,
                    min_acks,
                    kinds,
                    options=_options(min_acks, kinds),
                    topology=topo,
                )
                doc = result.as_dict()
            doc["skipped"] = skipped
            runs.append(doc)
            counts = " ".join(f"{k}={v}" for k, v in doc["counts"].items())
            if args.inside is not None:  # the outer run prints it
                continue
            print(
                f"min_acks={min_acks} seed={seed} faults={len(doc['faults'])} "
                f"acked={doc['acked']} {counts} ({time.monotonic() - t0:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
    reports = [_report(doc) for doc in runs]
    text = json.dumps({"workdir": str(base), "runs": runs}, indent=1)
    if args.json is not None:
        args.json.write_text(text)
    if args.inside is None:
        print(text)
        rows = [
            (f"acks{d['min_acks']}/seed{d['seed']}", r) for d, r in zip(runs, reports, strict=True)
        ]
        print(format_table(rows))
    return 0 if all(r.ok() for r in reports) else 1


def _run_scenarios(args: argparse.Namespace, chosen: list[Scenario]) -> int:
    """Every chosen scenario, per seed and min_acks; the same output as the other runs."""
    base = args.workdir or Path(tempfile.mkdtemp(prefix="dafka-faults-"))
    runs: list[dict] = []
    rows: list[tuple[str, Report]] = []
    for scenario in chosen:
        reason = scenario_unavailable(scenario)
        if reason is not None:
            print(f"scenario {scenario.name} skipped: {reason}", file=sys.stderr)
            continue
        for min_acks in args.min_acks or [scenario.min_acks]:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                t0 = time.monotonic()
                workdir = base / f"{scenario.name}-acks{min_acks}-seed{seed}"
                if workdir.exists():
                    shutil.rmtree(workdir)
                result = run_once(
                    workdir,
                    seed,
                    args.seconds,
                    min_acks,
                    scenario.kinds,
                    options=scenario.options(min_acks),
                )
                doc: dict = {"scenario": scenario.name, "needs": scenario.needs, **result.as_dict()}
                runs.append(doc)
                rows.append((f"{scenario.name}/acks{min_acks}/seed{seed}", result.report))
                counts = " ".join(f"{k}={v}" for k, v in doc["counts"].items())
                print(
                    f"{scenario.name} min_acks={min_acks} seed={seed} faults={len(doc['faults'])} "
                    f"acked={doc['acked']} {counts} ({time.monotonic() - t0:.0f}s)",
                    file=sys.stderr,
                    flush=True,
                )
    text = json.dumps({"workdir": str(base), "runs": runs}, indent=1)
    if args.json is not None:
        args.json.write_text(text)
    print(text)
    print(format_table(rows))
    return 0 if all(r.ok() for _, r in rows) else 1


def _run_in_namespaces(
    args: argparse.Namespace, seed: int, min_acks: int, base: Path, workdir: Path
) -> dict:
    """One run with its own namespaces: the harness runs itself inside ``harness``."""
    topo = netns.Topology(node_names(Options()), prefix=f"dfk{os.getpid() % 100000}")
    out = workdir.with_suffix(".json")
    cmd = [
        sys.executable,
        "-m",
        "tests.faults",
        "--inside",
        topo.prefix,
        "--seeds",
        "1",
        "--first-seed",
        str(seed),
        "--min-acks",
        str(min_acks),
        "--seconds",
        str(args.seconds),
        "--faults",
        args.faults,
        "--workdir",
        str(base),
        "--json",
        str(out),
    ]
    if args.only:
        cmd += ["--only", args.only]
    if args.verbose:
        cmd.append("-v")
    topo.create()
    try:
        subprocess.run(
            [*topo.prefix_args("harness"), *cmd], check=False, timeout=args.seconds * 3 + 300
        )
    finally:
        topo.destroy()
    if not out.exists():
        return {
            "seed": seed,
            "min_acks": min_acks,
            "counts": {"crashed": 1},
            "acked": 0,
            "faults": [],
            "examples": {"crashed": ["the harness inside the namespaces failed"]},
        }
    return json.loads(out.read_text())["runs"][0]


def _report(doc: dict) -> Report:
    report = Report(**doc["counts"])
    report.acked = doc.get("acked", 0)
    report.delivered = doc.get("delivered", 0)
    return report


def _options(min_acks: int, kinds: tuple[Kind, ...]) -> Options:
    tmpfs = 48 * 1024 * 1024 if Kind.FILL_DISK in kinds else None
    producer_tmpfs = 4 * 1024 * 1024 if Kind.FILL_PRODUCER_DISK in kinds else None
    return Options(min_acks=min_acks, tmpfs_bytes=tmpfs, producer_tmpfs_bytes=producer_tmpfs)


if __name__ == "__main__":
    sys.exit(main())
