"""Spark reading from a store: one micro-batch of N records through ``format("dafka")``.

    python -m benchmarks.spark_read [--records 1000000] [--size 100] [--tasks 4] [--repeat 3]
                                    [--failover] [--no-progress]

One tower and one store (child processes, fsync on); a Producer writes N
records of SIZE bytes to one partition. Then, in one run:

* baseline    the query client (the store's pull endpoint, no Spark) reads the
              whole range in READs of at most 4 MiB, then decodes the batches as an
              executor does (checking signatures under the signed profile): records/s;
              the same without decoding is reported as the raw READ rate, and into
              Arrow batches as an executor makes them (all columns, then the value
              alone) with the CPU seconds per million rows the decoding took
* micro-batch a streaming query (``readStream.format("dafka")``, startingOffsets
              earliest, Trigger.AvailableNow) whose first micro-batch holds all N
              records, counted and summed in ``foreachBatch``: time from start()
              to the first batch, and rows/s of that batch
* batch       ``spark.read.format("dafka")`` of the same range: rows/s, cold (the
              session's first read of it) and warm (the same read again)
* parquet     the same rows (the source's columns) written to local parquet with
              pyarrow, then ``spark.read.parquet`` of them, counted and summed alike:
              what a columnar local read costs on this machine
* floor       a Python data source of the same schema that reads nothing: its tasks
              yield ready-made Arrow batches of the same rows (as many rows per batch as
              one 4 MiB READ holds), counted and summed alike, warm: the fastest any
              PySpark Python data source can be here, whatever it reads (Spark copies
              every row of every column out of Arrow, as it does not prune columns for
              Python sources)
* value only  the batch read and the floor again with the user schema ``value binary``:
              Spark prunes no columns for a Python source, but hands it a schema the
              user gives, so a query that names only the columns it reads gets what
              parquet's pruning gives it (parquet reads ``value`` alone for this query)
* failover    (``--failover``) a second store holds the same records; the first is
              SIGKILLed and a batch read of the range runs with option ``stores``
              naming both, the dead one first: its seconds

Each Spark and parquet run reports the CPU seconds per million rows its JVM, Python workers
and store used (``/proc``), less sensitive to other work on the machine than its rate.
Each Spark and parquet phase runs once cold, then ``--repeat`` times warm (a session whose
Python workers and JVM code paths are already up); the warm figure is the fastest of
those runs, and the JSON keeps every run's rate: on a shared machine a single run
measures the neighbours as much as the read. Ratios are Spark's rows/s over the
query client's and over parquet's. Prints a table and writes JSON
to benchmarks/results/spark_read-<time>.json.

On a terminal, a status line on stderr shows each phase's progress (records acknowledged,
records read, seconds a Spark or parquet phase has run); ``--no-progress`` turns it off.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dafka.cli.progress import Progress

RESULTS = Path(__file__).resolve().parent / "results"
VALUE_ONLY = "value binary"
"""The user schema of the pruned phases: the one column the benchmark's query reads."""
PROGRESS = Progress(False)
"""The status line on stderr (set in main: a terminal only, not with --no-progress)."""
STORE_PID: int | None = None
"""The store's process (set in main), whose CPU seconds each Spark and parquet run reports."""


