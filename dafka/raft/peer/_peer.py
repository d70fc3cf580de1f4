"""A runnable Raft peer: the pyzmq IO shell around :class:`~dafka.raft.core.RaftCore`.

One thread owns everything: the core, the :class:`~dafka.raft.peer.FileStorage`,
the :class:`~dafka.raft.peer.StateMachine` and the sockets:

* a ROUTER bound where told (``bind``): peer RPCs from the other peers' DEALERs and
  every client RPC of ``specs/zmq-raft-protocol.md``;
* one DEALER per other peer (every peer of every configuration seen), connected to its
  ROUTER: our RequestVote / AppendEntries / InstallSnapshot / TimeoutNow go out there
  and their responses come back on it;
* optionally a PUB bound at ``broadcast`` for StateBroadcast messages.

Nothing else is bound or connected.

Who may speak Raft to it (:class:`~dafka.raft.peer._guard.PeerGuard`): every peer RPC is
checked before the core sees it. Over NULL (the default) a peer has no other peers: it
refuses to start with any (:func:`~dafka.raft.peer._guard.group_problem`), and refuses every
peer RPC and every ConfigUpdate, so nobody can give a lone peer a leader, a term, a
snapshot or a member. A group needs CURVE (``curve``: a peer RPC only from the key of the
peer it names) or ``insecure_null`` (the ØMQ RAFT reference's NULL, every claim believed).

:class:`RaftPeer` is composed of four parts (one thread), each a class with its own state
that only its own module writes; what they all read is one
:class:`~dafka.raft.peer._peerstate.PeerShared` (the id, the cluster, the options, the state
machine, the storage, the core, the ROUTER, the bad-input counter), set once:

* this module: the lifecycle, the sockets, the loop, the Ready loop, and the routing of
  what the ROUTER receives to the two parts below;
* :attr:`RaftPeer.transport` (:mod:`dafka.raft.peer._peertransport`): the peer RPCs
  (DEALERs, message ids, resends, debouncing, answers routed back to their requests, the
  extension probe);
* :attr:`RaftPeer.clients` (:mod:`dafka.raft.peer._clientservice`): the client RPCs
  (RequestUpdate, ConfigUpdate, RequestLogInfo, ClientDispatch ``RI``/``RL`` reads,
  RequestEntries streams);
* :attr:`RaftPeer.snapshots` (:mod:`dafka.raft.peer._snapshotstage`): snapshots (staging a
  received InstallSnapshot, serving ours, snapshotting and compacting every
  ``snapshot_every`` entries).

The loop
--------
Each turn polls the sockets until the next tick, drains everything readable (up to
:attr:`PeerOptions.max_drain` messages per socket) into the core, ticks it when due, and
proposes the turn's RequestUpdates as one batch (``RaftCore.propose_many``), then runs
the core's Ready loop (:mod:`dafka.raft.core._ready`): persist (one ``append`` with one
``fdatasync`` for every entry of the turn: group commit), send, apply, answer, advance.
Client answers, like peer messages, leave only after the Ready that carries what they
depend on was persisted (the two exceptions that keep this true: :mod:`dafka.raft.peer._pipeline`).
With :attr:`PeerOptions.fsync_thread` plain appends are written on the loop and fsynced on
a thread of their own (:mod:`dafka.raft.peer._logsync`): a leader sends at once and the core
counts its own log towards a commit once that fsync reports back; a follower holds its
acknowledgements until then.

Data directory: ``<data dir>/raft`` is the :class:`~dafka.raft.peer.FileStorage`;
``<data dir>/snapshot.incoming`` stages a snapshot being received.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import zmq

from ...errors import ConfigError, RaftError, TooManyFrames
from ...io.bind import bind_patiently
from ...io.multipart import recv_bounded
from ...security.private_dirs import make_private_dirs
from .. import codec as w
from .. import core as m
from ..codec import (
    REQID_SIZE,
    ClusterConfig,
    Entry,
    EntryType,
    Peer,
    RaftWireError,
    SnapshotMeta,
    pack_snapshot,
    peer_url_problem,
    peers_problem,
    unpack_snapshot,
)
from ..core import RaftCore, Ready, Role, all_peers
from ._clientservice import (
    DISPATCH_LOCAL_READ,
    DISPATCH_READ_INDEX,
    ClientService,
    DispatchStatus,
    Waiter,
)
from ._curve import RaftCurve, RaftZap
from ._guard import (
    INSECURE_NULL_COST,
    SUBSCRIPTION_FRAME_BYTES,
    BadInput,
    PeerGuard,
    check_entry_limit,
    group_problem,
    router_frame_limit,
    router_max_frames,
)
from ._logsync import LogSyncer
from ._peerstate import (
    REQUEST_ENTRIES_HIGH_WATERMARK,
    ROUTER_SNDHWM,
    Admit,
    PeerInfo,
    PeerOptions,
    PeerShared,
)
from ._peertransport import PeerTransport
from ._pipeline import appends_first, plain, split_durable
from ._recovery import check_lost_entries
from ._snapshotstage import SnapshotStage
from ._statemachine import KvStateMachine, StateMachine
from ._storage import FileStorage

__all__ = [
    "DISPATCH_LOCAL_READ",
    "DISPATCH_READ_INDEX",
    "REQUEST_ENTRIES_HIGH_WATERMARK",
    "DispatchStatus",
    "PeerOptions",
    "RaftPeer",
    "pack_snapshot",
    "unpack_snapshot",
]

log = logging.getLogger(__name__)

CLIENT_HEARTBEAT_INTERVAL = 0.5
_STATE = EntryType.STATE  # a module global: an Enum class attribute costs 10x per entry


_PEER_REQUESTS = (w.RequestVote, w.AppendEntries, w.InstallSnapshot, w.TimeoutNow)


class RaftPeer:
    """One ØMQ RAFT peer. See the module docstring.

    ``peers`` are the cluster's voters (ours included or not: ``peer_id`` at ``url`` is
    added unless ``join``). A joining peer (``join=True``) starts outside the
    configuration and waits for a leader to add it with ConfigUpdate. Once the data
    directory holds a log or a snapshot, the configuration comes from there and
    ``peers`` only seeds the URLs.

    ``curve``: CURVE on every port; without it no other peer unless ``insecure_null``.

    ``admit``: the leader's check of every new RequestUpdate before it is proposed
    (:data:`~dafka.raft.peer._peerstate.Admit`); the Raft layer knows nothing of what the data
    means, the host does (the tower checks metadata commands' admin signatures).

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
        admit: Admit | None = None,
        insecure_null: bool = False,
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
        self.sm = state_machine if state_machine is not None else KvStateMachine()
        self.data_dir = Path(data_dir)
        others = [p for p in peers if p.id != peer_id]
        voters = tuple(others) if join else (Peer(peer_id, self.url), *others)
        if not voters:
            raise ConfigError("a joining peer needs the current peers (--peer)")
        self._initial = ClusterConfig(voters)
        self.curve = curve
        self.admit = admit
        self.insecure_null = insecure_null and curve is None
        problem = group_problem(peer_id, (p.id for p in voters), curve, self.insecure_null)
        if problem is not None:
            raise ConfigError(problem)
        self.guard = PeerGuard(peer_id, curve, self.insecure_null)
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
        self._info = PeerInfo(peer_id)

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

    def failure(self, exc: BaseException | None = None) -> str:
        """``exc`` (default: :attr:`error`) as one line for a log or an exit message: a
        storage error names the data directory and says what the system said."""
        exc = exc if exc is not None else self._error
        if isinstance(exc, OSError):
            where = exc.filename or self.data_dir / "raft"
            return f"cannot write or read its Raft data in {where}: {exc.strerror or exc}"
        return repr(exc)

    def info(self) -> PeerInfo:
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
        except OSError as exc:  # storage (a full disk): one line, the host exits non-zero
            log.error("raft.peer.crash id=%s error=%s", self.id, self.failure(exc))
            self._error = exc
        except BaseException as exc:  # a bug: its traceback, once
            log.exception("raft.peer.crash id=%s", self.id)
            self._error = exc
            if threading.current_thread() is threading.main_thread():
                raise
        finally:
            self._teardown()

    # -- setup -------------------------------------------------------------------------------

    def _setup(self) -> None:
        opts = self.options
        make_private_dirs(self.data_dir)
        self.storage = FileStorage(
            self.data_dir / "raft", recover=True, repair=opts.accept_log_loss
        )
        loaded = self.storage.load()
        if loaded.snapshot is not None:
            self.sm.restore(loaded.snapshot)
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
            read_snapshot=self._read_snapshot,  # the snapshot stage's, made below
            recovering_to=self.storage.recovering_to,
        )
        check_lost_entries(self.storage, self.core, opts.accept_log_loss)
        problem = group_problem(
            self.id, (p.id for p in all_peers(self.core.config)), self.curve, self.insecure_null
        )
        # guard: null-raft-peer-does-start
        if problem is not None:  # a log written by a group (or an attack) before this start
            raise ConfigError(f"the log in {self.data_dir / 'raft'} names {problem}")
        if self._context is None:
            self._context = zmq.Context()
        ctx = self._context
        if self.curve is not None:
            self._zap = RaftZap(ctx, self.curve).start()
        self.router = ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.SNDHWM, ROUTER_SNDHWM)
        # guard: raft-router-queue-bounded-bytes
        self.router.setsockopt(zmq.RCVHWM, opts.router_hwm())
        # guard: zmq-maxmsgsize-raft-router
        self.router.setsockopt(
            zmq.MAXMSGSIZE, router_frame_limit(opts.max_entry_bytes, opts.snapshot_chunk_size)
        )
        self._bad = BadInput(self.id)
        """Input refused, by kind (the one counter every part counts into)."""
        if self.curve is not None:
            self.curve.server(self.router)
        try:
            bind_patiently(self.router, self.bind)
        except zmq.ZMQError as exc:
            raise ConfigError(f"cannot bind {self.bind}: {exc}") from exc
        self.pub = None
        if self.broadcast:
            self.pub = ctx.socket(zmq.PUB)
            self.pub.setsockopt(zmq.LINGER, 0)
            self.pub.setsockopt(zmq.MAXMSGSIZE, SUBSCRIPTION_FRAME_BYTES)
            if self.curve is not None:
                self.curve.server(self.pub)
            try:
                bind_patiently(self.pub, self.broadcast)
            except zmq.ZMQError as exc:
                raise ConfigError(f"cannot bind {self.broadcast}: {exc}") from exc
        self.poller = zmq.Poller()
        self.poller.register(self.router, zmq.POLLIN)
        self._logsync: LogSyncer | None = None
        self._held: deque[tuple[int, Sequence[m.Message]]] = deque()
        """A follower's messages waiting for their log write's fsync (write number)."""
        if opts.fsync and opts.fsync_thread:
            self._logsync = LogSyncer(self.storage.sync_log, name=f"raft-logsync-{self.id}")
            self.poller.register(self._logsync.fileno, zmq.POLLIN)
        shared = PeerShared(
            self.id, self.cluster, opts, self.sm, self.storage, self.core, self.router, self._bad
        )
        self.snapshots = SnapshotStage(
            shared, self.data_dir, len(loaded.snapshot or b""), self._drain_log
        )
        self.transport = PeerTransport(shared, ctx, self.poller, self.curve, self._initial.peers)
        self.clients = ClientService(
            shared,
            self.snapshots,
            self.guard,
            self.admit,
            self.broadcast if self.pub is not None else None,
        )
        # the hot paths call the parts' bound methods without one more attribute lookup
        self._on_update = self.clients.on_update
        self._send_request = self.transport.send_request
        self._leader_term: int | None = None
        self._last_broadcast = 0.0
        self._role = (self.core.role, self.core.leader, self.core.term)
        self._seen_leader = self.core.leader
        self._leader_changes = 0
        self._listed: tuple[ClusterConfig | None, list[list[str]]] = (None, [])
        self.transport.sync_peers()
        self._publish_info()
        if self.insecure_null:
            log.warning(
                "raft.peer.insecure_null id=%s bind=%s: peers over NULL (--raft-insecure-null): %s",
                self.id,
                self.bind,
                INSECURE_NULL_COST,
            )
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
        transport: PeerTransport | None = getattr(self, "transport", None)
        if transport is not None:
            transport.close()
        if getattr(self, "router", None) is not None:
            self.router.close(0)
        if getattr(self, "pub", None) is not None:
            self.pub.close(0)  # type: ignore[union-attr]
        snapshots: SnapshotStage | None = getattr(self, "snapshots", None)
        if snapshots is not None:
            snapshots.close()
        logsync = getattr(self, "_logsync", None)
        if logsync is not None:
            self._logsync = None
            logsync.close()  # finishes the fsyncs handed over (the storage closes next)
        storage = getattr(self, "storage", None)
        if storage is not None:
            if snapshots is not None:
                snapshots.snapper.join()
            storage.close()
        if self._zap is not None:
            self._zap.stop()
            self._zap = None
        if self._own_context and self._context is not None:
            self._context.destroy(linger=0)  # closes any socket left open, never hangs
            self._context = None

    # -- the loop ----------------------------------------------------------------------------

    def _loop(self) -> None:
        tick = self.options.tick
        next_tick = time.monotonic() + tick
        router = self.router
        transport, clients, snapshots = self.transport, self.clients, self.snapshots
        while not self._stop.is_set():
            wait = next_tick - time.monotonic()
            events = self.poller.poll(max(0, int(wait * 1000) + (1 if wait > 0 else 0)))
            for sock, _ in events:
                if sock is router:
                    self._drain_router()
                elif isinstance(sock, int):
                    self._log_synced()
                else:
                    transport.drain_dealer(sock)
            if clients.updates:
                clients.flush_updates()
            clients.flush_reads()
            now = time.monotonic()
            if now >= next_tick:
                self.core.tick()
                next_tick = now + tick
                self._on_tick(now)
            self._process_ready()
            snapshots.maybe_snapshot()

    def _on_tick(self, now: float) -> None:
        if self._logsync is not None:
            self._logsync.check()  # a dead fsync thread ends the loop (and the process)
        self.transport.tick(now)
        self.clients.tick(now)
        if self.pub is not None and now - self._last_broadcast >= CLIENT_HEARTBEAT_INTERVAL:
            self._broadcast(())

    # -- the ROUTER: peer and client requests in ---------------------------------------------

    def _drain_router(self) -> None:
        router = self.router
        curve = self.curve is not None
        user: bytes | None = None
        limit = router_max_frames(self.options.max_batch_entries)
        for _ in range(self.options.max_drain):
            try:
                if curve:
                    # the ZAP user id (the sender's Z85 CURVE key) rides on every frame
                    parts = recv_bounded(router, limit, copy=False)
                    user = _user_id(parts[-1])
                    frames = [part.bytes for part in parts]
                else:
                    frames = recv_bounded(router, limit)
            except zmq.Again:
                return
            except TooManyFrames as exc:
                self._bad("malformed", exc, logging.DEBUG)
                continue
            try:
                self._on_router_frames(frames, user)
            # guard: raft-loop-survives-failing-message
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

    def _on_request(self, request: w.RouterRequest, user: bytes | None = None) -> None:
        msg = request.message
        if isinstance(msg, _PEER_REQUESTS):
            claimed = msg.candidate if isinstance(msg, w.RequestVote) else msg.leader
            problem = self.guard.peer_problem(claimed, user)
            # guard: raft-peer-rpcs-pass-peer
            if problem is not None:
                # who may speak Raft to us: checked before the core sees the message
                self._bad("peer-key", f"claimed={claimed!r} key={user!r}: {problem}")
                return
            self.transport.on_request(request, msg)
        else:
            self.clients.on_request(request, user)

    # -- the Ready loop ----------------------------------------------------------------------

    def _process_ready(self) -> None:
        core = self.core
        while core.has_ready():
            rd = core.ready()
            if self._logsync is not None and plain(rd, self.storage.hard_state):
                self._overlapped(rd)  # see dafka.raft.peer._pipeline: the fsync runs on a thread
                continue
            self._drain_log()  # everything else keeps "persist, then send"
            first = appends_first(rd, core.is_leader, self.storage.hard_state)
            for append in first:  # see dafka.raft.peer._pipeline: the leader writes in parallel
                self._send_request(append)
            durable, rest = split_durable(rd, self.storage.last_index)
            if durable is not None:  # answers that need not wait for this fsync
                self._apply(durable)
            completed = self._persist(rd)
            if first:  # its AppendEntries went already
                self._send_all([msg for msg in rd.messages if not isinstance(msg, m.AppendEntries)])
            else:
                self._send_all(rd.messages)
            self._apply(rest)
            core.advance(rd)
            if completed is not None:
                self.snapshots.restore_staged(completed)
            if rd.entries or rd.snapshot is not None or rd.truncate_from is not None:
                self.transport.sync_peers()
            self._check_role()
        if self.storage.recovering_to is not None and core.recovering_to is None:
            self._drain_log()
            self.storage.end_recovery()  # the log reached what was lost, durably
        self._check_role()
        self._publish_info()

    def _flush_updates(self) -> None:
        """Propose the RequestUpdates read so far (:meth:`ClientService.flush_updates`)."""
        self.clients.flush_updates()

    def _read_snapshot(self, index: int, offset: int, limit: int) -> tuple[bytes, int] | None:
        """The core's ``read_snapshot`` (:meth:`SnapshotStage.read_snapshot`)."""
        return self.snapshots.read_snapshot(index, offset, limit)

    def _overlapped(self, rd: Ready) -> None:
        """A plain append: written at once, fsynced on the thread. A leader sends and
        applies at once; a follower holds its messages (acknowledgements) until every write
        so far is durable, and applies at once (committed entries are durable elsewhere)."""
        syncer = self._logsync
        assert syncer is not None
        self._persist(rd, fsync=False)
        if rd.write:
            syncer.request(rd.write)
        self._release_held(syncer.done)  # what the thread finished meanwhile goes first
        if not self._held and (self.core.is_leader or not syncer.pending):
            self._send_all(rd.messages)
        elif rd.messages:
            self._held.append((syncer.wanted, rd.messages))
        self._apply(rd)
        self.core.advance(rd, durable=False)
        if rd.entries:
            self.transport.sync_peers()
        self._check_role()

    def _log_synced(self) -> None:
        """The fsync thread finished one (or failed: then this raises and the loop dies)."""
        assert self._logsync is not None
        done = self._logsync.take()
        if done:
            self.core.log_durable(done)
            self._release_held(done)

    def _drain_log(self) -> None:
        """Wait for the fsyncs handed to the thread (before the log is cut or replaced, and
        before any Ready that must persist before it sends), then send what they held."""
        if self._logsync is not None:
            done = self._logsync.drain()
            if done:
                self.core.log_durable(done)
                self._release_held(done)

    def _release_held(self, done: int) -> None:
        """Send, in order, the held messages whose writes are all durable (``done``)."""
        held = self._held
        while held and held[0][0] <= done:
            self._send_all(held.popleft()[1])

    def _send_all(self, messages: Sequence[m.Message]) -> None:
        transport = self.transport
        for msg in messages:
            if isinstance(msg, m.RequestVote | m.AppendEntries | m.InstallSnapshot | m.TimeoutNow):
                transport.send_request(msg)
            else:
                transport.send_response(msg)

    def _persist(self, rd: Ready, fsync: bool = True) -> SnapshotMeta | None:
        storage = self.storage
        sync = rd.must_sync and self.options.fsync and fsync
        if rd.snapshot is not None:
            self.snapshots.save_staged(rd.snapshot)
        if rd.truncate_from is not None:
            storage.truncate_from(rd.truncate_from)
        if rd.entries:
            storage.append(rd.entries, sync=sync)
        completed = None
        if rd.snapshot_chunks:
            completed = self.snapshots.stage_chunks(rd, sync)
        if rd.hard_state is not None:
            storage.save_hard_state(rd.hard_state, sync=False)
        return completed

    def _apply(self, rd: Ready) -> None:
        sm, clients = self.sm, self.clients
        if rd.snapshot is not None:
            self.snapshots.apply_staged()
        answers: list[Waiter] = []
        # no client waits on a follower: no lookup per entry (applying adds no waiter)
        waited = clients.waiting()
        for entry in rd.committed_entries:
            if entry.type is _STATE:
                try:
                    sm.apply(entry)
                # guard: raft-loop-survives-failing-state
                except Exception as exc:  # the same entry fails alike on every peer
                    self._bad("apply-error", f"index={entry.index} {exc!r}", logging.ERROR)
            if waited:
                clients.entry_applied(entry, answers)
        if answers:
            clients.send_answers(answers)
        clients.applied(rd)
        if self.pub is not None and rd.committed_entries:
            self._broadcast(rd.committed_entries)

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
        self.clients.leadership_lost()

    def _publish_info(self) -> None:
        core = self.core
        if self._listed[0] is not core.config:
            self._listed = (core.config, [[p.id, p.url] for p in all_peers(core.config)])
        self._info = PeerInfo(
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
