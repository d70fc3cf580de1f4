"""A deterministic simulated cluster for :class:`dafka.raft.core.RaftCore`.

Everything random comes from one seeded ``random.Random``: message drops, duplicates,
delays (and so reordering), the order nodes tick in, each core's election timeouts.
Each node has a simulated disk that only ever holds what went through a ``Ready``;
a crash throws away the core and the state machine, a restart rebuilds them from the
disk alone. The :class:`Checker` verifies Raft's safety properties after every single
event (one message delivered, one node ticked, one client request).

Node shell = the loop documented in :mod:`dafka.raft.core._ready`, with a KV state machine
whose snapshot is msgpack of (meta, kv, applied reqids). With ``lazy_fsync`` a leader's
plain appends (:func:`dafka.raft.peer._pipeline.plain`) are like the peer's ``fsync_thread``
mode: written, sent and applied at once, durable only at a later random flush (each
step, each node with writes pending flushes with probability 1/10) that reports them to
the core (``RaftCore.log_durable``); a crash loses every write not flushed yet. Any
other Ready, and a compaction, flushes first.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgpack

from dafka.errors import NotLeader, ProposalDropped
from dafka.raft.codec import (
    ClusterConfig,
    Entry,
    EntryType,
    HardState,
    Peer,
    SnapshotMeta,
    decode_config,
    encode_config,
)
from dafka.raft.core import (
    AppendEntries,
    AppendResponse,
    InstallSnapshot,
    Message,
    ProposeResult,
    RaftCore,
    Ready,
    RequestVote,
    Role,
    SnapshotResponse,
    TimeoutNow,
    TimeoutNowResponse,
    VoteResponse,
    correlate,
)
from dafka.raft.core._ready import ReadState
from dafka.raft.peer._pipeline import plain

EPOCH = 1_700_000_000.0
TICK_SECONDS = 0.05


class SafetyViolation(AssertionError):
    pass


def peer(pid: str) -> Peer:
    """A unique, valid ``tcp://HOST:PORT`` URL per id (the host spells the id in hex)."""
    return Peer(pid, f"tcp://{pid.encode().hex()}.sim:{7000 + sum(map(ord, pid)) % 50000}")


def make_config(voters: Iterable[str], learners: Iterable[str] = ()) -> ClusterConfig:
    return ClusterConfig(tuple(peer(v) for v in voters), None, tuple(peer(v) for v in learners))


def put(key: str, value: Any) -> bytes:
    return msgpack.packb(["put", key, value])


def new_core(pid: str, voters: Iterable[str], learners: Iterable[str] = (), **kw: Any) -> RaftCore:
    """A bare core for message-level tests (seeded, so deterministic)."""
    kw.setdefault("rng", random.Random(0))
    return RaftCore(pid, make_config(voters, learners), **kw)


def drain(core: RaftCore) -> list[Ready]:
    """Take every Ready (as if persisted, sent and applied at once)."""
    readies = []
    while core.has_ready():
        rd = core.ready()
        core.advance(rd)
        readies.append(rd)
    return readies


def outbox(core: RaftCore) -> list[Message]:
    return [m for rd in drain(core) for m in rd.messages]


def elect(core: RaftCore) -> None:
    """Make ``core`` leader: time out, then grant every (pre-)vote it asks for."""
    for _ in range(3 * core.election_tick):
        core.tick()
        if core.role is not Role.FOLLOWER:
            break
    pending = outbox(core)
    while pending and not core.is_leader:
        m = pending.pop(0)
        if isinstance(m, RequestVote):
            core.step(VoteResponse(m.to, core.id, m.term, True, m.pre_vote))
        if not pending and not core.is_leader:
            pending = outbox(core)
    assert core.is_leader, core.role


# -- state machine ----------------------------------------------------------------------------