def _cpu_by_kind() -> dict[str, float]:
    """CPU seconds (user + system, with those of reaped children) used so far by this
    process's Spark JVM (``jvm``), the Python processes under it (``workers``: Spark's
    Python worker daemon and the workers it forks) and the store (``store``); Linux
    ``/proc``, empty elsewhere. Each run reports its own difference, per million rows:
    less sensitive to the neighbours on a shared machine than its seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    comm: dict[int, str] = {}
    cpu: dict[int, float] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        pid = int(entry)
        name, _, rest = stat.partition("(")[2].rpartition(")")
        fields = rest.split()
        parent[pid], comm[pid] = int(fields[1]), name
        cpu[pid] = sum(int(x) for x in fields[11:15]) / tick

    def under(pid: int, root: int) -> bool:
        for _ in range(64):  # bounded: a process tree is not that deep
            if pid == root:
                return True
            if pid <= 1:
                return False
            pid = parent.get(pid, 0)
        return False

    me = os.getpid()
    out = {"jvm": 0.0, "workers": 0.0, "store": cpu.get(STORE_PID, 0.0) if STORE_PID else 0.0}
    jvms = [p for p in cpu if comm[p] == "java" and under(p, me)]
    for pid in cpu:
        if comm[pid] == "java" and pid in jvms:
            out["jvm"] += cpu[pid]
        elif comm[pid].startswith("python") and any(under(pid, j) for j in jvms):
            out["workers"] += cpu[pid]
    return out


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest of repeated warm runs, with every run's rate beside it, their median,
    and the median CPU seconds per million rows of each process kind: on a shared machine
    the other runs measure the neighbours as much as the read."""
    best = dict(max(runs, key=lambda r: r["rate"]))
    best["rates"] = [r["rate"] for r in runs]
    best["median_rate"] = statistics.median(best["rates"])
    cpus = [r["cpu_seconds_per_million_rows"] for r in runs if "cpu_seconds_per_million_rows" in r]
    if cpus:
        best["median_cpu_seconds_per_million_rows"] = {
            kind: statistics.median(c[kind] for c in cpus) for kind in cpus[0]
        }
    return best


def _cpu_line(r: dict[str, Any]) -> str:
    """The median rate and CPU seconds per million rows of warm runs (:func:`_best`)."""
    cpu = r.get("median_cpu_seconds_per_million_rows", {})
    return f"{'    median':<28}{r['median_rate']:>12,.0f}{'':>10}  CPU s per 1M rows: " + (
        ", ".join(f"{kind} {seconds:.3f}" for kind, seconds in cpu.items()) or "n/a"
    )


def _elapsed(phase: str) -> Callable[[], str]:
    start = time.monotonic()
    return lambda: f"{phase}: {time.monotonic() - start:.0f} s"


def write_records(towers: str, topic: str, n: int, size: int) -> tuple[str, float]:
    from dafka import Producer

    payload = b"x" * size
    with Producer(topic, towers=towers) as producer:
        producer.send(b"w" * size).result(timeout=60)  # connected to the store
        t0 = time.perf_counter()

        def acked() -> str:
            return f"writing: {producer.acknowledged:,} of {n:,} records acknowledged"

        with PROGRESS.ticking(acked):
            for start in range(0, n - 1, 10_000):
                producer.send_many([payload] * min(10_000, n - 1 - start))
            producer.flush(600)
        return producer.partition, (n - 1) / (time.perf_counter() - t0)


