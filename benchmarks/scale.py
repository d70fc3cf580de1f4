"""What idle nodes cost as the cluster grows: CPU, memory, descriptors, sockets, the tower.

    python -m benchmarks.scale [--nodes 50,100,200] [--topics 10] [--seconds 20]
                               [--settle 5] [--per-worker 25] [--tower-pause S]
                               [--no-metadata] [--kinds producer,consumer,store]
                               [--mesh topics|full|topics,full] [--stores K]
                               [--out FILE]

For each N of ``--nodes``: one tower (a real ``dafka-tower`` process on 127.0.0.1), and N
idle nodes started through the library API (``Producer``, ``Consumer``, ``Store``, a
third of each, producers and consumers spread over ``--topics`` topics, stores holding
every topic as they do), packed ``--per-worker`` to a worker process
(``benchmarks.scale_nodes``; fewer where the full mesh of today would take a worker past its
hard descriptor limit, as ``per_worker`` says); nothing is sent. ``--kinds`` starts only
some kinds, in turn (what an idle store costs, alone). Once every node has started, the run waits
until no node has taken in or let go of a peer for ``--settle`` s (the time that took is
``converge_s``), then measures a window of ``--seconds``:

* per node: CPU seconds per second (``/proc/PID/task/*/schedstat`` of the workers, every
  thread, to the nanosecond, divided by the nodes in them), RSS and open descriptors (``/proc/PID/fd``), each also
  net of a baseline worker measured in the same window (the same interpreter, imports
  and answers, no node: ``*_net``);
* per kind (a worker runs nodes of one kind): CPU seconds per second a node, and net of
  the baseline worker (``by_kind``): where the per-node figure goes;
* the tower's CPU s/s, RSS and descriptors; ``run_cpu_s_per_s``, the CPU of every process
  of the run: near the machine's cores, the nodes are late rather than idle, and the
  per-node figure is what the machine had to give, not what a node would take;
* TCP sockets: the ESTABLISHED entries of ``/proc/net/tcp`` whose socket a process of
  the run holds (each loopback connection counts twice, once per end);
* the peers each node holds (min/mean/max, against the full mesh N-1), and the peers
  taken in, expired and refused over the window (discovery's own log lines, counted by
  the worker per node: the API has no counter of expiries). ``converged``: no peer taken
  in or expired in the window, every node's count as at its start.

``--tower-pause S`` stops the tower (SIGSTOP) for S s at the start of the window, then
continues it: ``tcp_before``, the least count seen during and after the pause
(``tcp_dropped`` = the difference), the least peers a node held, and ``reconverge_s``,
the time from SIGCONT until every node holds its peers of before and the sockets are back
(polled every 0.5 s; null if not within ``--seconds`` + 60 s). The CPU figures of such a
run include the recovery.

Prints the table, each metric's growth fitted as ``metric ~ N^k`` (least squares of
log-log, over the N measured), and the issue's goals (39, point 5), each met or not met
by what this run measured; writes JSON to benchmarks/results/scale-<time>.json (or
``--out``) and prints its path on stderr (``JSON: PATH``). The machine's load average is
recorded at the start and end of each N.
"""

from __future__ import annotations

import argparse
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from benchmarks.workers import cpu_seconds, rss_bytes
from tests.admin import tower_args
from tests.procs import Proc, free_tower_address, py

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = ("producer", "consumer", "store")
POLL = 0.5
MIB = 1024 * 1024

FITTED = (
    "node_cpu_s_per_s",
    "node_cpu_net_s_per_s",
    "node_rss_net_mib",
    "node_fds",
    "tower_cpu_s_per_s",
    "tower_fds",
    "tcp_established",
    "peers_mean",
)
"""The metrics whose growth with N is fitted and printed."""