class KvMachine:
    """put/get registers; skips an entry whose reqid it applied before (dedup)."""

    def __init__(self) -> None:
        self.kv: dict[str, Any] = {}
        self.applied = 0
        self.seen: set[bytes] = set()

    def apply(self, entry: Entry) -> None:
        if entry.index != self.applied + 1:
            raise SafetyViolation(f"applied {entry.index} after {self.applied}")
        self.applied = entry.index
        if entry.type is not EntryType.STATE or entry.reqid in self.seen:
            return
        self.seen.add(entry.reqid)
        op = msgpack.unpackb(entry.data)
        if op[0] == "put":
            self.kv[op[1]] = op[2]

    def digest(self) -> tuple:
        return tuple(sorted(self.kv.items()))

    def snapshot(self, meta: SnapshotMeta) -> bytes:
        return msgpack.packb(
            {
                "index": meta.index,
                "term": meta.term,
                "config": encode_config(meta.config),
                "kv": self.kv,
                "seen": sorted(self.seen),
            }
        )

    @staticmethod
    def load(data: bytes) -> tuple[SnapshotMeta, KvMachine]:
        obj = msgpack.unpackb(data)
        sm = KvMachine()
        sm.kv = dict(obj["kv"])
        sm.seen = set(obj["seen"])
        sm.applied = obj["index"]
        return SnapshotMeta(obj["index"], obj["term"], decode_config(obj["config"])), sm


# -- one node ---------------------------------------------------------------------------------


@dataclass
class Disk:
    hard_state: HardState = field(default_factory=HardState)
    snapshot: SnapshotMeta = field(default_factory=SnapshotMeta)
    snapshot_data: bytes = b""
    entries: list[Entry] = field(default_factory=list)
    staging: dict[tuple[int, int], bytearray] = field(default_factory=dict)

    @property
    def last_index(self) -> int:
        return self.entries[-1].index if self.entries else self.snapshot.index

    def term(self, index: int) -> int | None:
        if index == self.snapshot.index:
            return self.snapshot.term
        if self.entries and self.entries[0].index <= index <= self.entries[-1].index:
            return self.entries[index - self.entries[0].index].term
        return 0 if index == 0 else None


