"""Run the ØMQ RAFT reference server (npm ``zmq-raft`` 0.5.0) beside our Raft peers.

The reference is installed by ``make reference`` (``tests/interop/reference/install.sh``)
into ``.reference/zmq-raft`` (``DAFKA_ZMQ_RAFT_DIR`` overrides the place).
:func:`ensure_installed` runs that script (quick when already installed) and says why
the reference cannot be used: :class:`ReferenceUnavailable` with ``skip`` true only
when node or npm is absent (a reason to skip), false when the install failed (a
reason to fail).

:class:`MixedCluster` starts one Raft cluster whose peers are ours (``python -m
dafka.cli.raft peer``) or the reference's (``node bin/zmq-raft.js -c CONFIG``), kills
and restarts them, and reads every peer's log from disk once it is stopped: ours with
:class:`~dafka.raft.peer.FileStorage`, the reference's with its own ``FileLog``
(``reference/dump-log.js``). Used by ``tests/interop/test_raft_mixed.py``,
``tests/integration/test_raft_reference.py`` and
``benchmarks/raft.py``. Set ``DAFKA_ZMQ_RAFT_DEBUG=1`` to run reference peers with
``DEBUG=zmq-raft:*`` (their debug lines go to their stderr).
"""

from __future__ import annotations

import base64
import enum
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dafka.errors import DafkaError
from dafka.raft.client import RaftClient
from dafka.raft.codec import Entry, decode_entry
from dafka.raft.peer import FileStorage
from tests.procs import ROOT, Proc, free_port, py, wait_until

HERE = Path(__file__).resolve().parent / "reference"
INSTALL = HERE / "install.sh"
DUMP_LOG = HERE / "dump-log.js"
VERSION = "0.5.0"

# What a reference peer prints when it stops on an error: bin/zmq-raft.js prints
# "RAFT ERROR" / "RAFT INIT ERROR" and a stack (its first line "Error: ..."), an
# uncaught exception a stack. Our peers print "error: ..." (run_cli) before exiting.
FATAL = re.compile(r"RAFT (INIT )?ERROR|^\w*Error\b|refusing|uncaught|^error: ", re.IGNORECASE)


class ReferenceUnavailable(Exception):
    """The reference server cannot be run here; ``skip``: because node or npm is absent."""

    def __init__(self, reason: str, *, skip: bool) -> None:
        super().__init__(reason)
        self.skip = skip


def reference_dir() -> Path:
    return Path(os.environ.get("DAFKA_ZMQ_RAFT_DIR") or ROOT / ".reference" / "zmq-raft")


