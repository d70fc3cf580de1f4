"""The client service of :class:`~dafka.raft.peer.RaftPeer`: answering ØMQ RAFT client RPCs.

The peer owns one (``RaftPeer.clients``). :mod:`dafka.raft.peer._peer` reads the ROUTER and
hands every client request to :meth:`ClientService.on_request` (a RequestUpdate's hot path
straight to :meth:`ClientService.on_update`); the Ready loop there tells this part what was
applied (:meth:`ClientService.entry_applied`, :meth:`ClientService.applied`) and when
leadership was lost (:meth:`ClientService.leadership_lost`). Answers leave only after
the Ready that carries what they depend on was persisted. Its state is its own; what it
reads of the peer's is :class:`~dafka.raft.peer._peerstate.PeerShared`, and the snapshot it
streams comes from the :class:`~dafka.raft.peer._snapshotstage.SnapshotStage` it is given.
The wire forms: :mod:`dafka.raft.codec._clientrpc`.

* RequestConfig, RequestLogInfo: answered by any peer at once.
* RequestUpdate: the leader checks it with the host's ``admit`` hook, if any (refused:
  the spec's final failure, status false with no 3rd frame, and nothing is appended),
  then proposes (every RequestUpdate of one loop turn as one batch,
  ``RaftCore.propose_many``: one log write, one fsync); the answer (committed LOG INDEX)
  is sent once the entry is applied; "accepted, not committed" keep-alives every
  ~250 ms while it waits; NOT_LEADER (with the hint) on a follower or when leadership is
  lost meanwhile, or the entry at that index turns out to be another one.
* ConfigUpdate: joint consensus; answered with the index of the first config entry once
  the final configuration is committed and applied (status 1 with no index while it
  runs, 3 while another change runs). Only from whom :class:`~dafka.raft.peer._guard.PeerGuard`
  allows (a peer or admin CURVE key; nobody over NULL unless ``--raft-insecure-null``):
  otherwise the argument error ``PermissionError``.
* RequestEntries: from the leader, applied (committed and persisted) entries only; up to
  ``request_entries_pipeline`` (5) responses ahead of the client's follow-ups, at most
  ``max_streams`` streams, :data:`STREAMS_PER_CLIENT` (8) per client connection (so
  that what waits in the ROUTER's queue for a client that never reads is bounded in
  bytes: 8 streams of 5 answers of at most ``request_entries_bytes`` and one entry), each dropped ``request_entries_ttl`` seconds after its last
  follow-up. A ``prev_index`` below the log's first index streams the state machine
  snapshot (status 3) first.
* RequestBroadcastStateUrl: the PUB URL when this peer leads and has one.
* ClientDispatch (custom types, at least 2 bytes; see :data:`DISPATCH_READ_INDEX`):

  ``RI``  linearizable read (ReadIndex, Raft thesis §6.4) on the leader: the query
          frames go to :meth:`StateMachine.query` once leadership is confirmed by a
          quorum and everything committed when the read arrived is applied. All the
          ``RI`` requests of one loop turn share one ReadIndex round.
  ``RL``  local read on any peer, possibly stale (diagnostics, tests).

  Request frames: request id (uint32 or reqid), type, cluster ident, query frames...
  Response frames: request id, status (uint: 0 not the leader, 1 ok, 2 error),
  meta (MessagePack: the LEADER ID or nil / the last applied LOG INDEX / an error
  message), then (status 1) the query's answer frames.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import zmq

from ...errors import NotLeader, ProposalDropped
from .. import codec as w
from ..codec import Entry, EntryType, encode_json, encode_json_index
from ..codec import encode_uint as _uint
from ..core import DISPATCH_FEATURES, FEATURES, ProposeStatus, Ready, all_peers
from ._answer_budget import LARGE_ANSWER, AnswerBudget
from ._fastsend import send_frames
from ._guard import PeerGuard
from ._peerstate import Admit, PeerShared
from ._snapshotstage import SnapshotStage

__all__ = [
    "DISPATCH_LOCAL_READ",
    "DISPATCH_READ_INDEX",
    "STREAMS_PER_CLIENT",
    "ClientService",
    "DispatchStatus",
    "Waiter",
]

DISPATCH_READ_INDEX = b"RI"
"""ClientDispatch type of a linearizable (ReadIndex) state machine query."""
DISPATCH_LOCAL_READ = b"RL"
"""ClientDispatch type of a local, possibly stale, state machine query on any peer."""


class DispatchStatus:
    """Frame 2 of the answer to an ``RI`` / ``RL`` dispatch."""

    NOT_LEADER = 0
    OK = 1
    ERROR = 2


log = logging.getLogger(__name__)

_KEEPALIVE_AFTER = 0.25
STREAMS_PER_CLIENT = 8
"""RequestEntries streams one client connection may hold open at once (our clients use one)."""
_HELD_UPDATES = 10_000
"""RequestUpdates a new leader holds until its state machine can check them."""
_TRUE = b"\x01"


@dataclass(slots=True)
class Waiter:
    """A client waiting for its RequestUpdate / ConfigUpdate to commit."""

    envelope: tuple[bytes, ...]
    id_frame: bytes
    reqid: bytes
    index: int
    config: bool
    since: float
    keepalive: float
    matched: bool = False


@dataclass(slots=True)
class _Stream:
    """A RequestEntries stream being served."""

    envelope: tuple[bytes, ...]
    id_frame: bytes
    request_id: int
    prev: int
    end: int | None
    touched: float
    inflight: int = 0
    done: bool = False
    snap_index: int | None = None
    snap_offset: int = 0


class ClientService:
    """Client RPCs in, their answers out; owned by :class:`~dafka.raft.peer.RaftPeer` (see the
    module docstring). ``broadcast``: the URL of the peer's PUB, if it has one bound."""

    def __init__(
        self,
        shared: PeerShared,
        snapshots: SnapshotStage,
        guard: PeerGuard,
        admit: Admit | None,
        broadcast: str | None,
    ) -> None:
        self.id = shared.id
        self.options = shared.options
        self.sm = shared.sm
        self.storage = shared.storage
        self.core = shared.core
        self.router = shared.router
        self._bad = shared.bad
        self.snapshots = snapshots
        self.guard = guard
        self.admit = admit
        self.broadcast = broadcast
        self._waiters: dict[int, list[Waiter]] = {}
        self.updates: list[tuple[tuple[bytes, ...], bytes, bytes]] = []
        """The RequestUpdates of this loop turn, proposed together by :meth:`flush_updates`."""
        self._config_waiters: list[Waiter] = []
        self._read_batch: list[tuple[w.RouterRequest, tuple[bytes, ...]]] = []
        self._reads: dict[bytes, list[tuple[w.RouterRequest, tuple[bytes, ...]]]] = {}
        self._read_ctx = 0
        self._streams: dict[tuple[tuple[bytes, ...], int], _Stream] = {}
        self._client_streams: Counter[tuple[bytes, ...]] = Counter()
        self._answers = AnswerBudget(self.options.query_answer_bytes)

    @property
    def streams(self) -> int:
        """RequestEntries streams being served."""
        return len(self._streams)

    def streams_of(self, envelope: tuple[bytes, ...]) -> int:
        """RequestEntries streams the client connection ``envelope`` holds open."""
        return self._client_streams[envelope]

    def waiting(self) -> bool:
        """Some client waits for an update or a config change to be applied."""
        return bool(self._waiters or self._config_waiters)

    def _reply(self, envelope: tuple[bytes, ...], id_frame: bytes, response: Any) -> None:
        """Send a client RPC answer (a wire message of :mod:`dafka.raft.codec._wire`) on the ROUTER."""
        frames = [*envelope, id_frame, *response.encode()[1:]]
        try:
            self.router.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            log.debug("raft.peer.reply_dropped")

    def on_request(self, request: w.RouterRequest, user: bytes | None = None) -> None:
        msg = request.message
        if isinstance(msg, w.RequestUpdate):
            self.on_update(request.envelope, msg.reqid, msg.data)
        elif isinstance(msg, w.ClientDispatch):
            self._on_dispatch(request, msg)
        elif isinstance(msg, w.RequestEntries):
            self._on_entries(request, msg)
        elif isinstance(msg, w.RequestConfig):
            core = self.core
            peers = all_peers(core.config)
            config_reply = w.RequestConfigResponse(0, core.is_leader, core.leader, peers)
            self._reply(request.envelope, request.request_id_frame, config_reply)
        elif isinstance(msg, w.RequestLogInfo):
            self._on_log_info(request)
        elif isinstance(msg, w.ConfigUpdate | w.InvalidConfigUpdate):
            self._on_config_update(request, msg, user)
        elif isinstance(msg, w.RequestBroadcastStateUrl):
            url = self.broadcast if self.core.is_leader else None
            reply = w.RequestBroadcastStateUrlResponse(0, url)
            self._reply(request.envelope, request.request_id_frame, reply)

    def tick(self, now: float) -> None:
        """Keep-alives for clients waiting on a commit; drop idle entry streams."""
        for waiters in (*self._waiters.values(), self._config_waiters):
            for waiter in waiters:
                if now - waiter.keepalive >= _KEEPALIVE_AFTER:
                    waiter.keepalive = now
                    self._answer_waiter(waiter, pending=True)
        if self._streams:
            ttl = self.options.request_entries_ttl
            for key in [k for k, s in self._streams.items() if now - s.touched > ttl]:
                self._end_stream(key)
        self._answers.tick(now)  # let go of the buffers no queue holds any more

    # -- what the Ready loop tells us --------------------------------------------------------

    def entry_applied(self, entry: Entry, answers: list[Waiter]) -> None:
        """The clients waiting on the entry just applied: those whose update it is go into
        ``answers`` (:meth:`send_answers` answers them once the Ready's entries are all
        applied), the others are told NOT_LEADER (their entry was replaced)."""
        waiters = self._waiters.pop(entry.index, None)
        if waiters:
            for waiter in waiters:
                if entry.reqid == waiter.reqid:
                    answers.append(waiter)
                else:
                    self._answer_not_leader(waiter)
        if self._config_waiters and entry.type is EntryType.CONFIG:
            for waiter in self._config_waiters:
                if waiter.index == entry.index:
                    waiter.matched = entry.reqid == waiter.reqid

    def send_answers(self, answers: list[Waiter]) -> None:
        """Answer the updates of one Ready back to back, after its entries were applied,
        not one between each two applies: libzmq wakes its I/O thread for a message only
        when that thread found the connection's queue empty, so answers sent in a burst
        share its wake-ups (and its socket writes) instead of taking one each
        (``docs/raft.md`` §8)."""
        answer = self._answer_waiter
        for waiter in answers:
            answer(waiter)

    def applied(self, rd: Ready) -> None:
        """A Ready's committed entries are applied: finish config changes and reads."""
        if self._config_waiters:
            last = rd.committed_entries[-1].index if rd.committed_entries else self.core.applied
            self._check_config_waiters(last)
        for rs in rd.read_states:
            for request, args in self._reads.pop(rs.ctx, ()):
                self._answer_query(request, args)

    def leadership_lost(self) -> None:
        """The core dropped pending proposals and reads silently: answer NOT_LEADER."""
        core = self.core
        for waiters in self._waiters.values():
            for waiter in waiters:
                self._answer_not_leader(waiter)
        self._waiters.clear()
        for waiter in self._config_waiters:
            self._answer_not_leader(waiter)
        self._config_waiters.clear()
        for batch in self._reads.values():
            for request, _ in batch:
                self._dispatch_not_leader(request)
        self._reads.clear()
        for stream in self._streams.values():
            reply = w.RequestEntriesResponse.not_leader(stream.request_id, core.leader)
            self._reply(stream.envelope, stream.id_frame, reply)
        self._streams.clear()
        self._client_streams.clear()

    # -- RequestUpdate, ConfigUpdate, RequestLogInfo -----------------------------------------

    def on_update(self, envelope: tuple[bytes, ...], reqid: bytes, data: bytes) -> None:
        # guard: raft-requestupdate-size-cap
        if len(data) > self.options.max_entry_bytes:
            # the spec's final failure (false, no 3rd frame): the client gives up
            self._bad("oversize-update", f"bytes={len(data)} max={self.options.max_entry_bytes}")
            self._reply(envelope, reqid, w.RequestUpdateResponse(reqid, w.UpdateStatus.EXPIRED))
            return
        self.updates.append((envelope, reqid, data))  # proposed together at the drain's end

    def flush_updates(self) -> None:
        """Propose every RequestUpdate of the drain as one batch (one log write, one fsync)."""
        core, batch = self.core, self.updates
        self.updates = []
        if self.admit is not None and core.is_leader:
            if not core.applied_in_term and len(batch) <= _HELD_UPDATES:
                self.updates = batch  # a new leader: admit once its state machine caught up
                return
            batch = self._admitted(batch)
            if not batch:
                return
        try:
            results = core.propose_many([(data, reqid) for _, reqid, data in batch], time.time())
        except (NotLeader, ProposalDropped) as exc:
            leader = getattr(exc, "leader", None)
            for envelope, reqid, _ in batch:
                reply = w.RequestUpdateResponse(reqid, w.UpdateStatus.NOT_LEADER, leader=leader)
                self._reply(envelope, reqid, reply)
            return
        now, applied, waiters = time.monotonic(), core.applied, self._waiters
        for (envelope, reqid, _), result in zip(batch, results, strict=True):
            if result.index is None:  # EXPIRED, or a malformed reqid
                self._reply(envelope, reqid, w.RequestUpdateResponse(reqid, w.UpdateStatus.EXPIRED))
                continue
            waiter = Waiter(envelope, reqid, reqid, result.index, False, now, now)
            if result.index <= applied:
                # a resend of an update that is applied already: the entry is in our log
                # (the core remembers reqids of entries it holds), so it is the one
                self._answer_waiter(waiter)
            else:
                waiters.setdefault(result.index, []).append(waiter)

    def _admitted(
        self, batch: list[tuple[tuple[bytes, ...], bytes, bytes]]
    ) -> list[tuple[tuple[bytes, ...], bytes, bytes]]:
        """The updates ``admit`` lets through; the others are answered with the spec's final
        failure (status false, no 3rd frame), logged and counted (``update-refused``) and
        never appended. A resend of an update the log holds skips the check: it is answered
        from the log, as before. Until this leader's state machine applied an entry of its
        term its view may be older than what a client read, so the check waits for that
        (the updates are held; over :data:`_HELD_UPDATES`, checked against what it has)."""
        admit, core = self.admit, self.core
        assert admit is not None
        kept = []
        for envelope, reqid, data in batch:
            if core.holds(reqid):
                kept.append((envelope, reqid, data))
                continue
            try:
                reason = admit(data)
            except Exception as exc:  # a failing check refuses (fail closed), never stops us
                reason = f"the admission check failed: {exc!r}"
            # guard: leader-admits-admin-signed-metadata
            if reason is None:
                kept.append((envelope, reqid, data))
                continue
            self._bad("update-refused", f"reqid={reqid.hex()} bytes={len(data)} reason={reason}")
            self._reply(envelope, reqid, w.RequestUpdateResponse(reqid, w.UpdateStatus.EXPIRED))
        return kept

    def _on_config_update(
        self,
        request: w.RouterRequest,
        msg: w.ConfigUpdate | w.InvalidConfigUpdate,
        user: bytes | None = None,
    ) -> None:
        def answer(response: w.ConfigUpdateResponse) -> None:
            self._reply(request.envelope, request.request_id_frame, response)

        status = w.ConfigUpdateStatus
        if isinstance(msg, w.InvalidConfigUpdate):
            answer(
                w.ConfigUpdateResponse(
                    msg.reqid,
                    status.ARGUMENT_ERROR,
                    error_name=msg.error_name,
                    error_message=msg.error_message,
                )
            )
            return
        named = [p.id for p in (*msg.peers, *(msg.learners or ()))]
        problem = self.guard.config_problem(user, named)
        # guard: raft-configupdate-passes-peer-guard
        if problem is not None:  # membership: only authenticated peers and admins change it
            self._bad("config-key", f"key={user!r} {problem}")
            answer(
                w.ConfigUpdateResponse(
                    msg.reqid,
                    status.ARGUMENT_ERROR,
                    error_name="PermissionError",
                    error_message=problem,
                )
            )
            return
        core = self.core
        learners = msg.learners or None
        result = core.propose_config(msg.peers, msg.reqid, time.time(), learners=learners)
        if result.status is ProposeStatus.NOT_LEADER:
            answer(w.ConfigUpdateResponse(msg.reqid, status.NOT_LEADER, leader=result.leader))
        elif result.status is ProposeStatus.ARGUMENT_ERROR:
            answer(
                w.ConfigUpdateResponse(
                    msg.reqid,
                    status.ARGUMENT_ERROR,
                    error_name="ValueError",
                    error_message=result.error or "",
                )
            )
        elif result.status is ProposeStatus.BUSY:
            answer(w.ConfigUpdateResponse(msg.reqid, status.BUSY))
        elif result.status is ProposeStatus.EXPIRED:
            answer(w.ConfigUpdateResponse(msg.reqid, status.EXPIRED))
        else:
            assert result.index is not None
            now = time.monotonic()
            waiter = Waiter(
                request.envelope, request.request_id_frame, msg.reqid, result.index, True, now, now
            )
            if result.index <= core.applied:
                waiter.matched = True  # a resend: the core knows that reqid at that index
            self._config_waiters.append(waiter)
            if result.index <= core.applied:
                self._check_config_waiters(core.applied)
            answer(w.ConfigUpdateResponse(msg.reqid, status.ACCEPTED))

    def _check_config_waiters(self, last: int) -> None:
        core = self.core
        done = not core.config.is_joint and last >= core.config_index
        keep = []
        for waiter in self._config_waiters:
            if waiter.index > last:
                keep.append(waiter)
            elif not waiter.matched:
                self._answer_not_leader(waiter)
            elif done:
                self._answer_waiter(waiter)
            else:
                keep.append(waiter)
        self._config_waiters = keep

    def _answer_waiter(self, waiter: Waiter, pending: bool = False) -> None:
        if not waiter.config:  # RequestUpdate: true [+ the LOG INDEX], built directly
            tail = [_TRUE] if pending else [_TRUE, encode_json_index(waiter.index)]
            try:
                send_frames(self.router, [*waiter.envelope, waiter.id_frame, *tail])
            except zmq.Again:
                pass
            return
        index = None if pending else waiter.index
        reply = w.ConfigUpdateResponse(waiter.reqid, w.ConfigUpdateStatus.ACCEPTED, index=index)
        self._reply(waiter.envelope, waiter.id_frame, reply)

    def _answer_not_leader(self, waiter: Waiter) -> None:
        leader = self.core.leader if self.core.leader != self.id else None
        if waiter.config:
            reply: Any = w.ConfigUpdateResponse(
                waiter.reqid, w.ConfigUpdateStatus.NOT_LEADER, leader=leader
            )
        else:
            reply = w.RequestUpdateResponse(waiter.reqid, w.UpdateStatus.NOT_LEADER, leader=leader)
        self._reply(waiter.envelope, waiter.id_frame, reply)

    def _on_log_info(self, request: w.RouterRequest) -> None:
        core = self.core
        reply = w.RequestLogInfoResponse(
            0,
            core.is_leader,
            core.leader,
            core.term,
            core.first_index,
            core.applied,
            core.commit,
            core.last_index,
            self.snapshots.snapshot_size,
            core.snapshot.index,
        )
        self._reply(request.envelope, request.request_id_frame, reply)

    # -- ClientDispatch: RI / RL -------------------------------------------------------------

    def _on_dispatch(self, request: w.RouterRequest, msg: w.ClientDispatch) -> None:
        if msg.type == DISPATCH_READ_INDEX:
            if not self.core.is_leader:
                self._dispatch_not_leader(request)
                return
            self._read_batch.append((request, msg.args))
        elif msg.type == DISPATCH_LOCAL_READ:
            self._answer_query(request, msg.args)
        elif msg.type == DISPATCH_FEATURES:
            self._dispatch_reply(request, DispatchStatus.OK, list(FEATURES))
        else:
            self._dispatch_reply(request, DispatchStatus.ERROR, f"unknown type {msg.type!r}")

    def flush_reads(self) -> None:
        """One ReadIndex round for every ``RI`` request of this loop turn."""
        if not self._read_batch:
            return
        batch, self._read_batch = self._read_batch, []
        self._read_ctx += 1
        ctx = self._read_ctx.to_bytes(8, "big")
        try:
            self.core.read_index(ctx)
        except NotLeader:
            for request, _ in batch:
                self._dispatch_not_leader(request)
            return
        self._reads[ctx] = batch

    def _answer_query(self, request: w.RouterRequest, args: Sequence[bytes]) -> None:
        try:
            result = self.sm.query(args)
        except Exception as exc:  # the state machine's problem, answered to its client
            self._dispatch_reply(request, DispatchStatus.ERROR, str(exc) or type(exc).__name__)
            return
        self._dispatch_reply(request, DispatchStatus.OK, self.core.applied, result)

    def _dispatch_not_leader(self, request: w.RouterRequest) -> None:
        leader = self.core.leader if self.core.leader != self.id else None
        self._dispatch_reply(request, DispatchStatus.NOT_LEADER, leader)

    def _dispatch_reply(
        self, request: w.RouterRequest, status: int, meta: Any, result: Sequence[bytes] = ()
    ) -> None:
        head = [*request.envelope, request.request_id_frame]
        budget = self._answers
        large = budget.large(result) if result else None
        connection = request.envelope[0]  # the ROUTER's routing id: one share of the budget
        if not large:
            frames: list[Any] = [*head, _uint(status), encode_json(meta), *result]
        elif not budget.admit(large, time.monotonic(), connection):
            held, held_frames = budget.held_by(connection)
            self._bad(
                "answer-budget",
                f"answer of {sum(map(len, result))} bytes refused: {budget.pinned} bytes of "
                f"answers queued (max {budget.limit}), {budget.tracked} frames; this client's "
                f"{held} bytes, {held_frames} frames (max {budget.connection_limit})",
                logging.INFO,
            )
            busy = (
                "busy: this client has too many large answers unread; read them, then ask again"
                if budget.refused_share
                else "busy: too many large answers are queued for clients; ask again"
            )
            frames = [*head, _uint(DispatchStatus.ERROR), encode_json(busy)]
        else:
            # large frames go without a copy and are tracked until libzmq is done with them
            tracked = [
                zmq.Frame(f, copy=False, track=True) if len(f) >= LARGE_ANSWER else f
                for f in result
            ]
            frames = [*head, _uint(status), encode_json(meta), *tracked]
            try:
                self.router.send_multipart(frames, zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            for data, frame in zip(result, tracked, strict=True):
                if isinstance(frame, zmq.Frame):
                    assert frame.tracker is not None
                    budget.sent(data, frame.tracker, connection)
            return
        try:
            self.router.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            pass

    # -- RequestEntries ----------------------------------------------------------------------

    def _on_entries(self, request: w.RouterRequest, msg: w.RequestEntries) -> None:
        core = self.core
        key = (request.envelope, msg.request_id)
        stream = self._streams.get(key)
        if not core.is_leader:
            self._end_stream(key)
            reply = w.RequestEntriesResponse.not_leader(msg.request_id, core.leader)
            self._reply(request.envelope, request.request_id_frame, reply)
            return
        now = time.monotonic()
        if stream is not None:
            stream.touched = now
            if msg.is_stop:
                self._end_stream(key)
                return
            stream.inflight = max(0, stream.inflight - 1)
            if stream.done:
                if stream.inflight == 0:
                    self._end_stream(key)  # every follow-up is in
                return
        else:
            # guard: requestentries-streams-bounded-per
            if (
                msg.is_stop
                or len(self._streams) >= self.options.max_streams
                or self._client_streams[request.envelope] >= STREAMS_PER_CLIENT
            ):
                return  # ignored, as the spec says of streams over the high-water mark
            end = None if msg.count is None else msg.prev_index + msg.count
            stream = _Stream(
                request.envelope, request.request_id_frame, msg.request_id, msg.prev_index, end, now
            )
            self._streams[key] = stream
            self._client_streams[request.envelope] += 1
        self._fill_stream(stream)

    def _end_stream(self, key: tuple[tuple[bytes, ...], int]) -> None:
        if self._streams.pop(key, None) is not None:
            envelope = key[0]
            self._client_streams[envelope] -= 1
            if self._client_streams[envelope] <= 0:
                del self._client_streams[envelope]

    def _fill_stream(self, stream: _Stream) -> None:
        """Send until ``request_entries_pipeline`` responses await their follow-ups. The
        last response (status 1) gets none: once the follow-ups of all before it are in,
        the stream is gone."""
        opts = self.options
        while stream.inflight < opts.request_entries_pipeline and not stream.done:
            reply = self._next_entries(stream)
            self._reply(stream.envelope, stream.id_frame, reply)
            if not stream.done:
                stream.inflight += 1
        if stream.done and stream.inflight == 0:
            self._end_stream((stream.envelope, stream.request_id))

    def _next_entries(self, stream: _Stream) -> w.RequestEntriesResponse:
        core = self.core
        opts = self.options
        if stream.snap_index is not None or stream.prev < core.first_index - 1:
            meta = self.storage.snapshot_meta
            if stream.snap_index != meta.index:
                stream.snap_index, stream.snap_offset = meta.index, 0  # (re)start
            data = self.snapshots.snapshot_data()[1]
            offset = stream.snap_offset
            chunk = data[offset : offset + opts.snapshot_chunk_size]
            stream.snap_offset += len(chunk)
            if stream.snap_offset >= len(data):
                stream.prev, stream.snap_index = meta.index, None
            return w.RequestEntriesResponse.snapshot_chunk(
                stream.request_id, meta.index, meta.term, offset, len(data), chunk
            )
        # applied entries only: committed, and durable here (a one-voter leader's commit
        # index runs ahead of its own fsync until the Ready is persisted)
        hi = core.applied if stream.end is None else min(core.applied, stream.end)
        lo = stream.prev + 1
        entries: list[Entry] = []
        if lo <= hi:
            entries = core.entries(lo, min(hi, lo + opts.request_entries_batch - 1))
            size = 0
            for k, entry in enumerate(entries):
                size += len(entry.data) + 20
                if size > opts.request_entries_bytes and k > 0:
                    entries = entries[:k]
                    break
        last_index = stream.prev + len(entries)
        stream.prev = last_index
        stream.done = last_index >= hi
        return w.RequestEntriesResponse.batch(
            stream.request_id, last_index, entries, last=stream.done
        )
