"""A runnable Raft peer: the pyzmq IO shell around :class:`~dafka.raft.core.RaftCore`.

One thread owns everything: the core, the :class:`~dafka.raft.storage.FileStorage`,
the :class:`~dafka.raft.statemachine.StateMachine` and the sockets:

* a ROUTER bound where told (``bind``): peer RPCs from the other peers' DEALERs and
  every client RPC of ``specs/zmq-raft-protocol.md``;
* one DEALER per other peer (every peer of every configuration seen), connected to its
  ROUTER: our RequestVote / AppendEntries / InstallSnapshot / TimeoutNow go out there
  and their responses come back on it;
* optionally a PUB bound at ``broadcast`` for StateBroadcast messages.

Nothing else is bound or connected.

The loop
--------
Each turn polls the sockets until the next tick, drains everything readable (up to
:attr:`PeerOptions.max_drain` messages per socket) into the core, ticks it when due, and
proposes the turn's RequestUpdates as one batch (``RaftCore.propose_many``), then runs
the core's Ready loop (:mod:`dafka.raft.ready`): persist (one ``append`` with one
``fdatasync`` for every entry of the turn: group commit), send, apply, answer, advance.
Client answers, like peer messages, leave only after the Ready that carries what they
depend on was persisted (the two exceptions that keep this true: :mod:`dafka.raft.pipeline`).

Peer RPCs
---------
Message ids come from a :class:`~dafka.raft.wire.MessageIdCounter`. A request that is
not answered within ``rpc_timeout`` (50 ms; AppendEntries and InstallSnapshot: up to
half the minimum election timeout) is sent again, same bytes, same message id, at most
``rpc_resends`` times; an AppendEntries or InstallSnapshot only while it is the newest
sent to that peer (a reference peer debounces the last message id only, and an older
one would truncate its log: the core's heartbeats recover the rest). A receiver
debounces on (connection, message id): a repeat is not stepped into the core again; if
it was answered already, the cached answer is sent again. Wire responses carry no echo fields: the requester restores them from the
request it sent under that id with :func:`dafka.raft.messages.correlate`. On the
receiving side the shell routes each core response back to the ROUTER envelope and
message id of the request it answers (AppendEntries: exactly, through the core's
``seq`` echo, which a follower does not otherwise use; the other RPCs in order).
Sends never block: while a peer is unreachable (``ZMQ_IMMEDIATE``) its messages are
dropped and the core's own heartbeats and probes try again.

Client RPCs
-----------
* RequestConfig, RequestLogInfo: answered by any peer at once.
* RequestUpdate: the leader proposes; the answer (committed LOG INDEX) is sent once the
  entry is applied; "accepted, not committed" keep-alives every ~250 ms while it waits;
  NOT_LEADER (with the hint) on a follower or when leadership is lost meanwhile, or the
  entry at that index turns out to be another one.
* ConfigUpdate: joint consensus; answered with the index of the first config entry once
  the final configuration is committed and applied (status 1 with no index while it
  runs, 3 while another change runs).
* RequestEntries: from the leader, applied (committed and persisted) entries only; up to
  ``request_entries_pipeline`` (5) responses ahead of the client's follow-ups, at most
  ``max_streams`` streams, each dropped ``request_entries_ttl`` seconds after its last
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

Snapshots
---------
With ``snapshot_every`` > 0, once that many entries were applied since the last
snapshot the state machine is snapshotted (on the loop thread; the file is written on
another: :mod:`dafka.raft.snapshotter`), saved, and the log is
compacted up to ``keep_entries`` entries behind it. Followers that need compacted
entries get the snapshot through chunked InstallSnapshot; the bytes on the wire are
``b"DAFKRSX1" | u32 meta length | meta | state machine data | u32 crc32``, meta being
MessagePack ``[index, term, config entry data]``. A follower stages the chunks in
``<data dir>/snapshot.incoming``.

Data directory: ``<data dir>/raft`` is the :class:`~dafka.raft.storage.FileStorage`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from ..errors import ConfigError, NotLeader, ProposalDropped, RaftError, StorageError
from . import messages as m
from . import wire as w
from .bounds import DEFAULT_MAX_ENTRY_BYTES, PEER_FRAME_BYTES, peer_url_problem, peers_problem
from .core import RaftCore
from .curve import RaftCurve, RaftZap
from .extensions import DISPATCH_FEATURES, FEATURES, Extensions
from .fastsend import send_frames
from .frames import RaftWireError, decode_uint, encode_json
from .frames import encode_uint as _uint
from .guard import SUBSCRIPTION_FRAME_BYTES, BadInput, check_entry_limit, router_frame_limit
from .membership import all_peers
from .peerwire import core_request, core_response, truncating, wire_request
from .pipeline import appends_first, split_durable
from .ready import ProposeStatus, Ready, Role
from .snapshotter import BackgroundSnapshot
from .snapstream import pack_snapshot, unpack_snapshot
from .statemachine import KvStateMachine, StateMachine
from .storage import FileStorage
from .types import REQID_SIZE, ClusterConfig, Entry, EntryType, Peer, SnapshotMeta

__all__ = [
    "DISPATCH_LOCAL_READ",
    "DISPATCH_READ_INDEX",
    "DispatchStatus",
    "PeerOptions",
    "RaftPeer",
    "pack_snapshot",
    "unpack_snapshot",
]

log = logging.getLogger(__name__)

DISPATCH_READ_INDEX = b"RI"
"""ClientDispatch type of a linearizable (ReadIndex) state machine query."""
DISPATCH_LOCAL_READ = b"RL"
"""ClientDispatch type of a local, possibly stale, state machine query on any peer."""


class DispatchStatus:
    """Frame 2 of the answer to an ``RI`` / ``RL`` dispatch."""

    NOT_LEADER = 0
    OK = 1
    ERROR = 2


REQUEST_ENTRIES_HIGH_WATERMARK = 8000
CLIENT_HEARTBEAT_INTERVAL = 0.5
_KEEPALIVE_AFTER = 0.25
_ROUTE_TTL = 2.0
_FALLBACK = (
    "no answer to XF (a ØMQ RAFT reference peer?): pre-vote off, no leader transfer to it, "
    "learners and snapshots refused"
)
_SNAP = "it needs a snapshot but does not speak our snapshot stream: it stays behind"
_TRUE = b"\x01"


@dataclass(frozen=True, slots=True)
class PeerOptions:
    """Timing, batching and compaction settings of a :class:`RaftPeer`."""

    tick: float = 0.005
    """Seconds per core tick. Small, so that the randomised election timeouts of two
    followers rarely land on the same tick (a split vote costs another timeout)."""
    election_tick: int = 30
    """Election timeout in ticks (randomised in [n, 2n)): 150-300 ms by default."""
    heartbeat_tick: int = 9
    """45 ms by default."""
    fsync: bool = True
    """``fdatasync`` the log before anything that depends on it leaves the peer."""
    pre_vote: bool = True
    check_quorum: bool = True
    snapshot_every: int = 0
    """Snapshot and compact after this many applied entries (0: never)."""
    keep_entries: int = 1000
    """Entries kept in the log behind a snapshot (for slightly lagging followers)."""
    rpc_timeout: float = 0.05
    rpc_resends: int = 2
    max_batch_entries: int = 256
    max_batch_bytes: int = 1 << 20
    max_inflight: int = 8
    snapshot_chunk_size: int = 1 << 16
    request_entries_pipeline: int = 5
    request_entries_ttl: float = 6.0
    request_entries_batch: int = 256
    request_entries_bytes: int = 256 * 1024
    max_streams: int = REQUEST_ENTRIES_HIGH_WATERMARK
    max_drain: int = 2048
    request_id_ttl: float = 8 * 3600.0
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES
    """Largest RequestUpdate data (one STATE entry) accepted; larger ones are answered
    with the spec's final failure (status false, no 3rd frame). The ROUTER's
    ``ZMQ_MAXMSGSIZE`` follows from it (:func:`dafka.raft.guard.router_frame_limit`).
    Give every peer of a cluster the same value."""


# -- bookkeeping records ----------------------------------------------------------------------


@dataclass(slots=True)
class _Out:
    """A peer RPC we sent and wait an answer for."""

    request: m.Request
    frames: list[bytes]
    resend_at: float
    expires: float
    resends: int = 0


@dataclass(slots=True)
class _Route:
    """Where the answer to a peer RPC we received goes."""

    envelope: tuple[bytes, ...]
    msg_id: int
    key: Any
    at: float


@dataclass(slots=True)
class _Waiter:
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


@dataclass(slots=True)
class _Info:
    """A consistent copy of the peer's state for other threads (:meth:`RaftPeer.info`)."""

    id: str
    role: str = "follower"
    leader: str | None = None
    term: int = 0
    commit: int = 0
    applied: int = 0
    first_index: int = 1
    last_index: int = 0
    snapshot_index: int = 0
    config: list[list[str]] = field(default_factory=list)
    leader_changes: int = 0
    """Times this peer saw a new leader (a known leader other than the last one seen)."""
    refused: tuple[tuple[str, int], ...] = ()
    """Input refused so far, by kind (:class:`~dafka.raft.guard.BadInput`; a fixed set)."""


