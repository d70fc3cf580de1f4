"""Log replication, the half of :class:`~dafka.raft.core.RaftCore` that moves entries.

Follower side: AppendEntries (§5.3 consistency check, conflict hints, commit) and
InstallSnapshot chunks (§7). Leader side: per-follower :class:`Progress` (probe,
pipelined replicate, snapshot streaming), heartbeats, check-quorum, commitment by
joint majority (§5.4.2: only entries of the current term are committed by counting),
finishing a joint configuration, and ReadIndex confirmation.

A part the core owns (:class:`Replication`), with its own state; what it reads of the
core is declared by :class:`Host`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ...errors import ConfigError, RaftError
from ..codec import (
    Entry,
    SnapshotMeta,
)
from ._configs import Configs
from ._extensions import PLAIN
from ._log import RaftLog
from ._membership import all_peers
from ._messages import (
    AppendEntries,
    AppendResponse,
    InstallSnapshot,
    Message,
    SnapshotResponse,
    TimeoutNow,
)
from ._progress import Progress, ProgressState
from ._ready import ReadState, Role, SnapshotChunk, SnapshotReader
from ._requests import RequestIds

__all__ = ["Host", "Replication"]


@dataclass(slots=True)
class _Read:
    ctx: bytes
    index: int
    seq: int


@dataclass(slots=True)
class _Receiving:
    """A snapshot being received (follower)."""

    index: int
    term: int
    total: int
    leader: str
    next: int = 0
    complete: bool = False


class Host(Protocol):
    """What :class:`Replication` reads of the core that owns it, and the core's methods it
    calls (the core's fields are written in ``_core.py`` only)."""

    term: int
    commit: int
    role: Role
    heartbeat_tick: int
    plain_peers: frozenset[str]
    configs: Configs
    requests: RequestIds

    @property
    def snapshot(self) -> SnapshotMeta: ...

    def truncate_from(self, index: int) -> None: ...

    def appended(self, entries: Sequence[Entry]) -> None: ...

    def follow_commit(self, index: int) -> None: ...

    def recovered_through(self, index: int) -> None: ...

    def maybe_commit(self) -> bool: ...


class Replication:
    """Replication: the entries moving between the core and the other peers. Owns every
    field it writes (per-follower progress, sends owed, the AppendEntries sequence, reads
    being confirmed, a snapshot being received, a leadership transfer under way); reads
    the term, commit, role and configuration of its :class:`Host`."""

    __slots__ = (
        "_log",
        "_send",
        "chunks",
        "core",
        "heartbeat_elapsed",
        "id",
        "max_batch_bytes",
        "max_batch_entries",
        "max_inflight",
        "progress",
        "read_snapshot",
        "reads_confirming",
        "reads_pending",
        "reads_ready",
        "receiving",
        "seq",
        "snapshot_chunk_size",
        "transfer_elapsed",
        "transferee",
        "want_send",
    )

    def __init__(
        self,
        core: Host,
        id: str,
        log: RaftLog,
        send: Callable[[Message], None],
        *,
        max_batch_entries: int,
        max_batch_bytes: int,
        max_inflight: int,
        snapshot_chunk_size: int,
        read_snapshot: SnapshotReader | None,
    ) -> None:
        self.core = core
        self.id = id
        self._log = log  # the core's log (one object, shared)
        self._send = send  # appends to the core's outbox
        self.max_batch_entries = max_batch_entries
        self.max_batch_bytes = max_batch_bytes
        self.max_inflight = max_inflight
        self.snapshot_chunk_size = snapshot_chunk_size
        self.read_snapshot = read_snapshot
        self.progress: dict[str, Progress] = {}
        self.want_send: dict[str, None] = {}  # followers owed an AppendEntries
        self.seq = 0
        self.chunks: list[SnapshotChunk] = []  # received, for the next Ready
        self.receiving: _Receiving | None = None
        self.reads_pending: list[bytes] = []
        self.reads_confirming: deque[_Read] = deque()
        self.reads_ready: list[ReadState] = []
        self.heartbeat_elapsed = 0
        self.transferee: str | None = None
        self.transfer_elapsed = 0

    def reset(self) -> None:
        """A new term or role: no followers tracked, nothing owed, no read or transfer."""
        self.heartbeat_elapsed = 0
        self.progress = {}
        self.want_send = {}
        self.transferee = None
        self.reads_pending.clear()
        self.reads_confirming.clear()

    def has_ready(self, handed_commit: int) -> bool:
        return bool(
            self.want_send or self.chunks or any(r.index <= handed_commit for r in self.reads_ready)
        )

    def take_chunks(self) -> tuple[SnapshotChunk, ...]:
        chunks = tuple(self.chunks)
        self.chunks = []
        return chunks

    def take_reads(self, handed: int) -> tuple[ReadState, ...]:
        """The confirmed reads whose index the state machine will have applied."""
        reads = tuple(r for r in self.reads_ready if r.index <= handed)
        self.reads_ready = [r for r in self.reads_ready if r.index > handed]
        return reads

    def take_received(self, meta: SnapshotMeta) -> _Receiving | None:
        """The completely received snapshot ``meta`` describes, forgotten here (or None)."""
        recv = self.receiving
        if recv is None or not recv.complete or (recv.index, recv.term) != (meta.index, meta.term):
            return None
        self.receiving = None
        return recv

    # -- follower side -------------------------------------------------------------------

    def on_append(self, m: AppendEntries) -> None:
        def answer(success: bool, c_term: int | None = None, c_index: int | None = None) -> None:
            self._send(
                AppendResponse(
                    self.id,
                    m.frm,
                    self.core.term,
                    success,
                    c_term,
                    c_index,
                    m.prev_index,
                    m.last_index,
                    m.seq,
                )
            )

        if m.entries and (
            m.entries[0].index != m.prev_index + 1 or m.entries[-1].index != m.last_index
        ):
            return  # malformed: entry indexes do not follow prev_index
        prev_index, prev_term, entries = m.prev_index, m.prev_term, m.entries
        base = self._log.base_index
        if prev_index < base:
            # everything up to base is committed here: skip what the snapshot covers
            skip = base - prev_index
            if skip >= len(entries):
                self.core.recovered_through(m.last_index)
                answer(True)
                return
            prev_index, prev_term, entries = base, entries[skip - 1].term, entries[skip:]
        if self._log.term(prev_index) != prev_term:
            hint = self._log.find_conflict_by_term(
                min(m.prev_index, self._log.last_index), m.prev_term
            )
            answer(False, self._log.term(hint), hint)
            return
        new: Sequence[Entry] = ()
        for k, entry in enumerate(entries):
            have = self._log.term(entry.index)
            if have is None:
                new = entries[k:]
                break
            if have != entry.term:
                if entry.index <= self.core.commit:
                    raise RaftError(f"leader {m.frm} conflicts with committed entry {entry.index}")
                self.core.truncate_from(entry.index)
                new = entries[k:]
                break
        if new:
            self._log.append(new)
            self.core.appended(new)
        self.core.follow_commit(min(m.commit, m.last_index))
        self.core.requests.prune_if_due(self.core.commit)  # a follower forgets what a leader would
        self.core.recovered_through(m.last_index)
        answer(True)

    def on_snapshot_chunk(self, m: InstallSnapshot) -> None:
        def answer(next_offset: int | None) -> None:
            self._send(
                SnapshotResponse(
                    self.id, m.frm, self.core.term, next_offset, m.index, m.end, m.total_size
                )
            )

        if m.index <= self.core.commit or self._log.term(m.index) == m.term_of_index:
            self.core.follow_commit(m.index)  # snapshots hold committed entries only
            answer(None if m.end >= m.total_size else m.total_size)
            return
        recv = self.receiving
        if recv is None or (recv.index, recv.term, recv.total) != (
            m.index,
            m.term_of_index,
            m.total_size,
        ):
            recv = self.receiving = _Receiving(m.index, m.term_of_index, m.total_size, m.frm)
        if recv.complete:
            return  # restore() answers
        if m.offset != recv.next:
            answer(recv.next)
            return
        self.chunks.append(SnapshotChunk(m.index, m.term_of_index, m.offset, m.total_size, m.chunk))
        recv.next = m.end
        recv.leader = m.frm
        if recv.next >= recv.total:
            recv.complete = True
        else:
            answer(None)

    # -- leader side ---------------------------------------------------------------------

    def tick(self, election_tick: int, check_quorum: bool) -> bool:
        """A leader's tick (``check_quorum``: an election timeout passed and the core checks
        quorum). False when a quorum of voters was not heard from: the core steps down."""
        self.heartbeat_elapsed += 1
        if self.transferee is not None:
            self.transfer_elapsed += 1
            if self.transfer_elapsed >= election_tick:
                self.transferee = None
        if check_quorum:
            active = {self.id}
            active.update(p for p, pr in self.progress.items() if pr.recent_active)
            if not self.core.configs.voters.has_quorum(active):
                return False
            for pr in self.progress.values():
                pr.recent_active = False
        if self.heartbeat_elapsed >= self.core.heartbeat_tick:
            self.heartbeat_elapsed = 0
            self._bcast_heartbeat()
        return True

    def sync_progress(self) -> None:
        """Track the peers of the committed config and of every later one (leader).

        A peer removed by an uncommitted config still gets the log until that config
        commits, so it normally learns it was removed (and stops campaigning).
        """
        wanted: set[str] = set()
        for c in self.core.configs.since_committed(self.core.commit):
            wanted.update(p.id for p in all_peers(c))
        wanted.discard(self.id)
        for peer in list(self.progress):
            if peer not in wanted:
                # farewell: the log and commit index that tell it its removal committed
                self.progress[peer].become_probe()
                self.send_append(peer, empty_ok=True)
                del self.progress[peer]
        for peer in sorted(wanted):
            pr = self.progress.get(peer)
            if pr is None:
                pr = self.progress[peer] = Progress(next=self._log.last_index + 1)
            pr.learner = peer not in self.core.configs.voters
        if self.transferee is not None and self.transferee not in self.core.configs.voters:
            self.transferee = None

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def send_append(self, peer: str, empty_ok: bool = False) -> bool:
        pr = self.progress[peer]
        if pr.is_paused(self.max_inflight):
            return False
        if pr.rewind:
            pr.probe_prev = pr.next - 1
        prev = self._prev_for(pr)
        pr.next = prev + 1
        prev_term = self._log.term(prev)
        if prev_term is None:
            return self._start_snapshot(peer)
        entries = self._batch(pr.next)
        if not entries and not empty_ok:
            return False
        self._send_ae(pr, peer, prev, prev_term, entries)
        pr.sent(prev + len(entries), bool(entries))
        return True

    def _prev_for(self, pr: Progress) -> int:
        """``prev`` of the next AppendEntries: never behind the last one sent, whose entries
        the follower may hold and have acknowledged (a reference follower truncates at
        ``prev + 1``), except right after a rejection proved where its log ends."""
        # guard: raft-appendentries-never-behind-last
        prev = pr.next - 1 if pr.rewind else max(pr.next - 1, pr.sent_last)
        return min(prev, self._log.last_index)

    def _send_ae(
        self, pr: Progress, peer: str, prev: int, prev_term: int, entries: tuple[Entry, ...]
    ) -> None:
        seq = self._next_seq()
        self._send(
            AppendEntries(
                self.id, peer, self.core.term, prev, prev_term, self.core.commit, entries, seq
            )
        )
        pr.note_sent(prev + len(entries))

    def _batch(self, lo: int) -> tuple[Entry, ...]:
        entries = self._log.slice(lo, lo + self.max_batch_entries - 1)
        size = 0
        for k, entry in enumerate(entries):
            size += len(entry.data) + 20
            if size > self.max_batch_bytes and k > 0:
                return tuple(entries[:k])
        return tuple(entries)

    def _send_heartbeat(self, peer: str) -> bool:
        """An empty AppendEntries, never behind what is in flight (at ``match`` it would
        truncate what a reference follower acknowledged meanwhile)."""
        pr = self.progress[peer]
        if pr.state is ProgressState.SNAPSHOT:
            return False
        # guard: raft-heartbeat-never-behind-what
        prev = self._prev_for(pr)
        prev_term = self._log.term(prev)
        if prev_term is None:
            return False  # compacted: the follower needs the snapshot
        self._send_ae(pr, peer, prev, prev_term, ())
        return True

    def bcast_append(self) -> None:
        self.want_send.update(dict.fromkeys(self.progress))

    def flush_sends(self) -> None:
        """Send to each follower marked since the last flush (by new entries, a commit, an
        answer or a heartbeat) what it lacks: however many answers a loop turn brings, one
        AppendEntries per follower, more only when the entries exceed a batch (called by
        ``ready()``)."""
        if not self.want_send:
            return
        want, self.want_send = self.want_send, {}
        if self.core.role is not Role.LEADER:
            return
        for peer in want:
            for _ in range(self.max_inflight):
                if peer not in self.progress or not self.send_append(peer):
                    break

    def _bcast_heartbeat(self) -> None:
        for peer, pr in self.progress.items():
            if pr.state is ProgressState.PROBE:
                pr.paused = False
                self.send_append(peer, empty_ok=True)
            elif pr.state is ProgressState.REPLICATE:
                pr.stalled = pr.stalled + 1 if pr.inflight and not pr.progressed else 0
                if pr.stalled >= 2 or not self._send_heartbeat(peer):
                    pr.stalled = 0
                    pr.become_probe()  # the pipeline stalled (lost messages): probe again
                    self.send_append(peer, empty_ok=True)
                else:
                    self.want_send[peer] = None
            else:
                self._send_snapshot_chunk(peer)
            pr.progressed = False

    def _start_snapshot(self, peer: str) -> bool:
        meta = self.core.snapshot
        if self.read_snapshot is None or meta.index < self._log.base_index:
            return False
        # to every follower, a reference peer too: it stores the bytes as they are (its
        # state machine is not ours and reads none of our entries either) and serves them
        # back as they are, to our followers and to RequestEntries readers
        # guard: raft-snapshots-streamed-reference-peers
        self.progress[peer].become_snapshot(meta.index, meta.term)
        return self._send_snapshot_chunk(peer)

    def _send_snapshot_chunk(self, peer: str) -> bool:
        pr = self.progress[peer]
        if self.read_snapshot is None:
            return False
        got = self.read_snapshot(pr.snap_index, pr.snap_offset, self.snapshot_chunk_size)
        if got is None and self.core.snapshot.index > pr.snap_index:
            pr.become_snapshot(
                self.core.snapshot.index, self.core.snapshot.term
            )  # a newer one replaced it
            got = self.read_snapshot(pr.snap_index, pr.snap_offset, self.snapshot_chunk_size)
        if got is None:
            return False
        chunk, total = got
        self._send(
            InstallSnapshot(
                self.id,
                peer,
                self.core.term,
                pr.snap_index,
                pr.snap_term,
                pr.snap_offset,
                total,
                chunk,
            )
        )
        return True

    def on_append_response(self, m: AppendResponse) -> None:
        pr = self.progress.get(m.frm)
        if pr is None:
            return
        pr.recent_active = True
        if m.seq > pr.acked_seq:
            pr.acked_seq = m.seq
            self.check_reads()
        if m.success:
            pr.acked(m.last_index)
            advanced = pr.maybe_update(m.last_index)
            agreed = pr.next - 1 if pr.state is ProgressState.PROBE else pr.snap_index
            if pr.state is not ProgressState.REPLICATE and pr.match >= agreed:
                pr.become_replicate()  # the probe matched, or the snapshot is not needed
            if advanced:
                if self.core.maybe_commit():
                    self.bcast_append()
                if m.frm == self.transferee and pr.match == self._log.last_index:
                    self._send(TimeoutNow(self.id, m.frm, self.core.term))
            if m.frm in self.progress:
                self.want_send[m.frm] = None
            return
        # guard: raft-rejections-older-last-re
        if pr.state is ProgressState.SNAPSHOT or m.seq < pr.reset_seq:
            return  # stale: sent before the last re-probe
        if pr.state is ProgressState.REPLICATE and m.prev_index <= pr.match:
            return  # stale
        if pr.state is ProgressState.PROBE and m.prev_index != pr.next - 1:
            if m.prev_index != pr.probe_prev:
                return  # stale
            # the re-probe's own rejection, answered after heartbeats resumed at sent_last:
            # it proves the follower holds none of what the re-probe carried, and ignoring
            # it would have the leader re-probe at the same place for ever
        # the hint is where the follower's log may agree with ours (its log end, from a
        # reference follower); the rejection proves its commit is not beyond that
        if m.conflict_term is not None:
            hint = m.prev_index if m.conflict_index is None else min(m.conflict_index, m.prev_index)
            nxt = self._log.find_conflict_by_term(hint, m.conflict_term) + 1
        elif m.conflict_index is not None:
            nxt = m.conflict_index + 1
        else:
            nxt = m.prev_index
        pr.become_probe(min(nxt, m.prev_index))
        pr.reset_seq = self.seq + 1
        # guard: raft-rejection-walks-back-follower
        pr.rewind = True  # its log ends before what we sent: resume there
        self.send_append(m.frm, empty_ok=True)

    def on_snapshot_response(self, m: SnapshotResponse) -> None:
        pr = self.progress.get(m.frm)
        if pr is None:
            return
        pr.recent_active = True
        if pr.state is not ProgressState.SNAPSHOT or m.index != pr.snap_index:
            return
        if m.next_offset is None:
            if m.end <= pr.snap_offset and m.end < m.total_size:
                return  # a duplicate answer
            offset = m.end
        else:
            offset = m.next_offset
        if offset < m.total_size:
            pr.snap_offset = offset
            self._send_snapshot_chunk(m.frm)
            return
        pr.maybe_update(pr.snap_index)
        pr.become_probe()
        pr.rewind = True  # its log is the snapshot now
        if self.core.maybe_commit():
            self.bcast_append()
        else:
            self.send_append(m.frm, empty_ok=True)

    def quorum_index(self) -> int:
        """The highest index a quorum of voters holds (our own log once durable)."""
        match = {peer: pr.match for peer, pr in self.progress.items()}
        match[self.id] = self._log.stable_index  # our own log counts once durable
        return min(self.core.configs.voters.committed_index(match), self._log.last_index)

    def start_pending_reads(self) -> None:
        """Reads asked before our term's first commit: confirm them now."""
        if self.reads_pending:
            pending, self.reads_pending = self.reads_pending, []
            for ctx in pending:
                self.start_read(ctx)

    def transfer_leader(self, to: str) -> None:
        """Hand leadership to voter ``to`` (see :meth:`RaftCore.transfer_leader`)."""
        if to == self.id or to == self.transferee:
            return
        if to not in self.core.configs.voters or to not in self.progress:
            raise ConfigError(f"cannot transfer leadership to {to!r}: not a voter")
        if to in self.core.plain_peers:
            raise ConfigError(f"cannot transfer leadership to {to!r}: {PLAIN} (TimeoutNow)")
        self.transferee = to
        self.transfer_elapsed = 0
        if self.progress[to].match == self._log.last_index:
            self._send(TimeoutNow(self.id, to, self.core.term))
        else:
            self.send_append(to)

    def start_read(self, ctx: bytes) -> None:
        self.reads_confirming.append(_Read(ctx, self.core.commit, self.seq + 1))
        for peer, pr in self.progress.items():
            if not pr.learner:
                self._send_heartbeat(peer)
        self.check_reads()

    def check_reads(self) -> None:
        while self.reads_confirming:
            read = self.reads_confirming[0]
            acks = {self.id}
            acks.update(p for p, pr in self.progress.items() if pr.acked_seq >= read.seq)
            if not self.core.configs.voters.has_quorum(acks):
                return
            self.reads_confirming.popleft()
            self.reads_ready.append(ReadState(read.ctx, read.index))
