"""A cluster of real processes for the fault runs: three towers, stores, producers, a consumer.

Every process is a :class:`tests.procs.Proc` on its own address (127.0.0.1 by default) and
ephemeral ports. A :class:`Node` remembers how to start its process again (same data or
state directory) and whether it is meant to be running, so an exit nobody asked for is
recorded as a crash (and the node restarted, so the run goes on).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from dafka.metadata import MetadataClient
from tests.admin import ADMIN, tower_args
from tests.faults.netns import Topology
from tests.faults.powerfs import PowerFS
from tests.procs import Proc, py
from tower.metadata import free_port_block

log = logging.getLogger(__name__)

TOPIC = "faults"
T = TypeVar("T")


class Node:
    """One process of the cluster and how to (re)start it."""

    def __init__(self, name: str, start: Callable[[Node], Proc], logs: Path) -> None:
        self.name = name
        self.logs = logs
        self._start = start
        self.proc: Proc | None = None
        self.up = False  # meant to be running
        self.paused = False
        self.incarnation = 0
        self.crashes: list[str] = []
        self.data: Path | None = None  # a store's data or a producer's state directory
        self.identity: str | None = None  # a store's node ID or a producer's partition
        self.new_identity = False  # its next start may have a new one (a replaced disk)
        self.retired = False  # stopped for good: not restarted by the heal
        self.metrics: str | None = None  # a store's metrics URL (this incarnation's)

    def same_identity(self, identity: str) -> bool:
        """Record ``identity`` at a start; False (and a crash) if the node came back as a
        new one nobody asked for (it lost its key: the name of a file it had written)."""
        old, self.identity = self.identity, identity
        expected, self.new_identity = self.new_identity, False
        if old is None or old == identity or expected:
            return True
        self.crashes.append(f"{self.name} came back as {identity}, not {old}: its key was lost")
        return False

    def save_log(self) -> None:
        """Keep what the process wrote on stderr (``logs/NAME-INCARNATION.stderr``)."""
        if self.proc is not None:
            self.logs.mkdir(parents=True, exist_ok=True)
            path = self.logs / f"{self.name}-{self.incarnation}.stderr"
            out = bytes(self.proc.stdout).decode(errors="replace")
            path.write_text(f"{self.proc.stderr}\n--- stdout\n{out}", errors="replace")

    def start(self) -> None:
        """Start the process; one that does not come up is recorded as a crash (and left
        down: the heal at the end of the run tries again)."""
        self.paused = False
        try:
            self.proc = self._start(self)
        except AssertionError as exc:
            self.up = False
            self.crashes.append(f"{self.name} did not start: {str(exc).splitlines()[0]}")
            log.warning("faults.start_failed node=%s", self.name)
            return
        self.up = True

    def kill(self) -> None:
        self.up = False
        if self.proc is not None:
            if self.paused:
                self.proc.p.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.save_log()
        self.paused = False

    def restart(self) -> None:
        self.incarnation += 1
        self.start()

    def pause(self) -> None:
        if self.proc is not None and self.up:
            self.proc.p.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.proc is not None and self.paused:
            self.proc.p.send_signal(signal.SIGCONT)
        self.paused = False

    def check(self) -> bool:
        """Record an exit nobody asked for (and restart); True if it had exited."""
        if not self.up or self.proc is None or self.proc.p.poll() is None:
            return False
        rc = self.proc.p.returncode
        tail = " | ".join(self.proc.stderr_lines[-3:])
        self.crashes.append(f"{self.name} exited {rc}: {tail}")
        log.warning("faults.crash node=%s rc=%s", self.name, rc)
        self.up = False
        self.proc.wait(5)
        self.save_log()
        return True

    def terminate(self, timeout: float, *, signalled: bool = False) -> int | None:
        """SIGTERM (unless ``signalled`` already) and wait; the exit code (None if it had to
        be killed). One SIGTERM only: a second one can land after the process's own
        handler is gone, while it exits, and would read as a crash."""
        if self.proc is None or not self.up:
            return None
        self.resume()
        self.up = False
        try:
            if signalled:
                return self.proc.wait(timeout)
            return self.proc.terminate(timeout)
        except AssertionError:
            self.crashes.append(f"{self.name} did not stop within {timeout} s of SIGTERM")
            return None
        finally:
            self.save_log()


def _wait(proc: Proc, until: Callable[[], T]) -> T:
    """``until()``, killing ``proc`` if it fails (a process that did not come up)."""
    try:
        return until()
    except AssertionError:
        proc.kill()
        raise


@dataclass(frozen=True)
class Options:
    stores: int = 3
    producers: int = 2
    min_acks: int = 1
    rate: float = 100.0  # records per second per producer
    drain: float = 10.0  # seconds a producer may flush when asked to stop
    tmpfs_bytes: int | None = None  # stores' data dirs on a tmpfs of this size (root only)
    producer_tmpfs_bytes: int | None = None  # producers' state dirs on a tmpfs (root only)
    power: bool = False  # every store, producer and tower on a powerfs of its own (root)
    dir_sync: str = "strict"  # powerfs: what makes a name durable (strict: its dir's fsync)
    retiring: int = 0  # more producers, stopped for good (flushed) by the first disk fault
    clocks: bool = False  # stores, producers and towers on a clock the nemesis steps
    retention_ms: int | None = None  # the topic's retention by age


FAKECLOCK = Path(__file__).parent / "fakeclock"
"""Its ``sitecustomize`` puts ``time.time`` on the clock ``DAFKA_FAULT_CLOCK`` names."""


def node_names(opts: Options) -> list[str]:
    """Every node of a cluster with these options (and the harness, for namespaces)."""
    return [
        "t1",
        "t2",
        "t3",
        *(f"s{i + 1}" for i in range(opts.stores)),
        *(f"p{i + 1}" for i in range(opts.producers + opts.retiring)),
        "consumer",
        "reader",
        "harness",
    ]


class Cluster:
    """With a :class:`Topology`, every node runs in its own namespace on its own address
    (the harness must then run in the ``harness`` namespace); without, all on 127.0.0.1."""

    def __init__(self, workdir: Path, options: Options, topology: Topology | None = None) -> None:
        self.dir = workdir
        self.opts = options
        self.topology = topology
        self.host = "127.0.0.1"
        self.towers: list[Node] = []
        self.stores: list[Node] = []
        self.producers: list[Node] = []
        self.consumer: Node | None = None
        self.reader: Node | None = None
        self.store_ids: list[str] = []
        self.query_endpoints: dict[str, str] = {}
        self.mounts: list[Path] = []
        self.disks: dict[str, PowerFS] = {}  # node name -> its powerfs (Options.power)
        self.failing: set[str] = set()  # stores whose disk fails every fsync (eio-fsync)
        self.supervised: list[str] = []  # their exits, expected: a supervisor restarts them
        self.started = False  # the topic exists and the first stores are trusted
        self.tower_ids = [f"t{i + 1}" for i in range(3)]
        if topology is not None:  # each tower on its own host: the default port will do
            self.tower_hosts = [topology.addresses[t] for t in self.tower_ids]
            ports = [5556, 5556, 5556]
        else:
            self.tower_hosts = [self.host] * 3
            ports = []
            while len(ports) < 3:
                p = free_port_block(self.host)
                if all(abs(p - q) >= 4 for q in ports):
                    ports.append(p)
        self.tower_ports = ports
        self.tower_addrs = [f"{h}:{p}" for h, p in zip(self.tower_hosts, ports, strict=True)]
        self.addresses = ",".join(self.tower_addrs)

    def host_of(self, node: str) -> str:
        return self.host if self.topology is None else self.topology.addresses[node]

    def command(self, node: str, module: str, *args: str) -> list[str]:
        """The command line running ``module`` for ``node`` (in its namespace, if any)."""
        prefix = [] if self.topology is None else self.topology.prefix_args(node)
        return [*prefix, *py(module, *args)]

    # ------------------------------------------------------------ starting

    def start(self) -> None:
        spec = ",".join(f"{t}={a}" for t, a in zip(self.tower_ids, self.tower_addrs, strict=True))
        for tid, addr in zip(self.tower_ids, self.tower_addrs, strict=True):
            data = self._disk(tid, self.dir / tid) / "data" if self.opts.power else self.dir / tid
            node = Node(tid, self._tower_starter(addr, data, spec), self.dir / "logs")
            node.data = data
            self.towers.append(node)
            node.start()
        for i in range(self.opts.stores):
            data = self._store_dir(i)
            node = Node(f"s{i + 1}", self._store_starter(data), self.dir / "logs")
            node.data = data
            self.stores.append(node)
            node.start()
        with MetadataClient(self.addresses, timeout=20, admin=ADMIN) as admin:
            settings: dict[str, int] = {"min_acks": self.opts.min_acks}
            if self.opts.retention_ms is not None:
                settings["retention_ms"] = self.opts.retention_ms
            admin.create_topic(TOPIC, settings)
            for sid in self.store_ids:
                admin.trust_store(sid)
        self.started = True
        self.consumer = Node("consumer", self._consumer_starter(), self.dir / "logs")
        self.consumer.start()
        for i in range(self.opts.producers + self.opts.retiring):
            node = Node(f"p{i + 1}", self._producer_starter(f"p{i + 1}"), self.dir / "logs")
            node.data = self._producer_dir(f"p{i + 1}")
            self.producers.append(node)
            node.start()

    def _store_dir(self, i: int) -> Path:
        base = self.dir / f"s{i + 1}"
        base.mkdir(parents=True, exist_ok=True)
        if self.opts.power:
            self._disk(f"s{i + 1}", base)
        elif self.opts.tmpfs_bytes:
            self._mount(base, self.opts.tmpfs_bytes)
        return base / "data"

    def _producer_dir(self, name: str) -> Path:
        """A producer's state directory: on a tmpfs of its own for the fill-producer-disk
        fault (it holds a key and two journals of some KB)."""
        base = self.dir / f"{name}-disk"
        if name in self.disks:
            return base / "state"
        if not base.exists():
            base.mkdir(parents=True)
            if self.opts.power:
                self._disk(name, base)
            elif self.opts.producer_tmpfs_bytes:
                self._mount(base, self.opts.producer_tmpfs_bytes)
        return base / "state"

    def _disk(self, name: str, mountpoint: Path) -> Path:
        """Put ``mountpoint`` on a powerfs of its own (over ``NAME.power``), for node ``name``."""
        disk = PowerFS(self.dir / f"{name}.power", mountpoint, self.opts.dir_sync)
        disk.start()
        self.disks[name] = disk
        return mountpoint

    def env(self, node: str) -> dict[str, str]:
        """The environment of ``node``'s process: with clock faults, its wall clock reads
        ``clock-NODE`` (``tests/faults/fakeclock``: an offset such as ``+0``, ``+2400`` or
        ``-3600``, and a rate such as ``x10``; the monotonic clock stays real, as under a
        stepped system clock)."""
        if not self.opts.clocks:
            return {}
        clock = self.dir / f"clock-{node}"
        if not clock.exists():
            clock.write_text("+0\n")
        path = [str(FAKECLOCK), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        return {"DAFKA_FAULT_CLOCK": str(clock), "PYTHONPATH": os.pathsep.join(path)}

    def set_clock(self, node: str, spec: str) -> None:
        """Step or skew ``node``'s clock (``+2400``, ``-3600``, ``+0 x10``)."""
        tmp = self.dir / f"clock-{node}.tmp"
        tmp.write_text(spec + "\n")
        os.replace(tmp, self.dir / f"clock-{node}")

    def power_loss(self, nodes: list[Node], *, tear: bool, seed: int, down: float) -> list[str]:
        """Kill ``nodes`` (SIGKILL), drop what their disks never synced (tearing part of
        it with ``tear``), restart them after ``down`` seconds; what each disk said."""
        for node in nodes:
            node.kill()
        said = [f"{n.name}: {self.disks[n.name].crash(tear=tear, seed=seed)}" for n in nodes]
        self.idle(down)
        for node in nodes:
            node.restart()
        return said

    def retire(self) -> str | None:
        """Stop the next retiring producer for good (SIGTERM: it flushes first); its name."""
        for node in self.producers[self.opts.producers :]:
            if not node.retired:
                node.retired = True
                rc = node.terminate(self.opts.drain + 10)
                if rc not in (0, None):
                    node.crashes.append(f"{node.name} exited {rc} at SIGTERM")
                return node.name
        return None

    def replace_disk(self, node: Node, *, keep_key: bool) -> None:
        """A new disk under a stopped store: its data directory emptied (but for its key
        with ``keep_key``), as durably as a new disk is."""
        data = node.data
        assert data is not None
        node.new_identity = not keep_key
        for child in data.iterdir() if data.exists() else []:
            if keep_key and child.name == "node.key":
                continue
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        disk = self.disks.get(node.name)
        if disk is not None:
            disk.command("sync")

    def _mount(self, base: Path, size: int) -> None:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(base)],
            check=True,
            capture_output=True,
        )
        self.mounts.append(base)

    def _tower_starter(self, addr: str, data: Path, spec: str) -> Callable[[Node], Proc]:
        def start(node: Node) -> Proc:
            proc = Proc(
                self.command(
                    node.name,
                    "tower",
                    "--bind",
                    addr,
                    "--data-dir",
                    str(data),
                    "--raft-peers",
                    spec,
                    "--raft-insecure-null",  # faults, not authentication, are tested here
                    *tower_args(),
                ),
                env=self.env(node.name),
            )
            _wait(proc, lambda: proc.wait_line(r"tower on tcp://", timeout=20))
            return proc

        return start

    def _store_starter(self, data: Path) -> Callable[[Node], Proc]:
        def start(node: Node) -> Proc:
            proc = Proc(
                self.command(
                    node.name,
                    "dafka.cli.store",
                    "--data-dir",
                    str(data),
                    "--tower",
                    self.addresses,
                    "--host",
                    self.host_of(node.name),
                    "--metrics-port",
                    "0",
                    "--metrics-host",
                    self.host_of(node.name),
                ),
                env=self.env(node.name),
            )
            m = _wait(
                proc,
                lambda: proc.wait_line(
                    r"store ([0-9A-F]{32}) on (tcp://\S+) query (tcp://[^\s,]+)", timeout=20
                ),
            )
            url = _wait(proc, lambda: proc.wait_line(r"metrics on (http://\S+)", timeout=20))
            node.metrics = url.group(1)
            node.same_identity(m.group(1))
            if m.group(1) not in self.store_ids:
                self.store_ids.append(m.group(1))
                if self.started:  # a store with a new key: trusted through the metadata
                    with MetadataClient(self.addresses, timeout=20, admin=ADMIN) as admin:
                        admin.trust_store(m.group(1))
            self.query_endpoints[node.name] = m.group(3)
            return proc

        return start

    def _producer_starter(self, name: str) -> Callable[[Node], Proc]:
        def start(node: Node) -> Proc:
            proc = Proc(
                self.command(
                    node.name,
                    "tests.faults.drivers",
                    "producer",
                    "--host",
                    self.host_of(node.name),
                    "--name",
                    name,
                    "--incarnation",
                    str(node.incarnation),
                    "--state-dir",
                    str(self._producer_dir(name)),
                    "--rate",
                    str(self.opts.rate),
                    "--min-acks",
                    str(self.opts.min_acks),
                    "--drain",
                    str(self.opts.drain),
                    "--trusted",
                    ",".join(self.store_ids),
                    "--towers",
                    self.addresses,
                    "--topic",
                    TOPIC,
                    "--log",
                    str(self.dir / f"acks-{name}-{node.incarnation}.log"),
                ),
                env=self.env(node.name),
            )
            m = _wait(proc, lambda: proc.wait_line_stdout(r"partition ([0-9A-F]{32})", timeout=20))
            node.same_identity(m.group(1))
            return proc

        return start

    def start_reader(self) -> Node:
        """A fresh consumer from the earliest offset (after the run), logging to readback-0.log."""
        self.reader = Node("reader", self._consumer_starter("readback"), self.dir / "logs")
        self.reader.start()
        return self.reader

    def _consumer_starter(self, log_name: str = "deliveries") -> Callable[[Node], Proc]:
        def start(node: Node) -> Proc:
            log_path = self.dir / f"{log_name}-{node.incarnation}.log"
            return Proc(
                self.command(
                    node.name,
                    "tests.faults.drivers",
                    "consumer",
                    "--host",
                    self.host_of(node.name),
                    "--towers",
                    self.addresses,
                    "--topic",
                    TOPIC,
                    "--log",
                    str(log_path),
                )
            )

        return start

    # ------------------------------------------------------------ running

    def nodes(self) -> list[Node]:
        rest = [n for n in (self.consumer, self.reader) if n is not None]
        return [*self.towers, *self.stores, *self.producers, *rest]

    def check(self) -> None:
        """Record unexpected exits and restart those nodes (the consumer is not restarted:
        its log must be one ordered delivery history). A store whose disk fails its fsyncs
        (``failing``) is expected to exit non-zero and not to start again until the disk
        works (issue 33 point 9: it stops rather than run as a store it cannot be); that
        is the supervisor's business, noted in ``supervised``, not a crash."""
        for node in self.nodes():
            seen = len(node.crashes)
            if node.check() and node not in (self.consumer, self.reader):
                if node.name in self.failing:
                    self._supervised(node, seen)
                    continue  # restarted by the fault once the disk works again
                node.restart()
            if node.name in self.failing:
                self._supervised(node, seen)

    def _supervised(self, node: Node, seen: int) -> None:
        for said in node.crashes[seen:]:
            self.supervised.append(said)
            log.info("faults.supervised node=%s said=%s", node.name, said[:200])
        del node.crashes[seen:]

    def idle(self, seconds: float) -> None:
        """Let time pass, watching for crashes (polled, bounded by ``seconds``)."""
        deadline = time.monotonic() + seconds
        while True:
            self.check()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(0.2, left))

    def leader(self) -> Node | None:
        """The tower whose Raft peer leads, as the towers say (None if none answers)."""
        with MetadataClient(self.addresses, timeout=2) as admin:
            for row in admin.status():
                if row.get("is_leader"):
                    for node in self.towers:
                        if node.name == row.get("leader"):
                            return node
        return None

    def heal(self) -> None:
        """Resume what is paused, start what is down, empty every disk, join the network."""
        if self.topology is not None:
            self.topology.heal()
        for node in self.nodes():
            node.resume()
        for node in self.nodes():
            if not node.up and not node.retired and node not in (self.consumer, self.reader):
                node.restart()
        for mount in self.mounts:
            (mount / "ballast").unlink(missing_ok=True)

    def fill_disk(self, mount: str) -> int:
        """Fill the tmpfs ``mount`` (``s1``: a store's data, ``p1-disk``: a producer's state
        directory) with a ballast file; the bytes written."""
        return _fill(self.dir / mount / "ballast")

    def empty_disk(self, mount: str) -> None:
        (self.dir / mount / "ballast").unlink(missing_ok=True)

    def crashes(self) -> list[str]:
        return [c for node in self.nodes() for c in node.crashes]

    def stop(self) -> None:
        for node in self.nodes():
            if node.proc is not None and node.proc.p.poll() is None:
                node.resume()
                node.proc.kill()
                node.save_log()
        for mount in self.mounts:
            subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)
        for disk in self.disks.values():
            disk.stop()


def _fill(ballast: Path) -> int:
    """Fill the filesystem of ``ballast`` with it; the bytes written."""
    written = 0
    with open(ballast, "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 64):  # big pieces first, then what is left
            for _ in range(1 << 16):
                try:
                    written += f.write(b"\0" * size) or 0
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    return written
