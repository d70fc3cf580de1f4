"""One fault run: start a cluster, run the workload under the nemesis, heal, settle, check.

After the nemesis stops, everything is healed (resumed, restarted, disks emptied), the
producers are asked to stop (SIGTERM: they flush for a while), the live consumer is given
time to deliver everything the stores hold, and every store is read back through its
query endpoint. The logs and the read-back go to :func:`tests.faults.checker.check`.
"""

from __future__ import annotations

import logging
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dafka.metadata import MetadataClient
from dafka.query.client import QueryClient
from dafka.wire import signed
from tests.faults.checker import Ack, Delivery, Key, Report, check
from tests.faults.cluster import TOPIC, Cluster, Options
from tests.faults.nemesis import Kind, Nemesis, schedule
from tests.faults.netns import Topology

log = logging.getLogger(__name__)

UNACKED = re.compile(r"partition ([0-9A-F]{32}).*?unacked (\d+)", re.S)
REJECTED = re.compile(r"consumer delivered \d+ rejected (-?\d+)")


@dataclass
class RunResult:
    seed: int
    min_acks: int
    seconds: float
    report: Report
    faults: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "seed": self.seed,
            "min_acks": self.min_acks,
            "seconds": self.seconds,
            "counts": self.report.counts(),
            "acked": self.report.acked,
            "delivered": self.report.delivered,
            "stored": self.report.stored,
            "delivered_unstored": self.report.delivered_unstored,
            "examples": self.report.examples,
            "faults": self.faults,
            "skipped": self.skipped,
        }


def read_acks(workdir: Path) -> list[Ack]:
    out: list[Ack] = []
    for path in sorted(workdir.glob("acks-*.log")):
        for line in path.read_text(encoding="ascii", errors="replace").splitlines():
            parts = line.split(" ", 3)
            if len(parts) == 4 and parts[0] == "A":
                out.append(Ack(parts[1], int(parts[2]), parts[3]))
    return out


def read_deliveries(workdir: Path, pattern: str = "deliveries-*.log") -> list[Delivery]:
    out: list[Delivery] = []
    for path in sorted(workdir.glob(pattern)):
        for line in path.read_text(encoding="ascii", errors="replace").splitlines():
            parts = line.split(" ", 3)
            if len(parts) == 4 and parts[0] == "D":
                out.append(Delivery(parts[1], int(parts[2]), parts[3]))
    return out


def read_store(
    endpoint: str, timeout: float = 10.0, bad: list[str] | None = None
) -> dict[Key, str]:
    """Everything one store holds of the topic (verified batches), by (partition, offset).

    A batch that fails verification (a store serving a corrupt copy) is left out and
    described in ``bad``."""
    held: dict[Key, str] = {}
    with QueryClient(endpoint, timeout=timeout) as client:
        for info in client.heads([TOPIC]):
            if info.head is None or info.tail is None:
                continue
            for reply in client.read_range(TOPIC, info.partition, info.tail, info.head + 1):
                for first, last, blob in reply.batches():
                    try:
                        batch = signed.verify_batch(blob, topic=TOPIC, partition=info.partition)
                    except Exception as exc:  # a corrupt copy: anything may fail
                        if bad is not None:
                            bad.append(f"{info.partition} {first}..{last}: {exc}")
                        continue
                    for offset, (_key, value) in enumerate(batch.records, batch.first_offset):
                        held[(info.partition, offset)] = value.decode("ascii", "backslashreplace")
    return held


def read_stores(
    cluster: Cluster, bad: dict[str, list[str]] | None = None, *, final: bool = True
) -> dict[str, dict[Key, str]]:
    """Every store read back (one that cannot be read is recorded as a crash if ``final``,
    else left out)."""
    out: dict[str, dict[Key, str]] = {}
    for node in cluster.stores:
        spoiled: list[str] = []
        try:
            out[node.name] = read_store(cluster.query_endpoints[node.name], bad=spoiled)
        except Exception as exc:
            if final:
                node.crashes.append(f"{node.name} could not be read back: {exc}")
        if bad is not None:
            bad[node.name] = spoiled
    return out


def _short_of_copies(
    stores: dict[str, dict[Key, str]], acked: dict[Key, str], min_acks: int
) -> int:
    return sum(
        1
        for key, value in acked.items()
        if sum(1 for held in stores.values() if held.get(key) == value) < min_acks
    )


def _await_copies(cluster: Cluster, workdir: Path, min_acks: int, seconds: float) -> None:
    """Give the stores (bounded) time to bring every acknowledged record back to
    ``min_acks`` copies after the faults (re-replication after a lost disk, repair after
    a scrub)."""
    if min_acks < 2:
        return
    acked = {(a.partition, a.offset): a.value for a in read_acks(workdir)}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        cluster.check()
        try:
            if _short_of_copies(read_stores(cluster, final=False), acked, min_acks) == 0:
                return
        except Exception as exc:
            log.info("faults.copies.retry error=%s", exc)
        time.sleep(3.0)


