"""A seeded schedule of faults (pure) and the code that inflicts them on a :class:`Cluster`.

:func:`schedule` draws everything from ``random.Random(seed)``: which fault, on which node,
for how long, and the quiet time before the next. The same seed gives the same schedule;
real processes keep their own timing, so a schedule's times are earliest start times and
faults run one after the other.
"""

from __future__ import annotations

import enum
import logging
import os
import random
import shutil
import time
from dataclasses import dataclass

from tests.faults.cluster import Cluster

log = logging.getLogger(__name__)

BEACON_EXPIRY = 4.0


class Kind(enum.Enum):
    KILL_STORE = "kill-store"
    KILL_PRODUCER = "kill-producer"
    KILL_LEADER = "kill-leader"
    PAUSE_STORE = "pause-store"
    PAUSE_PRODUCER = "pause-producer"
    KILL_ALL_STORES = "kill-all-stores"
    KILL_PRODUCER_IN_OUTAGE = "kill-producer-in-outage"
    FILL_DISK = "fill-disk"
    FILL_PRODUCER_DISK = "fill-producer-disk"
    PARTITION = "partition"


PROCESS_FAULTS = (
    Kind.KILL_STORE,
    Kind.KILL_PRODUCER,
    Kind.KILL_LEADER,
    Kind.PAUSE_STORE,
    Kind.PAUSE_PRODUCER,
    Kind.KILL_ALL_STORES,
    Kind.KILL_PRODUCER_IN_OUTAGE,
)


@dataclass(frozen=True, slots=True)
class Fault:
    at: float  # seconds after the workload started, at the earliest
    kind: Kind
    target: int  # store or producer index (ignored for the leader)
    duration: float  # down, paused or full for this long

    def __str__(self) -> str:
        return f"{self.at:6.1f}s {self.kind.value} #{self.target} for {self.duration:.1f}s"


_DURATIONS = {
    Kind.KILL_STORE: (0.5, 3.0),
    Kind.KILL_PRODUCER: (0.5, 3.0),
    Kind.KILL_LEADER: (1.0, 5.0),
    Kind.PAUSE_STORE: (BEACON_EXPIRY + 1.0, BEACON_EXPIRY + 4.0),
    Kind.PAUSE_PRODUCER: (BEACON_EXPIRY + 1.0, BEACON_EXPIRY + 4.0),
    Kind.KILL_ALL_STORES: (0.5, 3.0),
    Kind.KILL_PRODUCER_IN_OUTAGE: (1.0, 3.0),
    Kind.FILL_DISK: (2.0, 5.0),
    Kind.FILL_PRODUCER_DISK: (2.0, 5.0),
    Kind.PARTITION: (2.0, 10.0),
}


def schedule(
    seed: int,
    seconds: float,
    kinds: tuple[Kind, ...],
    stores: int,
    producers: int,
    warmup: float = 3.0,
) -> list[Fault]:
    """The faults of one run: the same for the same arguments."""
    rng = random.Random(seed)
    out: list[Fault] = []
    t = warmup
    for _ in range(10_000):
        kind = rng.choice(kinds)
        lo, hi = _DURATIONS[kind]
        duration = round(rng.uniform(lo, hi), 2)
        if t + duration > seconds:
            break
        per_producer = (
            Kind.KILL_PRODUCER,
            Kind.PAUSE_PRODUCER,
            Kind.KILL_PRODUCER_IN_OUTAGE,
            Kind.FILL_PRODUCER_DISK,
        )
        count = producers if kind in per_producer else stores
        if kind is Kind.PARTITION:
            count = 1000  # an index into partition_shapes, taken modulo its length
        out.append(Fault(round(t, 2), kind, rng.randrange(count), duration))
        t += duration + rng.uniform(1.0, 4.0)
    return out