def baseline(
    endpoint: str,
    topic: str,
    partition: str,
    n: int,
    verify: bool,
    arrow: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Read offsets 0..n-1 with the raw query client; ``verify``: also decode (and, for
    signed batches, check every signature) record by record; ``arrow``: verify and decode
    into Arrow batches of those columns, as an executor does (and report this process's CPU
    seconds per million rows doing so: ``decode_cpu_seconds_per_million_rows``)."""
    from dafka.query import QueryClient, verified_batches
    from dafka.spark.arrow_columns import signed_reply_chunks

    phase = "query client, " + ("into Arrow" if arrow else "verify" if verify else "raw")
    t0 = time.perf_counter()
    first_reply = None
    count = 0
    decode_cpu = 0.0
    with QueryClient(endpoint, timeout=60) as client:
        for reply in client.read_range(topic, partition, 0, n):
            if PROGRESS.due():
                PROGRESS.update(f"{phase}: {count:,} of {n:,} records read")
            if first_reply is None:
                first_reply = time.perf_counter() - t0
            if arrow:
                cpu0 = time.process_time()
                chunks = list(signed_reply_chunks(reply, 0, n, arrow))
                decode_cpu += time.process_time() - cpu0
                count += sum(len(c[arrow[0]]) for c in chunks)
            elif verify:
                count += sum(len(recs) for _, _, recs in verified_batches(reply))
            else:
                count += reply.next_offset - reply.first  # type: ignore[operator]
    seconds = time.perf_counter() - t0
    PROGRESS.end(f"{phase}: {count:,} of {n:,} records read")
    assert count == n, (count, n)
    return {
        "records": count,
        "seconds": seconds,
        "rate": count / seconds,
        "first_reply_seconds": first_reply,
        "profile": reply.profile,
        "decode_cpu_seconds_per_million_rows": decode_cpu * 1e6 / n if arrow else None,
    }


def wait_for_head(endpoint: str, topic: str, partition: str, head: int) -> None:
    """Until the store at ``endpoint`` holds ``partition`` up to ``head`` (at most 300 s)."""
    from dafka.query import QueryClient

    deadline = time.monotonic() + 300
    with QueryClient(endpoint, timeout=10) as client, PROGRESS.ticking(_elapsed("second store")):
        while time.monotonic() < deadline:
            heads = {(p.topic, p.partition): p.head for p in client.heads([topic])}
            if heads.get((topic, partition)) == head:
                return
            time.sleep(0.2)
    raise RuntimeError(f"{endpoint} did not catch up to {topic}/{partition} {head}")


def spark_session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dafka-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def micro_batch(spark, towers: str, topic: str, n: int, tasks: int) -> dict[str, float]:
    from pyspark.sql import functions as F

    seen: dict[str, float] = {}

    def on_batch(df, batch_id: int) -> None:
        if "first" in seen:
            return
        seen["first"] = time.perf_counter()
        row = df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).first()
        seen["done"] = time.perf_counter()
        seen["rows"] = row["n"]
        seen["bytes"] = row["bytes"]

    with tempfile.TemporaryDirectory() as ckpt:
        t0 = time.perf_counter()
        query = (
            spark.readStream.format("dafka")
            .option("tower", towers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxRecordsPerPartition", str(-(-n // tasks)))
            .load()
            .writeStream.foreachBatch(on_batch)
            .trigger(availableNow=True)
            .option("checkpointLocation", ckpt)
            .start()
        )
        with PROGRESS.ticking(_elapsed("spark micro-batch")):
            query.awaitTermination(900)
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
    assert seen.get("rows") == n, seen
    seconds = seen["done"] - seen["first"]
    return {
        "records": n,
        "time_to_first_batch": seen["first"] - t0,
        "batch_seconds": seconds,
        "rate": n / seconds,
        "end_to_end_seconds": seen["done"] - t0,
    }


def _timed(what: str, n: int, load: Callable[[], Any]) -> dict[str, object]:
    """One timed run of the query every batch phase makes: ``load()`` a DataFrame, then
    count its ``n`` rows and sum their values' lengths."""
    from pyspark.sql import functions as F

    cpu0 = _cpu_by_kind()
    t0 = time.perf_counter()
    with PROGRESS.ticking(_elapsed(what)):
        row = load().agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).first()
    seconds = time.perf_counter() - t0
    cpu1 = _cpu_by_kind()
    assert row["n"] == n, row
    return {
        "records": n,
        "seconds": seconds,
        "rate": n / seconds,
        "cpu_seconds_per_million_rows": {
            kind: (cpu1[kind] - cpu0.get(kind, 0.0)) * 1e6 / n for kind in cpu1
        },
    }


def _cold_then_warm(what: str, n: int, repeat: int, load: Callable[[], Any]) -> dict[str, Any]:
    """:func:`_timed` once cold, then ``repeat`` times warm (the fastest of those)."""
    runs = [_timed(f"{what} run {k + 1}", n, load) for k in range(1 + repeat)]
    return {"cold": runs[0], "warm": _best(runs[1:])}


