"""The peer transport of :class:`~dafka.raft.peer.RaftPeer`: Raft RPCs between peers.

Owns one DEALER per other peer (every peer of every configuration seen), connected to
its ROUTER: our RequestVote / AppendEntries / InstallSnapshot / TimeoutNow go out there
and their responses come back on it. The requests other peers send us arrive on our
ROUTER, which :mod:`dafka.raft.peer._peer` reads and hands to :meth:`PeerTransport.on_request`.
The translation between the core's messages and the wire's is :mod:`dafka.raft.peer._peerwire`;
the extension probe (``XF``) is :mod:`dafka.raft.core._extensions`. The peer owns one
(``RaftPeer.transport``); its state is its own, what it reads of the peer's is
:class:`~dafka.raft.peer._peerstate.PeerShared`.

Message ids come from a :class:`~dafka.raft.codec.MessageIdCounter`. A request that is
not answered within ``rpc_timeout`` (50 ms; AppendEntries and InstallSnapshot: up to
half the minimum election timeout) is sent again, same bytes, same message id, at most
``rpc_resends`` times; an AppendEntries or InstallSnapshot only while it is the newest
sent to that peer (a reference peer debounces the last message id only, and an older
one would truncate its log: the core's heartbeats recover the rest). A receiver
debounces on (connection, message id): a repeat is not stepped into the core again; if
it was answered already, the cached answer is sent again. Wire responses carry no echo
fields: the requester restores them from the request it sent under that id with
:func:`dafka.raft.core.correlate`. On the receiving side each core response goes
back to the ROUTER envelope and message id of the request it answers (AppendEntries:
exactly, through the core's ``seq`` echo, which a follower does not otherwise use; the
other RPCs in order). Sends never block: while a peer is unreachable (``ZMQ_IMMEDIATE``)
its messages are dropped and the core's own heartbeats and probes try again.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

import zmq

from ...errors import TooManyFrames
from ...io.multipart import recv_bounded
from .. import codec as w
from .. import core as m
from ..codec import (
    PEER_FRAME_BYTES,
    ClusterConfig,
    Peer,
    RaftWireError,
    decode_uint,
    peer_url_problem,
)
from ..codec import encode_uint as _uint
from ..core import Extensions, all_peers
from ._curve import RaftCurve
from ._fastsend import send_frames
from ._guard import PEER_RESPONSE_FRAMES
from ._peerstate import PeerShared
from ._peerwire import core_request, core_response, truncating, wire_request

__all__ = ["PeerTransport"]

log = logging.getLogger(__name__)

ROUTE_TTL = 2.0
"""Seconds a sent request, or the route back for a received one, is remembered."""
_FALLBACK = (
    "no answer to XF (a ØMQ RAFT reference peer?): pre-vote off, no leader transfer to it, "
    "learners refused"
)
_KIND = {
    m.RequestVote: w.MsgType.REQUEST_VOTE,
    m.AppendEntries: w.MsgType.APPEND_ENTRIES,
    m.InstallSnapshot: w.MsgType.INSTALL_SNAPSHOT,
    m.TimeoutNow: w.MsgType.TIMEOUT_NOW,
}


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


class PeerTransport:
    """DEALERs to the other peers, our requests out, their requests in; owned by
    :class:`~dafka.raft.peer.RaftPeer` (see the module docstring). Its DEALERs are made in
    ``context`` and registered with the peer's ``poller``; ``peers`` seed the URLs."""

    def __init__(
        self,
        shared: PeerShared,
        context: zmq.Context[Any],
        poller: zmq.Poller,
        curve: RaftCurve | None,
        peers: tuple[Peer, ...],
    ) -> None:
        self.id = shared.id
        self.cluster = shared.cluster
        self.options = shared.options
        self.core = shared.core
        self.router = shared.router
        self._bad = shared.bad
        self._context = context
        self.poller = poller
        self.curve = curve
        self._urls: dict[str, str] = {peer.id: peer.url for peer in peers}
        self._dealers: dict[str, zmq.Socket[Any]] = {}
        self._dealer_peer: dict[zmq.Socket[Any], str] = {}
        self._known_config: ClusterConfig | None = None
        self._msg_ids = w.MessageIdCounter()
        self._out: dict[str, OrderedDict[int, _Out]] = {}
        self._ext = Extensions(self.cluster)
        self._snap_told: dict[str, int] = {}  # the last snapshot index logged as sent, per peer
        self._newest: dict[str, int] = {}  # the last AppendEntries/InstallSnapshot id per peer
        self._seen: OrderedDict[bytes, OrderedDict[int, list[bytes] | None]] = OrderedDict()
        self._ae_routes: OrderedDict[tuple[str, int], _Route] = OrderedDict()
        self._fifo_routes: dict[tuple[str, str], deque[_Route]] = {}

    def close(self) -> None:
        """Close the DEALERs."""
        for sock in self._dealers.values():
            sock.close(0)

    def sync_peers(self) -> None:
        """A DEALER for every peer of every configuration we know of (never ours)."""
        config = self.core.config
        if config is self._known_config:
            return
        self._known_config = config
        for peer in all_peers(config):
            self._urls[peer.id] = peer.url
        ctx = self._context
        for peer_id, url in self._urls.items():
            if peer_id == self.id or peer_id in self._dealers:
                continue
            # a config entry from an old log (or an old leader) may name a URL libzmq
            # refuses: that peer stays unreachable, this one keeps running
            # guard: raft-peer-skips-unconnectable-urls
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
            # guard: raft-peer-skips-unconnectable-urls-2
            except zmq.ZMQError as exc:
                sock.close(0)
                self._bad("peer-url", f"peer={peer_id!r} url={url!r} error={exc}", logging.ERROR)
                continue
            self._dealers[peer_id] = sock
            self._dealer_peer[sock] = peer_id
            self._out[peer_id] = OrderedDict()
            self.poller.register(sock, zmq.POLLIN)

    def drain_dealer(self, sock: zmq.Socket[Any]) -> None:
        peer_id = self._dealer_peer[sock]
        out = self._out[peer_id]
        for _ in range(self.options.max_drain):
            try:
                frames = recv_bounded(sock, PEER_RESPONSE_FRAMES)
            except zmq.Again:
                return
            except TooManyFrames as exc:
                self._bad("malformed-response", f"peer={peer_id!r} {exc}", logging.DEBUG)
                continue
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

    def tick(self, now: float) -> None:
        """Probe for extensions, repeat unanswered requests, forget stale routes."""
        self._negotiate(now)
        # RPC_TIMEOUT: repeat unanswered peer requests (same message id)
        for peer_id, out in self._out.items():
            if not out:
                continue
            sock = self._dealers[peer_id]
            for msg_id, rec in list(out.items()):
                if now >= rec.expires:
                    del out[msg_id]
                # guard: raft-shell-resends-newest-appendentries
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
        while self._ae_routes:
            route = next(iter(self._ae_routes.values()))
            if now - route.at < ROUTE_TTL:
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

    # -- peer messages out -------------------------------------------------------------------

    def send_request(self, msg: m.Request) -> None:
        sock = self._dealers.get(msg.to)
        if sock is None:
            log.debug("raft.peer.unknown_peer id=%s", msg.to)
            return
        if isinstance(msg, m.InstallSnapshot) and self._snap_told.get(msg.to) != msg.index:
            self._snap_told[msg.to] = msg.index
            log.info(
                "raft.peer.send_snapshot id=%s peer=%s index=%d bytes=%d plain=%s",
                self.id,
                msg.to,
                msg.index,
                msg.total_size,
                msg.to in self.core.plain_peers,
            )
        msg_id = self._msg_ids.next()
        frames = wire_request(msg, msg_id, self.cluster).encode()
        try:
            send_frames(sock, frames)
        except zmq.Again:
            return  # not connected: the core's heartbeats/probes try again
        now = time.monotonic()
        out = self._out[msg.to]
        out[msg_id] = _Out(msg, frames, now + self._rpc_timeout(msg), now + ROUTE_TTL)
        if truncating(msg):
            self._newest[msg.to] = msg_id
        if len(out) > 1024:
            out.popitem(last=False)

    def send_response(self, msg: m.Message) -> None:
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
            if route.key == key and now - route.at < ROUTE_TTL:
                return route
        return None

    # -- peer messages in --------------------------------------------------------------------

    def on_request(self, request: w.RouterRequest, msg: Any) -> None:
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