def node_specs(
    n: int, topics: int, kinds: tuple[str, ...] = KINDS, stores: int | None = None
) -> list[str]:
    """The nodes of a run, ``KIND:TOPIC``: kinds in turn, each kind's nodes over the topics
    in turn (so every topic has a producer and a consumer once N >= 3 x topics). ``stores``:
    that many stores first (at most N), then the other kinds in turn."""
    seen = dict.fromkeys(kinds, 0)
    specs = []
    fixed = min(n, stores) if stores is not None and "store" in kinds else 0
    specs += ["store:"] * fixed
    others = tuple(k for k in kinds if k != "store") if stores is not None else kinds
    for i in range(n - fixed):
        kind = others[i % len(others)] if others else "store"
        topic = "" if kind == "store" else f"scale-{seen[kind] % topics}"
        seen[kind] += 1
        specs.append(f"{kind}:{topic}")
    return specs


@dataclass
class Worker:
    """A ``benchmarks.scale_nodes`` process and the nodes it runs."""

    proc: subprocess.Popen[str]
    nodes: int
    log: Path
    fd_limit: int = 0
    kind: str = ""

    @classmethod
    def start(
        cls, tower: str, specs: list[str], directory: Path, metadata: bool, mesh: str = "topics"
    ) -> Worker:
        directory.mkdir(parents=True, exist_ok=True)
        log = directory / "worker.log"
        args = ["--tower", tower, "--dir", str(directory), "--nodes", ",".join(specs)]
        args += ["--mesh", mesh]
        with open(log, "w") as err:
            proc = subprocess.Popen(
                py("benchmarks.scale_nodes", *args, *([] if metadata else ["--no-metadata"])),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        kinds = {s.partition(":")[0] for s in specs}
        return cls(proc, len(specs), log, kind=kinds.pop() if len(kinds) == 1 else "")

    def ready(self) -> None:
        line = self._line()
        if '"ready"' not in line:
            raise RuntimeError(f"worker did not start: {line!r}\n{self.tail()}")
        self.fd_limit = json.loads(line)["fd_limit"]

    def ask(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, dict[str, int]]:
        return json.loads(self._line())

    def events(self) -> dict[str, list[list[Any]]]:
        """The expiries and stalls since the last call (``benchmarks.scale_nodes``)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("events\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.proc.pid} exited:\n{self.tail()}")
        return line

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])

    def stop(self) -> None:
        stdin: IO[str] | None = self.proc.stdin
        try:
            if stdin is not None:
                stdin.write("stop\n")
                stdin.close()
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)


def peer_stats(workers: list[Worker]) -> dict[str, dict[str, int]]:
    """Every node's peer counts (asked of every worker at once, then read)."""
    for w in workers:
        w.ask()
    merged: dict[str, dict[str, int]] = {}
    for w in workers:
        merged.update(w.answer())
    return merged


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def socket_inodes(pids: list[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def tcp_established(pids: list[int]) -> int:
    """ESTABLISHED TCP sockets (each end its own) held by ``pids``."""
    inodes = socket_inodes(pids)
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] == "01" and fields[9] in inodes:
                    count += 1
    return count


@dataclass
class Sample:
    at: float
    cpu: dict[int, float]
    peers: dict[str, dict[str, int]] = field(default_factory=dict)


def sample(pids: list[int], workers: list[Worker]) -> Sample:
    peers = peer_stats(workers)
    return Sample(time.monotonic(), {pid: cpu_seconds(pid) for pid in pids}, peers)


TIMELINE_BUCKET = 30.0
"""Seconds of the window in one bucket of ``expiry_timeline``."""


def churn_timeline(workers: list[Worker], start: float, end: float) -> dict[str, Any]:
    """When the window's expiries fell (``start``, ``end``: its wall times), how many nodes logged
    them, the endpoints expired most, and every stall of a worker process (its watch
    thread woke a second or more late): churn that follows a stall is the machine's, churn
    without one is the protocol's."""
    buckets: dict[int, int] = {}
    nodes: set[str] = set()
    endpoints: dict[str, int] = {}
    stalls: list[tuple[float, int, float]] = []
    for i, w in enumerate(workers):
        taken = w.events()
        for at, node, endpoint in taken["expired"]:
            if not start <= at <= end:
                continue
            key = int((at - start) // TIMELINE_BUCKET)
            buckets[key] = buckets.get(key, 0) + 1
            nodes.add(node)
            endpoints[endpoint] = endpoints.get(endpoint, 0) + 1
        stalls += [(at - start, i, late) for at, late in taken["stalls"] if start <= at <= end]
    stalls.sort(key=lambda s: -s[2])
    return {
        "expiry_timeline": {f"{k * TIMELINE_BUCKET:g}": v for k, v in sorted(buckets.items())},
        "expiring_nodes": len(nodes),
        "expired_most": sorted(endpoints.items(), key=lambda e: -e[1])[:5],
        "stalls": len(stalls),
        "stall_max_s": round(stalls[0][2], 2) if stalls else 0.0,
        "stalls_worst": [
            {"at_s": round(at, 1), "worker": i, "late_s": round(late, 2)}
            for at, i, late in stalls[:20]
        ],
    }


def load_timeline(pids: list[int], until: float, tower: int) -> list[dict[str, float]]:
    """Sleep until ``until`` (monotonic), noting every :data:`TIMELINE_BUCKET` s the CPU
    seconds a second of the run's processes and of the tower (``tower``, one of ``pids``),
    the RSS of the rest (the workers) and the 1-minute load average: whether a window's cost
    grew as it went on, and where."""
    out = []

    def cpu() -> tuple[float, float]:
        return sum(cpu_seconds(p) for p in pids), cpu_seconds(tower)

    last_at, (last_cpu, last_tower) = time.monotonic(), cpu()
    start = last_at
    while (now := time.monotonic()) < until:
        time.sleep(min(TIMELINE_BUCKET, until - now))
        at, (run, own) = time.monotonic(), cpu()
        out.append(
            {
                "at_s": round(at - start, 1),
                "run_cpu_s_per_s": round((run - last_cpu) / (at - last_at), 3),
                "tower_cpu_s_per_s": round((own - last_tower) / (at - last_at), 3),
                "workers_rss_mib": round(sum(rss_bytes(p) for p in pids if p != tower) / MIB, 1),
                "load_1m": round(os.getloadavg()[0], 2),
            }
        )
        last_at, last_cpu, last_tower = at, run, own
    return out


def wait_settled(workers: list[Worker], quiet: float, timeout: float) -> float | None:
    """Seconds until the last change of any node's peers, once none changed for ``quiet`` s;
    None when they still changed at ``timeout``."""
    start = last = time.monotonic()
    before: dict[str, tuple[int, int, int]] | None = None
    while True:
        now = time.monotonic()
        seen = {
            name: (c["new"], c["expired"], c["returned"]) for name, c in peer_stats(workers).items()
        }
        if seen != before:
            before, last = seen, now
        elif now - last >= quiet:
            return last - start
        if now - start > timeout:
            return None
        time.sleep(POLL)


def pause_tower(
    tower: Proc, pids: list[int], workers: list[Worker], seconds: float, deadline: float
) -> dict[str, Any]:
    """SIGSTOP the tower for ``seconds``, SIGCONT it, and watch sockets and peers until
    every node holds its peers of before and the sockets are back (or ``deadline``)."""
    tcp_before = tcp_established(pids)
    peers_before = {name: c["peers"] for name, c in peer_stats(workers).items()}
    tcp_least, peers_least = tcp_before, min(peers_before.values(), default=0)
    stopped = time.monotonic()
    os.kill(tower.p.pid, signal.SIGSTOP)
    continued: float | None = None
    back: float | None = None
    try:
        while time.monotonic() < deadline:
            now = time.monotonic()
            if continued is None and now - stopped >= seconds:
                os.kill(tower.p.pid, signal.SIGCONT)
                continued = time.monotonic()
            tcp = tcp_established(pids)
            peers = {name: c["peers"] for name, c in peer_stats(workers).items()}
            tcp_least = min(tcp_least, tcp)
            peers_least = min(peers_least, min(peers.values(), default=0))
            if continued is not None and tcp >= tcp_before and peers == peers_before:
                back = time.monotonic() - continued
                break
            time.sleep(POLL)
    finally:
        if continued is None:
            os.kill(tower.p.pid, signal.SIGCONT)
    return {
        "pause_s": seconds,
        "tcp_before": tcp_before,
        "tcp_least": tcp_least,
        "tcp_dropped": tcp_before - tcp_least,
        "peers_least": peers_least,
        "reconverge_s": None if back is None else round(back, 2),
    }


def per_worker(n: int, wanted: int) -> int:
    """Nodes a worker may run at N without reaching its hard descriptor limit, if a node
    needs what it needs today in a full mesh (2N + 20, and room to spare)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, (hard - 200) // (2 * n + 40)))


def start_tower(directory: Path) -> tuple[Proc, str]:
    address = free_tower_address()
    tower = Proc(py("tower", "--bind", address, "-d", str(directory), *tower_args()))
    tower.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)", timeout=60)
    return tower, address


def measure(n: int, args: argparse.Namespace, mesh: str = "topics") -> dict[str, Any]:
    """Start the tower and N nodes, settle, measure one window; everything stopped after."""
    specs = node_specs(n, args.topics, args.kinds, args.stores)
    per = per_worker(n, args.per_worker)
    if per < args.per_worker:
        print(f"N={n}: {per} nodes a worker, for its descriptor limit", file=sys.stderr)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dafka-scale-") as tmp:
        root = Path(tmp)
        tower, address = start_tower(root / "tower")
        workers: list[Worker] = []
        try:
            base = Worker.start(address, [], root / "baseline", not args.no_metadata)
            workers = [base]
            for kind in KINDS:  # a worker runs one kind: what each kind costs is measured apart
                mine = [s for s in specs if s.startswith(f"{kind}:")]
                for at in range(0, len(mine), per):
                    workers.append(
                        Worker.start(
                            address,
                            mine[at : at + per],
                            root / f"{kind}-{at}",
                            not args.no_metadata,
                            mesh,
                        )
                    )
            for w in workers:
                w.ready()
            node_workers = workers[1:]
            converge = wait_settled(node_workers, args.settle, args.settle_timeout)
            pids = [w.proc.pid for w in workers] + [tower.p.pid]
            for w in node_workers:  # the settling's events are not the window's
                w.events()
            a = sample(pids, node_workers)
            window_start = time.time()
            paused: dict[str, Any] | None = None
            if args.tower_pause:
                deadline = a.at + args.seconds + 60
                paused = pause_tower(tower, pids, node_workers, args.tower_pause, deadline)
            load = load_timeline(pids, a.at + args.seconds, tower.p.pid)
            b = sample(pids, node_workers)
            window_end = time.time()
            row = figures(n, args.topics, base, node_workers, tower, a, b, pids)
            row["churn"] = churn_timeline(node_workers, window_start, window_end)
            row["churn"]["load_timeline"] = load
            row["converge_s"] = None if converge is None else round(converge, 2)
            row["per_worker"] = per
            row["mesh"] = mesh
            if paused is not None:
                row["tower_pause"] = paused
        finally:
            for w in workers:
                w.stop()
            tower.kill()
    row["load_avg_start"] = [round(x, 2) for x in load_start]
    row["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    return row


def figures(
    n: int,
    topics: int,
    base: Worker,
    workers: list[Worker],
    tower: Proc,
    a: Sample,
    b: Sample,
    pids: list[int],
) -> dict[str, Any]:
    dt = b.at - a.at
    used = {pid: (b.cpu[pid] - a.cpu[pid]) / dt for pid in a.cpu}
    worker_pids = [w.proc.pid for w in workers]
    cpu = sum(used[p] for p in worker_pids)
    rss = sum(rss_bytes(p) for p in worker_pids)
    open_fds = sum(fds(p) for p in worker_pids)
    k = len(workers)
    base_cpu, base_rss, base_fds = used[base.proc.pid], rss_bytes(base.proc.pid), fds(base.proc.pid)
    tpid = tower.p.pid
    peers = [c["peers"] for c in b.peers.values()]
    window = {
        event: sum(b.peers[name][event] - a.peers[name][event] for name in b.peers)
        for event in ("new", "expired", "returned", "refused")
    }
    steady = all(b.peers[name]["peers"] == a.peers[name]["peers"] for name in b.peers)
    by_kind: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        theirs = [w for w in workers if w.kind == kind]
        count = sum(w.nodes for w in theirs)
        if count:
            spent = sum(used[w.proc.pid] for w in theirs)
            by_kind[kind] = {
                "nodes": count,
                "cpu_s_per_s": spent / count,
                "cpu_net_s_per_s": (spent - len(theirs) * base_cpu) / count,
            }
    return {
        "nodes": n,
        "topics": topics,
        "workers": k,
        "window_s": round(dt, 2),
        "node_cpu_s_per_s": cpu / n,
        "node_cpu_net_s_per_s": (cpu - k * base_cpu) / n,
        "node_rss_mib": rss / n / MIB,
        "node_rss_net_mib": (rss - k * base_rss) / n / MIB,
        "node_fds": open_fds / n,
        "node_fds_net": (open_fds - k * base_fds) / n,
        "by_kind": by_kind,
        "baseline_worker": {"cpu_s_per_s": base_cpu, "rss_mib": base_rss / MIB, "fds": base_fds},
        "tower_cpu_s_per_s": used[tpid],
        "run_cpu_s_per_s": sum(used.values()),
        "tower_rss_mib": rss_bytes(tpid) / MIB,
        "tower_fds": fds(tpid),
        "tcp_established": tcp_established(pids),
        "peers_min": min(peers, default=0),
        "peers_mean": sum(peers) / len(peers) if peers else 0.0,
        "peers_max": max(peers, default=0),
        "full_mesh": n - 1,
        "peers_new": window["new"],
        "peers_expired": window["expired"],
        "peers_returned": window["returned"],
        "peers_refused": window["refused"],
        "converged": steady
        and window["new"] == window["expired"] == window["returned"] == 0
        and bool(peers),
        "fd_limit": min(w.fd_limit for w in workers),
    }


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(y) on log(x), over the points with both positive."""
    logs = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(logs) < 2:
        return None
    mx = sum(x for x, _ in logs) / len(logs)
    my = sum(y for _, y in logs) / len(logs)
    sxx = sum((x - mx) ** 2 for x, _ in logs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in logs) / sxx


def fits(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per mesh: each metric's growth exponent over the N measured."""
    meshes = sorted({r.get("mesh", "topics") for r in rows})
    return {
        mesh: {
            m: slope([(r["nodes"], r[m]) for r in rows if r.get("mesh", "topics") == mesh])
            for m in FITTED
        }
        for mesh in meshes
    }


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Like against like: at each N run in both meshes, the topic mesh's figure over the
    full mesh's, for what grows with the mesh."""
    out = []
    by = {(r["nodes"], r.get("mesh", "topics")): r for r in rows}
    for (n, mesh), full in sorted(by.items()):
        scoped = by.get((n, "topics"))
        if mesh != "full" or scoped is None:
            continue
        row: dict[str, Any] = {"nodes": n}
        for m in ("tcp_established", "node_fds", "peers_mean", "tower_cpu_s_per_s"):
            row[m] = round(scoped[m] / full[m], 3) if full[m] else None
        out.append(row)
    return out


def goals(rows: list[dict[str, Any]], pause: float) -> list[dict[str, Any]]:
    """Issue 39's goals on this machine, each met only by what this run measured."""
    out = []
    big = [r for r in rows if r["nodes"] >= 500 and r["topics"] >= 50 and r["window_s"] >= 600]
    largest = max(rows, key=lambda r: r["nodes"])
    out.append(
        {
            "goal": "500 idle nodes over 50 topics converged for 10 minutes, no expiry churn",
            "met": bool(big) and all(r["converged"] for r in big),
            "seen": (
                f"N={largest['nodes']}, {largest['topics']} topics, "
                f"{largest['window_s']:.0f} s window: converged={largest['converged']}, "
                f"{largest['peers_expired']} expiries"
                + ("" if big else " (the goal's size and window not run)")
            ),
        }
    )
    worst = max(rows, key=lambda r: r["node_cpu_s_per_s"])
    out.append(
        {
            "goal": "an idle node under 1 ms of CPU a second",
            "met": all(r["node_cpu_s_per_s"] < 0.001 for r in rows),
            "seen": f"up to {worst['node_cpu_s_per_s'] * 1000:.2f} ms/s (N={worst['nodes']})",
        }
    )
    paused = [r["tower_pause"] for r in rows if "tower_pause" in r]
    out.append(
        {
            "goal": "a tower paused 10 s drops no data connection",
            "met": bool(paused) and pause >= 10 and all(p["tcp_dropped"] == 0 for p in paused),
            "seen": (
                "; ".join(
                    f"{p['pause_s']:g} s pause: {p['tcp_dropped']} of {p['tcp_before']} "
                    f"sockets dropped, reconverged in {p['reconverge_s']} s"
                    for p in paused
                )
                or "no pause run (--tower-pause)"
            )
            + ("" if not paused or pause >= 10 else " (shorter than the goal's 10 s)"),
        }
    )
    return out


def print_report(report: dict[str, Any]) -> None:
    rows = report["rows"]
    head = (
        f"{'N':>5} {'cpu ms/s':>9} {'net':>6} {'RSS MiB':>8} {'net':>5} {'fds':>6} {'net':>6} "
        f"{'tower cpu':>9} {'fds':>6} {'tcp':>7} {'peers min/mean/max':>19} "
        f"{'new':>5} {'exp':>5} {'conv s':>6} {'run cpu':>7} {'load':>5}"
    )
    print(head)
    for r in rows:
        peers = f"{r['peers_min']}/{r['peers_mean']:.0f}/{r['peers_max']}"
        print(
            f"{r['nodes']:>5} {r['node_cpu_s_per_s'] * 1000:>9.2f} "
            f"{r['node_cpu_net_s_per_s'] * 1000:>6.2f} {r['node_rss_mib']:>8.2f} "
            f"{r['node_rss_net_mib']:>5.2f} {r['node_fds']:>6.1f} {r['node_fds_net']:>6.1f} "
            f"{r['tower_cpu_s_per_s']:>9.3f} {r['tower_fds']:>6} {r['tcp_established']:>7} "
            f"{peers:>19} {r['peers_new']:>5} {r['peers_expired']:>5} "
            f"{r['converge_s'] if r['converge_s'] is not None else '-':>6} "
            f"{r['run_cpu_s_per_s']:>7.2f} {r['load_avg_end'][0]:>5}"
        )
        if r.get("by_kind"):
            print(
                "      cpu ms/s a node by kind (net of the baseline worker): "
                + ", ".join(
                    f"{kind} x{k['nodes']} {k['cpu_s_per_s'] * 1000:.2f} "
                    f"({k['cpu_net_s_per_s'] * 1000:.2f})"
                    for kind, k in r["by_kind"].items()
                )
            )
        if "tower_pause" in r:
            p = r["tower_pause"]
            print(
                f"      tower paused {p['pause_s']:g} s: tcp {p['tcp_before']} -> least "
                f"{p['tcp_least']} ({p['tcp_dropped']} dropped), least peers of a node "
                f"{p['peers_least']}, reconverged in {p['reconverge_s']} s"
            )
        churn = r.get("churn")
        if churn and (churn["expiry_timeline"] or churn["stalls"]):
            print(
                f"      expiries by {TIMELINE_BUCKET:g} s of the window: "
                f"{churn['expiry_timeline'] or 'none'} ({churn['expiring_nodes']} nodes "
                f"expired peers); {churn['stalls']} worker stalls of 1 s or more, the "
                f"longest {churn['stall_max_s']} s"
                + "".join(
                    f"; {st['late_s']} s at {st['at_s']} s (worker {st['worker']})"
                    for st in churn["stalls_worst"][:3]
                )
            )
        if churn and len(churn.get("load_timeline", ())) > 1:
            print(
                "      run cpu s/s, the tower's, workers' RSS MiB and load by "
                f"{TIMELINE_BUCKET:g} s: "
                + ", ".join(
                    f"{x['run_cpu_s_per_s']:.2f}/{x['tower_cpu_s_per_s']:.3f}/"
                    f"{x['workers_rss_mib']:g}/{x['load_1m']:g}"
                    for x in churn["load_timeline"]
                )
            )
    for mesh, fitted in report["fits"].items():
        print(f"growth ({mesh} mesh), metric ~ N^k:")
        for metric, k in fitted.items():
            print(f"  {metric:<22} k = {'-' if k is None else f'{k:.2f}'}")
    for r in report.get("ratios", []):
        print(
            f"topic mesh / full mesh at N={r['nodes']}: "
            + ", ".join(f"{m} {v}" for m, v in r.items() if m != "nodes")
        )
    for g in report["goals"]:
        print(f"{'MET' if g['met'] else 'NOT MET':>8}: {g['goal']} ({g['seen']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="50,100,200", help="N to measure, comma-separated")
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20.0, help="the measured window")
    parser.add_argument("--settle", type=float, default=5.0, help="quiet seconds before it")
    parser.add_argument("--settle-timeout", type=float, default=120.0)
    parser.add_argument("--per-worker", type=int, default=25, help="nodes per process")
    parser.add_argument(
        "--stores",
        type=int,
        help="this many stores, the rest producers and consumers (default: a third of each kind)",
    )
    parser.add_argument("--tower-pause", type=float, default=0.0, metavar="S")
    parser.add_argument("--no-metadata", action="store_true", help="nodes follow no metadata")
    parser.add_argument(
        "--mesh", default="topics", help="topics, full, or topics,full (like against like)"
    )
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help="node kinds, in turn (e.g. store: stores only)"
    )
    parser.add_argument("--out", type=Path, help="JSON report (default: benchmarks/results)")
    args = parser.parse_args()
    counts = [int(x) for x in args.nodes.split(",") if x]
    args.kinds = tuple(k for k in args.kinds.split(",") if k)
    if not args.kinds or set(args.kinds) - set(KINDS):
        parser.error(f"--kinds: some of {', '.join(KINDS)}")
    if not counts or min(counts) < 1 or args.topics < 1 or args.per_worker < 1:
        parser.error("--nodes, --topics and --per-worker must be positive")
    meshes = [m for m in args.mesh.split(",") if m]
    if not meshes or set(meshes) - {"topics", "full"}:
        parser.error("--mesh: topics, full or both")
    report: dict[str, Any] = {
        "benchmark": "scale",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "rows": [],
    }
    for n in counts:
        for mesh in meshes:
            print(f"N={n} ({mesh} mesh): starting ...", file=sys.stderr, flush=True)
            report["rows"].append(measure(n, args, mesh))
    report["fits"] = fits(report["rows"])
    report["ratios"] = ratios(report["rows"])
    scoped = [r for r in report["rows"] if r["mesh"] == "topics"]
    report["goals"] = goals(scoped or report["rows"], args.tower_pause)
    print_report(report)
    out = args.out
    if out is None:
        RESULTS.mkdir(exist_ok=True)
        out = RESULTS / f"scale-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
