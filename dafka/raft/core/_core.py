"""The deterministic Raft core: no IO, no clock, no threads (etcd/raft-rs style, our own code).

A shell drives it: it feeds peer messages to :meth:`RaftCore.step`, calls
:meth:`RaftCore.tick` at a fixed interval (e.g. every 20 ms), hands client requests to
:meth:`~RaftCore.propose`, :meth:`~RaftCore.propose_config` and
:meth:`~RaftCore.read_index`, and drains :meth:`~RaftCore.ready` (see
:mod:`dafka.raft.core._ready` for the persist → send → apply → advance loop). Randomness
comes from the injected ``rng``; time from ``tick()`` and the ``now`` arguments.

Beyond the ØMQ RAFT reference server: pre-vote (thesis §9.6), check-quorum and the
leader lease on votes (§4.2.3), leader transfer (TimeoutNow, §3.10), ReadIndex (§6.4),
learners, joint consensus (thesis §4.3), chunked resumable InstallSnapshot (§7),
request-id dedup with expiry; with peers in ``plain_peers`` (reference peers, see
:mod:`dafka.raft.core._extensions`) pre-vote, transfer, learners and snapshots fall back.

Parts
-----
The core owns its parts and writes only its own fields (term, vote, role, leader, commit,
applied, the election clock): :class:`~dafka.raft.core._replication.Replication` (progress,
sends, heartbeats, snapshots, reads, leader transfer; it reads the core through its
``Host`` protocol), :class:`~dafka.raft.core._configs.Configs` (the configurations in the
log and the voters), :class:`~dafka.raft.core._log.RaftLog` and
:class:`~dafka.raft.core._requests.RequestIds`. :class:`~dafka.raft.core._coreview.CoreView`
is the read-only query surface: it holds and writes no state.

Safety notes
------------
* The leader counts its own log towards a commit only up to what the shell reported
  durable (``advance(rd)``, or :meth:`RaftCore.log_durable` when it fsyncs off its
  loop, Raft thesis §10.2.1): its AppendEntries may leave before its own fsync.
* Configurations take effect when their entry is appended (committed or not) and are
  rolled back when the entry is truncated; a leader appends the final configuration
  once the joint one commits, and a leader that is not in the final configuration
  steps down once that commits.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ...errors import ConfigError, NotLeader, ProposalDropped, RaftError
from ..codec import (
    CHECKPOINT_DATA,
    ZERO_REQID,
    ClusterConfig,
    Entry,
    EntryType,
    HardState,
    Peer,
    SnapshotMeta,
    encode_config,
    message_problem,
    new_entry,
)
from ._configs import Configs
from ._coreview import CoreView
from ._log import RaftLog
from ._membership import validate_change
from ._messages import (
    AppendEntries,
    AppendResponse,
    InstallSnapshot,
    Message,
    RequestVote,
    SnapshotResponse,
    TimeoutNow,
    TimeoutNowResponse,
    VoteResponse,
)
from ._quorum import VoteResult
from ._ready import (
    ProposeResult,
    ProposeStatus,
    Ready,
    Role,
    SnapshotReader,
    SoftState,
)
from ._replication import Replication
from ._requests import RequestIds
from ._terms import TermCeiling

__all__ = ["RaftCore"]

_PRE, _REAL, _TRANSFER = "pre", "real", "transfer"
_NO_HARD_STATE = HardState()
_NO_SNAPSHOT = SnapshotMeta()


class RaftCore(CoreView):
    """One Raft peer's consensus state machine. See the module docstring."""

    def __init__(
        self,
        id: str,
        config: ClusterConfig,
        *,
        rng: random.Random,
        hard_state: HardState = _NO_HARD_STATE,
        snapshot: SnapshotMeta = _NO_SNAPSHOT,
        entries: Sequence[Entry] = (),
        applied: int | None = None,
        election_tick: int = 10,
        heartbeat_tick: int = 1,
        pre_vote: bool = True,
        check_quorum: bool = True,
        request_id_ttl: float = 8 * 3600.0,
        max_batch_entries: int = 64,
        max_batch_bytes: int = 1 << 20,
        max_inflight: int = 4,
        max_apply_entries: int = 4096,
        snapshot_chunk_size: int = 1 << 16,
        read_snapshot: SnapshotReader | None = None,
        recovering_to: int | None = None,
    ) -> None:
        if heartbeat_tick < 1 or election_tick <= heartbeat_tick:
            raise ConfigError("need 1 <= heartbeat_tick < election_tick")
        if max_batch_entries < 1 or max_inflight < 1 or snapshot_chunk_size < 1:
            raise ConfigError("batch, inflight and chunk limits must be positive")
        self.id = id
        self.election_tick = election_tick
        self.heartbeat_tick = heartbeat_tick
        self.pre_vote = pre_vote
        self.check_quorum = check_quorum
        self.request_id_ttl = request_id_ttl
        self.max_apply_entries = max_apply_entries
        self._rng = rng

        self.term = hard_state.term
        self.voted_for = hard_state.voted_for
        self.role = Role.FOLLOWER
        self.leader: str | None = None
        kept = [e for e in entries if e.index > snapshot.index]
        self._log = RaftLog(snapshot.index, snapshot.term, kept)
        self._snapshot = snapshot
        base = snapshot.config if snapshot.index > 0 else config
        self.configs = Configs(snapshot.index, base)
        """The configurations in the log and the latest's voters (:class:`Configs`)."""
        self.requests = RequestIds(request_id_ttl)
        """The request ids in the log, for dedup and expiry (:class:`RequestIds`)."""
        self._msgs: list[Message] = []  # the outbox: one list, the parts append to it
        self.replication = Replication(
            self,
            id,
            self._log,
            self._msgs.append,
            max_batch_entries=max_batch_entries,
            max_batch_bytes=max_batch_bytes,
            max_inflight=max_inflight,
            snapshot_chunk_size=snapshot_chunk_size,
            read_snapshot=read_snapshot,
        )
        """Log replication, the part that moves entries (:class:`Replication`)."""
        self.appended(kept)
        self.commit = min(max(hard_state.commit, snapshot.index), self._log.last_index)
        start = snapshot.index if applied is None else applied
        self._applied = min(max(start, snapshot.index), self.commit)
        self._handed_commit = self._applied

        self._pending_snapshot: SnapshotMeta | None = None
        self._prev_hs = HardState(self.term, self.voted_for, self.commit)
        self._prev_ss = SoftState(None, Role.FOLLOWER)
        self._votes: dict[str, bool] = {}
        self._election_elapsed = 0
        self._randomized_timeout = election_tick
        self._randomize_timeout()
        self.refused = 0
        """Peer messages dropped because a term or index was out of range."""
        self.plain_peers: frozenset[str] = frozenset()  # kept current by the shell
        self.terms = TermCeiling(id, self.term)
        """How far a peer message may raise our term (:class:`~dafka.raft.core._terms.TermCeiling`)."""
        self.recovering_to = recovering_to
        """Protocol-aware recovery: this peer lost entries up to here that it may have
        acknowledged (rot in its log). Until its log matches a leader's up to there it
        neither campaigns nor grants a vote to a candidate whose log might lack them
        (:meth:`recovered_through`, :meth:`_holds_what_we_lost`)."""
        self.recovering_term = max(self.term, self._log.last_term)
        """The term of our hard state at start: no entry we lost can be of a later term
        (an entry is appended at most at the term already saved), so it bounds theirs."""
        self.recovered_through(self._log.last_index)

    # -- inputs --------------------------------------------------------------------------

    def tick(self) -> None:
        """Advance logical time by one tick."""
        self.terms.tick()
        if self.role is Role.LEADER:
            self._election_elapsed += 1
            due = self._election_elapsed >= self.election_tick
            if due:
                self._election_elapsed = 0
            if not self.replication.tick(self.election_tick, due and self.check_quorum):
                self._become_follower(self.term, None)
            return
        self._election_elapsed += 1
        if self._promotable() and self._election_elapsed >= self._randomized_timeout:
            self._election_elapsed = 0
            self._campaign(_PRE if self.pre_vote else _REAL)

    def step(self, msg: Message) -> None:
        """Take one peer message addressed to this peer. A message carrying a term or an
        index this peer could not store (:func:`~dafka.raft.codec.message_problem`) is
        dropped and counted in :attr:`refused`."""
        if msg.to != self.id or msg.frm == self.id:
            return
        # guard: raft-core-drops-out-range
        if message_problem(msg) is not None or (
            msg.term > self.term and not self.terms.admits(msg.term, self.term, msg.frm)
        ):
            self.refused += 1
            return
        if msg.term > self.term:
            if isinstance(msg, RequestVote):
                if not msg.pre_vote:
                    # guard: raft-leader-lease-keeps-term
                    if self.check_quorum and not msg.transfer and self._in_lease():
                        # §4.2.3: a leader we heard from recently is alive; don't be disrupted
                        self._send(VoteResponse(self.id, msg.frm, self.term, False))
                        return
                    self._become_follower(msg.term, None)
            elif isinstance(msg, VoteResponse) and msg.pre_vote and msg.granted:
                pass  # a granted pre-vote carries the term we asked for
            else:
                lead = (
                    msg.frm
                    if isinstance(msg, AppendEntries | InstallSnapshot | TimeoutNow)
                    else None
                )
                self._become_follower(msg.term, lead)
        elif msg.term < self.term:
            self._answer_stale(msg)
            return

        if isinstance(msg, RequestVote):
            self._on_vote_request(msg)
        elif isinstance(msg, VoteResponse):
            if self.role in (Role.PRE_CANDIDATE, Role.CANDIDATE):
                self._on_vote_response(msg)
        elif isinstance(msg, AppendEntries | InstallSnapshot):
            if self.role is Role.LEADER:
                return  # another leader in our term cannot exist (§5.2)
            if self.role is not Role.FOLLOWER:
                self._become_follower(msg.term, msg.frm)
            self.leader = msg.frm
            self._election_elapsed = 0
            if isinstance(msg, AppendEntries):
                self.replication.on_append(msg)
            else:
                self.replication.on_snapshot_chunk(msg)
        elif isinstance(msg, AppendResponse):
            if self.role is Role.LEADER:
                self.replication.on_append_response(msg)
        elif isinstance(msg, SnapshotResponse):
            if self.role is Role.LEADER:
                self.replication.on_snapshot_response(msg)
        elif isinstance(msg, TimeoutNow):
            self._send(TimeoutNowResponse(self.id, msg.frm, self.term))
            if self.role is not Role.LEADER:
                self._campaign(_TRANSFER)

    def propose(self, data: bytes, reqid: bytes, now: float) -> ProposeResult:
        """Append a STATE entry (RequestUpdate).

        Returns ``ACCEPTED`` with the entry's index (``duplicate=True`` with the original
        index when ``reqid`` was proposed before, even if long committed) or
        ``EXPIRED`` when ``reqid`` is older than ``request_id_ttl``. Raises
        :class:`NotLeader` (with the leader hint) on a non-leader and
        :class:`ProposalDropped` while a leader transfer is in progress.
        """
        if self.role is not Role.LEADER:
            raise NotLeader(leader=self.leader)
        if self.replication.transferee is not None:
            raise ProposalDropped("leadership transfer in progress")
        early = self.requests.check(reqid, now, self.commit)
        if early is not None:
            return early
        entry = self._append_new(EntryType.STATE, data, reqid)
        return ProposeResult(ProposeStatus.ACCEPTED, entry.index, entry.term)

    def propose_many(self, items: Sequence[tuple[bytes, bytes]], now: float) -> list[ProposeResult]:
        """:meth:`propose` for every ``(data, reqid)`` of ``items``, in order, as one batch:
        the new entries get consecutive indexes and go out in one AppendEntries per
        follower (and, through the next Ready, one durable write). One result per item
        (a bad reqid is ``ARGUMENT_ERROR`` for that item only); raises like :meth:`propose`
        for the whole batch."""
        if self.role is not Role.LEADER:
            raise NotLeader(leader=self.leader)
        if self.replication.transferee is not None:
            raise ProposalDropped("leadership transfer in progress")
        results, added = self.requests.admit_many(
            items, now, self._log.last_index, self.term, self.commit
        )
        if added:
            self._log.append(added)  # one call for the batch
            self.replication.bcast_append()
            self.maybe_commit()
        return results

    def propose_config(
        self,
        peers: Sequence[Peer],
        reqid: bytes,
        now: float,
        *,
        learners: Sequence[Peer] | None = None,
    ) -> ProposeResult:
        """Change the voters to ``peers`` by joint consensus (ConfigUpdate).

        Appends ``{old, new}``; once that commits the leader appends the final config.
        ``learners=None`` keeps the current learners (minus any now voting). When only
        learners change, the final config is appended directly. Statuses are the
        spec's: NOT_LEADER, ACCEPTED (``index`` of the first config entry),
        ARGUMENT_ERROR, BUSY (a change is still in progress), EXPIRED.
        """
        if self.role is not Role.LEADER:
            return ProposeResult(ProposeStatus.NOT_LEADER, leader=self.leader)
        if self.replication.transferee is not None:
            return ProposeResult(ProposeStatus.BUSY)
        early = self.requests.check(reqid, now, self.commit)
        if early is not None:
            return early
        current = self.config
        peers = tuple(peers)
        ids = {p.id for p in peers}
        if learners is None:  # keep today's learners, except those who become voters
            learners_kept = tuple(p for p in current.learners if p.id not in ids)
        else:
            learners_kept = tuple(learners)
        problem = validate_change(current, peers, learners_kept, self.plain_peers)
        if problem is not None:
            return ProposeResult(ProposeStatus.ARGUMENT_ERROR, error=problem)
        if current.is_joint or self.configs.latest_index > self.commit:
            return ProposeResult(ProposeStatus.BUSY)
        if set(peers) == set(current.peers):
            new = ClusterConfig(peers, None, learners_kept)
        else:
            new = ClusterConfig(peers, current.peers, learners_kept)
        entry = self._append_new(EntryType.CONFIG, encode_config(new), reqid)
        return ProposeResult(ProposeStatus.ACCEPTED, entry.index, entry.term)

    def add_learner(self, peer: Peer, reqid: bytes, now: float) -> ProposeResult:
        """Add a non-voting member that receives the log (same statuses as above)."""
        current = self.config
        learners = (*(p for p in current.learners if p.id != peer.id), peer)
        return self.propose_config(current.peers, reqid, now, learners=learners)

    def read_index(self, ctx: bytes) -> None:
        """Start a linearizable read (§6.4): a :class:`ReadState` with ``ctx`` comes out of
        :meth:`ready` once leadership was confirmed by a quorum and the state machine
        has applied the commit index of this moment. Raises :class:`NotLeader`.
        Unconfirmed reads are dropped silently if leadership is lost."""
        if self.role is not Role.LEADER:
            raise NotLeader(leader=self.leader)
        if self._log.term(self.commit) != self.term:
            self.replication.reads_pending.append(ctx)  # nothing committed in our term yet
            return
        self.replication.start_read(ctx)

    def transfer_leader(self, to: str) -> None:
        """Hand leadership to voter ``to`` (aborted after an election timeout)."""
        if self.role is not Role.LEADER:
            raise NotLeader(leader=self.leader)
        self.replication.transfer_leader(to)

    def compact(self, index: int, snapshot: SnapshotMeta) -> None:
        """The state machine saved ``snapshot``; forget log entries ``<= index``.

        ``index <= snapshot.index <= applied``. Same meaning as the storage's
        ``compact(upto_index)``. Followers that need forgotten entries get the
        snapshot through ``read_snapshot``.
        """
        if snapshot.index > self._applied or index > snapshot.index:
            raise RaftError(
                f"compact({index}) with a snapshot at {snapshot.index}: "
                f"need index <= snapshot index <= applied ({self._applied})"
            )
        term = self._log.term(snapshot.index)
        if term is not None and term != snapshot.term:
            raise RaftError(f"snapshot term {snapshot.term} != log term {term} at {snapshot.index}")
        if snapshot.index >= self._snapshot.index:
            self._snapshot = snapshot
        if index > self._log.base_index:
            self._log.compact(index)
            self.configs.compact(index)

    def restore(self, meta: SnapshotMeta) -> bool:
        """The snapshot whose last chunk came in the previous Ready is durable; ``meta``
        is what the shell read from it. Installs it (the next Ready carries it as
        ``snapshot``) unless the log already covers it; answers the leader either way.
        Returns whether it was installed."""
        recv = self.replication.take_received(meta)
        if recv is None:
            return False
        self._send(
            SnapshotResponse(
                self.id, recv.leader, self.term, None, recv.index, recv.total, recv.total
            )
        )
        if meta.index <= self.commit:
            return False
        if self._log.term(meta.index) == meta.term:
            self.commit = meta.index
            return False
        self._log.restore(meta.index, meta.term)
        self.configs.restore(meta.index, meta.config)
        self.requests.keep_through(meta.index)
        self.commit = self._applied = self._handed_commit = meta.index
        self._snapshot = meta
        self._pending_snapshot = meta
        self.recovered_through(meta.index)
        return True

    # -- outputs -------------------------------------------------------------------------

    def has_ready(self) -> bool:
        return bool(
            self._msgs
            or self._pending_snapshot is not None
            or self._log.has_unstable()
            or self.commit > self._handed_commit
            or self.replication.has_ready(self._handed_commit)
            or self._state_changed()
        )

    def ready(self) -> Ready:
        """Take everything the shell has to do now (see :mod:`dafka.raft.core._ready`)."""
        repl = self.replication
        repl.flush_sends()
        hs = self._hard_state()
        ss = self._soft_state()
        truncate_from, entries = self._log.take_unstable()
        lo = self._handed_commit + 1
        committed = tuple(self._log.slice(lo, min(self.commit, lo + self.max_apply_entries - 1)))
        handed = committed[-1].index if committed else self._handed_commit
        reads = repl.take_reads(handed)
        chunks = repl.take_chunks()
        vote_changed = (hs.term, hs.voted_for) != (self._prev_hs.term, self._prev_hs.voted_for)
        rd = Ready(
            hard_state=hs if hs != self._prev_hs else None,
            entries=entries,
            truncate_from=truncate_from,
            snapshot=self._pending_snapshot,
            snapshot_chunks=chunks,
            messages=tuple(self._msgs),
            committed_entries=committed,
            read_states=reads,
            soft_state=ss if ss != self._prev_ss else None,
            must_sync=bool(
                entries or truncate_from or chunks or self._pending_snapshot or vote_changed
            ),
            write=self._log.last_write if entries else 0,
        )
        self._msgs.clear()
        self._pending_snapshot = None
        self._prev_hs, self._prev_ss = hs, ss
        self._handed_commit = handed
        return rd

    def advance(self, rd: Ready, durable: bool = True) -> None:
        """The shell has done ``rd``: persisted (``durable=False``: written, its fsync
        still running: report it with :meth:`log_durable`), sent, applied."""
        if durable and rd.write:
            self.log_durable(rd.write)
        if rd.snapshot is not None:
            self._applied = max(self._applied, rd.snapshot.index)
        if rd.committed_entries:
            self._applied = max(self._applied, rd.committed_entries[-1].index)

    def log_durable(self, write: int) -> None:
        """Log write number ``write`` (``Ready.write``) and every earlier one are durable.
        A leader may now count its own log up to there towards a commit; a report of a
        write that a truncation cut into counts for nothing."""
        if self._log.stable_to(write) and self.role is Role.LEADER and self.maybe_commit():
            self.replication.bcast_append()

    # -- elections -----------------------------------------------------------------------

    def _promotable(self) -> bool:
        """May we start elections? As a voter of the latest config, or of an earlier one
        that the latest may not have replaced yet: until the change commits we may be
        needed to elect anyone (thesis §4.2.2). Only the latest config counts votes,
        so our own vote counts only if we are in it."""
        return self.configs.promotable(self.id, self.commit)

    def _in_lease(self) -> bool:
        return self.leader is not None and self._election_elapsed < self.election_tick

    def _randomize_timeout(self) -> None:
        self._randomized_timeout = self._rng.randrange(self.election_tick, 2 * self.election_tick)

    def _reset(self) -> None:
        self._election_elapsed = 0
        self._randomize_timeout()
        self._votes = {}
        self.replication.reset()

    def _become_follower(self, term: int, leader: str | None) -> None:
        if term > self.term:
            self.term = term
            self.voted_for = None
        self.role = Role.FOLLOWER
        self.leader = leader
        self._reset()

    def _campaign(self, kind: str) -> None:
        # guard: raft-core-never-campaigns-past
        if not self._promotable() or not self.terms.may_campaign(self.term):
            return  # (a term past MAX_TERM could not be written into any entry)
        if self.recovering_to is not None:
            # guard: raft-peer-recovering-lost-entries-2
            return  # it would win without entries it acknowledged
        # guard: raft-pre-vote-peers-do
        if kind == _PRE and self.plain_peers & self.configs.voters.ids:
            kind = _REAL  # a reference peer takes a pre-vote as a real vote: do not pretend
        if kind == _PRE:
            self.role = Role.PRE_CANDIDATE
            self.leader = None
            self._reset()
            term = self.term + 1
        else:
            self.term += 1
            self.voted_for = self.id
            self.role = Role.CANDIDATE
            self.leader = None
            self._reset()
            term = self.term
        self._votes = {self.id: True}
        if self.configs.voters.vote_result(self._votes) is VoteResult.WON:
            if kind == _PRE:
                self._campaign(_REAL)
            else:
                self._become_leader()
            return
        for peer in sorted(self.configs.voters.ids - {self.id}):
            self._send(
                RequestVote(
                    self.id,
                    peer,
                    term,
                    self._log.last_index,
                    self._log.last_term,
                    pre_vote=kind == _PRE,
                    transfer=kind == _TRANSFER,
                )
            )

    def _on_vote_request(self, m: RequestVote) -> None:
        if m.pre_vote:
            # thesis §9.6: no pre-vote while we hear from a leader
            can_vote = m.term > self.term and (m.transfer or not self._in_lease())
        else:
            can_vote = self.voted_for == m.frm or (self.voted_for is None and self.leader is None)
        if self.recovering_to is not None and not self._holds_what_we_lost(m):
            # guard: raft-peer-recovering-lost-entries
            can_vote = False  # their log may lack what we acknowledged
        if can_vote and self._log.is_up_to_date(m.last_index, m.last_term):
            if not m.pre_vote:
                self.voted_for = m.frm
                self._election_elapsed = 0
            self._send(VoteResponse(self.id, m.frm, m.term, True, m.pre_vote))
        else:
            self._send(VoteResponse(self.id, m.frm, self.term, False, m.pre_vote))

    def _holds_what_we_lost(self, m: RequestVote) -> bool:
        """While recovering: is the candidate's log at least as up to date as ours was
        before the rot, whatever the lost entries' terms? They end at ``recovering_to``
        with a term of at most ``recovering_term``, so §5.4.1's rule holds for every
        such log only if theirs ends in a later term, or in that term at or past the lost
        index. (Without this, two rotten peers of three would never elect the third, which
        holds every entry; with it, they vote only for a log that keeps theirs.)"""
        assert self.recovering_to is not None
        bound = self.recovering_term
        # guard: raft-recovering-peer-votes-log
        return m.last_term > bound or (m.last_term == bound and m.last_index >= self.recovering_to)

    def _on_vote_response(self, m: VoteResponse) -> None:
        if self.role is Role.PRE_CANDIDATE:
            if not m.pre_vote or (m.granted and m.term != self.term + 1):
                return
        elif m.pre_vote:
            return
        self._votes.setdefault(m.frm, m.granted)
        result = self.configs.voters.vote_result(self._votes)
        if result is VoteResult.WON:
            if self.role is Role.PRE_CANDIDATE:
                self._campaign(_REAL)
            else:
                self._become_leader()
        elif result is VoteResult.LOST:
            self._become_follower(self.term, None)

    def _become_leader(self) -> None:
        self.role = Role.LEADER
        self.leader = self.id
        self._reset()
        self.replication.sync_progress()
        # §5.4.2 / §8: an entry of our own term lets earlier entries commit
        self._append_new(EntryType.CHECKPOINT, CHECKPOINT_DATA, ZERO_REQID)
        self._maybe_finalize_config()

    def _answer_stale(self, m: Message) -> None:
        """A message from an older term: tell its sender our term (§5.1)."""
        if isinstance(m, AppendEntries):
            self._send(
                AppendResponse(
                    self.id, m.frm, self.term, False, None, None, m.prev_index, m.last_index, m.seq
                )
            )
        elif isinstance(m, InstallSnapshot):
            self._send(
                SnapshotResponse(self.id, m.frm, self.term, None, m.index, m.end, m.total_size)
            )
        elif isinstance(m, RequestVote):
            self._send(VoteResponse(self.id, m.frm, self.term, False, m.pre_vote))
        elif isinstance(m, TimeoutNow):
            self._send(TimeoutNowResponse(self.id, m.frm, self.term))

    # -- the log and configs -------------------------------------------------------------

    def _append_new(self, kind: EntryType, data: bytes, reqid: bytes) -> Entry:
        entry = new_entry(self._log.last_index + 1, self.term, kind, reqid, data)
        self._log.append((entry,))
        self.appended((entry,))
        self.replication.bcast_append()
        self.maybe_commit()
        return entry

    def appended(self, entries: Sequence[Entry]) -> None:
        """``entries`` were appended to the log (here, or by :class:`Replication`)."""
        self.requests.note(entries)
        if self.configs.appended(entries) and self.role is Role.LEADER:
            self.replication.sync_progress()

    def truncate_from(self, index: int) -> None:
        """Cut the log from ``index`` on (a follower's conflict)."""
        self.requests.forget(self._log.truncate(index))
        if self.configs.truncate(index) and self.role is Role.LEADER:
            self.replication.sync_progress()

    # -- what the parts call -------------------------------------------------------------

    def _send(self, msg: Message) -> None:
        self._msgs.append(msg)

    def follow_commit(self, index: int) -> None:
        """A leader says ``index`` is committed (AppendEntries, a snapshot): never back."""
        self.commit = max(self.commit, index)

    def maybe_commit(self) -> bool:
        """Commit what a quorum holds, if of our term (leader); whether the commit moved."""
        index = self.replication.quorum_index()
        if index <= self.commit or self._log.term(index) != self.term:
            return False  # §5.4.2: only entries of our term are committed by counting
        self.commit = index
        self.replication.sync_progress()
        self._maybe_finalize_config()
        if self.role is Role.LEADER:
            self.replication.start_pending_reads()
        return True

    def _maybe_finalize_config(self) -> None:
        at, cfg = self.configs.latest_index, self.configs.latest
        if self.role is not Role.LEADER or at > self.commit:
            return
        if cfg.is_joint:
            final = ClusterConfig(cfg.peers, None, cfg.learners)
            self._append_new(EntryType.CONFIG, encode_config(final), ZERO_REQID)
        elif self.id not in self.configs.voters:
            self._become_follower(self.term, None)  # removed; the new config carries on

    def recovered_through(self, index: int) -> None:
        """Our log matches a leader's (or our own durable log) up to ``index``: a peer
        recovering lost entries (``recovering_to``) may vote again once that covers them."""
        # guard: raft-recovery-ends-when-leader
        if self.recovering_to is not None and index >= self.recovering_to:
            self.recovering_to = None