class SimNode:
    def __init__(
        self,
        net: Network,
        pid: str,
        config: ClusterConfig,
        options: dict[str, Any],
        lazy_fsync: bool = False,
    ):
        self.net = net
        self.id = pid
        self.config = config
        self.options = options
        self.lazy_fsync = lazy_fsync
        self.unsynced = 0
        """The last write of a leader's plain append not flushed yet (0: none)."""
        self.durable = 0
        """Entries up to here survive a crash."""
        self.disk = Disk()
        self.core: RaftCore | None = None
        self.sm: KvMachine | None = None
        self.restarts = 0

    @property
    def alive(self) -> bool:
        return self.core is not None

    def start(self) -> None:
        assert self.core is None
        if self.disk.snapshot_data:
            _, self.sm = KvMachine.load(self.disk.snapshot_data)
        else:
            self.sm = KvMachine()
        self.core = RaftCore(
            self.id,
            self.config,
            rng=random.Random(self.net.rng.random()),
            hard_state=self.disk.hard_state,
            snapshot=self.disk.snapshot,
            entries=list(self.disk.entries),
            read_snapshot=self.read_snapshot,
            **self.options,
        )
        self.durable = self.disk.last_index
        self.restarts += 1

    def crash(self) -> None:
        self.core = None
        self.sm = None
        if self.unsynced:  # the writes not flushed yet are lost, all of them
            self.disk.entries = [e for e in self.disk.entries if e.index <= self.durable]
            self.unsynced = 0

    def flush(self) -> None:
        """The pending writes become durable and are reported to the core."""
        if self.unsynced and self.core is not None:
            write, self.unsynced = self.unsynced, 0
            self.durable = self.disk.last_index
            self.core.log_durable(write)

    def read_snapshot(self, index: int, offset: int, limit: int) -> tuple[bytes, int] | None:
        if self.disk.snapshot.index != index:
            return None
        data = self.disk.snapshot_data
        return data[offset : offset + limit], len(data)

    def process(self) -> None:
        """The shell loop: persist → send → apply → advance (→ restore)."""
        core = self.core
        while core is not None and core.has_ready():
            role, term = core.role, core.term
            rd = core.ready()
            if self.lazy_fsync and core.is_leader and plain(rd, self.disk.hard_state):
                self._persist(rd, was_leader=True)  # into the page cache: not durable yet
                self.unsynced = rd.write or self.unsynced
                for msg in rd.messages:
                    self.net.send(msg)
                self._apply(rd)
                core.advance(rd, durable=False)
                continue
            self.flush()
            completed = self._persist(rd, was_leader=role is Role.LEADER and term == core.term)
            self.durable = self.disk.last_index
            for msg in rd.messages:
                self.net.send(msg)
            self._apply(rd)
            core.advance(rd)
            if completed is not None:
                meta, _ = KvMachine.load(bytes(self.disk.staging[completed]))
                core.restore(meta)

    def _persist(self, rd: Ready, was_leader: bool) -> tuple[int, int] | None:
        disk, checker = self.disk, self.net.checker
        if rd.snapshot is not None:
            key = (rd.snapshot.index, rd.snapshot.term)
            disk.snapshot, disk.snapshot_data = rd.snapshot, bytes(disk.staging.pop(key))
            disk.entries = []
        if rd.truncate_from is not None:
            if was_leader:
                raise SafetyViolation(f"leader {self.id} truncated its log (append-only)")
            gone = [e for e in disk.entries if e.index >= rd.truncate_from]
            checker.on_truncate(self, gone)
            disk.entries = [e for e in disk.entries if e.index < rd.truncate_from]
        for entry in rd.entries:
            if entry.index != disk.last_index + 1:
                raise SafetyViolation(f"{self.id}: entry {entry.index} after {disk.last_index}")
            checker.on_entry(entry, disk.term(entry.index - 1))
            disk.entries.append(entry)
        completed = None
        for chunk in rd.snapshot_chunks:
            key = (chunk.index, chunk.term)
            if chunk.offset == 0:
                disk.staging[key] = bytearray()
            buf = disk.staging[key]
            if len(buf) != chunk.offset:
                raise SafetyViolation(f"chunk at {chunk.offset}, staged {len(buf)}")
            buf += chunk.data
            if chunk.last:
                completed = key
        if rd.hard_state is not None:
            checker.on_hard_state(self, disk.hard_state, rd.hard_state)
            disk.hard_state = rd.hard_state
        return completed

    def _apply(self, rd: Ready) -> None:
        assert self.sm is not None
        if rd.snapshot is not None:
            _, self.sm = KvMachine.load(self.disk.snapshot_data)
            self.net.checker.on_snapshot_loaded(self)
        for entry in rd.committed_entries:
            self.sm.apply(entry)
            self.net.checker.on_apply(self, entry)
            self.net.on_apply(self, entry)
        for rs in rd.read_states:
            self.net.on_read_state(self, rs)

    def compact(self, keep: int = 0) -> bool:
        """Snapshot the state machine at its applied index and drop the log up to there."""
        assert self.core is not None and self.sm is not None
        self.flush()  # (the peer waits for its fsync thread before it installs a snapshot)
        applied = self.sm.applied
        if applied <= self.disk.snapshot.index:
            return False
        meta = self.core.snapshot_meta(applied)
        self.disk.snapshot, self.disk.snapshot_data = meta, self.sm.snapshot(meta)
        upto = max(applied - keep, self.core.first_index - 1)
        self.core.compact(upto, meta)
        self.disk.entries = [e for e in self.disk.entries if e.index > upto]
        return True


# -- the network ------------------------------------------------------------------------------


