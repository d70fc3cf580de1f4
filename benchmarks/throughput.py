"""Throughput and latency of a wire profile against raw pyzmq PUB/SUB, measured in one run.

    python -m benchmarks.throughput [--profile signed|rfc46] [--records N] [--size 100]
                                    [--api many|one] [--consume records|batches]
                                    [--latency-rate 10000]
                                    [--latency-seconds 10] [--linger-ms 0[,MS...]]
                                    [--phases baseline,batched,lmdb,raw_store,raw_direct,acked,
                                              state_dir,durable,live,catch_up,memory,latency]
                                    [--pyspy DIR] [--curve] [--commit-thread] [--budget-mib M]
                                    [--no-progress]

Phases (one tower and one store, fsync on, each phase a fresh topic):

* baseline   raw pyzmq PUB -> SUB in another process, N messages of SIZE bytes (one
             message per record: what the rfc46 profile does by protocol)
* batched    raw pyzmq PUB -> SUB, the N records in messages of as many records as a
             Dafka batch holds (the Producer's defaults): the transport's bound for
             batched Dafka, and what every batched phase is compared with
* lmdb       raw LMDB: the same batches appended one transaction (fsync) each, in this
             process: the least a store must do before it acknowledges
* raw_store  raw PUB/SUB batches, as ``batched``, to a raw store in another process that
             commits what it received meanwhile (4 batches at most) in one synced LMDB
             transaction on a writer thread, then acknowledges; the sender holds at most
             the Producer's unacknowledged budget: no signatures, checks or heads, the
             floor under ``acked`` and ``live`` (each printed against it too)
* raw_direct the same, but the raw store writes the batches to a segment file through
             ``O_DIRECT`` and commits only their index to LMDB: the floor under a store
             built so, which never copies a batch into the page cache (not in the
             default phases)
* acked      a Producer sends N records; time until every one is durable (store-ACKed);
             also the CPU time the producer (this process) and the store spent per
             record, which other work on the cores does not move as it moves the rate,
             and the producer's minor page faults per million records
* state_dir  the same with a state directory: offsets reserved and the acknowledged bound
             recorded with fsync (what restart recovery needs)
* durable    the same with ``durable=True``: every batch also logged with fsync before
             it is published (``send`` returns only then)
* live       the same with a live consumer in another process (verifying every
             batch under ``signed``); records/s delivered
* catch-up   a consumer started afterwards reads all N from the store
* memory     RSS: a producer (its own process) filling a 64 MiB unacknowledged budget
             where no store acknowledges, against the budget; and the store's RSS
             after each million records of ``--growth-records`` (default 5,000,000)
             sent to a fresh topic, which should stay flat; then a producer's peak
             RSS sending for 10 s to a slow store (stopped 0.5 s every second)
* latency    records at ``--latency-rate`` per second for ``--latency-seconds``,
             each stamped with the send time (``time.monotonic_ns``, one clock for
             every process on the machine), one ``send`` per record; produce-to-consume
             p50/p99, beside raw PUB/SUB at the same rate; run with the Producer's
             default linger, then with each of ``--linger-ms`` (default 0: natural
             batching only; '': none)

``--api many`` sends with ``Producer.send_many`` (chunks of 10,000 records, one
future each), ``--api one`` with ``Producer.send`` (one future per record).
``--consume records`` reads with ``Consumer.poll_batch`` (a ConsumedRecord per
record), ``--consume batches`` with ``Consumer.poll_batches`` (verified columns): per
run it counts the records and adds up the values' lengths from the column's
``values.lengths`` (one u32 per record, in a C loop), making no object per record;
the raw baselines only count messages. ``live`` and ``catch-up`` also print the
consumer's CPU time per record (every thread, first record to last).
``--pyspy DIR`` records a py-spy profile (``-f raw``) of the store, the
producer (this process) and the consumers; ``python -m benchmarks.profile DIR``
sums up their leaf frames. The producer (this process) and the consumers keep freed
memory for reuse (:func:`dafka.io.malloc.keep_freed_memory`) and freeze the objects
they hold once their node has started (:func:`dafka.io.collector.freeze_heap`), as the
``dafka-producer``, ``dafka-consumer`` and ``dafka-store`` commands do. ``--curve`` runs
the same phases with ZMTP CURVE on
every socket (tower, store, producer and consumers started with ``--curve``); the
raw PUB/SUB baselines stay NULL, so the ratios show what CURVE costs.

On a terminal, a status line on stderr shows each phase's progress (records
acknowledged, seconds waited for a consumer); ``--no-progress`` turns it off.

Prints a table and writes JSON to benchmarks/results/throughput-<profile>-<time>.json.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.baselines import (
    baseline,
    baseline_batched,
    baseline_latency,
    baseline_lmdb,
    baseline_store,
    paced,
    records_per_batch,
    stamped,
    start_worker,
    worker_ready,
    worker_result,
)
from benchmarks.throughput_table import RATED, RAW, print_table
from benchmarks.workers import cpu_seconds, rss_bytes
from dafka import Producer
from dafka.api.common import node_config
from dafka.cli.progress import Progress, end_progress
from dafka.io.collector import freeze_heap
from dafka.io.malloc import keep_freed_memory
from tests.admin import tower_args
from tests.procs import Proc, StoreProc, Tower, py

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 10_000
PROGRESS = Progress(False)
"""The status line on stderr (main() turns it on when stderr is a terminal)."""


def _acks(phase: str, producer: Producer, n: int, warm: int = 1) -> Callable[[], str]:
    """The status line of a phase: ``warm`` records sent before it do not count."""
    return lambda: f"{phase}: {producer.acknowledged - warm:,} of {n:,} records acknowledged"


def _waited(phase: str) -> Callable[[], str]:
    start = time.monotonic()
    return lambda: f"{phase}: waiting for the consumer, {time.monotonic() - start:.0f} s"


@contextmanager
def pyspy(directory: Path | None, name: str, pid: int) -> Iterator[None]:
    """Record a py-spy raw profile of ``pid`` while the block runs (if ``directory``)."""
    if directory is None:
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    binary = Path(sys.executable).parent / "py-spy"
    if not binary.exists():
        sys.exit(f"--pyspy: no {binary} (make install brings it, with the dev extra)")
    spy = subprocess.Popen(
        [
            str(binary),
            "record",
            "--pid",
            str(pid),
            "--rate",
            "250",
            "--nonblocking",
            "--threads",
            "-f",
            "raw",
            "-o",
            str(directory / f"{name}.raw"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)  # let it attach
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(30)
        except subprocess.TimeoutExpired:
            spy.kill()


# ------------------------------------------------------------------ dafka phases


CURVE = False
BUDGET: int | None = None  # --budget-mib: the producers' max_unacked_bytes (None: default)


class CurveTower:
    """A tower started with ``--curve``; ``address`` names its key (HOST:PORT@KEY)."""

    def __init__(self) -> None:
        self.proc = Proc(py("tower", "--bind", "127.0.0.1:0", "--curve", *tower_args()))
        key = self.proc.wait_line(r"tower CURVE key ([0-9a-f]{64})").group(1)
        port = self.proc.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)").group(1)
        self.address = f"127.0.0.1:{port}@{key}"

    def stop(self) -> None:
        self.proc.kill()


def _producer(topic: str, tower: str, profile: str, **options: object) -> Producer:
    node = node_config(tower, curve=True) if CURVE else None
    if BUDGET is not None:
        options.setdefault("max_unacked_bytes", BUDGET)
    producer = Producer(
        topic,
        towers=tower,
        node=node,
        profile=profile,  # type: ignore[arg-type]
        trust_any_store=True,
        **options,  # type: ignore[arg-type]
    )
    freeze_heap()  # as the dafka-producer command does
    return producer


def memory(tower: str, store_pid: int, size: int, args: argparse.Namespace) -> dict[str, object]:
    """Producer RSS at a full budget (no store: a tower of its own); store RSS per million."""
    lonely = Tower()
    try:
        worker = start_worker(
            "producer-memory", "--tower", lonely.address, "--size", str(size), "--count", "1"
        )
        worker_ready(worker)
        producer = worker_result(worker)
    finally:
        lonely.stop()
    samples = [rss_bytes(store_pid)]
    anon = [rss_bytes(store_pid, "RssAnon")]
    with (
        _producer("bench-growth", tower, args.profile) as p,
        PROGRESS.ticking(_acks("memory", p, args.growth_records, warm=0)),
    ):
        sent = 0
        while sent < args.growth_records:
            step = min(1_000_000, args.growth_records - sent)
            send_records(p, step, b"x" * size, "many")
            p.flush(600)
            sent += step
            samples.append(rss_bytes(store_pid))
            anon.append(rss_bytes(store_pid, "RssAnon"))
            _note(
                f"memory: {sent:,} records, store RSS {samples[-1] / 2**20:,.0f} MiB "
                f"({anon[-1] / 2**20:,.0f} MiB without the LMDB map)"
            )
    slow = _slow_store(tower, store_pid, size)
    return {
        "producer": producer,
        "store_rss_per_million": samples,
        "store_rss_anon_per_million": anon,
        "slow_store": slow,
    }


def _slow_store(tower: str, store_pid: int, size: int, seconds: float = 10.0) -> dict[str, float]:
    """Producer RSS while it sends for ``seconds`` to a store stopped (SIGSTOP) for 0.5 s
    out of every second: its budget fills and empties again and again."""
    worker = start_worker(
        "producer-memory", "--tower", tower, "--size", str(size), "--count", "1",
        "--seconds", str(seconds),
    )  # fmt: skip
    try:
        worker_ready(worker)
        deadline = time.monotonic() + seconds + 150
        while worker.poll() is None and time.monotonic() < deadline:
            os.kill(store_pid, signal.SIGSTOP)
            time.sleep(0.5)
            os.kill(store_pid, signal.SIGCONT)
            time.sleep(0.5)
    finally:
        os.kill(store_pid, signal.SIGCONT)
    return worker_result(worker)


def _note(line: str) -> None:
    end_progress()  # a line of its own, below the status line
    print(line, file=sys.stderr)


def send_records(producer: Producer, n: int, payload: bytes, api: str) -> None:
    """Send ``n`` records of ``payload``: ``send_many`` in chunks of ``CHUNK``, or ``send``
    per record (``api``: many or one)."""
    if api == "many":
        chunk = [payload] * CHUNK
        for start in range(0, n, CHUNK):
            producer.send_many(chunk if n - start >= CHUNK else chunk[: n - start])
    else:
        send = producer.send
        for _ in range(n):
            send(payload)


def acked(
    tower: str,
    topic: str,
    n: int,
    size: int,
    profile: str,
    api: str,
    spy: Path | None,
    store_pid: int | None = None,
    **options: object,
) -> dict[str, float]:
    payload = b"x" * size
    with _producer(topic, tower, profile, **options) as producer:
        warm = producer.send(b"warm-up")
        warm.result(timeout=30)  # the store is connected: exclude discovery from timing
        with (
            pyspy(spy, "producer-acked", os.getpid()),
            PROGRESS.ticking(_acks("acked", producer, n)),
        ):
            t0 = time.perf_counter()
            c0 = _cpu(store_pid)
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            send_records(producer, n, payload, api)
            producer.flush(timeout=900)
            t1 = time.perf_counter()
            c1 = _cpu(store_pid)
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    # the producer's minor page faults: a sealed blob held until its ACK is new memory
    # unless an acknowledged one was freed before it (some 200 faults a batch, each
    # zeroed by the kernel)
    return (
        {"records": n, "seconds": t1 - t0, "rate": n / (t1 - t0)}
        | _cpu_per_record(c0, c1, n)
        | {"producer_minor_faults_per_million": faults / n * 1e6}
    )


def _cpu(store_pid: int | None) -> tuple[float, float]:
    """CPU seconds used so far by this process (the producer) and by the store."""
    return time.process_time(), cpu_seconds(store_pid) if store_pid is not None else math.nan


def _cpu_per_record(c0: tuple[float, float], c1: tuple[float, float], n: int) -> dict[str, float]:
    """CPU microseconds per record of the producer and the store between ``c0`` and ``c1``:
    what a change costs or saves even when other work shares the cores (wall-clock rates
    then move with the load)."""
    return {
        "producer_cpu_us_per_record": (c1[0] - c0[0]) / n * 1e6,
        "store_cpu_us_per_record": (c1[1] - c0[1]) / n * 1e6,
    }


CONSUME = "records"


def _consumer(tower: str, topic: str, count: int, profile: str, *extra: str) -> subprocess.Popen:
    if CONSUME == "batches":
        extra = (*extra, "--batches")
    return start_worker(
        "consume",
        "--tower",
        tower,
        "--topic",
        topic,
        "--count",
        str(count),
        "--profile",
        profile,
        *(("--curve",) if CURVE else ()),
        *extra,
    )


def live(
    tower: str, topic: str, n: int, size: int, profile: str, api: str, spy: Path | None
) -> dict[str, float]:
    payload = b"x" * size
    consumer = _consumer(tower, topic, n + 1, profile)
    worker_ready(consumer)
    with _producer(topic, tower, profile) as producer:
        # the consumer is subscribed once it receives our warm-up record
        producer.send(b"warm-up").result(timeout=30)
        time.sleep(1.5)  # discovery settles (beacon interval 1 s); excluded from timing
        with pyspy(spy, "producer-live", os.getpid()), pyspy(spy, "consumer-live", consumer.pid):
            t0 = time.perf_counter()
            with PROGRESS.ticking(_acks("live", producer, n)):
                send_records(producer, n, payload, api)
                producer.flush(timeout=900)
            t_acked = time.perf_counter()
            with PROGRESS.ticking(_waited("live")):
                r = worker_result(consumer)
    delivered = r["count"] - 1
    seconds = r["last"] - t0
    return {
        "records": delivered,
        "seconds": seconds,
        "rate": delivered / seconds,
        "acked_rate": n / (t_acked - t0),
        "consumer_cpu_us_per_record": r["cpu_seconds"] / delivered * 1e6,
    }


def catch_up(
    tower: str, topic: str, n: int, profile: str, spy: Path | None, store_pid: int
) -> dict[str, float]:
    consumer = _consumer(tower, topic, n, profile, "--reset", "earliest")
    worker_ready(consumer)
    store_cpu = cpu_seconds(store_pid)
    with (
        pyspy(spy, "consumer-catch-up", consumer.pid),
        pyspy(spy, "store-catch-up", store_pid),
        PROGRESS.ticking(_waited("catch-up")),
    ):
        r = worker_result(consumer)
    store_cpu = cpu_seconds(store_pid) - store_cpu  # what serving it cost, all its threads
    seconds = r["last"] - r["first"]
    return {
        "records": r["count"],
        "seconds": seconds,
        "rate": r["count"] / seconds,
        "time_to_first": r["first"] - r["started"],
        "consumer_cpu_us_per_record": r["cpu_seconds"] / r["count"] * 1e6,
        "store_cpu_us_per_record": store_cpu / r["count"] * 1e6,
    }


def latency(
    tower: str,
    topic: str,
    rate: float,
    seconds: float,
    size: int,
    profile: str,
    linger_ms: float | None = None,
) -> dict[str, float]:
    """``linger_ms`` None: the Producer's default."""
    n = int(rate * seconds)
    consumer = _consumer(tower, topic, n + 1, profile, "--latency")
    worker_ready(consumer)
    options = {} if linger_ms is None else {"linger_ms": linger_ms}
    with _producer(topic, tower, profile, **options) as producer:
        linger_ms = producer.config.linger_ms
        producer.send(b"warm-up").result(timeout=30)
        time.sleep(1.5)
        send = producer.send
        for due in paced(rate, seconds):
            for _ in range(due):
                send(stamped(size))
        producer.flush(timeout=120)
        with PROGRESS.ticking(_waited("latency")):
            r = worker_result(consumer)
    return {k: v for k, v in r.items() if k.endswith("_us")} | {
        "records": n,
        "rate": rate,
        "linger_ms": linger_ms,
    }