_PEER_REQUESTS = (w.RequestVote, w.AppendEntries, w.InstallSnapshot, w.TimeoutNow)
_KIND = {
    m.RequestVote: w.MsgType.REQUEST_VOTE,
    m.AppendEntries: w.MsgType.APPEND_ENTRIES,
    m.InstallSnapshot: w.MsgType.INSTALL_SNAPSHOT,
    m.TimeoutNow: w.MsgType.TIMEOUT_NOW,
}


class RaftPeer:
    """One ØMQ RAFT peer. See the module docstring.

    ``peers`` are the cluster's voters (ours included or not: ``peer_id`` at ``url`` is
    added unless ``join``). A joining peer (``join=True``) starts outside the
    configuration and waits for a leader to add it with ConfigUpdate. Once the data
    directory holds a log or a snapshot, the configuration comes from there and
    ``peers`` only seeds the URLs.

    Use :meth:`start` (a thread) and :meth:`stop`, or :meth:`run` on a thread of your own.
    """

    def __init__(
        self,
        peer_id: str,
        bind: str,
        peers: Sequence[Peer],
        data_dir: str | os.PathLike[str],
        cluster: bytes | str,
        state_machine: StateMachine | None = None,
        *,
        url: str | None = None,
        join: bool = False,
        broadcast: str | None = None,
        options: PeerOptions | None = None,
        context: zmq.Context[Any] | None = None,
        curve: RaftCurve | None = None,
    ) -> None:
        if not peer_id:
            raise ConfigError("a peer needs a non-empty id")
        self.id = peer_id
        self.bind = bind
        self.url = url or bind
        if "*" in self.url or self.url.endswith(":0"):
            raise ConfigError(f"peer URL {self.url!r} is not connectable: give --url")
        problem = (
            peer_url_problem(self.url)
            or peers_problem((*peers, Peer(peer_id, self.url)))
            or check_entry_limit((options or PeerOptions()).max_entry_bytes)
        )
        if problem is not None:
            raise ConfigError(problem)
        self.cluster = cluster.encode() if isinstance(cluster, str) else bytes(cluster)
        self.options = options or PeerOptions()
        self.broadcast = broadcast
        self.sm: StateMachine = state_machine if state_machine is not None else KvStateMachine()
        self.data_dir = Path(data_dir)
        others = [p for p in peers if p.id != peer_id]
        voters = tuple(others) if join else (Peer(peer_id, self.url), *others)
        if not voters:
            raise ConfigError("a joining peer needs the current peers (--peer)")
        self._initial = ClusterConfig(voters)
        self.curve = curve
        if curve is not None:
            missing = sorted(p.id for p in voters if p.id not in curve.peer_keys)
            if missing:
                raise ConfigError(f"CURVE: no public key for peer(s) {', '.join(missing)}")
            context = None  # the ZAP handler needs a context of our own
        self._zap: RaftZap | None = None
        self._context = context
        self._own_context = context is None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._info = _Info(peer_id)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> RaftPeer:
        """Open storage, bind and run the loop on a thread; raises what setup raised."""
        self._thread = threading.Thread(target=self.run, name=f"raft-{self.id}", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise RaftError(f"peer {self.id} did not start within {timeout} s")
        if self._error is not None:
            raise self._error
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> RaftPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """The loop runs: false after :meth:`stop` or once the loop died (even while the
        thread still tears down). A process hosting a peer watches this and exits
        non-zero when it turns false without a stop."""
        return self._thread is not None and self._thread.is_alive() and self._error is None

    @property
    def error(self) -> BaseException | None:
        """What stopped the loop, if it was not :meth:`stop`."""
        return self._error

    def info(self) -> _Info:
        """The peer's state as of the end of the last loop turn (any thread)."""
        return self._info

    def run(self) -> None:
        """Set up, then loop until :meth:`stop` (blocking)."""
        try:
            self._setup()
        except BaseException as exc:
            self._error = exc
            self._started.set()
            self._teardown()
            if threading.current_thread() is threading.main_thread():
                raise
            return
        self._started.set()
        try:
            self._loop()
        except BaseException as exc:
            log.exception("raft.peer.crash id=%s", self.id)
            self._error = exc
            raise
        finally:
            self._teardown()

    # -- setup -------------------------------------------------------------------------------

    def _setup(self) -> None:
        opts = self.options
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.storage = FileStorage(self.data_dir / "raft")
        loaded = self.storage.load()
        if loaded.snapshot is not None:
            self.sm.restore(loaded.snapshot)
        self._snapshot_size = len(loaded.snapshot or b"")
        self._snap_cache: tuple[int, bytes, bytes | None] | None = None
        self._snapper = BackgroundSnapshot()
        self.core = RaftCore(
            self.id,
            self._initial,
            rng=random.Random(),
            hard_state=loaded.hard_state,
            snapshot=loaded.snapshot_meta,
            entries=loaded.entries,
            applied=loaded.snapshot_meta.index,
            election_tick=opts.election_tick,
            heartbeat_tick=opts.heartbeat_tick,
            pre_vote=opts.pre_vote,
            check_quorum=opts.check_quorum,
            request_id_ttl=opts.request_id_ttl,
            max_batch_entries=opts.max_batch_entries,
            max_batch_bytes=opts.max_batch_bytes,
            max_inflight=opts.max_inflight,
            snapshot_chunk_size=opts.snapshot_chunk_size,
            read_snapshot=self._read_snapshot,
        )
        if self._context is None:
            self._context = zmq.Context()
        ctx = self._context
        if self.curve is not None:
            self._zap = RaftZap(ctx, self.curve).start()
        self.router = ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.SNDHWM, 100_000)
        self.router.setsockopt(zmq.RCVHWM, 100_000)
        self.router.setsockopt(
            zmq.MAXMSGSIZE, router_frame_limit(opts.max_entry_bytes, opts.snapshot_chunk_size)
        )
        self._bad = BadInput(self.id)
        if self.curve is not None:
            self.curve.server(self.router)
        try:
            self.router.bind(self.bind)
        except zmq.ZMQError as exc:
            raise ConfigError(f"cannot bind {self.bind}: {exc}") from exc
        self.pub: zmq.Socket[Any] | None = None
        if self.broadcast:
            self.pub = ctx.socket(zmq.PUB)
            self.pub.setsockopt(zmq.LINGER, 0)
            self.pub.setsockopt(zmq.MAXMSGSIZE, SUBSCRIPTION_FRAME_BYTES)
            if self.curve is not None:
                self.curve.server(self.pub)
            try:
                self.pub.bind(self.broadcast)
            except zmq.ZMQError as exc:
                raise ConfigError(f"cannot bind {self.broadcast}: {exc}") from exc
        self.poller = zmq.Poller()
        self.poller.register(self.router, zmq.POLLIN)
        self._dealers: dict[str, zmq.Socket[Any]] = {}
        self._dealer_peer: dict[zmq.Socket[Any], str] = {}
        self._urls: dict[str, str] = {}
        self._known_config: ClusterConfig | None = None
        self._msg_ids = w.MessageIdCounter()
        self._out: dict[str, OrderedDict[int, _Out]] = {}
        self._ext = Extensions(self.cluster)
        self._refused_snap: set[str] = set()
        self._newest: dict[str, int] = {}  # the last AppendEntries/InstallSnapshot id per peer
        self._seen: OrderedDict[bytes, OrderedDict[int, list[bytes] | None]] = OrderedDict()
        self._ae_routes: OrderedDict[tuple[str, int], _Route] = OrderedDict()
        self._fifo_routes: dict[tuple[str, str], deque[_Route]] = {}
        self._waiters: dict[int, list[_Waiter]] = {}
        self._updates: list[tuple[tuple[bytes, ...], bytes, bytes]] = []
        self._config_waiters: list[_Waiter] = []
        self._read_batch: list[tuple[w.RouterRequest, tuple[bytes, ...]]] = []
        self._reads: dict[bytes, list[tuple[w.RouterRequest, tuple[bytes, ...]]]] = {}
        self._read_ctx = 0
        self._streams: dict[tuple[tuple[bytes, ...], int], _Stream] = {}
        self._staging = self.data_dir / "snapshot.incoming"
        self._staging_fd = -1
        self._staged: tuple[SnapshotMeta, bytes] | None = None
        self._leader_term: int | None = None
        self._last_broadcast = 0.0
        self._role = (self.core.role, self.core.leader, self.core.term)
        self._seen_leader = self.core.leader
        self._leader_changes = 0
        self._listed: tuple[ClusterConfig | None, list[list[str]]] = (None, [])
        for peer in self._initial.peers:
            self._urls.setdefault(peer.id, peer.url)
        self._sync_peers()
        self._publish_info()
        log.info(
            "raft.peer.start id=%s bind=%s url=%s term=%d first=%d last=%d commit=%d",
            self.id,
            self.bind,
            self.url,
            self.core.term,
            self.core.first_index,
            self.core.last_index,
            self.core.commit,
        )

    def _teardown(self) -> None:
        for sock in [*getattr(self, "_dealers", {}).values(), getattr(self, "router", None)]:
            if sock is not None:
                sock.close(0)
        if getattr(self, "pub", None) is not None:
            self.pub.close(0)  # type: ignore[union-attr]
        if getattr(self, "_staging_fd", -1) >= 0:
            os.close(self._staging_fd)
            self._staging_fd = -1
        storage = getattr(self, "storage", None)
        if storage is not None:
            getattr(self, "_snapper", BackgroundSnapshot()).join()
            storage.close()
        if self._zap is not None:
            self._zap.stop()
            self._zap = None
        if self._own_context and self._context is not None:
            self._context.destroy(linger=0)  # closes any socket left open, never hangs
            self._context = None

    def _sync_peers(self) -> None:
        """A DEALER for every peer of every configuration we know of (never ours)."""
        config = self.core.config
        if config is self._known_config:
            return
        self._known_config = config
        for peer in all_peers(config):
            self._urls[peer.id] = peer.url
        ctx = self._context
        assert ctx is not None
        for peer_id, url in self._urls.items():
            if peer_id == self.id or peer_id in self._dealers:
                continue
            # a config entry from an old log (or an old leader) may name a URL libzmq
            # refuses: that peer stays unreachable, this one keeps running
            problem = peer_url_problem(url)
            if problem is not None:
                self._bad("peer-url", f"peer={peer_id!r} {problem}", logging.ERROR)
                continue
            key = None if self.curve is None else self.curve.peer_keys.get(peer_id)
            if self.curve is not None and key is None:
                self._bad("peer-key", f"peer={peer_id!r} has no CURVE key", logging.ERROR)
                continue
            sock = ctx.socket(zmq.DEALER)
            if self.curve is not None and key is not None:
                self.curve.client(sock, key)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.IMMEDIATE, 1)
            sock.setsockopt(zmq.SNDHWM, 10_000)
            sock.setsockopt(zmq.RCVHWM, 100_000)
            sock.setsockopt(zmq.RECONNECT_IVL, 50)
            sock.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
            sock.setsockopt(zmq.MAXMSGSIZE, PEER_FRAME_BYTES)
            try:
                sock.connect(url)
            except zmq.ZMQError as exc:
                sock.close(0)
                self._bad("peer-url", f"peer={peer_id!r} url={url!r} error={exc}", logging.ERROR)
                continue
            self._dealers[peer_id] = sock
            self._dealer_peer[sock] = peer_id
            self._out[peer_id] = OrderedDict()
            self.poller.register(sock, zmq.POLLIN)

    # -- the loop ----------------------------------------------------------------------------

    def _loop(self) -> None:
        tick = self.options.tick
        next_tick = time.monotonic() + tick
        router = self.router
        while not self._stop.is_set():
            wait = next_tick - time.monotonic()
            events = self.poller.poll(max(0, int(wait * 1000) + (1 if wait > 0 else 0)))
            for sock, _ in events:
                if sock is router:
                    self._drain_router()
                else:
                    self._drain_dealer(sock)
            if self._updates:
                self._flush_updates()
            self._flush_reads()
            now = time.monotonic()
            if now >= next_tick:
                self.core.tick()
                next_tick = now + tick
                self._on_tick(now)
            self._process_ready()
            self._maybe_snapshot()

    def _drain_router(self) -> None:
        recv = self.router.recv_multipart
        curve = self.curve is not None
        user: bytes | None = None
        for _ in range(self.options.max_drain):
            try:
                if curve:
                    # the ZAP user id (the sender's Z85 CURVE key) rides on every frame
                    parts = recv(zmq.NOBLOCK, copy=False)
                    user = _user_id(parts[-1])
                    frames = [part.bytes for part in parts]
                else:
                    frames = recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                self._on_router_frames(frames, user)
            except Exception as exc:  # no input may stop the loop
                self._bad("request-error", repr(exc), logging.ERROR)

    def _on_router_frames(self, frames: list[bytes], user: bytes | None = None) -> None:
        if (
            len(frames) == 5
            and frames[2] == b"="
            and len(frames[1]) == REQID_SIZE
            and frames[3] == self.cluster
        ):
            # the hot path: a RequestUpdate from a DEALER (identity, reqid, "=", ...)
            self._on_update((frames[0],), frames[1], frames[4])
            return
        try:
            request = w.decode_router_request(frames)
        except RaftWireError as exc:
            self._bad("malformed", exc, logging.DEBUG)
            return
        if request.message.cluster != self.cluster:
            log.debug("raft.peer.other_cluster cluster=%r", request.message.cluster)
            return
        try:
            self._on_request(request, user)
        except RaftWireError as exc:
            self._bad("malformed", exc, logging.DEBUG)

    def _drain_dealer(self, sock: zmq.Socket[Any]) -> None:
        peer_id = self._dealer_peer[sock]
        out = self._out[peer_id]
        for _ in range(self.options.max_drain):
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if self._ext.on_answer(peer_id, frames):
                continue
            try:
                msg_id = decode_uint(frames[0])
            except (RaftWireError, IndexError):
                continue
            rec = out.pop(msg_id, None)
            if rec is None:
                continue  # an answer to a resend, or too late
            try:
                response = w.decode_response(_KIND[type(rec.request)], frames)
                answer = core_response(response, peer_id, self.id)
            except RaftWireError as exc:
                self._bad("malformed-response", f"peer={peer_id!r} {exc}", logging.DEBUG)
                continue
            try:
                self.core.step(m.correlate(rec.request, answer))
            except Exception as exc:  # no input may stop the loop
                self._bad("response-error", f"peer={peer_id!r} {exc!r}", logging.ERROR)

    def _on_tick(self, now: float) -> None:
        self._negotiate(now)
        # RPC_TIMEOUT: repeat unanswered peer requests (same message id)
        for peer_id, out in self._out.items():
            if not out:
                continue
            sock = self._dealers[peer_id]
            for msg_id, rec in list(out.items()):
                if now >= rec.expires:
                    del out[msg_id]
                elif (
                    now >= rec.resend_at
                    and rec.resends < self.options.rpc_resends
                    and (msg_id == self._newest.get(peer_id) or not truncating(rec.request))
                ):
                    rec.resends += 1
                    rec.resend_at = now + self._rpc_timeout(rec.request)
                    try:
                        sock.send_multipart(rec.frames, zmq.NOBLOCK)
                    except zmq.Again:
                        del out[msg_id]
        # keep-alives for clients waiting on a commit
        for waiters in (*self._waiters.values(), self._config_waiters):
            for waiter in waiters:
                if now - waiter.keepalive >= _KEEPALIVE_AFTER:
                    waiter.keepalive = now
                    self._answer_waiter(waiter, pending=True)
        if self._streams:
            ttl = self.options.request_entries_ttl
            for key in [k for k, s in self._streams.items() if now - s.touched > ttl]:
                del self._streams[key]
        if self.pub is not None and now - self._last_broadcast >= CLIENT_HEARTBEAT_INTERVAL:
            self._broadcast(())
        while self._ae_routes:
            route = next(iter(self._ae_routes.values()))
            if now - route.at < _ROUTE_TTL:
                break
            self._ae_routes.popitem(last=False)

    def _negotiate(self, now: float) -> None:
        """Ask the peers which extensions they speak; tell the core who does not."""
        ext, core = self._ext, self.core
        ext.probe(self._dealers, now, self._send_probe)
        for event, peer_id in ext.events:
            why = _FALLBACK if event == "fallback" else "it answered XF: extensions back on"
            log.warning("raft.ext.%s id=%s peer=%s reason=%s", event, self.id, peer_id, why)
        ext.events.clear()
        core.plain_peers = ext.plain(p.id for p in all_peers(core.config) if p.id != self.id)
        for peer_id in core.snapshot_refused - self._refused_snap:
            log.error("raft.ext.snapshot_refused id=%s peer=%s reason=%s", self.id, peer_id, _SNAP)
        self._refused_snap |= core.snapshot_refused
        core.snapshot_refused.clear()

    def _send_probe(self, peer_id: str, frames: list[bytes]) -> bool:
        try:
            self._dealers[peer_id].send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            return False  # not connected (ZMQ_IMMEDIATE)
        return True

    def _rpc_timeout(self, request: m.Request) -> float:
        opts = self.options
        if isinstance(request, m.AppendEntries | m.InstallSnapshot):
            half_election = opts.election_tick * opts.tick / 2
            return max(opts.rpc_timeout, min(0.1, half_election))
        return opts.rpc_timeout

    # -- the Ready loop ----------------------------------------------------------------------

    def _process_ready(self) -> None:
        core = self.core
        while core.has_ready():
            rd = core.ready()
            first = appends_first(rd, core.is_leader, self.storage.hard_state)
            for append in first:  # see dafka.raft.pipeline: the leader writes in parallel
                self._send_request(append)
            durable, rest = split_durable(rd, self.storage.last_index)
            if durable is not None:  # answers that need not wait for this fsync
                self._apply(durable)
            completed = self._persist(rd)
            for msg in rd.messages:
                if first and isinstance(msg, m.AppendEntries):
                    continue  # sent already
                if isinstance(
                    msg, m.RequestVote | m.AppendEntries | m.InstallSnapshot | m.TimeoutNow
                ):
                    self._send_request(msg)
                else:
                    self._send_response(msg)
            self._apply(rest)
            core.advance(rd)
            if completed is not None:
                self._restore_staged(completed)
            if rd.entries or rd.snapshot is not None or rd.truncate_from is not None:
                self._sync_peers()
            self._check_role()
        self._check_role()
        self._publish_info()

    def _persist(self, rd: Ready) -> SnapshotMeta | None:
        storage = self.storage
        sync = rd.must_sync and self.options.fsync
        if rd.snapshot is not None:
            staged = self._staged
            if staged is None or staged[0].index != rd.snapshot.index:
                raise StorageError(f"snapshot {rd.snapshot.index} to install was not staged")
            storage.save_snapshot(rd.snapshot, staged[1])
            self._snapshot_size = len(staged[1])
            self._snap_cache = None
        if rd.truncate_from is not None:
            storage.truncate_from(rd.truncate_from)
        if rd.entries:
            storage.append(rd.entries, sync=sync)
        completed = None
        if rd.snapshot_chunks:
            completed = self._stage_chunks(rd, sync)
        if rd.hard_state is not None:
            storage.save_hard_state(rd.hard_state, sync=False)
        return completed

    def _stage_chunks(self, rd: Ready, sync: bool) -> SnapshotMeta | None:
        completed = None
        for chunk in rd.snapshot_chunks:
            if chunk.offset == 0 or self._staging_fd < 0:
                if self._staging_fd >= 0:
                    os.close(self._staging_fd)
                flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
                self._staging_fd = os.open(self._staging, flags, 0o600)
            os.pwrite(self._staging_fd, chunk.data, chunk.offset)
            if chunk.last:
                os.ftruncate(self._staging_fd, chunk.total_size)
                completed = SnapshotMeta(chunk.index, chunk.term)
        if sync and self._staging_fd >= 0:
            os.fsync(self._staging_fd)
        return completed

    def _restore_staged(self, expected: SnapshotMeta) -> None:
        blob = self._staging.read_bytes()
        try:
            meta, data = unpack_snapshot(blob)
        except StorageError as exc:
            log.error("raft.peer.bad_snapshot id=%s error=%s", self.id, exc)
            return
        if (meta.index, meta.term) != (expected.index, expected.term):
            log.error("raft.peer.bad_snapshot id=%s reason=meta-mismatch", self.id)
            return
        self._staged = (meta, data)
        if self.core.restore(meta):
            log.info("raft.peer.install_snapshot id=%s index=%d", self.id, meta.index)
        else:
            self._staged = None

    def _apply(self, rd: Ready) -> None:
        sm = self.sm
        if rd.snapshot is not None:
            assert self._staged is not None
            sm.restore(self._staged[1])
            self._staged = None
            with contextlib.suppress(OSError):
                self._staging.unlink()
            if self._staging_fd >= 0:
                os.close(self._staging_fd)
                self._staging_fd = -1
        for entry in rd.committed_entries:
            if entry.type is EntryType.STATE:
                try:
                    sm.apply(entry)
                except Exception as exc:  # the same entry fails alike on every peer
                    self._bad("apply-error", f"index={entry.index} {exc!r}", logging.ERROR)
            waiters = self._waiters.pop(entry.index, None)
            if waiters:
                for waiter in waiters:
                    if entry.reqid == waiter.reqid:
                        self._answer_waiter(waiter)
                    else:
                        self._answer_not_leader(waiter)
            if self._config_waiters and entry.type is EntryType.CONFIG:
                for waiter in self._config_waiters:
                    if waiter.index == entry.index:
                        waiter.matched = entry.reqid == waiter.reqid
        if self._config_waiters:
            last = rd.committed_entries[-1].index if rd.committed_entries else self.core.applied
            self._check_config_waiters(last)
        for rs in rd.read_states:
            for request, args in self._reads.pop(rs.ctx, ()):
                self._answer_query(request, args)
        if self.pub is not None and rd.committed_entries:
            self._broadcast(rd.committed_entries)

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

    def _check_role(self) -> None:
        core = self.core
        state = (core.role, core.leader, core.term)
        if state != self._role:
            self._role = state
            if core.leader is not None and core.leader != self._seen_leader:
                self._seen_leader = core.leader
                self._leader_changes += 1
            log.info(
                "raft.peer.role id=%s role=%s term=%d leader=%s",
                self.id,
                core.role.value,
                core.term,
                core.leader,
            )
        if core.role is Role.LEADER:
            if self._leader_term is None:
                self._leader_term = core.term
            if self._leader_term == core.term:
                return
        if self._leader_term is None:
            return
        # leadership lost: the core dropped pending proposals and reads silently
        self._leader_term = core.term if core.role is Role.LEADER else None
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

    def _publish_info(self) -> None:
        core = self.core
        if self._listed[0] is not core.config:
            self._listed = (core.config, [[p.id, p.url] for p in all_peers(core.config)])
        self._info = _Info(
            self.id,
            core.role.value,
            core.leader,
            core.term,
            core.commit,
            core.applied,
            core.first_index,
            core.last_index,
            core.snapshot.index,
            self._listed[1],
            self._leader_changes,
            self._bad.snapshot(),
        )

    # -- peer messages out -------------------------------------------------------------------

    def _send_request(self, msg: m.Request) -> None:
        sock = self._dealers.get(msg.to)
        if sock is None:
            log.debug("raft.peer.unknown_peer id=%s", msg.to)
            return
        msg_id = self._msg_ids.next()
        frames = wire_request(msg, msg_id, self.cluster).encode()
        try:
            send_frames(sock, frames)
        except zmq.Again:
            return  # not connected: the core's heartbeats/probes try again
        now = time.monotonic()
        out = self._out[msg.to]
        out[msg_id] = _Out(msg, frames, now + self._rpc_timeout(msg), now + _ROUTE_TTL)
        if truncating(msg):
            self._newest[msg.to] = msg_id
        if len(out) > 1024:
            out.popitem(last=False)

    def _send_response(self, msg: m.Message) -> None:
        route: _Route | None
        if isinstance(msg, m.AppendResponse):
            route = self._ae_routes.pop((msg.to, msg.seq), None)
            hint = None if msg.conflict_index is None else msg.conflict_index + 1
            wire: Any = w.AppendEntriesResponse(0, msg.term, msg.success, hint)
        elif isinstance(msg, m.VoteResponse):
            route = self._pop_route(msg.to, "vote", msg.pre_vote)
            wire = w.RequestVoteResponse(0, msg.term, msg.granted)
        elif isinstance(msg, m.SnapshotResponse):
            route = self._pop_route(msg.to, "snap", (msg.index, msg.end))
            wire = w.InstallSnapshotResponse(0, msg.term, msg.next_offset)
        elif isinstance(msg, m.TimeoutNowResponse):
            route = self._pop_route(msg.to, "timeout", None)
            wire = w.TimeoutNowResponse(0, msg.term)
        else:
            return
        if route is None:
            log.debug("raft.peer.unrouted_response to=%s type=%s", msg.to, type(msg).__name__)
            return
        frames = [*route.envelope, _uint(route.msg_id), *wire.encode()[1:]]
        send_frames(self.router, frames)
        seen = self._seen.get(route.envelope[0])
        if seen is not None and route.msg_id in seen:
            seen[route.msg_id] = frames

    def _pop_route(self, peer_id: str, kind: str, key: Any) -> _Route | None:
        queue = self._fifo_routes.get((peer_id, kind))
        if not queue:
            return None
        now = time.monotonic()
        while queue:
            route = queue.popleft()
            if route.key == key and now - route.at < _ROUTE_TTL:
                return route
        return None

    # -- requests in -------------------------------------------------------------------------

    def _on_request(self, request: w.RouterRequest, user: bytes | None = None) -> None:
        msg = request.message
        if isinstance(msg, _PEER_REQUESTS):
            claimed = msg.candidate if isinstance(msg, w.RequestVote) else msg.leader
            if self.curve is not None and not self.curve.peer_allowed(user, claimed):
                # the binding of a PEER ID to its key: checked before the core sees it
                self._bad("peer-key", f"claimed={claimed!r} key={user!r}")
                return
            self._on_peer_request(request, msg)
        elif isinstance(msg, w.RequestUpdate):
            self._on_update(request.envelope, msg.reqid, msg.data)
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
            url = self.broadcast if self.core.is_leader and self.pub is not None else None
            reply = w.RequestBroadcastStateUrlResponse(0, url)
            self._reply(request.envelope, request.request_id_frame, reply)

    def _reply(self, envelope: tuple[bytes, ...], id_frame: bytes, response: Any) -> None:
        frames = [*envelope, id_frame, *response.encode()[1:]]
        try:
            self.router.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            log.debug("raft.peer.reply_dropped")

    def _on_peer_request(self, request: w.RouterRequest, msg: Any) -> None:
        identity = request.envelope[0]
        seen = self._seen.get(identity)
        if seen is None:
            seen = self._seen[identity] = OrderedDict()
            if len(self._seen) > 256:
                self._seen.popitem(last=False)
        msg_id = msg.msg_id
        if msg_id in seen:
            cached = seen[msg_id]
            if cached is not None:
                self.router.send_multipart(cached, zmq.NOBLOCK)
            return
        seen[msg_id] = None
        if len(seen) > 128:
            seen.popitem(last=False)
        core_msg = core_request(msg, self.id)
        route = _Route(request.envelope, msg_id, None, time.monotonic())
        if isinstance(core_msg, m.AppendEntries):
            self._ae_routes[(core_msg.frm, msg_id)] = route
            if len(self._ae_routes) > 4096:
                self._ae_routes.popitem(last=False)
        else:
            if isinstance(core_msg, m.RequestVote):
                kind, route.key = "vote", core_msg.pre_vote
            elif isinstance(core_msg, m.InstallSnapshot):
                kind, route.key = "snap", (core_msg.index, core_msg.end)
            else:
                kind = "timeout"
            queue = self._fifo_routes.get((core_msg.frm, kind))
            if queue is None:
                queue = self._fifo_routes[(core_msg.frm, kind)] = deque(maxlen=64)
            queue.append(route)
        self.core.step(core_msg)

    def _on_update(self, envelope: tuple[bytes, ...], reqid: bytes, data: bytes) -> None:
        if len(data) > self.options.max_entry_bytes:
            # the spec's final failure (false, no 3rd frame): the client gives up
            self._bad("oversize-update", f"bytes={len(data)} max={self.options.max_entry_bytes}")
            self._reply(envelope, reqid, w.RequestUpdateResponse(reqid, w.UpdateStatus.EXPIRED))
            return
        self._updates.append((envelope, reqid, data))  # proposed together at the drain's end

    def _flush_updates(self) -> None:
        """Propose every RequestUpdate of the drain as one batch (one log write, one fsync)."""
        core, batch = self.core, self._updates
        self._updates = []
        try:
            results = core.propose_many([(data, reqid) for _, reqid, data in batch], time.time())
        except (NotLeader, ProposalDropped) as exc:
            leader = getattr(exc, "leader", None)
            for envelope, reqid, _ in batch:
                reply = w.RequestUpdateResponse(reqid, w.UpdateStatus.NOT_LEADER, leader=leader)
                self._reply(envelope, reqid, reply)
            return
        now = time.monotonic()
        for (envelope, reqid, _), result in zip(batch, results, strict=True):
            if result.index is None:  # EXPIRED, or a malformed reqid
                self._reply(envelope, reqid, w.RequestUpdateResponse(reqid, w.UpdateStatus.EXPIRED))
                continue
            waiter = _Waiter(envelope, reqid, reqid, result.index, False, now, now)
            if result.index <= core.applied:
                # a resend of an update that is applied already: the entry is in our log
                # (the core remembers reqids of entries it holds), so it is the one
                self._answer_waiter(waiter)
            else:
                self._waiters.setdefault(result.index, []).append(waiter)

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
        if self.curve is not None:
            named = [p.id for p in (*msg.peers, *(msg.learners or ()))]
            problem = self.curve.config_problem(user, named)
            if problem is not None:
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
            waiter = _Waiter(
                request.envelope, request.request_id_frame, msg.reqid, result.index, True, now, now
            )
            if result.index <= core.applied:
                waiter.matched = True  # a resend: the core knows that reqid at that index
            self._config_waiters.append(waiter)
            if result.index <= core.applied:
                self._check_config_waiters(core.applied)
            answer(w.ConfigUpdateResponse(msg.reqid, status.ACCEPTED))

    def _answer_waiter(self, waiter: _Waiter, pending: bool = False) -> None:
        if not waiter.config:  # RequestUpdate: true [+ the LOG INDEX], built directly
            tail = [_TRUE] if pending else [_TRUE, encode_json(waiter.index)]
            try:
                send_frames(self.router, [*waiter.envelope, waiter.id_frame, *tail])
            except zmq.Again:
                pass
            return
        index = None if pending else waiter.index
        reply = w.ConfigUpdateResponse(waiter.reqid, w.ConfigUpdateStatus.ACCEPTED, index=index)
        self._reply(waiter.envelope, waiter.id_frame, reply)

    def _answer_not_leader(self, waiter: _Waiter) -> None:
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
            self._snapshot_size,
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

    def _flush_reads(self) -> None:
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
        frames = [
            *request.envelope,
            request.request_id_frame,
            _uint(status),
            encode_json(meta),
            *result,
        ]
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
            self._streams.pop(key, None)
            reply = w.RequestEntriesResponse.not_leader(msg.request_id, core.leader)
            self._reply(request.envelope, request.request_id_frame, reply)
            return
        now = time.monotonic()
        if stream is not None:
            stream.touched = now
            if msg.is_stop:
                del self._streams[key]
                return
            stream.inflight = max(0, stream.inflight - 1)
            if stream.done:
                if stream.inflight == 0:
                    del self._streams[key]  # every follow-up is in
                return
        else:
            if msg.is_stop or len(self._streams) >= self.options.max_streams:
                return
            end = None if msg.count is None else msg.prev_index + msg.count
            stream = _Stream(
                request.envelope, request.request_id_frame, msg.request_id, msg.prev_index, end, now
            )
            self._streams[key] = stream
        self._fill_stream(stream)

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
            self._streams.pop((stream.envelope, stream.request_id), None)

    def _next_entries(self, stream: _Stream) -> w.RequestEntriesResponse:
        core = self.core
        opts = self.options
        if stream.snap_index is not None or stream.prev < core.first_index - 1:
            meta = self.storage.snapshot_meta
            if stream.snap_index != meta.index:
                stream.snap_index, stream.snap_offset = meta.index, 0  # (re)start
            data = self._snapshot_data()[1]
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

    # -- snapshots ---------------------------------------------------------------------------

    def _snapshot_data(self) -> tuple[int, bytes]:
        meta = self.storage.snapshot_meta
        cache = self._snap_cache
        if cache is None or cache[0] != meta.index:
            data = self.storage.snapshot_data() or b""
            cache = self._snap_cache = (meta.index, data, None)
        return cache[0], cache[1]

    def _read_snapshot(self, index: int, offset: int, limit: int) -> tuple[bytes, int] | None:
        meta = self.storage.snapshot_meta
        if meta.index != index or index == 0:
            return None
        self._snapshot_data()
        assert self._snap_cache is not None
        cached_index, data, blob = self._snap_cache
        if blob is None:
            blob = pack_snapshot(meta, data)
            self._snap_cache = (cached_index, data, blob)
        return blob[offset : offset + limit], len(blob)

    def _maybe_snapshot(self) -> None:
        core, job = self.core, self._snapper
        if job.busy:  # written off the loop (dafka.raft.snapshotter): install when done
            if job.done():
                meta, data, staged = job.take()
                if self.storage.install_staged(meta, staged):
                    self._snapshot_size = len(data)
                    self._snap_cache = (meta.index, data, None)
                    upto = max(meta.index - self.options.keep_entries, core.first_index - 1)
                    if upto >= self.storage.first_index:
                        self.storage.compact(upto)
                    core.compact(upto, meta)
                    log.info(
                        "raft.peer.snapshot id=%s index=%d compacted=%d", self.id, meta.index, upto
                    )
            return
        every = self.options.snapshot_every
        if every <= 0 or core.applied - self.storage.snapshot_meta.index < every:
            return
        job.start(self.storage, core.snapshot_meta(core.applied), self.sm.snapshot())

    def _broadcast(self, entries: Sequence[Entry]) -> None:
        assert self.pub is not None
        self._last_broadcast = time.monotonic()
        # the entries end the broadcast (the core's applied index moves only after this Ready)
        last = entries[-1].index if entries else self.core.applied
        message = w.StateBroadcast(self.cluster, self.core.term, last, tuple(entries))
        with contextlib.suppress(zmq.Again):
            self.pub.send_multipart(message.encode(), zmq.NOBLOCK)


def _user_id(frame: zmq.Frame) -> bytes | None:
    """The ZAP user id of a frame read from a CURVE server (its sender's Z85 key)."""
    try:
        user = frame.get("User-Id")
    except zmq.ZMQError:
        return None
    return user.encode("ascii") if isinstance(user, str) and user else None
