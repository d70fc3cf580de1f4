"""Child processes for the benchmarks: each prints one JSON line with its timings."""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time
from typing import TYPE_CHECKING

import zmq

from benchmarks.segment import Segment

if TYPE_CHECKING:
    from dafka import RecordBatch

_STAMP = struct.Struct(">Q")


def _percentiles(latencies_ns: list[int]) -> dict[str, float]:
    """p50 / p99 / p99.9 / max in microseconds."""
    if not latencies_ns:
        return {}
    ordered = sorted(latencies_ns)
    n = len(ordered)

    def at(q: float) -> float:
        return ordered[min(n - 1, int(q * n))] / 1000.0

    return {"p50_us": at(0.50), "p99_us": at(0.99), "p999_us": at(0.999), "max_us": at(1.0)}


def raw_sub(endpoint: str, count: int, latency: bool) -> dict[str, object]:
    """Baseline receiver: a plain pyzmq SUB counting messages (and their latency)."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(endpoint)
    print(json.dumps({"ready": True}), flush=True)
    first = 0.0
    got = 0
    lat: list[int] = []
    while got < count:
        frames = sub.recv_multipart()
        if latency:
            lat.append(time.monotonic_ns() - _STAMP.unpack_from(frames[1])[0])
        if got == 0:
            first = time.perf_counter()
        got += 1
    out: dict[str, object] = {"first": first, "last": time.perf_counter(), "count": got}
    if latency:
        out.update(_percentiles(lat[len(lat) // 10 :]))  # skip the warm-up tenth
    return out


RAW_STORE_QUEUE = 4
"""Messages the raw store's reader hands its writer at most: the data SUB's high-water mark
in a store. Larger commits measured slower here (scratch runs of 1M records, up to 16 a
commit: 2.0-2.6M records/s, against 4.5-5.2M)."""


def raw_store(
    endpoint: str, acks: str, directory: str, count: int, direct: bool = False
) -> dict[str, object]:
    """The least a store does, on the wire: a SUB reads each batch (one message), a writer
    thread puts the batches the reader queued meanwhile (``RAW_STORE_QUEUE`` at most) into
    one LMDB transaction synced on commit (LMDB's default), then sends the count stored so
    far on a PUSH. No decoding, no signatures, no checks, no heads: the floor under
    ``acked`` (``baseline_store``).

    ``direct``: the batches go to a segment file instead, through ``O_DIRECT`` (copied
    into one page-aligned buffer, written, ``fdatasync``), and only their index (where each
    one is) into the synced LMDB transaction: the floor under a store built so
    (``docs/performance.md``), which never copies a batch into the page cache."""
    import queue
    import threading

    import lmdb

    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, RAW_STORE_QUEUE)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(endpoint)
    env = lmdb.open(directory, map_size=1 << 40)
    segment = Segment(os.path.join(directory, "segment"), direct=True) if direct else None
    received: queue.Queue[memoryview] = queue.Queue(maxsize=RAW_STORE_QUEUE)
    commits = [0]

    def write() -> None:
        ack = ctx.socket(zmq.PUSH)
        ack.connect(acks)
        stored = 0
        while stored < count:
            batch = [received.get()]
            while len(batch) < RAW_STORE_QUEUE:
                try:
                    batch.append(received.get_nowait())
                except queue.Empty:
                    break
            if segment is None:
                with env.begin(write=True) as txn:
                    for blob in batch:
                        stored += 1
                        txn.put(_STAMP.pack(stored), blob)
            else:
                index = []
                for blob in batch:
                    stored += 1
                    index.append(
                        (_STAMP.pack(stored), _STAMP.pack(segment.at) + _STAMP.pack(len(blob)))
                    )
                    segment.append(blob)
                segment.sync()
                with env.begin(write=True) as txn:
                    for key, where in index:
                        txn.put(key, where)
            commits[0] += 1
            ack.send(b"%d" % stored)
        ack.close(linger=1000)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    print(json.dumps({"ready": True}), flush=True)
    for _ in range(count):
        received.put(sub.recv_multipart(copy=False)[-1].buffer)  # [header, blob]
    writer.join()
    env.close()
    if segment is not None:
        segment.close()
    return {"count": count, "commits": commits[0]}


def dafka_consume(
    tower: str,
    topic: str,
    count: int,
    reset: str,
    profile: str,
    latency: bool,
    batches: bool,
    curve: bool = False,
) -> dict[str, object]:
    """Read ``count`` records with ``poll_batch`` (ConsumedRecord objects) or ``poll_batches``.

    With ``batches`` (and not ``latency``), what a columnar application does: per run, count
    its records and add up its values' lengths, read from the column's lengths
    (``values.lengths``, a C loop over one u32 per record) where the run has a column, else
    ``len`` of each value; no object per record is made. Reports ``value_bytes`` (that total)
    and the process's CPU seconds (every thread) from the first record to the last."""
    from dafka import Consumer
    from dafka.api.common import node_config
    from dafka.io.collector import freeze_heap

    with Consumer(
        topic,
        towers=tower,
        node=node_config(tower, curve=True) if curve else None,
        offset_reset=reset,  # type: ignore[arg-type]
        profile=profile,  # type: ignore[arg-type]
        max_backlog=1_000_000,
    ) as consumer:
        freeze_heap()  # as the dafka-consumer command does
        print(json.dumps({"ready": True}), flush=True)
        got = 0
        value_bytes = 0
        first = 0.0
        cpu_first = 0.0
        started = time.perf_counter()
        lat: list[int] = []
        unpack = _STAMP.unpack_from
        while got < count:
            if batches:
                runs = consumer.poll_batches(100_000, timeout=60)
                if not runs:
                    break
                values = [v for run in runs for v in run.values] if latency else []
                n = sum(len(run.values) for run in runs)
                value_bytes += sum(map(_length_total, runs))
            else:
                batch = consumer.poll_batch(100_000, timeout=60)
                if not batch:
                    break
                values = [r.value for r in batch] if latency else []
                n = len(batch)
            if latency:
                now = time.monotonic_ns()
                lat.extend(now - unpack(v)[0] for v in values if v is not None and len(v) >= 8)
            if got == 0:
                first = time.perf_counter()
                cpu_first = time.process_time()
            got += n
        out: dict[str, object] = {
            "first": first,
            "last": time.perf_counter(),
            "count": got,
            "started": started,
            "cpu_seconds": time.process_time() - cpu_first,
            "value_bytes": value_bytes,
        }
        if latency:
            out.update(_percentiles(lat[len(lat) // 10 :]))
        return out


def _length_total(run: RecordBatch) -> int:
    """The sum of a run's value lengths: from its column's lengths, else one ``len`` each."""
    lengths = getattr(run.values, "lengths", None)
    return sum(lengths) if lengths is not None else run.value_bytes


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """Resident set size of process ``pid`` (Linux ``/proc``); ``field="RssAnon"``: only its
    anonymous memory (heap and stacks), without the pages of files it maps (a store's LMDB
    map, resident as it is read or written)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for process {pid}")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the live threads of process ``pid`` have used, to the
    nanosecond: the sum of each thread's run time (Linux ``/proc/PID/task/TID/schedstat``).

    ``/proc/PID/stat`` gives the same total in clock ticks (10 ms): a worker of two idle
    nodes spent less than one in a 3 s window, and read 0. A thread that ends takes its time
    with it, so this is for processes whose threads live through the window (a worker's
    nodes, a tower)."""
    import os

    total = 0
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile
    return total / 1e9


def producer_memory(tower: str, budget: int, size: int, seconds: float) -> dict[str, object]:
    """Fill a producer's unacknowledged budget where no store acknowledges; report its RSS.

    ``seconds``: send for that long instead, blocking while the budget is full (a slow
    store: the caller stops and continues it), and report the highest RSS seen."""
    import os

    from dafka import BufferFullError, Producer

    if seconds > 0:
        return _producer_memory_slow(tower, budget, size, seconds)

    with Producer(
        "bench-memory", towers=tower, max_unacked_bytes=budget, on_full="raise"
    ) as producer:
        print(json.dumps({"ready": True}), flush=True)
        before = rss_bytes(os.getpid())
        queued = 0
        for _ in range(budget // (size * 10_000) + 10):  # bounded: the budget fills first
            chunk = [b"x" * size for _ in range(10_000)]  # new records, as a caller's are
            try:
                producer.send_many(chunk)
            except BufferFullError:
                break
            queued += len(chunk)
        del chunk  # the caller's refused records are not the producer's memory
        after = rss_bytes(os.getpid())
        producer.close(timeout=0)
    return {
        "count": 1,
        "budget_bytes": budget,
        "queued_records": queued,
        "rss_before": before,
        "rss_full": after,
        "growth_bytes": after - before,
    }


def _producer_memory_slow(tower: str, budget: int, size: int, seconds: float) -> dict[str, object]:
    import os

    from dafka import Producer

    with Producer("bench-memory-slow", towers=tower, max_unacked_bytes=budget) as producer:
        print(json.dumps({"ready": True}), flush=True)
        before = peak = rss_bytes(os.getpid())
        sent = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:  # bounded in time; send blocks while full
            producer.send_many([b"x" * size for _ in range(10_000)])
            sent += 10_000
            peak = max(peak, rss_bytes(os.getpid()))
        producer.flush(120)
    return {
        "count": 1,
        "budget_bytes": budget,
        "sent_records": sent,
        "rss_before": before,
        "rss_peak": peak,
        "growth_bytes": peak - before,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["raw-sub", "raw-store", "consume", "producer-memory"])
    ap.add_argument("--budget", type=int, default=64 << 20)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=0.0, help="producer-memory: a slow store")
    ap.add_argument("--endpoint", default="")
    ap.add_argument("--acks", default="", help="raw-store: where to PUSH its ACKs")
    ap.add_argument("--dir", default="", help="raw-store: its LMDB directory")
    ap.add_argument("--direct", action="store_true", help="raw-store: O_DIRECT segment")
    ap.add_argument("--tower", default="")
    ap.add_argument("--topic", default="bench")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--reset", default="latest")
    ap.add_argument("--profile", default="signed")
    ap.add_argument("--latency", action="store_true", help="values start with monotonic_ns")
    ap.add_argument("--batches", action="store_true", help="consume with poll_batches")
    ap.add_argument("--curve", action="store_true", help="ZMTP CURVE on every socket")
    a = ap.parse_args()
    if a.kind == "raw-sub":
        result = raw_sub(a.endpoint, a.count, a.latency)
    elif a.kind == "raw-store":
        result = raw_store(a.endpoint, a.acks, a.dir, a.count, a.direct)
    elif a.kind == "producer-memory":
        result = producer_memory(a.tower, a.budget, a.size, a.seconds)
    else:
        from dafka.io.malloc import keep_freed_memory

        keep_freed_memory()  # as the dafka-consumer command does
        result = dafka_consume(
            a.tower, a.topic, a.count, a.reset, a.profile, a.latency, a.batches, a.curve
        )
    print(json.dumps(result), flush=True)
    sys.exit(0 if int(result["count"]) >= a.count else 1)  # type: ignore[call-overload]


if __name__ == "__main__":
    main()
