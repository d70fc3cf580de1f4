"""Log replication, the half of :class:`~dafka.raft.core.RaftCore` that moves entries.

Follower side: AppendEntries (§5.3 consistency check, conflict hints, commit) and
InstallSnapshot chunks (§7). Leader side: per-follower :class:`Progress` (probe,
pipelined replicate, snapshot streaming), heartbeats, check-quorum, commitment by
joint majority (§5.4.2: only entries of the current term are committed by counting),
finishing a joint configuration, and ReadIndex confirmation.

This is a mixin: the state it uses is created by ``RaftCore.__init__``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import RaftError
from ..codec import (
    ZERO_REQID,
    ClusterConfig,
    Entry,
    EntryType,
    SnapshotMeta,
    encode_config,
)
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
from ._quorum import Voters
from ._ready import ReadState, Role, SnapshotChunk, SnapshotReader
from ._requests import RequestIds

__all__ = ["Replication"]


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


class Replication:
    """Replication state machine halves; see the module docstring."""

    id: str
    term: int
    commit: int
    role: Role
    leader: str | None
    check_quorum: bool
    election_tick: int
    heartbeat_tick: int
    max_batch_entries: int
    max_batch_bytes: int
    max_inflight: int
    snapshot_chunk_size: int
    plain_peers: frozenset[str]
    recovering_to: int | None
    _log: RaftLog
    _snapshot: SnapshotMeta
    _configs: list[tuple[int, ClusterConfig]]
    _voters: Voters
    _progress: dict[str, Progress]
    _want_send: dict[str, None]
    _msgs: list[Message]
    _chunks: list[SnapshotChunk]
    _seq: int
    _reads_pending: list[bytes]
    _reads_confirming: deque[_Read]
    _reads_ready: list[ReadState]
    _receiving: _Receiving | None
    _read_snapshot: SnapshotReader | None
    _transferee: str | None
    _transfer_elapsed: int
    _election_elapsed: int
    _heartbeat_elapsed: int
    requests: RequestIds

    if TYPE_CHECKING:  # provided by RaftCore

        @property
        def config(self) -> ClusterConfig: ...

        def _become_follower(self, term: int, leader: str | None) -> None: ...

        def _append_new(self, kind: EntryType, data: bytes, reqid: bytes) -> Entry: ...

        def _truncate(self, index: int) -> None: ...

        def _on_appended(self, entries: Sequence[Entry]) -> None: ...

    # -- follower side -------------------------------------------------------------------

    def _recovered_through(self, index: int) -> None:
        """Our log matches a leader's (or our own durable log) up to ``index``: a peer
        recovering lost entries (``recovering_to``) may vote again once that covers them."""
        # guard: raft-recovery-ends-when-leader
        if self.recovering_to is not None and index >= self.recovering_to:
            self.recovering_to = None

    def _on_append(self, m: AppendEntries) -> None:
        def answer(success: bool, c_term: int | None = None, c_index: int | None = None) -> None:
            self._send(
                AppendResponse(
                    self.id,
                    m.frm,
                    self.term,
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
                self._recovered_through(m.last_index)
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
                if entry.index <= self.commit:
                    raise RaftError(f"leader {m.frm} conflicts with committed entry {entry.index}")
                self._truncate(entry.index)
                new = entries[k:]
                break
        if new:
            self._log.append(new)
            self._on_appended(new)
        self.commit = max(self.commit, min(m.commit, m.last_index))
        self.requests.prune_if_due(self.commit)  # a follower forgets what a leader would
        self._recovered_through(m.last_index)
        answer(True)

    def _on_snapshot_chunk(self, m: InstallSnapshot) -> None:
        def answer(next_offset: int | None) -> None:
            self._send(
                SnapshotResponse(
                    self.id, m.frm, self.term, next_offset, m.index, m.end, m.total_size
                )
            )

        if m.index <= self.commit or self._log.term(m.index) == m.term_of_index:
            self.commit = max(self.commit, m.index)  # snapshots hold committed entries only
            answer(None if m.end >= m.total_size else m.total_size)
            return
        recv = self._receiving
        if recv is None or (recv.index, recv.term, recv.total) != (
            m.index,
            m.term_of_index,
            m.total_size,
        ):
            recv = self._receiving = _Receiving(m.index, m.term_of_index, m.total_size, m.frm)
        if recv.complete:
            return  # restore() answers
        if m.offset != recv.next:
            answer(recv.next)
            return
        self._chunks.append(
            SnapshotChunk(m.index, m.term_of_index, m.offset, m.total_size, m.chunk)
        )
        recv.next = m.end
        recv.leader = m.frm
        if recv.next >= recv.total:
            recv.complete = True
        else:
            answer(None)

    # -- leader side ---------------------------------------------------------------------

    def _tick_leader(self) -> None:
        self._heartbeat_elapsed += 1
        self._election_elapsed += 1
        if self._transferee is not None:
            self._transfer_elapsed += 1
            if self._transfer_elapsed >= self.election_tick:
                self._transferee = None
        if self._election_elapsed >= self.election_tick:
            self._election_elapsed = 0
            if self.check_quorum:
                active = {self.id}
                active.update(p for p, pr in self._progress.items() if pr.recent_active)
                if not self._voters.has_quorum(active):
                    self._become_follower(self.term, None)
                    return
                for pr in self._progress.values():
                    pr.recent_active = False
        if self._heartbeat_elapsed >= self.heartbeat_tick:
            self._heartbeat_elapsed = 0
            self._bcast_heartbeat()

    def _sync_progress(self) -> None:
        """Track the peers of the committed config and of every later one (leader).

        A peer removed by an uncommitted config still gets the log until that config
        commits, so it normally learns it was removed (and stops campaigning).
        """
        committed = 0
        for k, (at, _) in enumerate(self._configs):
            if at <= self.commit:
                committed = k
        wanted: set[str] = set()
        for _, c in self._configs[committed:]:
            wanted.update(p.id for p in all_peers(c))
        wanted.discard(self.id)
        for peer in list(self._progress):
            if peer not in wanted:
                # farewell: the log and commit index that tell it its removal committed
                self._progress[peer].become_probe()
                self._send_append(peer, empty_ok=True)
                del self._progress[peer]
        for peer in sorted(wanted):
            pr = self._progress.get(peer)
            if pr is None:
                pr = self._progress[peer] = Progress(next=self._log.last_index + 1)
            pr.learner = peer not in self._voters
        if self._transferee is not None and self._transferee not in self._voters:
            self._transferee = None

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _send(self, msg: Message) -> None:
        self._msgs.append(msg)

    def _send_append(self, peer: str, empty_ok: bool = False) -> bool:
        pr = self._progress[peer]
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
            AppendEntries(self.id, peer, self.term, prev, prev_term, self.commit, entries, seq)
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
        pr = self._progress[peer]
        if pr.state is ProgressState.SNAPSHOT:
            return False
        # guard: raft-heartbeat-never-behind-what
        prev = self._prev_for(pr)
        prev_term = self._log.term(prev)
        if prev_term is None:
            return False  # compacted: the follower needs the snapshot
        self._send_ae(pr, peer, prev, prev_term, ())
        return True

    def _bcast_append(self) -> None:
        self._want_send.update(dict.fromkeys(self._progress))

    def _flush_sends(self) -> None:
        """Send to each follower marked since the last flush (by new entries, a commit, an
        answer or a heartbeat) what it lacks: however many answers a loop turn brings, one
        AppendEntries per follower, more only when the entries exceed a batch (called by
        ``ready()``)."""
        if not self._want_send:
            return
        want, self._want_send = self._want_send, {}
        if self.role is not Role.LEADER:
            return
        for peer in want:
            for _ in range(self.max_inflight):
                if peer not in self._progress or not self._send_append(peer):
                    break

    def _bcast_heartbeat(self) -> None:
        for peer, pr in self._progress.items():
            if pr.state is ProgressState.PROBE:
                pr.paused = False
                self._send_append(peer, empty_ok=True)
            elif pr.state is ProgressState.REPLICATE:
                pr.stalled = pr.stalled + 1 if pr.inflight and not pr.progressed else 0
                if pr.stalled >= 2 or not self._send_heartbeat(peer):
                    pr.stalled = 0
                    pr.become_probe()  # the pipeline stalled (lost messages): probe again
                    self._send_append(peer, empty_ok=True)
                else:
                    self._want_send[peer] = None
            else:
                self._send_snapshot_chunk(peer)
            pr.progressed = False

    def _start_snapshot(self, peer: str) -> bool:
        meta = self._snapshot
        if self._read_snapshot is None or meta.index < self._log.base_index:
            return False
        # to every follower, a reference peer too: it stores the bytes as they are (its
        # state machine is not ours and reads none of our entries either) and serves them
        # back as they are, to our followers and to RequestEntries readers
        # guard: raft-snapshots-streamed-reference-peers
        self._progress[peer].become_snapshot(meta.index, meta.term)
        return self._send_snapshot_chunk(peer)

    def _send_snapshot_chunk(self, peer: str) -> bool:
        pr = self._progress[peer]
        if self._read_snapshot is None:
            return False
        got = self._read_snapshot(pr.snap_index, pr.snap_offset, self.snapshot_chunk_size)
        if got is None and self._snapshot.index > pr.snap_index:
            pr.become_snapshot(self._snapshot.index, self._snapshot.term)  # a newer one replaced it
            got = self._read_snapshot(pr.snap_index, pr.snap_offset, self.snapshot_chunk_size)
        if got is None:
            return False
        chunk, total = got
        self._send(
            InstallSnapshot(
                self.id, peer, self.term, pr.snap_index, pr.snap_term, pr.snap_offset, total, chunk
            )
        )
        return True

    def _on_append_response(self, m: AppendResponse) -> None:
        pr = self._progress.get(m.frm)
        if pr is None:
            return
        pr.recent_active = True
        if m.seq > pr.acked_seq:
            pr.acked_seq = m.seq
            self._check_reads()
        if m.success:
            pr.acked(m.last_index)
            advanced = pr.maybe_update(m.last_index)
            agreed = pr.next - 1 if pr.state is ProgressState.PROBE else pr.snap_index
            if pr.state is not ProgressState.REPLICATE and pr.match >= agreed:
                pr.become_replicate()  # the probe matched, or the snapshot is not needed
            if advanced:
                if self._maybe_commit():
                    self._bcast_append()
                if m.frm == self._transferee and pr.match == self._log.last_index:
                    self._send(TimeoutNow(self.id, m.frm, self.term))
            if m.frm in self._progress:
                self._want_send[m.frm] = None
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
        pr.reset_seq = self._seq + 1
        # guard: raft-rejection-walks-back-follower
        pr.rewind = True  # its log ends before what we sent: resume there
        self._send_append(m.frm, empty_ok=True)

    def _on_snapshot_response(self, m: SnapshotResponse) -> None:
        pr = self._progress.get(m.frm)
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
        if self._maybe_commit():
            self._bcast_append()
        else:
            self._send_append(m.frm, empty_ok=True)

    def _maybe_commit(self) -> bool:
        match = {peer: pr.match for peer, pr in self._progress.items()}
        match[self.id] = self._log.stable_index  # our own log counts once durable
        index = min(self._voters.committed_index(match), self._log.last_index)
        if index <= self.commit or self._log.term(index) != self.term:
            return False  # §5.4.2: only entries of our term are committed by counting
        self.commit = index
        self._sync_progress()
        self._maybe_finalize_config()
        if self.role is Role.LEADER and self._reads_pending:
            pending, self._reads_pending = self._reads_pending, []
            for ctx in pending:
                self._start_read(ctx)
        return True

    def _maybe_finalize_config(self) -> None:
        at, cfg = self._configs[-1]
        if self.role is not Role.LEADER or at > self.commit:
            return
        if cfg.is_joint:
            final = ClusterConfig(cfg.peers, None, cfg.learners)
            self._append_new(EntryType.CONFIG, encode_config(final), ZERO_REQID)
        elif self.id not in self._voters:
            self._become_follower(self.term, None)  # removed; the new config carries on

    def _start_read(self, ctx: bytes) -> None:
        self._reads_confirming.append(_Read(ctx, self.commit, self._seq + 1))
        for peer, pr in self._progress.items():
            if not pr.learner:
                self._send_heartbeat(peer)
        self._check_reads()

    def _check_reads(self) -> None:
        while self._reads_confirming:
            read = self._reads_confirming[0]
            acks = {self.id}
            acks.update(p for p, pr in self._progress.items() if pr.acked_seq >= read.seq)
            if not self._voters.has_quorum(acks):
                return
            self._reads_confirming.popleft()
            self._reads_ready.append(ReadState(read.ctx, read.index))
