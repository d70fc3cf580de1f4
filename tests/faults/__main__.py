"""``python -m tests.faults --seeds 10 --seconds 120 --min-acks 1``: the fault-injection suite.

Runs one seeded nemesis run per seed and ``min_acks`` value, prints a table of the counts
and a JSON document (also written to ``--json``), and exits 1 if any count is not zero.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.faults.checker import format_table
from tests.faults.cluster import Options
from tests.faults.nemesis import PROCESS_FAULTS, Kind, disk_faults_unavailable
from tests.faults.run import RunResult, run_once


def main(argv: list[str] | None = None) -> int:
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
        help="process: kills and pauses only; all: also full disks where possible",
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated fault kinds to use instead ("
        + ", ".join(k.value for k in Kind)
        + ")",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep logs and data here")
    parser.add_argument("--json", type=Path, default=None, help="write the results here too")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(message)s",
    )
    kinds: tuple[Kind, ...] = PROCESS_FAULTS
    skipped: list[str] = []
    if args.faults == "all":
        reason = disk_faults_unavailable()
        if reason is None:
            kinds = (*PROCESS_FAULTS, Kind.FILL_DISK)
        else:
            skipped.append(f"fill-disk skipped: {reason}")
    if args.only:
        try:
            kinds = tuple(Kind(k.strip()) for k in args.only.split(","))
        except ValueError as exc:
            parser.error(str(exc))
        unavailable = disk_faults_unavailable()
        if Kind.FILL_DISK in kinds and unavailable is not None:
            parser.error(f"fill-disk cannot run here: {unavailable}")
    skipped.append("network partitions: not implemented in this suite yet")
    for line in skipped:
        print(line, file=sys.stderr)
    base = args.workdir or Path(tempfile.mkdtemp(prefix="dafka-faults-"))
    results: list[RunResult] = []
    for min_acks in args.min_acks or [1]:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            t0 = time.monotonic()
            workdir = base / f"acks{min_acks}-seed{seed}"
            if workdir.exists():  # a previous run's logs would be read as this one's
                shutil.rmtree(workdir)
            result = run_once(
                workdir,
                seed,
                args.seconds,
                min_acks,
                kinds,
                options=_options(min_acks, kinds),
            )
            result.skipped = skipped
            results.append(result)
            counts = " ".join(f"{k}={v}" for k, v in result.report.counts().items())
            print(
                f"min_acks={min_acks} seed={seed} faults={len(result.faults)} "
                f"acked={result.report.acked} {counts} ({time.monotonic() - t0:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
    rows = [(f"acks{r.min_acks}/seed{r.seed}", r.report) for r in results]
    doc = {"workdir": str(base), "runs": [r.as_dict() for r in results]}
    text = json.dumps(doc, indent=1)
    if args.json is not None:
        args.json.write_text(text)
    print(text)
    print(format_table(rows))
    return 0 if all(r.report.ok() for r in results) else 1


def _options(min_acks: int, kinds: tuple[Kind, ...]) -> Options:
    tmpfs = 48 * 1024 * 1024 if Kind.FILL_DISK in kinds else None
    return Options(min_acks=min_acks, tmpfs_bytes=tmpfs)


if __name__ == "__main__":
    sys.exit(main())
