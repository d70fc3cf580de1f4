"""Raft commits per second and update latency on three local peers, against raw baselines.

    python -m benchmarks.raft [--updates 20000] [--latency-updates 2000] [--size 100]
                              [--window 64] [--failovers 5] [--no-fsync] [--fsync-thread]
                              [--dir DIR] [--no-floor] [--no-reference]
                              [--no-progress] [--per-thread]

Three ``dafka-raft peer`` processes on 127.0.0.1 (fsync on unless ``--no-fsync``, on
their loop unless ``--fsync-thread``, ``docs/raft.md`` §7; default timing and compaction settings), one :class:`~dafka.raft.client.RaftClient`
in this process. Phases, each measured in the same run:

* baseline fsync   ``FileStorage.append`` of one entry + ``fdatasync``, back to back,
                   in the benchmark's directory: the disk's durable append rate
* baseline rtt     a raw pyzmq DEALER -> ROUTER echo in another process: round trips
* 1 in flight      ``update`` one after another: commits/s and latency p50/p99
* 64 in flight     ``update_many(window=64)``: commits/s, and the CPU time (user +
                   system, every thread) each peer process and this client process
                   spent per update meanwhile, from ``/proc/<pid>/stat`` (Linux): the
                   peers and the client share the machine's cores, so this is what
                   caps the rate (``docs/raft.md`` §8); and the same per thread (the
                   loop, libzmq's I/O thread) with its context switches, in the JSON
                   and, with ``--per-thread``, printed
* failover         ``--failovers`` times: SIGKILL the leader, time until a survivor
                   answers RequestConfig as leader, and until an update sent to it then
                   commits (the figure of the goal); the killed peer is restarted
* floor            the N-in-flight phase again, same client, on
                   :mod:`benchmarks.raft_floor`'s three processes, which do the I/O of
                   replication and nothing else (skip with ``--no-floor``): the most a
                   Python peer on pyzmq could reach on this machine
* reference        when node and npm are here (``make reference`` installs it; skip
                   with ``--no-reference``): the warm-up, 1-in-flight and N-in-flight
                   phases again, same client, on three ØMQ RAFT reference peers (npm
                   zmq-raft 0.5.0, which fdatasyncs its log; ``--no-fsync`` skips it),
                   and the ratios ours/reference

On a terminal, a status line on stderr says which phase runs and how far it got
(``--no-progress``: none). Every update is a KV ``put`` of ``--size`` bytes. Prints a table and writes JSON to
benchmarks/results/raft-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import zmq

from benchmarks.raft_floor import start_floor
from benchmarks.workers import cpu_seconds
from dafka.cli.progress import Progress
from dafka.errors import DafkaError
from dafka.raft.client import RaftClient
from dafka.raft.codec import Entry, EntryType
from dafka.raft.peer import FileStorage, put_command
from tests.interop.reference import VERSION as REFERENCE_VERSION
from tests.interop.reference import (
    Kind,
    MixedCluster,
    ReferenceUnavailable,
    ensure_installed,
)
from tests.procs import Proc, free_port, py, wait_until

RESULTS = Path(__file__).resolve().parent / "results"
PEER_EXTRA: list[str] = []
"""Extra ``dafka-raft peer`` options for every peer of ours (``--fsync-thread``)."""
CLUSTER = "bench"

_ECHO = """
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.ROUTER)
port = s.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
while True:
    frames = s.recv_multipart()
    if frames[1] == b"stop":
        break
    s.send_multipart(frames)