def ensure_installed() -> Path:
    """The installed reference's directory (installing it if needed: needs the registry)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise ReferenceUnavailable(
            f"{' and '.join(missing)} not found: the ØMQ RAFT reference server "
            "(npm zmq-raft) cannot be installed or run",
            skip=True,
        )
    dest = reference_dir()
    done = subprocess.run(
        [str(INSTALL), str(dest)], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        raise ReferenceUnavailable(f"`make reference` failed: {lines[-1]}", skip=False)
    return dest


class Kind(enum.Enum):
    OURS = "ours"
    REF = "ref"


@dataclass(frozen=True, slots=True)
class Death:
    """A peer that exited without being told to: its exit code and what it said."""

    pid: str
    kind: Kind
    returncode: int | None
    lines: tuple[str, ...]

    def describe(self) -> str:
        said = " | ".join(self.lines) if self.lines else "(nothing on stderr)"
        return f"{self.kind.value} peer {self.pid} died (exit {self.returncode}): {said}"


class MixedCluster:
    """One cluster of ``kinds[k]`` peers (``ours1``, ``ref2``, ...), data under ``root``.

    ``ours_args`` are extra ``dafka.cli.raft peer`` options; ``ref_options`` extra
    reference config (``raft`` namespace) settings; ``ref_debug`` the reference's ``DEBUG``
    namespaces (its debug lines on stderr; ``DAFKA_ZMQ_RAFT_DEBUG=1`` gives all of them).
    """

    def __init__(
        self,
        root: Path,
        kinds: list[Kind],
        *,
        name: str = "interop",
        ours_args: tuple[str, ...] = (),
        ref_options: dict[str, object] | None = None,
        reference: Path | None = None,
        ref_debug: str | None = None,
    ) -> None:
        self.root = root
        self.name = name
        self.kinds = {f"{kind.value}{k}": kind for k, kind in enumerate(kinds, start=1)}
        self.ids = list(self.kinds)
        self.ours_args = ours_args
        self.ref_options = dict(ref_options or {})
        self.ref_debug = ref_debug
        self.reference = reference
        if Kind.REF in kinds and reference is None:
            raise ValueError("reference peers need the reference's directory")
        self._ports: set[int] = set()
        self.urls = {pid: f"tcp://127.0.0.1:{free_port(self._ports)}" for pid in self.ids}
        self.pubs = {
            pid: f"tcp://127.0.0.1:{free_port(self._ports)}"
            for pid, kind in self.kinds.items()
            if kind is Kind.REF
        }
        self.procs: dict[str, Proc] = {}
        self.deaths: list[Death] = []
        self.old_stderr: dict[str, list[str]] = {pid: [] for pid in self.ids}

    # -- processes ---------------------------------------------------------------------------

    def start_all(self) -> None:
        for pid in self.ids:
            self.start(pid)

    def start(self, pid: str) -> Proc:
        if self.kinds[pid] is Kind.OURS:
            proc = self._start_ours(pid)
        else:
            proc = self._start_ref(pid)
        self.procs[pid] = proc
        return proc

    def data_dir(self, pid: str) -> Path:
        return self.root / pid

    def _start_ours(self, pid: str) -> Proc:
        others = [f"--peer={p}={self.urls[p]}" for p in self.ids if p != pid]
        proc = Proc(
            py(
                "dafka.cli.raft",
                "peer",
                "--id",
                pid,
                "--bind",
                self.urls[pid],
                *others,
                "--data-dir",
                str(self.data_dir(pid)),
                "--cluster",
                self.name,
                "--snapshot-every",
                "0",  # keep every entry: the logs are compared entry by entry
                "--log-level",
                "warning",
                "--raft-insecure-null",  # reference peers speak NULL and cannot authenticate
                *self.ours_args,
            )
        )
        proc.wait_line(rf"raft peer {pid} on ")
        return proc

    def ref_config(self, pid: str) -> dict[str, object]:
        raft: dict[str, object] = {
            "id": pid,
            "secret": self.name,
            "label": f"dafka interop {self.name}",
            "peers": [{"id": p, "url": self.urls[p]} for p in self.ids],
            "data": {"path": str(self.data_dir(pid))},
            "router": {"bind": self.urls[pid]},
            "broadcast": {"url": self.pubs[pid]},
            "webmonitor": {"enable": False},
        }
        raft.update(self.ref_options)
        return {"raft": raft}

    def _start_ref(self, pid: str) -> Proc:
        assert self.reference is not None
        directory = self.data_dir(pid)
        directory.mkdir(parents=True, exist_ok=True)
        config = self.root / f"{pid}.json"
        config.write_text(json.dumps(self.ref_config(pid), indent=2))
        debug = "zmq-raft:*" if os.environ.get("DAFKA_ZMQ_RAFT_DEBUG") == "1" else self.ref_debug
        env = {"DEBUG": debug} if debug else {}
        env["DEBUG_COLORS"] = "0"
        script = self.reference / "node_modules" / "zmq-raft" / "bin" / "zmq-raft.js"
        proc = Proc(["node", str(script), "-c", str(config)], env=env)
        proc.wait_line_stdout(r"server listening at")
        return proc

    def kill(self, pid: str) -> None:
        """SIGKILL ``pid`` (an expected death); keeps what it printed."""
        proc = self.procs.pop(pid)
        proc.kill()
        self.old_stderr[pid].extend(proc.stderr_lines)

    def restart(self, pid: str) -> Proc:
        return self.start(pid)

    def alive(self) -> list[str]:
        return [pid for pid, proc in self.procs.items() if proc.p.poll() is None]

    def check_deaths(self) -> list[Death]:
        """Peers that exited on their own since the last call (and are no longer tracked)."""
        found = []
        for pid, proc in list(self.procs.items()):
            if proc.p.poll() is None:
                continue
            proc.wait(5)
            del self.procs[pid]
            lines = tuple(proc.stderr_lines)
            self.old_stderr[pid].extend(lines)
            said = [line for line in lines if FATAL.search(line.strip())] or list(lines[-3:])
            found.append(Death(pid, self.kinds[pid], proc.p.returncode, tuple(said[:4])))
        self.deaths.extend(found)
        return found

    def fatal_lines(self) -> dict[str, list[str]]:
        """Error lines any peer printed on stderr (live or killed)."""
        out: dict[str, list[str]] = {}
        for pid in self.ids:
            lines = self.old_stderr[pid] + (
                self.procs[pid].stderr_lines if pid in self.procs else []
            )
            bad = [line for line in lines if FATAL.search(line.strip())]
            if bad:
                out[pid] = bad
        return out

    def stop_all(self, last: str | None = None) -> None:
        """SIGTERM every peer (SIGKILL after 10 s), then reap; ``last`` (the leader) after
        the others: stopped first, it left the others to elect a new leader, whose first
        entry (term + 1) the stopped peer never got, and the logs compared then differed."""
        order = sorted(self.procs.items(), key=lambda item: item[0] == last)
        for pid, proc in order:
            try:
                proc.terminate(10)
            except AssertionError:
                proc.kill()
            self.old_stderr[pid].extend(proc.stderr_lines)
            del self.procs[pid]

    # -- Raft state --------------------------------------------------------------------------

    def client(self, **kw: object) -> RaftClient:
        return RaftClient(dict(self.urls), self.name, **kw)  # type: ignore[arg-type]

    def leader(self, probe: RaftClient, among: list[str] | None = None) -> str | None:
        """The live peer that says it leads (RequestConfig asked of each directly)."""
        for pid in among if among is not None else self.alive():
            try:
                if probe.peer_config(self.urls[pid], timeout=0.2).is_leader:
                    return pid
            except DafkaError:
                continue
        return None

    def wait_leader(
        self, probe: RaftClient, among: list[str] | None = None, timeout: float = 15.0
    ) -> str:
        found = wait_until(
            lambda: self.leader(probe, among), timeout, interval=0.01, what="a Raft leader"
        )
        assert isinstance(found, str)
        return found

    def converged(self, probe: RaftClient, at_least: int) -> str | None:
        """None once every peer is alive and its last and commit index equal the leader's
        (which is ``>= at_least``); else what is missing."""
        if sorted(self.alive()) != sorted(self.ids):
            return f"peers not running: {sorted(set(self.ids) - set(self.alive()))}"
        leader = self.leader(probe)
        if leader is None:
            return "no leader"
        infos = {}
        for pid in self.ids:
            try:
                infos[pid] = probe.log_info(self.urls[pid], timeout=0.5)
            except DafkaError as exc:
                return f"{pid} does not answer RequestLogInfo: {exc}"
        lead = infos[leader]
        if lead.commit_index < at_least:
            return f"leader {leader} commit {lead.commit_index} < {at_least}"
        behind = {
            pid: (i.commit_index, i.last_index)
            for pid, i in infos.items()
            if (i.commit_index, i.last_index) != (lead.commit_index, lead.last_index)
        }
        if behind:
            return (
                f"leader {leader} at (commit, last) {(lead.commit_index, lead.last_index)};"
                f" others at {behind}"
            )
        return None

    def describe_state(self, probe: RaftClient) -> str:
        """One line: each peer's RequestLogInfo (role, term, commit, last) or why not."""
        parts = []
        for pid in self.ids:
            if pid not in self.alive():
                parts.append(f"{pid} not running")
                continue
            try:
                i = probe.log_info(self.urls[pid], timeout=0.5)
            except DafkaError as exc:
                parts.append(f"{pid} no answer ({exc})")
                continue
            role = "LEADER" if i.is_leader else f"follower of {i.leader}"
            parts.append(f"{pid} {role} term {i.term} commit {i.commit_index} last {i.last_index}")
        return "; ".join(parts)

    # -- logs (of stopped peers) -------------------------------------------------------------

    def read_log(self, pid: str) -> tuple[int, list[Entry]]:
        """``(snapshot index, entries after it)`` of a stopped peer, from its files."""
        if self.kinds[pid] is Kind.OURS:
            with FileStorage(self.data_dir(pid) / "raft") as storage:  # as RaftPeer keeps it
                loaded = storage.load()
            return loaded.snapshot_meta.index, list(loaded.entries)
        assert self.reference is not None
        done = subprocess.run(
            ["node", str(DUMP_LOG), str(self.reference), str(self.data_dir(pid))],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"reading {pid}'s log: {done.stderr.strip()}")
        lines = done.stdout.splitlines()
        head = json.loads(lines[0])
        entries = []
        for line in lines[1:]:
            item = json.loads(line)
            entries.append(decode_entry(base64.b64decode(item["e"]), item["i"]))
        return int(head["snapshot"][0]), entries