def batch_read(
    spark, towers: str, topic: str, n: int, tasks: int, schema: str | None = None, **options: str
) -> dict[str, object]:
    def load():
        reader = spark.read.format("dafka")
        if schema is not None:
            reader = reader.schema(schema)
        return (
            reader.option("tower", towers)
            .option("subscribe", topic)
            .option("maxRecordsPerPartition", str(-(-n // tasks)))
            .options(**options)
            .load()
        )

    return _timed("spark batch read", n, load)


def parquet(
    spark, directory: Path, n: int, size: int, partition: str, repeat: int = 1
) -> dict[str, dict[str, float]]:
    """The source's columns for the same rows in local parquet, read and aggregated alike."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "key": pa.nulls(n, pa.binary()),
            "value": pa.array([b"x" * size] * n, pa.binary()),
            "topic": pa.repeat(pa.scalar("bench.spark"), n),
            "partition": pa.repeat(pa.scalar(partition), n),
            "offset": pa.arange(0, n),
            "timestamp": pa.repeat(pa.scalar(0, pa.timestamp("us", tz="UTC")), n),
        }
    )
    path = directory / "rows.parquet"
    pq.write_table(table, path, row_group_size=max(1, n // 8))
    return _cold_then_warm("parquet", n, repeat, lambda: spark.read.parquet(str(path)))


def floor(
    spark, n: int, size: int, tasks: int, partition: str, schema: str | None = None, repeat: int = 1
) -> dict[str, dict[str, float]]:
    """Rows/s of a Python data source whose tasks yield ready-made Arrow batches (of the
    columns ``schema`` names, when given)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from dafka.spark.source import SCHEMA

    per_batch = max(1, min(n, (4 * 1024 * 1024) // (size + 8)))  # records a 4 MiB READ holds
    shares = [n // tasks + (1 if i < n % tasks else 0) for i in range(tasks)]

    class Reader(DataSourceReader):
        def __init__(self, schema) -> None:
            self.schema = schema

        def partitions(self):
            return [InputPartition(rows) for rows in shares if rows]

        def read(self, part):
            import pyarrow as pa
            from pyspark.sql.pandas.types import to_arrow_schema

            arrow_schema = to_arrow_schema(self.schema, timezone="UTC")

            def rows(count: int):
                columns = {
                    "key": pa.nulls(count, pa.binary()),
                    "value": pa.array([b"x" * size] * count, pa.binary()),
                    "topic": pa.array(["bench.spark"] * count, pa.string()),
                    "partition": pa.array([partition] * count, pa.string()),
                    "offset": pa.arange(0, count),
                    "timestamp": pa.array([0] * count, pa.timestamp("us", tz="UTC")),
                    "timestampType": pa.array([0] * count, pa.int32()),
                }
                return pa.RecordBatch.from_arrays(
                    [columns[f.name] for f in arrow_schema], schema=arrow_schema
                )

            full = rows(per_batch)
            left = part.value
            while left > 0:
                yield full if left >= per_batch else rows(left)
                left -= per_batch

    class Floor(DataSource):
        @classmethod
        def name(cls) -> str:
            return "dafka_bench_floor"

        def schema(self) -> str:
            return SCHEMA

        def reader(self, schema):
            return Reader(schema)

    spark.dataSource.register(Floor)

    def load():
        reader = spark.read.format("dafka_bench_floor")
        return (reader if schema is None else reader.schema(schema)).load()

    return _cold_then_warm("floor", n, repeat, load)


def _load() -> list[str]:
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=4, help="Spark tasks the range is split into")
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="warm runs of each Spark and parquet phase; the fastest is reported (all in the JSON)",
    )
    ap.add_argument(
        "--failover", action="store_true", help="also read with one of two stores killed"
    )
    ap.add_argument(
        "--no-progress", action="store_true", help="no status line on stderr (a terminal only)"
    )
    args = ap.parse_args()
    global PROGRESS, STORE_PID
    PROGRESS = Progress(False if args.no_progress else None)

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.procs import StoreProc, Tower

    n, topic = args.records, "bench.spark"
    load_start = _load()
    tower = Tower()
    with tempfile.TemporaryDirectory(prefix="dafka-bench-") as data:
        store = StoreProc(Path(data) / "store", tower.address)
        STORE_PID = store.proc.p.pid
        second = StoreProc(Path(data) / "store2", tower.address) if args.failover else None
        fo = None
        try:
            print(f"writing {n} records of {args.size} B ...", file=sys.stderr)
            partition, write_rate = write_records(tower.address, topic, n, args.size)
            print("raw query client ...", file=sys.stderr)
            raw = baseline(store.query_endpoint, topic, partition, n, verify=False)
            base = baseline(store.query_endpoint, topic, partition, n, verify=True)
            from dafka.spark.arrow_columns import SIGNED_COLUMNS

            arrow = baseline(store.query_endpoint, topic, partition, n, True, SIGNED_COLUMNS)
            arrow_one = baseline(store.query_endpoint, topic, partition, n, True, ("value",))
            print("spark ...", file=sys.stderr)
            spark = spark_session()
            try:
                tasks, again = args.tasks, range(args.repeat)
                mb = micro_batch(spark, tower.address, topic, n, tasks)
                mb_warm = _best([micro_batch(spark, tower.address, topic, n, tasks) for _ in again])
                br = batch_read(spark, tower.address, topic, n, tasks)
                br_warm = _best([batch_read(spark, tower.address, topic, n, tasks) for _ in again])
                print("parquet ...", file=sys.stderr)
                pq = parquet(spark, Path(data), n, args.size, partition, args.repeat)
                print("floor ...", file=sys.stderr)
                fl = floor(spark, n, args.size, tasks, partition, repeat=args.repeat)
                print("value column alone ...", file=sys.stderr)
                one = batch_read(spark, tower.address, topic, n, tasks, VALUE_ONLY)
                one_warm = _best(
                    [batch_read(spark, tower.address, topic, n, tasks, VALUE_ONLY) for _ in again]
                )
                fl_one = floor(spark, n, args.size, tasks, partition, VALUE_ONLY, args.repeat)
                if second is not None:
                    wait_for_head(second.query_endpoint, topic, partition, n - 1)
                    print("failover: first store killed ...", file=sys.stderr)
                    store.kill()
                    # both named, the dead one first (a fresh locator would not hear it)
                    given = f"{store.query_endpoint},{second.query_endpoint}"
                    fo = batch_read(spark, tower.address, topic, n, args.tasks, stores=given)
            finally:
                spark.stop()
        finally:
            store.kill()
            if second is not None:
                second.kill()
            tower.stop()

    load_end = _load()
    result = {
        "benchmark": "spark_read",
        "load_average_at_start": load_start,
        "load_average_at_end": load_end,
        "records": n,
        "size": args.size,
        "profile": base["profile"],
        "tasks": args.tasks,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "write_rate": write_rate,
        "baseline_query_client_raw": raw,
        "baseline_query_client": base,
        "baseline_query_client_arrow": arrow,
        "baseline_query_client_arrow_value_only": arrow_one,
        "micro_batch": mb,
        "micro_batch_warm": mb_warm,
        "batch_read": br,
        "batch_read_warm": br_warm,
        "parquet": pq,
        "floor": fl,
        "ratio_micro_batch_to_baseline": mb["rate"] / base["rate"],
        "ratio_batch_read_to_baseline": br["rate"] / base["rate"],
        "ratio_warm_batch_read_to_parquet": br_warm["rate"] / pq["warm"]["rate"],
        "ratio_warm_micro_batch_to_parquet": mb_warm["rate"] / pq["warm"]["rate"],
        "ratio_warm_floor_to_parquet": fl["warm"]["rate"] / pq["warm"]["rate"],
        "ratio_warm_batch_read_to_floor": br_warm["rate"] / fl["warm"]["rate"],
        "failover_batch_read": fo,
        "value_only": {"batch_read": one, "batch_read_warm": one_warm, "floor": fl_one},
        "ratio_warm_value_only_read_to_parquet": one_warm["rate"] / pq["warm"]["rate"],
        "ratio_warm_value_only_floor_to_parquet": fl_one["warm"]["rate"] / pq["warm"]["rate"],
        "ratio_median_value_only_read_to_parquet": one_warm["median_rate"]
        / pq["warm"]["median_rate"],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"spark_read-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'phase':<28}{'rows/s':>12}{'seconds':>10}")
    print(f"{'producer write (acked)':<28}{write_rate:>12,.0f}{'':>10}")
    print(f"{'query client, raw READs':<28}{raw['rate']:>12,.0f}{raw['seconds']:>10.2f}")
    print(f"{'baseline: + decode/verify':<28}{base['rate']:>12,.0f}{base['seconds']:>10.2f}")
    for name, r in (("  into Arrow columns", arrow), ("  into Arrow, value only", arrow_one)):
        print(
            f"{name:<28}{r['rate']:>12,.0f}{r['seconds']:>10.2f}  decode CPU s per 1M rows: "
            f"{r['decode_cpu_seconds_per_million_rows']:.3f}"
        )
    for name, r in (("spark micro-batch", mb), ("  warm", mb_warm)):
        print(f"{name:<28}{r['rate']:>12,.0f}{r['batch_seconds']:>10.2f}")
        print(f"{'    time to first batch':<28}{'':>12}{r['time_to_first_batch']:>10.2f}")
    for name, r in (("spark batch read", br), ("  warm", br_warm)):
        print(f"{name:<28}{r['rate']:>12,.0f}{r['seconds']:>10.2f}")
    print(_cpu_line(br_warm))
    for run in ("cold", "warm"):
        r = pq[run]
        print(f"{'parquet ' + run:<28}{r['rate']:>12,.0f}{r['seconds']:>10.2f}")
    print(_cpu_line(pq["warm"]))
    r = fl["warm"]
    print(f"{'floor (no-op source) warm':<28}{r['rate']:>12,.0f}{r['seconds']:>10.2f}")
    print(_cpu_line(r))
    for name, r in (("value column alone", one), ("  warm", one_warm)):
        print(f"{name:<28}{r['rate']:>12,.0f}{r['seconds']:>10.2f}")
    print(_cpu_line(one_warm))
    r = fl_one["warm"]
    print(f"{'  floor warm':<28}{r['rate']:>12,.0f}{r['seconds']:>10.2f}")
    print(_cpu_line(r))
    if fo is not None:
        print(f"{'batch read, 1 of 2 killed':<28}{fo['rate']:>12,.0f}{fo['seconds']:>10.2f}")
    print(f"ratio micro-batch / baseline: {result['ratio_micro_batch_to_baseline']:.2f}")
    print(f"ratio warm batch read / warm parquet: {result['ratio_warm_batch_read_to_parquet']:.2f}")
    print(
        f"ratio warm micro-batch / warm parquet: {result['ratio_warm_micro_batch_to_parquet']:.2f}"
    )
    print(f"ratio warm floor / warm parquet: {result['ratio_warm_floor_to_parquet']:.2f}")
    print(f"ratio warm batch read / warm floor: {result['ratio_warm_batch_read_to_floor']:.2f}")
    print(
        "value column alone, ratio warm read / warm parquet: "
        f"{result['ratio_warm_value_only_read_to_parquet']:.2f}, "
        f"floor / parquet: {result['ratio_warm_value_only_floor_to_parquet']:.2f}; "
        f"medians read / parquet: {result['ratio_median_value_only_read_to_parquet']:.2f}"
    )
    print(f"load average {' '.join(load_start)} at the start, {' '.join(load_end)} at the end")
    print(json.dumps(result))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
