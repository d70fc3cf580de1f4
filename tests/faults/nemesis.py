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
import re
import shutil
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from dafka.metadata import MetadataClient
from tests.admin import ADMIN
from tests.faults import rot
from tests.faults.cluster import Cluster, Node

log = logging.getLogger(__name__)

BEACON_EXPIRY = 4.0


COPIES_WAIT = 30.0
"""Seconds a disk replacement waits, at most, for the copies of the last one."""


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
    # issue 33: power loss, rot at rest, lost disks, failing fsyncs, clocks
    POWER_STORE = "power-store"
    POWER_PRODUCER = "power-producer"
    POWER_TOWER = "power-tower"
    POWER_ALL = "power-all"
    ROT_STORE = "rot-store"
    ROT_JOURNAL = "rot-journal"
    ROT_RAFT = "rot-raft"
    REPLACE_DISK = "replace-disk"
    EIO_FSYNC = "eio-fsync"
    CLOCK_STORE = "clock-store"
    CLOCK_PRODUCER = "clock-producer"
    CLOCK_TOWER = "clock-tower"
    # issue 39: the towers silent (SIGSTOP) past the beacon expiry, the data plane at work
    PAUSE_TOWERS = "pause-towers"


PROCESS_FAULTS = (
    Kind.KILL_STORE,
    Kind.KILL_PRODUCER,
    Kind.KILL_LEADER,
    Kind.PAUSE_STORE,
    Kind.PAUSE_PRODUCER,
    Kind.KILL_ALL_STORES,
    Kind.KILL_PRODUCER_IN_OUTAGE,
)

POWER_FAULTS = (Kind.POWER_STORE, Kind.POWER_PRODUCER, Kind.POWER_TOWER, Kind.POWER_ALL)
ROT_FAULTS = (Kind.ROT_STORE, Kind.ROT_JOURNAL, Kind.ROT_RAFT)
CLOCK_FAULTS = (Kind.CLOCK_STORE, Kind.CLOCK_PRODUCER, Kind.CLOCK_TOWER)
DISK_FAULTS = (*POWER_FAULTS, *ROT_FAULTS, Kind.REPLACE_DISK, Kind.EIO_FSYNC, *CLOCK_FAULTS)
"""The kinds that draw a ``variant`` (added after the others, so that the schedules of the
older kinds stay what they were for every seed)."""
NEEDS_POWER = (*POWER_FAULTS, Kind.EIO_FSYNC)
PER_PRODUCER = (
    Kind.KILL_PRODUCER,
    Kind.PAUSE_PRODUCER,
    Kind.KILL_PRODUCER_IN_OUTAGE,
    Kind.FILL_PRODUCER_DISK,
    Kind.POWER_PRODUCER,
    Kind.ROT_JOURNAL,
    Kind.CLOCK_PRODUCER,
)
PER_TOWER = (Kind.POWER_TOWER, Kind.ROT_RAFT, Kind.CLOCK_TOWER)
TOWERS = 3
CLOCK_SPECS = ("+2400", "-3600", "+0 x10")
"""Clock faults, by ``variant % 3``: 40 minutes ahead, an hour behind, ten times as fast
(``tests/faults/fakeclock``)."""


@dataclass(frozen=True, slots=True)
class Fault:
    at: float  # seconds after the workload started, at the earliest
    kind: Kind
    target: int  # store or producer index (ignored for the leader)
    duration: float  # down, paused or full for this long
    variant: int = 0  # the new kinds' seeded choices (torn or not, which key, which clock)

    def __str__(self) -> str:
        more = f" v{self.variant}" if self.kind in DISK_FAULTS else ""
        return f"{self.at:6.1f}s {self.kind.value} #{self.target} for {self.duration:.1f}s{more}"


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
    Kind.POWER_STORE: (0.5, 3.0),
    Kind.POWER_PRODUCER: (0.5, 3.0),
    Kind.POWER_TOWER: (0.5, 3.0),
    Kind.POWER_ALL: (0.5, 3.0),
    Kind.ROT_STORE: (0.5, 2.0),
    Kind.ROT_JOURNAL: (0.5, 2.0),
    Kind.ROT_RAFT: (0.5, 2.0),
    Kind.REPLACE_DISK: (0.5, 3.0),
    Kind.EIO_FSYNC: (2.0, 5.0),
    Kind.CLOCK_STORE: (5.0, 15.0),
    Kind.CLOCK_PRODUCER: (5.0, 15.0),
    Kind.CLOCK_TOWER: (5.0, 15.0),
    Kind.PAUSE_TOWERS: (BEACON_EXPIRY + 2.0, BEACON_EXPIRY + 6.0),
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
        count = producers if kind in PER_PRODUCER else TOWERS if kind in PER_TOWER else stores
        if kind is Kind.PARTITION:
            count = 1000  # an index into partition_shapes, taken modulo its length
        target = rng.randrange(count)
        variant = rng.randrange(1 << 16) if kind in DISK_FAULTS else 0
        out.append(Fault(round(t, 2), kind, target, duration, variant))
        t += duration + rng.uniform(1.0, 4.0)
    return out