class Network:
    def __init__(
        self,
        voters: Iterable[str],
        *,
        seed: int = 0,
        learners: Iterable[str] = (),
        extra: Iterable[str] = (),
        drop: float = 0.0,
        dup: float = 0.0,
        max_delay: int = 0,
        lazy_fsync: bool = False,
        **options: Any,
    ) -> None:
        self.rng = random.Random(seed)
        self.time = 0
        self.events = 0
        self.drop = drop
        self.dup = dup
        self.max_delay = max_delay
        self.queue: list[tuple[int, int, Message]] = []
        self.serial = 0
        self.cut: set[tuple[str, str]] = set()
        self.checker = Checker(self)
        self.apply_hooks: list[Callable[[SimNode, Entry], None]] = []
        self.read_hooks: list[Callable[[SimNode, ReadState], None]] = []
        self.delivered = 0
        self.trace: list[Message] = []
        self.filters: list[Callable[[Message], bool]] = []
        """Each returns True to drop a message (scripted faults)."""
        config = make_config(voters, learners)
        self.nodes: dict[str, SimNode] = {}
        for pid in [*voters, *learners]:
            self.nodes[pid] = SimNode(self, pid, config, options, lazy_fsync)
        for pid in extra:  # not in any config yet (joins later)
            self.nodes[pid] = SimNode(self, pid, ClusterConfig(()), options, lazy_fsync)
        for node in self.nodes.values():
            node.start()

    # -- time and events --

    def now(self) -> float:
        return EPOCH + self.time * TICK_SECONDS

    def _event(self) -> None:
        self.events += 1
        self.checker.check()

    def send(self, msg: Message) -> None:
        self.trace.append(msg)
        if msg.to not in self.nodes or (msg.frm, msg.to) in self.cut:
            return
        if any(f(msg) for f in self.filters):
            return
        if self.drop and self.rng.random() < self.drop:
            return
        copies = 2 if self.dup and self.rng.random() < self.dup else 1
        for _ in range(copies):
            delay = self.rng.randint(0, self.max_delay) if self.max_delay else 0
            self.serial += 1
            self.queue.append((self.time + delay, self.serial, msg))

    def deliver_due(self) -> None:
        while True:
            due = [k for k, item in enumerate(self.queue) if item[0] <= self.time]
            if not due:
                return
            _, _, msg = self.queue.pop(self.rng.choice(due))
            node = self.nodes[msg.to]
            if node.core is None or (msg.frm, msg.to) in self.cut:
                continue
            mark = len(self.trace)
            node.core.step(msg)
            node.process()
            check_wire_roundtrip(msg, self.trace[mark:])
            self.delivered += 1
            self._event()

    def tick(self, pid: str) -> None:
        node = self.nodes[pid]
        if node.core is None:
            return
        node.core.tick()
        node.process()
        self._event()

    def step(self) -> None:
        """One unit of time: every live node ticks (random order), due messages land."""
        self.time += 1
        order = [pid for pid, node in self.nodes.items() if node.alive]
        self.rng.shuffle(order)
        for pid in order:
            self.tick(pid)
            self.deliver_due()
            node = self.nodes[pid]
            if node.unsynced and node.core is not None and self.rng.random() < 0.1:
                node.flush()
                node.process()
                self._event()
        self.deliver_due()

    def run(self, ticks: int, until: Callable[[], bool] | None = None) -> bool:
        for _ in range(ticks):
            if until is not None and until():
                return True
            self.step()
        return until() if until is not None else True

    def settle(self) -> None:
        """Deliver everything in flight (no ticks)."""
        self.time += self.max_delay
        self.deliver_due()

    # -- faults --

    def isolate(self, pid: str) -> None:
        for other in self.nodes:
            if other != pid:
                self.cut.add((pid, other))
                self.cut.add((other, pid))

    def partition(self, *groups: Iterable[str]) -> None:
        sets = [set(g) for g in groups]
        for a in self.nodes:
            for b in self.nodes:
                if a != b and not any(a in s and b in s for s in sets):
                    self.cut.add((a, b))

    def heal(self) -> None:
        self.cut.clear()

    def crash(self, pid: str) -> None:
        self.nodes[pid].crash()
        self._event()

    def restart(self, pid: str) -> None:
        node = self.nodes[pid]
        if node.core is None:
            node.start()
            node.process()
            self._event()

    # -- observation --

    def leaders(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.core is not None and n.core.is_leader]

    def leader(self) -> SimNode | None:
        """The live leader of the highest term, if any."""
        best = None
        for node in self.leaders():
            assert node.core is not None
            if best is None or node.core.term > best.core.term:  # type: ignore[union-attr]
                best = node
        return best

    def wait_leader(self, ticks: int = 200) -> SimNode:
        def stable() -> bool:
            lead = self.leader()
            return (
                lead is not None
                and lead.core is not None
                and lead.core.commit >= 1
                and all(
                    n.core.term <= lead.core.term for n in self.nodes.values() if n.core is not None
                )
            )

        if not self.run(ticks, stable):
            raise AssertionError(f"no leader after {ticks} ticks")
        lead = self.leader()
        assert lead is not None
        return lead

    # -- clients --

    def propose(self, pid: str, data: bytes, reqid: bytes | None = None) -> ProposeResult:
        node = self.nodes[pid]
        assert node.core is not None
        result = node.core.propose(data, reqid or self.new_reqid(), self.now())
        node.process()
        self._event()
        return result

    def new_reqid(self, at: float | None = None) -> bytes:
        self.serial += 1
        seconds = int(self.now() if at is None else at)
        return seconds.to_bytes(4, "big") + self.serial.to_bytes(8, "big")

    def on_apply(self, node: SimNode, entry: Entry) -> None:
        for hook in self.apply_hooks:
            hook(node, entry)

    def on_read_state(self, node: SimNode, rs: ReadState) -> None:
        for hook in self.read_hooks:
            hook(node, rs)

    def commit_value(
        self, pid: str, key: str, value: Any, ticks: int = 200, nodes: Iterable[str] | None = None
    ) -> int:
        """Propose put(key, value) through whoever leads until it is applied on ``nodes``
        (default: every live node); returns its index. ``pid`` only names the intent."""
        wanted = [self.nodes[p] for p in nodes] if nodes is not None else list(self.nodes.values())
        reqid = self.new_reqid()
        index = None
        for _ in range(ticks):
            lead = self.leader()
            if lead is not None and lead.core is not None:
                try:
                    index = lead.core.propose(put(key, value), reqid, self.now()).index
                    lead.process()
                    self._event()
                except (NotLeader, ProposalDropped):
                    pass
            if index is not None and all(
                n.sm is not None and n.sm.applied >= index for n in wanted if n.alive
            ):
                return index
            self.step()
        raise AssertionError(f"put({key!r}) not applied everywhere within {ticks} ticks")

    def assert_converged(self) -> None:
        """Every live node's state machine and log agree (after quiescence)."""
        live = [n for n in self.nodes.values() if n.core is not None]
        digests = {n.id: (n.sm.applied, n.sm.digest()) for n in live}  # type: ignore[union-attr]
        assert len({d for d in digests.values()}) == 1, digests
        self.checker.full_log_matching()


