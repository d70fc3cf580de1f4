"""The raw baselines of ``benchmarks.throughput``, each measured in the same run as Dafka's
phases: pyzmq PUB/SUB one message per record, the same with the records of a Dafka batch in
one message, LMDB with one synced transaction per batch, and raw PUB/SUB latency at a paced
rate. The subscribers run in another process (``benchmarks.workers``).
"""

from __future__ import annotations

import inspect
import json
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import zmq

from dafka import Producer

__all__ = [
    "RECORD_OVERHEAD",
    "baseline",
    "baseline_batched",
    "baseline_latency",
    "baseline_lmdb",
    "baseline_store",
    "paced",
    "worker_ready",
    "records_per_batch",
    "worker_result",
    "stamped",
    "start_worker",
]

_STAMP = struct.Struct(">Q")


def start_worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.workers", *args],
        stdout=subprocess.PIPE,
        text=True,
    )


def worker_ready(p: subprocess.Popen[str]) -> None:
    assert p.stdout is not None
    line = p.stdout.readline()
    if '"ready"' not in line:
        raise RuntimeError(f"worker did not start: {line!r}")


def worker_result(p: subprocess.Popen[str], timeout: float = 900) -> dict[str, float]:
    out, _ = p.communicate(timeout=timeout)
    return json.loads(out.strip().splitlines()[-1])


def _raw_pub(
    n: int, size: int, latency: bool = False, worker_args: tuple[str, ...] = ("raw-sub",)
) -> tuple[zmq.Socket, subprocess.Popen]:
    ctx: zmq.Context = zmq.Context.instance()
    pub = ctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.SNDHWM, 0)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    args = [*worker_args, "--endpoint", f"tcp://127.0.0.1:{port}", "--count", str(n)]
    worker = start_worker(*args, *(["--latency"] if latency else []))
    worker_ready(worker)
    # an XPUB hears the SUB's subscription: only then is the path open
    if not pub.poll(30_000, zmq.POLLIN):
        raise RuntimeError("baseline subscriber never subscribed")
    pub.recv()
    return pub, worker


RECORD_OVERHEAD = 8
"""Bytes a batch spends per record besides its value (our estimate: lengths and framing)."""

_HEADER = b"M" + b"bench" + b"\0\x01" + b"\x20" + b"A" * 32 + b"\x05bench" + bytes(8)


def baseline(n: int, size: int) -> dict[str, float]:
    pub, worker = _raw_pub(n, size)
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        pub.send_multipart([_HEADER, payload])
    r = worker_result(worker)
    pub.close(0)
    return {"records": n, "seconds": r["last"] - t0, "rate": n / (r["last"] - t0)}


def records_per_batch(size: int) -> int:
    """How many SIZE-byte records one Dafka batch holds with the Producer's defaults."""
    params = inspect.signature(Producer).parameters
    most = int(params["max_batch_records"].default)
    room = int(params["max_batch_bytes"].default) // (size + RECORD_OVERHEAD)
    return max(1, min(most, room))


def _batches(n: int, per_batch: int) -> Iterator[int]:
    """The record counts of the batches that carry ``n`` records, ``per_batch`` at most."""
    full, rest = divmod(n, per_batch)
    yield from [per_batch] * full
    if rest:
        yield rest


def baseline_batched(n: int, size: int, per_batch: int) -> dict[str, float]:
    """Raw PUB/SUB with the records of each batch in one message."""
    counts = list(_batches(n, per_batch))
    pub, worker = _raw_pub(len(counts), size)
    values = [b"x" * size] * n  # what a caller hands to send_many
    t0 = time.perf_counter()
    start = 0
    for c in counts:  # each message built from its records, as a batch is
        pub.send_multipart([_HEADER, b"".join(values[start : start + c])])
        start += c
    r = worker_result(worker)
    pub.close(0)
    seconds = r["last"] - t0
    return {"records": n, "messages": len(counts), "seconds": seconds, "rate": n / seconds}


def baseline_lmdb(n: int, size: int, per_batch: int, directory: Path) -> dict[str, float]:
    """Each batch appended to LMDB in its own transaction, synced (LMDB's default) on commit."""
    import lmdb

    counts = list(_batches(n, per_batch))
    record = b"x" * size
    env = lmdb.open(str(directory), map_size=4 * n * (size + RECORD_OVERHEAD) + (64 << 20))
    try:
        t0 = time.perf_counter()
        offset = 0
        for c in counts:
            with env.begin(write=True) as txn:
                txn.put(struct.pack(">Q", offset + c - 1), record * c)
            offset += c
        seconds = time.perf_counter() - t0
    finally:
        env.close()
    return {"records": n, "transactions": len(counts), "seconds": seconds, "rate": n / seconds}


def baseline_store(
    n: int, size: int, per_batch: int, directory: Path, budget: int, direct: bool = False
) -> dict[str, float]:
    """Raw PUB/SUB batches (as ``baseline_batched``) to ``benchmarks.workers``' raw store,
    which commits them to LMDB, synced, and acknowledges; at most ``budget`` bytes of
    batches unacknowledged, as a producer's ``max_unacked_bytes``. What a store must do at
    least, on the wire: the floor under the ``acked`` phase. ``direct``: the raw store
    writes the batches through ``O_DIRECT`` and commits only their index to LMDB."""
    counts = list(_batches(n, per_batch))
    ctx: zmq.Context = zmq.Context.instance()
    acks = ctx.socket(zmq.PULL)
    port = acks.bind_to_random_port("tcp://127.0.0.1")
    worker_args = ("raw-store", "--acks", f"tcp://127.0.0.1:{port}", "--dir", str(directory))
    pub, worker = _raw_pub(
        len(counts), size, worker_args=(*worker_args, "--direct") if direct else worker_args
    )
    values = [b"x" * size] * n
    t0 = time.perf_counter()
    sent = acked = start = held = 0
    sizes: list[int] = []  # bytes of each batch sent
    while acked < len(counts):
        while sent < len(counts) and (held == 0 or held < budget):
            blob = b"".join(values[start : start + counts[sent]])
            pub.send_multipart([_HEADER, blob])
            start += counts[sent]
            sent += 1
            sizes.append(len(blob))
            held += len(blob)
        if not acks.poll(60_000):
            raise RuntimeError("the raw store stopped acknowledging")
        stored = int(acks.recv())
        held -= sum(sizes[acked:stored])
        acked = stored
    seconds = time.perf_counter() - t0
    r = worker_result(worker)
    pub.close(0)
    acks.close(0)
    return {
        "records": n,
        "messages": len(counts),
        "commits": r["commits"],
        "seconds": seconds,
        "rate": n / seconds,
    }


def paced(rate: float, seconds: float) -> Iterator[int]:
    """Yield how many records are due now, keeping to ``rate`` per second."""
    total = int(rate * seconds)
    sent = 0
    t0 = time.perf_counter()
    while sent < total:
        due = min(total, int((time.perf_counter() - t0) * rate) + 1)
        if due > sent:
            yield due - sent
            sent = due
        else:
            time.sleep(0.0002)


def stamped(size: int) -> bytes:
    return _STAMP.pack(time.monotonic_ns()) + b"x" * (size - 8)


def baseline_latency(rate: float, seconds: float, size: int) -> dict[str, float]:
    n = int(rate * seconds)
    pub, worker = _raw_pub(n, size, latency=True)
    for due in paced(rate, seconds):
        for _ in range(due):
            pub.send_multipart([_HEADER, stamped(size)])
    r = worker_result(worker)
    pub.close(0)
    return {k: v for k, v in r.items() if k.endswith("_us")} | {"records": n, "rate": rate}