"""


PROGRESS = Progress(False)
"""The status line on stderr (main() turns it on when stderr is a terminal)."""
_status = ["starting"]


def _phase(text: str) -> None:
    """What the status line shows next (a list write: cheap inside measured loops)."""
    _status[0] = text


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def baseline_fsync(directory: Path, count: int, size: int) -> dict[str, float]:
    storage = FileStorage(directory / "fsync-baseline")
    data = os.urandom(size)
    try:
        start = time.perf_counter()
        for index in range(1, count + 1):
            storage.append([Entry(index, 1, EntryType.STATE, bytes(12), data)], sync=True)
        elapsed = time.perf_counter() - start
    finally:
        storage.close()
    return {"appends_per_s": count / elapsed, "mean_ms": elapsed / count * 1000}


def baseline_rtt(count: int, size: int) -> dict[str, float]:
    echo = subprocess.Popen([sys.executable, "-c", _ECHO], stdout=subprocess.PIPE, text=True)
    assert echo.stdout is not None
    port = int(echo.stdout.readline())
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{port}")
    payload = os.urandom(size)
    try:
        for _ in range(200):  # warm up
            sock.send_multipart([b"x", payload])
            sock.recv_multipart()
        times = []
        start = time.perf_counter()
        for _ in range(count):
            t = time.perf_counter()
            sock.send_multipart([b"x", payload])
            sock.recv_multipart()
            times.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - start
        sock.send_multipart([b"stop"])
    finally:
        sock.close(0)
        ctx.term()
        echo.wait(10)
    return {
        "round_trips_per_s": count / elapsed,
        "p50_ms": _pct(times, 0.5) * 1000,
        "p99_ms": _pct(times, 0.99) * 1000,
    }


def _cpu_seconds(pid: int) -> float | None:
    """:func:`benchmarks.workers.cpu_seconds`, or None where ``/proc`` does not tell (not
    Linux, or the process is gone)."""
    try:
        return cpu_seconds(pid)
    except OSError:
        return None


def cpu_per_update(
    before: dict[str, float | None], pids: dict[str, int], updates: int
) -> dict[str, float]:
    """Microseconds of CPU per update of each process since ``before``, and their total."""
    out: dict[str, float] = {}
    for name, pid in pids.items():
        start, end = before.get(name), _cpu_seconds(pid)
        if start is not None and end is not None:
            out[name] = round((end - start) / updates * 1e6, 1)
    if out:
        out["total"] = round(sum(out.values()), 1)
    return out


def thread_times(pid: int) -> dict[str, list[float]]:
    """Per thread name (``/proc/<pid>/task/*/comm``: ``python``, ``ZMQbg/IO/0``...; threads
    of one name summed): user and system CPU seconds, voluntary and involuntary context
    switches. Empty where ``/proc`` does not tell."""
    out: dict[str, list[float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        base = f"/proc/{pid}/task/{task}"
        try:
            with open(f"{base}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            with open(f"{base}/comm") as f:
                name = f.read().strip()
            with open(f"{base}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # the thread ended meanwhile
        row = out.setdefault(name, [0.0, 0.0, 0.0, 0.0])
        row[0] += int(fields[11]) / tick
        row[1] += int(fields[12]) / tick
        row[2] += int(status["voluntary_ctxt_switches"])
        row[3] += int(status["nonvoluntary_ctxt_switches"])
    return out


def threads_per_update(
    before: dict[str, dict[str, list[float]]], pids: dict[str, int], updates: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Per process and thread name since ``before``: microseconds of user and system CPU
    and context switches (voluntary, and preempted), each per update (``--per-thread``)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for process, pid in pids.items():
        for name, now in thread_times(pid).items():
            then = before.get(process, {}).get(name, [0.0, 0.0, 0.0, 0.0])
            d = [(a - b) / updates for a, b in zip(now, then, strict=True)]
            out.setdefault(process, {})[name] = {
                "user_us": round(d[0] * 1e6, 1),
                "system_us": round(d[1] * 1e6, 1),
                "switches": round(d[2], 2),
                "preempted": round(d[3], 2),
            }
    return out


def peer_args(directory: Path, fsync: bool, urls: dict[str, str], pid: str) -> list[str]:
    return [
        "peer",
        "--id",
        pid,
        "--bind",
        urls[pid],
        *(f"--peer={p}={urls[p]}" for p in urls if p != pid),
        "--data-dir",
        str(directory / pid),
        "--cluster",
        CLUSTER,
        "--fsync" if fsync else "--no-fsync",
        "--raft-insecure-null",  # a NULL group, as measured before (and as the reference)
        *PEER_EXTRA,
    ]


def start_peer(directory: Path, fsync: bool, urls: dict[str, str], pid: str) -> Proc:
    proc = Proc(py("dafka.cli.raft", *peer_args(directory, fsync, urls, pid)))
    proc.wait_line(rf"raft peer {pid} on ")
    return proc


def start_cluster(directory: Path, fsync: bool) -> tuple[list[Proc], list[str]]:
    ports: set[int] = set()
    urls = {pid: f"tcp://127.0.0.1:{free_port(ports)}" for pid in ["p1", "p2", "p3"]}
    return [start_peer(directory, fsync, urls, pid) for pid in urls], list(urls.values())


def _leader_of(client: RaftClient, urls: list[str]) -> int | None:
    for k, url in enumerate(urls):
        try:
            if client.peer_config(url, timeout=0.1).is_leader:
                return k
        except DafkaError:
            continue
    return None


def _wait_leader(client: RaftClient, urls: list[str], timeout: float = 10.0) -> int:
    """The index in ``urls`` of the first peer to say it leads, polled every 2 ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        k = _leader_of(client, urls)
        if k is not None:
            return k
        time.sleep(0.002)
    raise DafkaError(f"no new leader among {urls} within {timeout} s")


def measure_failovers(
    client: RaftClient, procs: list[Proc], urls: list[str], directory: Path, fsync: bool, n: int
) -> dict[str, Any]:
    """SIGKILL the leader ``n`` times: time until a survivor says (RequestConfig) it leads,
    and until an update sent to it then commits (the issue's figure: the update is sent
    as soon as a leader answers, so this bounds the outage a client sees). The killed peer
    is restarted and given a moment to catch up before the next round."""
    ids = {url: f"p{k + 1}" for k, url in enumerate(urls)}
    leads, commits = [], []
    for round_ in range(n):
        _phase(f"failover: round {round_ + 1} of {n}")
        leader = wait_until(lambda: _leader_of(client, urls) is not None, 10, what="a leader")
        k = _leader_of(client, urls)
        assert leader and k is not None
        survivors = [u for j, u in enumerate(urls) if j != k]
        start = time.perf_counter()
        procs[k].p.kill()
        new = _wait_leader(client, survivors)
        leads.append(time.perf_counter() - start)
        with RaftClient([survivors[new]], CLUSTER, timeout=10) as fresh:
            fresh.update(put_command("failover", len(leads)))
        commits.append(time.perf_counter() - start)
        procs[k].wait()
        procs[k] = start_peer(
            directory, fsync, dict(zip(ids.values(), urls, strict=True)), ids[urls[k]]
        )
        time.sleep(1.0)
    return {
        "rounds": n,
        "ms": [round(t * 1000, 1) for t in commits],
        "median_ms": statistics.median(commits) * 1000,
        "max_ms": max(commits) * 1000,
        "leads_ms": [round(t * 1000, 1) for t in leads],
        "leads_median_ms": statistics.median(leads) * 1000,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    directory = Path(args.dir or tempfile.mkdtemp(prefix="dafka-raft-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "benchmark": "raft",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_before": os.getloadavg(),
            "zmq": zmq.zmq_version(),
        },
        "settings": {
            "peers": 3,
            "fsync": args.fsync,
            "fsync_thread": args.fsync_thread,
            "size": args.size,
            "updates": args.updates,
            "latency_updates": args.latency_updates,
            "window": args.window,
            "directory": str(directory),
            "reference": args.reference,
        },
    }
    with PROGRESS.ticking(lambda: _status[0]):
        _measure(args, directory, result)
    return _ratios(result)


def _measure(args: argparse.Namespace, directory: Path, result: dict[str, Any]) -> None:
    _phase("baseline fsync")
    result["baseline_fsync"] = baseline_fsync(directory, args.fsync_appends, args.size)
    _phase("baseline rtt")
    result["baseline_rtt"] = baseline_rtt(args.rtt_round_trips, args.size)
    _phase("starting three peers")
    procs, urls = start_cluster(directory, args.fsync)
    value = os.urandom(max(0, args.size - 16)).hex()[: max(0, args.size - 16)]
    try:
        with RaftClient(urls, CLUSTER, timeout=60) as client:
            pids = {f"p{k + 1}": proc.p.pid for k, proc in enumerate(procs)}
            result.update(measure_load(client, args, value, pids))
            if args.failovers:
                result["failover"] = measure_failovers(
                    client, procs, urls, directory, args.fsync, args.failovers
                )
            info = client.log_info()
            result["leader_log"] = {
                "commit": info.commit_index,
                "first": info.first_index,
                "snapshot_index": info.prune_index,
            }
    finally:
        for proc in procs:
            proc.kill()
    if args.floor:
        _phase("floor")
        result["floor"] = measure_floor(directory, args, value)
    if args.reference:
        _phase("reference peers")
        result["reference"] = measure_reference(directory, args, value)
    _phase("done")


def _ratios(result: dict[str, Any]) -> dict[str, Any]:
    result["machine"]["load_avg_after"] = os.getloadavg()
    one, many = result["one_in_flight"], result["window_in_flight"]
    result["ratios"] = {
        "one_in_flight_vs_fsync_rate": one["commits_per_s"]
        / result["baseline_fsync"]["appends_per_s"],
        "window_vs_fsync_rate": many["commits_per_s"] / result["baseline_fsync"]["appends_per_s"],
        "p50_vs_raw_rtt_p50": one["p50_ms"] / result["baseline_rtt"]["p50_ms"],
    }
    result["goals"] = {
        "window_5000_commits_per_s": many["commits_per_s"] >= 5000,
        "p50_under_2ms": one["p50_ms"] < 2.0,
    }
    if "failover" in result:
        result["goals"]["failover_commit_under_300ms"] = result["failover"]["median_ms"] < 300
    ref = result.get("reference", {})
    if "one_in_flight" in ref:
        result["vs_reference"] = {
            "window_commits_ratio": many["commits_per_s"]
            / ref["window_in_flight"]["commits_per_s"],
            "one_in_flight_commits_ratio": one["commits_per_s"]
            / ref["one_in_flight"]["commits_per_s"],
            "p50_ratio": one["p50_ms"] / ref["one_in_flight"]["p50_ms"],
        }
        vs = result["vs_reference"]
        result["goals"]["window_5x_reference"] = vs["window_commits_ratio"] >= 5.0
        result["goals"]["p50_half_of_reference"] = vs["p50_ratio"] <= 0.5
    floor = result.get("floor", {}).get("window_in_flight")
    if floor:
        rate = floor["commits_per_s"]
        result["vs_floor"] = {"ours_over_floor": many["commits_per_s"] / rate}
        if "one_in_flight" in ref:
            result["vs_floor"]["floor_over_reference"] = (
                rate / ref["window_in_flight"]["commits_per_s"]
            )
    return result


def measure_load(
    client: RaftClient, args: argparse.Namespace, value: str, pids: dict[str, int] | None = None
) -> dict[str, Any]:
    """Warm-up, then 1 update in flight (latency), then ``args.window`` in flight (with
    the CPU per update of the ``pids`` and of this process, the client)."""
    out: dict[str, Any] = {}
    wait_until(lambda: client.request_config(timeout=10), 20, what="a leader")
    _phase("warm-up")
    for k in range(300):  # warm up
        client.update(put_command(f"w{k % 50}", value))
    times = []
    start = time.perf_counter()
    for k in range(args.latency_updates):
        if not k % 100:
            _phase(f"1 in flight: {k} of {args.latency_updates} updates")
        t = time.perf_counter()
        client.update(put_command(f"k{k % 1000}", value))
        times.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - start
    out["one_in_flight"] = {
        "updates": args.latency_updates,
        "commits_per_s": args.latency_updates / elapsed,
        "p50_ms": _pct(times, 0.5) * 1000,
        "p99_ms": _pct(times, 0.99) * 1000,
        "mean_ms": statistics.fmean(times) * 1000,
        "max_ms": max(times) * 1000,
    }
    datas = [put_command(f"k{k % 1000}", value) for k in range(args.updates)]
    _phase(f"{args.window} in flight: {args.updates} updates")
    out["window_in_flight"] = measure_window(client, datas, args.window, pids)
    return out


def measure_window(
    client: RaftClient, datas: list[bytes], window: int, pids: dict[str, int] | None = None
) -> dict[str, Any]:
    """``datas`` as updates, ``window`` in flight: the rate, and the CPU per update of the
    ``pids`` and of this process (the client), in total and by thread."""
    watched = {**(pids or {}), "client": os.getpid()}
    threads_before = {name: thread_times(pid) for name, pid in watched.items()}
    cpu_before = {name: _cpu_seconds(pid) for name, pid in watched.items()}
    start = time.perf_counter()
    indexes = client.update_many(datas, window=window, timeout=600)
    elapsed = time.perf_counter() - start
    cpu = cpu_per_update(cpu_before, watched, len(datas))
    threads = threads_per_update(threads_before, watched, len(datas))
    assert len(set(indexes)) == len(indexes)
    return {
        "window": window,
        "updates": len(datas),
        "commits_per_s": len(datas) / elapsed,
        "seconds": elapsed,
        "cpu_us_per_update": cpu,
        "threads_per_update": threads,
    }


def measure_floor(directory: Path, args: argparse.Namespace, value: str) -> dict[str, Any]:
    """The same window, same client, on :mod:`benchmarks.raft_floor`'s three processes:
    the I/O of replication alone, the most any Python peer on pyzmq could reach here."""
    procs, url, pids = start_floor(directory / "floor", args.fsync)
    try:
        with RaftClient([url], CLUSTER, timeout=60) as client:
            _phase("floor: warm-up")
            client.update_many([put_command(f"w{k % 50}", value) for k in range(300)])
            datas = [put_command(f"k{k % 1000}", value) for k in range(args.updates)]
            _phase(f"floor: {args.window} in flight: {args.updates} updates")
            return {"window_in_flight": measure_window(client, datas, args.window, pids)}
    finally:
        for proc in procs:
            proc.kill()


def measure_reference(directory: Path, args: argparse.Namespace, value: str) -> dict[str, Any]:
    """The same load, same client, on three ØMQ RAFT reference peers (npm zmq-raft, which
    always fdatasyncs its log), when node and npm are here; else why not."""
    try:
        reference = ensure_installed()
    except ReferenceUnavailable as exc:
        return {"unavailable": str(exc)}
    if not args.fsync:
        return {"unavailable": "--no-fsync: the reference always fsyncs, no fair comparison"}
    cluster = MixedCluster(
        directory / "reference", [Kind.REF] * 3, name=CLUSTER, reference=reference
    )
    try:
        cluster.start_all()
        with cluster.client(timeout=60) as client:
            pids = {pid: proc.p.pid for pid, proc in cluster.procs.items()}
            out = measure_load(client, args, value, pids)
        cluster.check_deaths()
        if cluster.deaths:
            out["deaths"] = [d.describe() for d in cluster.deaths]
    finally:
        cluster.stop_all()
    out["server"] = f"zmq-raft {REFERENCE_VERSION} (node {_node_version()})"
    return out


def _node_version() -> str:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def print_table(r: dict[str, Any]) -> None:
    fs, rtt = r["baseline_fsync"], r["baseline_rtt"]
    one, many = r["one_in_flight"], r["window_in_flight"]
    rows = [
        ("baseline: FileStorage append+fdatasync", f"{fs['appends_per_s']:,.0f} /s", ""),
        (
            "baseline: pyzmq DEALER/ROUTER round trip",
            f"{rtt['round_trips_per_s']:,.0f} /s",
            f"p50 {rtt['p50_ms']:.3f} ms  p99 {rtt['p99_ms']:.3f} ms",
        ),
        (
            "raft: 1 update in flight",
            f"{one['commits_per_s']:,.0f} commits/s",
            f"p50 {one['p50_ms']:.3f} ms  p99 {one['p99_ms']:.3f} ms",
        ),
        (
            f"raft: {many['window']} updates in flight",
            f"{many['commits_per_s']:,.0f} commits/s",
            f"{many['updates']} updates in {many['seconds']:.2f} s",
        ),
    ]
    width = max(len(row[0]) for row in rows)
    for name, rate, extra in rows:
        print(f"{name.ljust(width)}  {rate.rjust(18)}  {extra}")
    print(f"CPU per update, {many['window']} in flight: {_cpu_text(many)}")
    if "failover" in r:
        fo = r["failover"]
        print(
            f"failover (SIGKILL leader -> an update commits), {fo['rounds']} rounds: "
            f"median {fo['median_ms']:.0f} ms, max {fo['max_ms']:.0f} ms  {fo['ms']}"
        )
        print(
            f"failover (SIGKILL leader -> a survivor says it leads): "
            f"median {fo['leads_median_ms']:.0f} ms  {fo['leads_ms']}"
        )
    ratios = r["ratios"]
    print(
        f"ratios: 1-in-flight/fsync {ratios['one_in_flight_vs_fsync_rate']:.2f}, "
        f"{many['window']}-in-flight/fsync {ratios['window_vs_fsync_rate']:.2f}, "
        f"p50/raw-rtt {ratios['p50_vs_raw_rtt_p50']:.1f}x"
    )
    ref = r.get("reference")
    if ref and "one_in_flight" in ref:
        rone, rmany = ref["one_in_flight"], ref["window_in_flight"]
        vs = r["vs_reference"]
        print(
            f"reference {ref['server']}: 1 in flight {rone['commits_per_s']:,.0f} commits/s "
            f"p50 {rone['p50_ms']:.3f} ms; {rmany['window']} in flight "
            f"{rmany['commits_per_s']:,.0f} commits/s"
        )
        print(
            f"ours/reference: {many['window']} in flight {vs['window_commits_ratio']:.2f}x, "
            f"1 in flight {vs['one_in_flight_commits_ratio']:.2f}x, "
            f"p50 {vs['p50_ratio']:.2f}x (goal: >= 5x and <= 0.5x)"
        )
        print(f"reference CPU per update, {rmany['window']} in flight: {_cpu_text(rmany)}")
        for line in ref.get("deaths", []):
            print(f"reference: {line}")
    elif ref:
        print(f"reference: not measured: {ref['unavailable']}")
    floor = r.get("floor", {}).get("window_in_flight")
    if floor:
        vf = r["vs_floor"]
        beside = vf.get("floor_over_reference")
        print(
            f"floor (the I/O of replication alone, benchmarks.raft_floor): {floor['window']} in"
            f" flight {floor['commits_per_s']:,.0f} commits/s, CPU per update {_cpu_text(floor)};"
            f" ours at {vf['ours_over_floor']:.2f} of it"
            + ("" if beside is None else f"; the floor is {beside:.2f}x the reference")
        )
    print(f"goals: {r['goals']}  (load avg {r['machine']['load_avg_before']})")


def print_threads(r: dict[str, Any]) -> None:
    """``--per-thread``: where each process's CPU went, by thread, in the window phase."""
    measured_by = (
        ("ours", r),
        ("reference", r.get("reference", {})),
        ("floor", r.get("floor", {})),
    )
    for label, measured in measured_by:
        phase = measured.get("window_in_flight", {})
        for process, threads in phase.get("threads_per_update", {}).items():
            for name, t in threads.items():
                if t["user_us"] + t["system_us"] < 0.5:
                    continue  # idle threads (the peer's main thread, pyzmq's reaper...)
                print(
                    f"  {label} {process:7s} {name:16s} user {t['user_us']:5.1f} us"
                    f"  system {t['system_us']:5.1f} us  switches {t['switches']:.2f}"
                    f"  preempted {t['preempted']:.2f}  per update"
                )


def _cpu_text(phase: dict[str, Any]) -> str:
    cpu = dict(phase.get("cpu_us_per_update", {}))
    if not cpu:
        return "not measured (no /proc)"
    total = cpu.pop("total")
    return f"{total:.0f} us (" + ", ".join(f"{k} {v:.0f}" for k, v in cpu.items()) + ")"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--updates", type=int, default=20_000, help="updates in the window phase")
    parser.add_argument("--latency-updates", type=int, default=2000)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--size", type=int, default=100, help="bytes per update")
    parser.add_argument("--fsync-appends", type=int, default=2000)
    parser.add_argument("--rtt-round-trips", type=int, default=5000)
    parser.add_argument("--failovers", type=int, default=5, help="leader SIGKILL rounds")
    parser.add_argument("--no-fsync", dest="fsync", action="store_false")
    parser.add_argument(
        "--fsync-thread",
        action="store_true",
        help="our peers fdatasync appends on a thread of their own (docs/raft.md section 7)",
    )
    parser.add_argument("--dir", default=None, help="data directory (default: a temp dir)")
    parser.add_argument(
        "--no-reference",
        dest="reference",
        action="store_false",
        help="do not measure the ØMQ RAFT reference server (npm zmq-raft) beside ours",
    )
    parser.add_argument(
        "--no-floor",
        dest="floor",
        action="store_false",
        help="skip the floor phase (benchmarks.raft_floor: the I/O of replication alone)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no status line on stderr (a terminal only)"
    )
    parser.add_argument(
        "--per-thread",
        action="store_true",
        help="print each process's threads' CPU and context switches per update, 64 in flight"
        " (always in the JSON; docs/raft.md section 8)",
    )
    args = parser.parse_args()
    if args.fsync_thread:
        PEER_EXTRA.append("--fsync-thread")
    global PROGRESS
    PROGRESS = Progress(False if args.no_progress else None)
    result = run(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"raft-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2))
    print_table(result)
    if args.per_thread:
        print_threads(result)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