def disk_faults_unavailable() -> str | None:
    """Why the full-disk fault cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "not root: stores and producers cannot be put on a small tmpfs"
    if shutil.which("mount") is None:
        return "no mount command"
    return None


def partition_shapes(towers: list[str], stores: list[str], producers: list[str]) -> list[list[str]]:
    """Groups of nodes to cut off from all the others (one per partition fault)."""
    shapes = [[s] for s in stores] + [[p] for p in producers]
    shapes.append(stores[:2])  # most stores away: min_acks 2 must wait, not lie
    shapes.append([towers[0]])  # one tower: a leader there must step down
    shapes.append([towers[0], stores[0], producers[0]])  # a minority with a writer in it
    shapes.append([towers[0], towers[1], stores[0], stores[1], producers[0]])  # the majority
    shapes.append(["consumer"])
    return shapes


class Nemesis:
    """Runs a schedule against a cluster, writing what it did to ``history``."""

    def __init__(self, cluster: Cluster, faults: list[Fault]) -> None:
        self.cluster = cluster
        self.faults = faults
        self.history: list[str] = []

    def run(self, started: float, seconds: float) -> None:
        c = self.cluster
        for fault in self.faults:
            wait = started + fault.at - time.monotonic()
            if wait > 0:
                c.idle(wait)
            if time.monotonic() - started + fault.duration > seconds:
                break
            self.inflict(fault)
        left = started + seconds - time.monotonic()
        if left > 0:
            c.idle(left)

    def inflict(self, fault: Fault) -> None:
        c = self.cluster
        t0 = time.monotonic()
        note = ""
        if fault.kind in (Kind.KILL_STORE, Kind.KILL_PRODUCER, Kind.KILL_LEADER):
            if fault.kind is Kind.KILL_LEADER:
                node = c.leader()
                if node is None:
                    self.history.append(f"{fault}: no leader answered, skipped")
                    return
            elif fault.kind is Kind.KILL_STORE:
                node = c.stores[fault.target]
            else:
                node = c.producers[fault.target]
            note = node.name
            node.kill()
            c.idle(fault.duration)
            node.restart()
        elif fault.kind is Kind.KILL_ALL_STORES:
            note = "every store"
            for node in c.stores:
                node.kill()
            c.idle(fault.duration)
            for node in c.stores:
                node.restart()
        elif fault.kind is Kind.KILL_PRODUCER_IN_OUTAGE:
            # every store down, so the producer holds unacknowledged records when it dies
            producer = c.producers[fault.target]
            note = f"{producer.name} while every store is down"
            for node in c.stores:
                node.kill()
            c.idle(fault.duration)
            producer.kill()
            for node in c.stores:
                node.restart()
            producer.restart()
        elif fault.kind in (Kind.PAUSE_STORE, Kind.PAUSE_PRODUCER):
            nodes = c.stores if fault.kind is Kind.PAUSE_STORE else c.producers
            node = nodes[fault.target]
            note = node.name
            node.pause()
            c.idle(fault.duration)
            node.resume()
        elif fault.kind is Kind.PARTITION:
            topo = c.topology
            if topo is None:
                self.history.append(f"{fault}: no namespaces, skipped")
                return
            names = [n.name for n in c.nodes() if n is not c.reader]
            shapes = partition_shapes(
                [n.name for n in c.towers],
                [n.name for n in c.stores],
                [n.name for n in c.producers],
            )
            side_a = shapes[fault.target % len(shapes)]
            side_b = [n for n in names if n not in side_a]
            note = f"{'+'.join(side_a)} | rest"
            topo.cut(side_a, side_b)
            c.idle(fault.duration)
            topo.heal()
        elif fault.kind in (Kind.FILL_DISK, Kind.FILL_PRODUCER_DISK):
            n = fault.target + 1
            mount = f"s{n}" if fault.kind is Kind.FILL_DISK else f"p{n}-disk"
            note = f"{mount.removesuffix('-disk')} {c.fill_disk(mount)} bytes"
            c.idle(fault.duration)
            c.empty_disk(mount)
        took = time.monotonic() - t0
        self.history.append(f"{fault}: {note} (took {took:.1f}s)")
        log.info("faults.inflicted fault=%s node=%s took=%.1f", fault.kind.value, note, took)