def peers_expired(node: Node) -> int | None:
    """A store's ``dafka_peers_expired`` now (None: not up, or no answer)."""
    if node.metrics is None or not node.up or node.paused:
        return None
    try:
        text = urllib.request.urlopen(node.metrics, timeout=5).read().decode()
    except OSError:
        return None
    m = re.search(r"^dafka_peers_expired_total(?:\{[^}]*\})? (\S+)$", text, re.M)
    return None if m is None else int(float(m.group(1)))


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
        self.rotted_at: float | None = None  # monotonic time of the last rot at rest
        self.markers: list[str] = []  # topics created (acknowledged) just before a Raft rot
        self.expired: list[tuple[str, int]] = []  # (what, peers) expired in a tower pause

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
        elif fault.kind is Kind.PAUSE_TOWERS:
            # every tower at once: no beacon relayed, no metadata; peers must live on what
            # their own data connections carry (issue 39), and the records go on
            note = "every tower"
            before = {n.name: peers_expired(n) for n in c.stores}
            for node in c.towers:
                node.pause()
            c.idle(fault.duration)
            for node in c.towers:
                node.resume()
            for node in c.stores:
                was, now = before[node.name], peers_expired(node)
                if was is None or now is None:  # up throughout: its metrics must answer
                    if node.up and not node.paused:
                        self.expired.append((f"{node.name}: its peer count unread", 1))
                elif now > was:
                    what = f"{node.name}: {now - was} peer(s) expired in a {fault.duration} s pause"
                    self.expired.append((what, now - was))
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
        elif fault.kind in DISK_FAULTS:
            note = self._disk_fault(fault)
        took = time.monotonic() - t0
        self.history.append(f"{fault}: {note} (took {took:.1f}s)")
        log.info("faults.inflicted fault=%s node=%s took=%.1f", fault.kind.value, note, took)

    def _node(self, fault: Fault) -> Node:
        c = self.cluster
        if fault.kind in PER_PRODUCER:
            return c.producers[fault.target]
        if fault.kind in PER_TOWER:
            return c.towers[fault.target]
        return c.stores[fault.target]

    def _disk_fault(self, fault: Fault) -> str:
        """Inflict one of issue 33's faults; what it did."""
        c = self.cluster
        kind, rng = fault.kind, random.Random(fault.variant)
        if kind in POWER_FAULTS:
            live = [p for p in c.producers if not p.retired]
            nodes = [*c.towers, *c.stores, *live] if kind is Kind.POWER_ALL else []
            nodes = nodes or [self._node(fault)]
            tear = fault.variant % 2 == 1
            said = c.power_loss(nodes, tear=tear, seed=fault.variant, down=fault.duration)
            return f"{'torn ' if tear else ''}{'; '.join(said)}"
        if kind is Kind.EIO_FSYNC:
            return self._eio(fault)
        if kind in CLOCK_FAULTS:
            node = self._node(fault)
            spec = CLOCK_SPECS[fault.variant % len(CLOCK_SPECS)]
            c.set_clock(node.name, spec)
            c.idle(fault.duration)
            c.set_clock(node.name, "+0")
            return f"{node.name} clock {spec} then back"
        if kind is Kind.ROT_RAFT:
            return self._rot_raft(fault, rng)
        node = self._node(fault)
        waited = self._await_copies() if kind is Kind.REPLACE_DISK else ""
        retired = c.retire() if kind is Kind.REPLACE_DISK else None
        node.kill()
        try:
            note = f"{node.name} {self._damage(kind, node, fault, rng)}"
            if retired is not None:
                note = f"{retired} stopped for good; {note}"
            note = f"{waited}{note}"
        finally:
            c.idle(fault.duration)
            node.restart()
        return note

    def _await_copies(self, seconds: float = COPIES_WAIT) -> str:
        """What an operator does before replacing a disk: wait (bounded) until every record
        some store holds now is held by ``min_acks`` stores (the stores' under-replication
        gauges at 0). Replacing a second disk before the first was refilled is a double
        fault that loses what only those two held, whatever the system does. Returns what
        the wait found, for the history."""
        from tests.faults.run import read_stores  # run imports this module

        c = self.cluster
        t0 = time.monotonic()
        try:
            held = read_stores(c, final=False)
        except Exception as exc:  # a store that cannot be read is the checker's business
            return f"copies not read ({exc}); "
        every = {key for records in held.values() for key in records}
        need = min(c.opts.min_acks, len(c.stores))
        while True:
            short = sum(1 for key in every if sum(key in r for r in held.values()) < need)
            waited = time.monotonic() - t0
            if short == 0:
                return f"copies complete after {waited:.1f}s; " if waited >= 0.05 else ""
            if waited >= seconds:
                return f"replaced with {short} records below min_acks; "
            c.idle(1.0)
            try:
                held = read_stores(c, final=False)
            except Exception as exc:
                log.info("faults.copies.retry error=%s", exc)

    def _eio(self, fault: Fault) -> str:
        """Every fsync of the stores' disks (all of them, or one, by ``variant``) fails for
        a while; then, by ``variant``, they lose power (what a failed fsync covered must
        not have been acknowledged) or their fsyncs work again and they must go on storing
        and acknowledging (or exit, and be restarted)."""
        c = self.cluster
        stores = c.stores if fault.variant % 2 == 0 else [c.stores[fault.target]]
        power = (fault.variant // 2) % 2 == 0
        for node in stores:
            c.failing.add(node.name)
            c.disks[node.name].command("eio on")
        c.idle(fault.duration)
        said = []
        if power:
            for node in stores:
                node.kill()
            said = [f"{n.name}: {c.disks[n.name].crash(seed=fault.variant)}" for n in stores]
        exited = [n.name for n in stores if not n.up]
        for node in stores:
            c.disks[node.name].command("eio off")
            if power or not node.up:  # the supervisor restarts a store that stopped
                node.restart()
            c.failing.discard(node.name)
        if exited and not power:
            said.append(f"{'+'.join(exited)} stopped and restarted")
        names = "+".join(n.name for n in stores)
        then = f"then power lost: {'; '.join(said)}" if power else "then fsyncs work again"
        return f"fsync failed on {names} for {fault.duration:.1f}s, {then}"

    def _damage(self, kind: Kind, node: Node, fault: Fault, rng: random.Random) -> str:
        """Damage a stopped node's disk."""
        data = node.data
        assert data is not None
        if kind is Kind.REPLACE_DISK:
            keep = fault.variant % 2 == 0
            self.cluster.replace_disk(node, keep_key=keep)
            return f"disk replaced ({'same' if keep else 'new'} key)"
        self.rotted_at = time.monotonic()
        if kind is Kind.ROT_STORE:
            flipped = [len(rot.rot_values(p, rng)) for p in rot.find(data, "data.mdb")]
            return f"{sum(flipped)} values rotten"
        if kind is Kind.ROT_JOURNAL:
            return _each(rot.find(data, "offsets.journal"), rot.rot_last_journal_frame, rng)
        return _each(rot.find(data, "log"), rot.rot_last_raft_record, rng)

    def _rot_raft(self, fault: Fault, rng: random.Random) -> str:
        """An acknowledged metadata change (a marker topic), then its record rots: with an
        even variant on two towers of the three while the group is down, with an odd one on
        a follower restarted while the leader is down."""
        c = self.cluster
        marker = f"rot{len(self.markers) + 1}"
        with MetadataClient(c.addresses, timeout=20, admin=ADMIN) as admin:
            admin.create_topic(marker, {})
        self.markers.append(marker)
        self.rotted_at = time.monotonic()
        if fault.variant % 2 == 0:
            # the third tower must hold what the two lose (else the change is lost by any
            # protocol: it was on those two only), so the logs are let converge first
            _await_same_logs(c.towers)
            rotten = [c.towers[fault.target], c.towers[(fault.target + 1) % TOWERS]]
            down = list(c.towers)
        else:
            leader = c.leader() or c.towers[0]
            others = [t for t in c.towers if t is not leader]
            follower = others[fault.target % len(others)]
            rotten, down = [follower], [leader, follower]
        for node in down:
            node.kill()
        said = []
        for node in rotten:
            assert node.data is not None
            said.append(
                f"{node.name}: {_each(rot.find(node.data, 'log'), rot.rot_last_raft_record, rng)}"
            )
        for node in rotten:
            node.restart()
        c.idle(fault.duration)
        for node in down:
            if node not in rotten:
                node.restart()
        return f"{marker} created, then towers {'+'.join(n.name for n in down)} down; " + "; ".join(
            said
        )


def _await_same_logs(towers: list[Node], seconds: float = 5.0) -> None:
    """Wait (bounded) until every tower's Raft log file has the same size: the leader's
    last entries replicated to all, so rot on two of three leaves the third a full log."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sizes = set()
        for node in towers:
            assert node.data is not None
            sizes.add(tuple(p.stat().st_size for p in rot.find(node.data, "log")))
        if len(sizes) == 1:
            return
        time.sleep(0.1)


def _each(paths: list[Path], damage: object, rng: random.Random) -> str:
    done = [p.name for p in paths if damage(p, rng) is not None]  # type: ignore[operator]
    return f"last record rotten in {', '.join(done) or 'nothing (no record yet)'}"