# ------------------------------------------------------------------ main


PHASES = (
    "baseline",
    "batched",
    "lmdb",
    "raw_store",
    "raw_direct",
    "acked",
    "state_dir",
    "durable",
    "live",
    "catch_up",
    "memory",
    "latency",
)


def _lingers(text: str) -> list[float]:
    """``--linger-ms``: comma-separated milliseconds, none for ''."""
    return [float(part) for part in text.split(",") if part.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=["signed", "rfc46"], default="signed")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--api", choices=["many", "one"], default="many")
    ap.add_argument("--consume", choices=["records", "batches"], default="records")
    ap.add_argument("--latency-rate", type=float, default=10_000)
    ap.add_argument("--latency-seconds", type=float, default=10)
    ap.add_argument(
        "--linger-ms",
        type=_lingers,
        default=[0.0],
        help="the latency phase runs with the Producer's default linger, then with each of "
        "these (comma-separated; default 0, natural batching only; '': none)",
    )
    ap.add_argument("--pyspy", type=Path, default=None, help="record py-spy profiles here")
    ap.add_argument(
        "--phases",
        default=",".join(p for p in PHASES if p != "raw_direct"),
        help="comma-separated subset of the phases to run (catch_up needs acked)",
    )
    ap.add_argument("--curve", action="store_true", help="ZMTP CURVE on every Dafka socket")
    ap.add_argument(
        "--commit-thread", action="store_true", help="the store commits on a writer thread"
    )
    ap.add_argument(
        "--budget-mib",
        type=int,
        help="the producers' max_unacked_bytes in MiB (default: the Producer's); a run "
        "that fits in it is never held back by the store's ACKs",
    )
    ap.add_argument("--growth-records", type=int, default=5_000_000, help="memory phase")
    ap.add_argument(
        "--no-progress", action="store_true", help="no status line on stderr (a terminal only)"
    )
    args = ap.parse_args()
    keep_freed_memory()  # the producer runs here: as the dafka-producer command does
    phases = set(args.phases.split(","))
    if unknown := sorted(phases - set(PHASES)):
        ap.error(f"--phases: no phase {', '.join(unknown)} (the phases: {', '.join(PHASES)})")
    global BUDGET, CONSUME, CURVE, PROGRESS
    PROGRESS = Progress(False if args.no_progress else None)
    CONSUME = args.consume
    CURVE = args.curve
    BUDGET = None if args.budget_mib is None else args.budget_mib * 1024 * 1024
    n, size, profile, api = args.records, args.size, args.profile, args.api
    if size < 8:
        ap.error("--size must be at least 8 (the latency phase stamps values)")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    results: dict[str, object] = {
        "benchmark": f"throughput-{profile}",
        "profile": profile,
        "api": api,
        "consume": args.consume,
        "records": n,
        "record_size": size,
        "fsync": True,
        "curve": args.curve,
        "commit_thread": args.commit_thread,
        "producer_budget_mib": args.budget_mib,
        "stores": 1,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    base = {"records": 0, "seconds": 0.0, "rate": float("nan")}
    if "baseline" in phases:
        print(f"baseline: raw pyzmq PUB/SUB, {n} x {size} B ...", file=sys.stderr)
        base = baseline(n, size)
    results["baseline"] = base
    per_batch = records_per_batch(size)
    results["records_per_batch"] = per_batch
    batched = {"records": 0, "seconds": 0.0, "rate": float("nan")}
    if "batched" in phases:
        print(f"batched: raw pyzmq PUB/SUB, {per_batch} records per message", file=sys.stderr)
        batched = baseline_batched(n, size, per_batch)
    results["batched"] = batched
    if "lmdb" in phases:
        print(f"lmdb: raw LMDB, one synced transaction per {per_batch} records", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            results["lmdb"] = baseline_lmdb(n, size, per_batch, Path(tmp))
    budget = BUDGET or inspect.signature(Producer).parameters["max_unacked_bytes"].default
    if "raw_store" in phases:
        print("raw_store: raw PUB/SUB batches -> LMDB commits (synced) -> ACKs", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            results["raw_store"] = baseline_store(n, size, per_batch, Path(tmp), budget)
    if "raw_direct" in phases:
        print(
            "raw_direct: raw PUB/SUB batches -> O_DIRECT segment + LMDB index (synced) -> ACKs",
            file=sys.stderr,
        )
        # under the project, not in /tmp, which may be a tmpfs (no O_DIRECT before Linux 6.6)
        with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parents[1]) as tmp:
            results["raw_direct"] = baseline_store(n, size, per_batch, Path(tmp), budget, True)
    tower: Tower | CurveTower = CurveTower() if args.curve else Tower()
    with tempfile.TemporaryDirectory() as tmp:
        store = StoreProc(
            Path(tmp) / "store",
            tower.address,
            "--profile",
            profile,
            *(["--curve"] if args.curve else []),
            *(["--commit-thread"] if args.commit_thread else []),
        )
        store_pid = store.proc.p.pid
        try:
            with pyspy(args.pyspy, "store", store_pid):
                if "acked" in phases:
                    print(f"acked: producer -> store (fsync), {profile}, {api}", file=sys.stderr)
                    results["acked"] = acked(
                        tower.address, "bench-acked", n, size, profile, api, args.pyspy, store_pid
                    )
                for phase, options in (
                    ("state_dir", {"state_dir": Path(tmp) / "state"}),
                    ("durable", {"state_dir": Path(tmp) / "durable", "durable": True}),
                ):
                    if phase in phases:
                        print(f"{phase}: producer -> store (fsync), {options}", file=sys.stderr)
                        results[phase] = acked(
                            tower.address,
                            f"bench-{phase}",
                            n,
                            size,
                            profile,
                            api,
                            None,
                            store_pid,
                            **options,
                        )
                if "live" in phases:
                    print("live: producer -> store + live consumer ...", file=sys.stderr)
                    results["live"] = live(
                        tower.address, "bench-live", n, size, profile, api, args.pyspy
                    )
            if "catch_up" in phases and "acked" in phases:
                print("catch-up: consumer from the beginning ...", file=sys.stderr)
                results["catch_up"] = catch_up(
                    tower.address, "bench-acked", n + 1, profile, args.pyspy, store_pid
                )
            if "memory" in phases:
                print("memory: producer RSS at a full budget; store RSS growth", file=sys.stderr)
                results["memory"] = memory(tower.address, store.proc.p.pid, size, args)
            if "latency" in phases:
                print(
                    f"latency: {args.latency_rate:g} records/s for {args.latency_seconds:g} s",
                    file=sys.stderr,
                )
                results["latency"] = latency(
                    tower.address,
                    "bench-latency",
                    args.latency_rate,
                    args.latency_seconds,
                    size,
                    profile,
                )
                results["latency_other_lingers"] = [
                    latency(
                        tower.address,
                        f"bench-latency-linger-{i}",
                        args.latency_rate,
                        args.latency_seconds,
                        size,
                        profile,
                        linger_ms,
                    )
                    for i, linger_ms in enumerate(args.linger_ms)
                ]
                results["latency_baseline"] = baseline_latency(
                    args.latency_rate, args.latency_seconds, size
                )
        finally:
            store.kill()
            tower.stop()
    ran = [p for p in RATED if p in results]
    floor = results.get("raw_store")
    for phase in RAW:  # against raw batched (the Dafka phases get all three ratios below)
        r = results.get(phase)
        if isinstance(r, dict) and r.get("records") and phase != "batched":
            r["ratio_to_batched"] = r["rate"] / batched["rate"]
    for phase in ran:
        r = results[phase]
        assert isinstance(r, dict)
        r["ratio_to_baseline"] = r["rate"] / base["rate"]
        r["ratio_to_batched"] = r["rate"] / batched["rate"]
        if isinstance(floor, dict) and phase != "catch_up":
            r["ratio_to_raw_store"] = r["rate"] / floor["rate"]
    with open("/proc/loadavg") as f:
        end_load = f.read().split()[:3]
    results["load_average_at_end"] = end_load
    RESULTS.mkdir(exist_ok=True)
    curve = "-curve" if args.curve else ""
    out = RESULTS / f"throughput-{profile}{curve}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print_table(results, load, end_load, args.latency_rate)
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