# -- invariants -------------------------------------------------------------------------------

_ANSWERS = {
    AppendEntries: AppendResponse,
    RequestVote: VoteResponse,
    InstallSnapshot: SnapshotResponse,
    TimeoutNow: TimeoutNowResponse,
}


def check_wire_roundtrip(request: Message, sent: list[Message]) -> None:
    """Responses lose their echo fields on the wire; the shell restores them from the
    request it correlates (:func:`correlate`). That must give back the very same message."""
    answer = _ANSWERS.get(type(request))
    for msg in sent:
        if answer is None or not isinstance(msg, answer) or msg.to != request.frm:
            continue
        if isinstance(msg, AppendResponse):
            bare = dataclasses.replace(msg, prev_index=0, last_index=0, seq=0)
        elif isinstance(msg, VoteResponse):
            bare = dataclasses.replace(msg, pre_vote=False)
        elif isinstance(msg, SnapshotResponse):
            bare = dataclasses.replace(msg, index=0, end=0, total_size=0)
        else:
            bare = msg
        if correlate(request, bare) != msg:  # type: ignore[arg-type]
            raise SafetyViolation(f"{msg} does not round-trip as an answer to {request}")


class Checker:
    """Raft's safety properties (Figure 3 of the paper), checked incrementally."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.leaders: dict[int, str] = {}
        self.committed: dict[int, Entry] = {}
        self.committed_max = 0
        self.states: dict[int, tuple] = {}
        self.table: dict[tuple[int, int], tuple[Entry, int | None]] = {}
        self.verified: dict[tuple[str, int], int] = {}
        self.commit_term: dict[int, int] = {}
        """index -> a term whose leader had it committed (leaders of later terms need it)"""
        self.commit_known = 0

    # Log Matching: an (index, term) pair fixes the entry and the term before it, so
    # (by induction) the whole prefix: two logs that share an (index, term) agree up to it.
    def on_entry(self, entry: Entry, prev_term: int | None) -> None:
        key = (entry.index, entry.term)
        seen = self.table.setdefault(key, (entry, prev_term))
        if seen[0] != entry or (None not in (seen[1], prev_term) and seen[1] != prev_term):
            raise SafetyViolation(f"log matching: {seen} vs {(entry, prev_term)}")

    def on_truncate(self, node: SimNode, gone: list[Entry]) -> None:
        for entry in gone:
            if self.committed.get(entry.index) == entry:
                raise SafetyViolation(f"{node.id} truncated committed entry {entry.index}")

    def on_hard_state(self, node: SimNode, old: HardState, new: HardState) -> None:
        if new.term < old.term:
            raise SafetyViolation(f"{node.id}: term went back {old.term} -> {new.term}")
        if new.term == old.term and old.voted_for is not None and new.voted_for != old.voted_for:
            raise SafetyViolation(f"{node.id}: voted twice in term {new.term}")

    # State Machine Safety: one entry per index, ever, on every node.
    def on_committed(self, node: SimNode, entry: Entry) -> None:
        known = self.committed.setdefault(entry.index, entry)
        if known != entry:
            raise SafetyViolation(f"{node.id} committed {entry} where {known} was committed")
        self.committed_max = max(self.committed_max, entry.index)

    def on_apply(self, node: SimNode, entry: Entry) -> None:
        self.on_committed(node, entry)
        assert node.sm is not None
        state = self.states.setdefault(entry.index, node.sm.digest())
        if state != node.sm.digest():
            raise SafetyViolation(f"{node.id}: state after {entry.index} differs")

    def on_snapshot_loaded(self, node: SimNode) -> None:
        assert node.sm is not None
        state = self.states.get(node.sm.applied)
        if state is not None and state != node.sm.digest():
            raise SafetyViolation(f"{node.id}: snapshot at {node.sm.applied} has another state")

    def check(self) -> None:
        leaders = []
        for node in self.net.nodes.values():
            core = node.core
            if core is None:
                continue
            if not core.first_index - 1 <= core.commit <= core.last_index:
                raise SafetyViolation(f"{node.id}: commit {core.commit} outside the log")
            if core.role is not Role.LEADER:
                continue
            leaders.append(node)
            # Election Safety: at most one leader per term.
            holder = self.leaders.setdefault(core.term, node.id)
            if holder != node.id:
                raise SafetyViolation(f"two leaders in term {core.term}: {holder}, {node.id}")
            # a leader's commit index is committed in its term
            for index in range(self.commit_known + 1, core.commit + 1):
                self.commit_term[index] = core.term
                if index >= core.first_index:
                    self.on_committed(node, core.entries(index, index)[0])
            self.commit_known = max(self.commit_known, core.commit)
        for node in leaders:
            # Leader Completeness: a leader holds every entry committed in an earlier term.
            core = node.core
            assert core is not None
            key = (node.id, core.term)
            start = max(self.verified.get(key, 0), core.first_index - 1)
            for index in range(start + 1, self.commit_known + 1):
                if self.commit_term[index] >= core.term:
                    continue
                entry = self.committed.get(index)
                if index > core.last_index or (
                    entry is not None and core.entries(index, index)[0] != entry
                ):
                    raise SafetyViolation(f"leader {node.id} (term {core.term}) lacks {index}")
            self.verified[key] = max(start, self.commit_known)

    def full_log_matching(self) -> None:
        """Direct pairwise Log Matching over the live cores' in-memory logs."""
        logs = {}
        for node in self.net.nodes.values():
            if node.core is not None:
                core = node.core
                logs[node.id] = {
                    e.index: e for e in core.entries(core.first_index, core.last_index)
                }
                # the core's log is exactly what the disk holds
                disk = {e.index: e for e in node.disk.entries if e.index >= core.first_index}
                if disk != logs[node.id]:
                    raise SafetyViolation(f"{node.id}: memory and disk logs differ")
        ids = sorted(logs)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                common = sorted(set(logs[a]) & set(logs[b]), reverse=True)
                matched = False
                for index in common:
                    if matched or logs[a][index].term == logs[b][index].term:
                        matched = True
                        if logs[a][index] != logs[b][index]:
                            raise SafetyViolation(f"log matching: {a} and {b} differ at {index}")
