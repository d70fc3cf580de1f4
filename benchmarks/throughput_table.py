"""The table ``python -m benchmarks.throughput`` prints on stderr: every phase against both
raw baselines and the raw store, the latency percentiles and the memory figures, with the
machine's load beside them."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["print_table"]

RAW = ("baseline", "batched", "lmdb", "raw_store", "raw_direct")
"""The raw phases (pyzmq, LMDB, the raw stores), in the table's order."""
RATED = ("acked", "state_dir", "durable", "live", "catch_up")
"""The Dafka phases measured against the baselines, in the table's order."""


def print_table(
    results: dict[str, Any], load: Sequence[str], end_load: Sequence[str], latency_rate: float
) -> None:
    """Print the table of a run's ``results`` (its JSON report, ratios already in)."""
    base, batched, floor = results["baseline"], results["batched"], results.get("raw_store")
    ran = [p for p in RATED if p in results]
    print(
        f"\nload average {' '.join(load)} at the start, "
        f"{' '.join(end_load)} at the end ({os.cpu_count()} CPUs)",
        file=sys.stderr,
    )
    head = f"{'phase':<10} {'records/s':>12} {'vs raw 1/msg':>13} {'vs raw batched':>15}"
    head += "  CPU us/record: producer, store"
    print(head, file=sys.stderr)
    for name in RAW:
        r = results.get(name)
        if isinstance(r, dict) and r["records"]:
            print(
                f"{name:<10} {r['rate']:>12,.0f} {r['rate'] / base['rate']:>13.3f} "
                f"{r['rate'] / batched['rate']:>15.3f}",
                file=sys.stderr,
            )
    for phase in ran:
        r = results[phase]
        assert isinstance(r, dict)
        print(
            f"{phase:<10} {r['rate']:>12,.0f} {r['ratio_to_baseline']:>13.3f} "
            f"{r['ratio_to_batched']:>15.3f}"
            + (
                f"  {r['producer_cpu_us_per_record']:.2f}, {r['store_cpu_us_per_record']:.2f}"
                if "producer_cpu_us_per_record" in r
                else ""
            )
            + (
                f"  consumer {r['consumer_cpu_us_per_record']:.2f}"
                if "consumer_cpu_us_per_record" in r
                else ""
            )
            + (
                f", store {r['store_cpu_us_per_record']:.2f}"
                if "store_cpu_us_per_record" in r and "producer_cpu_us_per_record" not in r
                else ""
            ),
            file=sys.stderr,
        )
    if isinstance(floor, dict):
        print(
            "against raw_store (no signatures or checks; the floor under a store): "
            + ", ".join(
                f"{phase} {results[phase]['ratio_to_raw_store']:.2f}"
                for phase in ran
                if phase != "catch_up"
            ),
            file=sys.stderr,
        )
    lat, raw = results.get("latency"), results.get("latency_baseline")
    if isinstance(lat, dict) and isinstance(raw, dict):
        print(
            f"latency at {latency_rate:,.0f}/s, default linger_ms="
            f"{lat['linger_ms']:g}: p50 {lat.get('p50_us', 0):,.0f} us, "
            f"p99 {lat.get('p99_us', 0):,.0f} us (raw PUB/SUB p50 {raw.get('p50_us', 0):,.0f} "
            f"us, p99 {raw.get('p99_us', 0):,.0f} us)",
            file=sys.stderr,
        )
    for lingered in results.get("latency_other_lingers", []):
        print(
            f"latency at {latency_rate:,.0f}/s with linger_ms={lingered['linger_ms']:g}: "
            f"p50 {lingered.get('p50_us', 0):,.0f} us, p99 {lingered.get('p99_us', 0):,.0f} us",
            file=sys.stderr,
        )
    mem = results.get("memory")
    if isinstance(mem, dict):
        prod, store_rss = mem["producer"], mem["store_rss_per_million"]
        print(
            f"memory: producer RSS grew {prod['growth_bytes'] / 2**20:,.1f} MiB filling a "
            f"{prod['budget_bytes'] / 2**20:,.0f} MiB budget ({prod['queued_records']:,} records); "
            "store RSS per million records (MiB): "
            + " ".join(f"{b / 2**20:,.0f}" for b in store_rss)
            + "; without the LMDB map (RssAnon): "
            + " ".join(f"{b / 2**20:,.0f}" for b in mem.get("store_rss_anon_per_million", [])),
            file=sys.stderr,
        )
        slow = mem.get("slow_store")
        if isinstance(slow, dict):
            print(
                f"memory: slow store (stopped 0.5 s a second): producer RSS peak "
                f"{slow['growth_bytes'] / 2**20:,.1f} MiB over start with a "
                f"{slow['budget_bytes'] / 2**20:,.0f} MiB budget ({slow['sent_records']:,} "
                "records sent)",
                file=sys.stderr,
            )