def _caught_up(cluster: Cluster, workdir: Path, pattern: str = "deliveries-*.log") -> bool:
    """Has a consumer delivered up to every store's head?"""
    reached: dict[str, int] = {}
    for d in read_deliveries(workdir, pattern):
        reached[d.partition] = max(reached.get(d.partition, -1), d.offset)
    for endpoint in cluster.query_endpoints.values():
        with QueryClient(endpoint, timeout=3) as client:
            for info in client.heads([TOPIC]):
                if info.head is not None and reached.get(info.partition, -1) < info.head:
                    return False
    return True


def _settle(cluster: Cluster, workdir: Path, pattern: str, seconds: float) -> None:
    """Wait (bounded) until a consumer's log reaches every store's head."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        cluster.check()
        try:
            if _caught_up(cluster, workdir, pattern):
                return
        except Exception as exc:  # a store slow to answer: ask again
            log.info("faults.settle.retry error=%s", exc)
        time.sleep(0.5)


def _phase(errors: list[str], name: str, step: Callable[[], None]) -> None:
    """Run one phase; a failure of the harness itself is recorded and the run goes on."""
    try:
        step()
    except Exception as exc:
        log.warning("faults.harness_error phase=%s error=%s", name, exc)
        errors.append(f"harness {name}: {type(exc).__name__}: {str(exc).splitlines()[0]}")


def _stop_producers(cluster: Cluster, timeout: float) -> list[str]:
    """SIGTERM every producer at once (each flushes for its drain time); the partitions
    of those that still had unacknowledged records."""
    stalled: list[str] = []
    for node in cluster.producers:
        node.resume()
        if node.proc is not None and node.up:
            node.proc.p.send_signal(signal.SIGTERM)
    for node in cluster.producers:
        proc = node.proc
        rc = node.terminate(timeout, signalled=True)
        if rc not in (0, None):
            node.crashes.append(f"{node.name} exited {rc} at SIGTERM")
        m = None if proc is None else UNACKED.search(bytes(proc.stdout).decode())
        if m is not None and int(m.group(2)):
            stalled.append(m.group(1))
    return stalled


def run_once(
    workdir: Path,
    seed: int,
    seconds: float,
    min_acks: int,
    kinds: tuple[Kind, ...],
    settle: float = 30.0,
    options: Options | None = None,
    topology: Topology | None = None,
    heal_wait: float = 30.0,
) -> RunResult:
    """One seeded run in ``workdir`` (which it fills with logs and data)."""
    opts = options or Options(min_acks=min_acks)
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(workdir, opts, topology)
    faults = schedule(seed, seconds, kinds, opts.stores, opts.producers)
    nemesis = Nemesis(cluster, faults)
    stores: dict[str, dict[Key, str]] = {}
    bad: dict[str, list[str]] = {}
    lost: list[str] = []
    stalled: list[str] = []
    harness: list[str] = []
    try:
        cluster.start()
        started = time.monotonic()
        _phase(harness, "nemesis", lambda: nemesis.run(started, seconds))
        _phase(harness, "heal", cluster.heal)
        stalled = _stop_producers(cluster, opts.drain + 10)
        _settle(cluster, workdir, "deliveries-*.log", settle)
        _await_copies(cluster, workdir, opts.min_acks, heal_wait)
        reader = cluster.start_reader()
        _settle(cluster, workdir, "readback-*.log", settle)
        proc = reader.proc
        rc = reader.terminate(15)
        if rc not in (0, None):
            reader.crashes.append(f"read-back consumer exited {rc} at SIGTERM")
        m = None if proc is None else REJECTED.search(bytes(proc.stdout).decode())
        if m is not None and int(m.group(1)):
            bad["fresh consumer"] = [f"rejected {m.group(1)} batches"] * max(1, int(m.group(1)))
        stores = read_stores(cluster, bad)
        if nemesis.markers:
            with MetadataClient(cluster.addresses, timeout=20) as admin:
                topics = admin.config()["topics"]
            lost = [f"topic {t} (acknowledged) is gone" for t in nemesis.markers if t not in topics]
        cluster.check()
        if cluster.consumer is not None:
            rc = cluster.consumer.terminate(15)
            if rc not in (0, None):
                cluster.consumer.crashes.append(f"consumer exited {rc} at SIGTERM")
    except Exception as exc:  # the cluster did not start: nothing else can be checked
        harness.append(f"harness: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    finally:
        cluster.stop()
    report = check(
        read_acks(workdir),
        read_deliveries(workdir),
        stores,
        cluster.crashes() + harness,
        readback=read_deliveries(workdir, "readback-*.log"),
        stalled=stalled,
        min_acks=opts.min_acks,
        bad_served=[f"{who}: {what}" for who, items in sorted(bad.items()) for what in items],
        metadata_lost=lost,
        peers_expired=nemesis.expired,
    )
    supervised = [f"supervisor restart: {said}" for said in cluster.supervised]
    return RunResult(seed, min_acks, seconds, report, nemesis.history + supervised)