# -- comparing logs --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Acked:
    """An update the cluster acknowledged: RequestUpdate answered with ``index``."""

    index: int
    reqid: bytes
    data: bytes


def _ranges(indexes: list[int]) -> str:
    """``[3, 4, 5, 9]`` → ``"3-5, 9"``."""
    out: list[str] = []
    for k in sorted(indexes):
        if out and int(out[-1].rpartition("-")[2]) == k - 1:
            out[-1] = f"{out[-1].partition('-')[0]}-{k}"
        else:
            out.append(str(k))
    return ", ".join(out)


def describe_entry(entry: Entry | None) -> str:
    if entry is None:
        return "(none)"
    data = entry.data[:24].hex() + ("..." if len(entry.data) > 24 else "")
    return f"term {entry.term} {entry.type.name} reqid {entry.reqid.hex()} data {data}"


def compare_logs(
    logs: dict[str, tuple[int, list[Entry]]], acked: list[Acked], *, show: int = 8
) -> list[str]:
    """Every difference between the peers' logs, and every acknowledged update that a
    peer does not hold at its index, as report lines (empty: all logs agree)."""
    problems: list[str] = []
    by_index: dict[str, dict[int, Entry]] = {}
    for pid, (snapshot, entries) in logs.items():
        expect = list(range(snapshot + 1, snapshot + 1 + len(entries)))
        if [e.index for e in entries] != expect:
            problems.append(f"{pid}: log indexes are not consecutive from {snapshot + 1}")
        by_index[pid] = {e.index: e for e in entries}
        seen: dict[bytes, int] = {}
        for e in entries:
            if e.reqid != bytes(len(e.reqid)) and e.reqid in seen:
                problems.append(
                    f"{pid}: reqid {e.reqid.hex()} at indexes {seen[e.reqid]} and {e.index}"
                )
            seen.setdefault(e.reqid, e.index)
    floor = max(snapshot for snapshot, _ in logs.values())  # below it, someone compacted
    top = max((max(m, default=0) for m in by_index.values()), default=0)
    differ = []
    for index in range(floor + 1, top + 1):
        got = {pid: m.get(index) for pid, m in by_index.items()}
        if (
            len({None if e is None else (e.term, e.type, e.reqid, e.data) for e in got.values()})
            > 1
        ):
            differ.append(index)
    if differ:
        problems.append(f"logs differ at {len(differ)} indexes: {_ranges(differ)}")
        for index in differ[:show]:
            detail = "; ".join(
                f"{pid}: {describe_entry(m.get(index))}" for pid, m in by_index.items()
            )
            problems.append(f"  index {index}: {detail}")
    majority = len(logs) // 2 + 1
    for pid, m in by_index.items():
        missing = [a.index for a in acked if a.index > floor and _held(m, a) is not True]
        if missing:
            problems.append(
                f"{pid} does not hold {len(missing)} acknowledged updates at their index: "
                f"{_ranges(missing)}"
            )
    lost = [
        a.index
        for a in acked
        if a.index > floor and sum(_held(m, a) is True for m in by_index.values()) < majority
    ]
    if lost:
        problems.append(
            f"LOST: {len(lost)} acknowledged updates are on fewer than {majority} of "
            f"{len(logs)} peers: {_ranges(lost)}"
        )
    return problems


def _held(log: dict[int, Entry], acked: Acked) -> bool:
    entry = log.get(acked.index)
    return entry is not None and entry.reqid == acked.reqid and entry.data == acked.data
