"""The store's query endpoint: a ROUTER answering HEADS and READ from its storage.

:func:`serve` is the whole request logic, a function of a storage and a request
(testable without sockets). :class:`QueryService` is the socket around it: a
:class:`~dafka.io.node_plugins.NodeService` that the store's IO thread opens, polls and
closes, so the storage is only ever touched from that one thread (no second
LMDB reader thread, no race with the map growing under a write). Each loop turn
takes a bounded number of requests, and serves those waiting as far as the reply
budget lets (:mod:`dafka.query.budget`: bytes of unread replies per connection and in
all, bytes per second), one per connection per round, so queries never stall ingest
for long and a client that does not read its replies is dropped, not fed.

Read ACLs (metadata ``consumers``, docs/security.md "Read ACLs"): :func:`authorize`
decides, before :func:`serve`, whether a request may be answered. A topic with an ACL
is served only over CURVE, to a connection whose client key (its ZAP ``User-Id``)
belongs to a node ID the ACL names; without CURVE it is refused (fail closed).
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import zmq

from ..errors import ConfigError, DafkaError, TooManyFrames, WireError
from ..io.multipart import QUERY_REQUEST_FRAMES, recv_bounded
from ..security.curve_keys import CurveConfig, make_server, node_ids_of_curve_key
from ..security.identity import Identity
from ..storage.base import HeadTail, Storage
from ..wire import beacon as wbeacon
from . import protocol as qp
from .budget import QueryLimits, ReplyBudget, Wait

log = logging.getLogger(__name__)

__all__ = ["QueryService", "authorize", "serve"]

ReadAcl = Callable[[str], frozenset[str] | None]
"""A topic's read ACL: the node IDs that may read it, or None (anyone)."""

SERVICE_NAME = "store"
REQUESTS_PER_TURN = 16
READ_CHUNK = 4096  # batches per storage.read call, at most
MIN_PART = 256 * 1024
"""Bytes of a READ served in one round at least, however many connections wait."""
MAX_DROPPED = 4096
"""Connections remembered as dropped (their requests queued before the drop are ignored)."""


def serve(
    storage: Storage,
    request: qp.Request,
    heads: Mapping[tuple[str, str], HeadTail] | None = None,
    *,
    profile: str = "rfc46",
    max_read_records: int = qp.MAX_READ_RECORDS,
    max_read_bytes: int = qp.MAX_READ_BYTES,
) -> qp.Reply:
    """Answer one request from ``storage`` (``heads``: a current ``storage.heads()``).

    ``profile`` is the store's wire profile: what its stored blobs are.
    """
    if heads is None:
        heads = storage.heads()
    try:
        if isinstance(request, qp.HeadsRequest):
            return _heads(request, heads)
        if isinstance(request, qp.StatusRequest):  # the service answers it (it knows the disk)
            return qp.StatusReply(request.request_id, None, None, None)
        return _read(storage, request, heads, profile, max_read_records, max_read_bytes)
    except DafkaError as exc:
        log.warning("query.failed request=%r error=%s", request, exc)
        return qp.ErrorReply(request.request_id, qp.ErrorCode.UNAVAILABLE, str(exc))


def authorize(
    request: qp.Request,
    readers: ReadAcl,
    heads: Mapping[tuple[str, str], HeadTail],
    *,
    curve: bool,
    client: frozenset[str],
) -> tuple[qp.ErrorReply | None, Mapping[tuple[str, str], HeadTail]]:
    """Whether ``request`` may be answered, and the heads it may see.

    ``curve``: the connection is CURVE; ``client``: the node IDs its CURVE key belongs to
    (:func:`~dafka.security.curve_keys.node_ids_of_curve_key`; empty without CURVE). A READ
    or a HEADS naming a topic the client may not read gets a ``forbidden`` error; a HEADS
    of every topic leaves those topics out."""

    def refusal(topic: str) -> str | None:
        allowed = readers(topic)
        if allowed is None:
            return None
        # guard: query-read-acl-fails-closed
        if not curve:
            return (
                f"topic {topic!r} has a read ACL: this store serves it only to CURVE "
                "clients (start the store with --curve)"
            )
        # guard: query-read-acl-needs-named
        if client & allowed:
            return None
        return f"this client's key may not read topic {topic!r} (its read ACL)"

    if isinstance(request, qp.ReadRequest):
        why = refusal(request.topic)
        if why is not None:
            return qp.ErrorReply(request.request_id, qp.ErrorCode.FORBIDDEN, why), heads
        return None, heads
    if isinstance(request, qp.StatusRequest):  # names no topic: the store's disk only
        return None, heads
    for topic in request.topics or ():
        why = refusal(topic)
        if why is not None:
            return qp.ErrorReply(request.request_id, qp.ErrorCode.FORBIDDEN, why), heads
    seen: dict[str, bool] = {}
    visible = {}
    for key, ht in heads.items():
        ok = seen.get(key[0])
        if ok is None:
            ok = seen[key[0]] = refusal(key[0]) is None
        if ok:
            visible[key] = ht
    return None, visible


def _open(topic: str) -> frozenset[str] | None:
    return None


def _heads(req: qp.HeadsRequest, heads: Mapping[tuple[str, str], HeadTail]) -> qp.HeadsReply:
    wanted = None if req.topics is None else set(req.topics)
    parts = [
        qp.PartitionInfo(topic, partition, tail, head)
        for (topic, partition), (head, tail) in sorted(heads.items())
        if wanted is None or topic in wanted
    ]
    truncated = len(parts) > qp.MAX_HEADS_PARTITIONS
    return qp.HeadsReply(req.request_id, tuple(parts[: qp.MAX_HEADS_PARTITIONS]), truncated)


def _read(
    storage: Storage,
    req: qp.ReadRequest,
    heads: Mapping[tuple[str, str], HeadTail],
    profile: str,
    max_read_records: int,
    max_read_bytes: int,
) -> qp.Reply:
    rid, topic, partition, start = req.request_id, req.topic, req.partition, req.from_offset
    ht = heads.get((topic, partition))
    if ht is None:
        return qp.ReadReply(rid, topic, partition, None, None, profile=profile)
    head, tail = ht
    if start < tail:
        return qp.ErrorReply(
            rid,
            qp.ErrorCode.BELOW_TAIL,
            f"offset {start} of {topic}/{partition} is below this store's tail {tail}",
            tail,
            head,
        )
    max_records = max(1, min(req.max_records, max_read_records))
    max_bytes = max(1, min(req.max_bytes, max_read_bytes))
    batches: list[tuple[int, int, bytes]] = []
    size = 0
    offset = start
    done = offset > head
    while not done:
        # storage.read copies every batch it returns: none past the bytes left (a READ of
        # big batches must not copy the partition's remainder to keep 4 MiB of it, nor a
        # few small batches make it ask for thousands of big ones)
        # guard: read-copies-stored-batch-past
        chunk = storage.read(
            topic, partition, offset, max(1, min(READ_CHUNK, max_records)), None, max_bytes - size
        )
        if not chunk:
            break
        for b in chunk:
            blob = b.blob
            if batches and size + len(blob) > max_bytes:
                done = True
                break
            batches.append((b.first_offset, b.last_offset, blob))
            size += len(blob)
            if b.last_offset - start + 1 >= max_records or size >= max_bytes:
                done = True
                break
        offset = chunk[-1].last_offset + 1
        if offset > head:
            break
    first, lasts, ends, data = qp.pack_batches(batches)
    return qp.ReadReply(rid, topic, partition, tail, head, first, lasts, ends, data, profile)


@dataclass(slots=True)
class _Waiting:
    """A request taken from the socket, waiting for room in the reply budget."""

    arrived: float
    peer: bytes
    request: qp.Request
    curve: bool
    client: frozenset[str]
    frame: zmq.Frame  # its last frame: where it came from (its TCP connection)


def _where(frame: zmq.Frame) -> tuple[int, object] | None:
    """The file descriptor of the TCP connection ``frame`` came on and its peer's address
    (checked again before the connection is closed: a descriptor is reused), or None."""
    try:
        fd = int(frame.get(zmq.SRCFD))
    except (zmq.ZMQError, ValueError, TypeError):
        return None
    if fd < 0:
        return None
    try:
        with socket.socket(fileno=os.dup(fd)) as conn:
            return fd, conn.getpeername()
    except OSError:
        return None


def _shut(where: object) -> bool:
    """Shut the TCP connection :func:`_where` found, if it is still that connection."""
    if not isinstance(where, tuple):
        return False
    fd, peer = where
    try:
        conn = socket.socket(fileno=os.dup(fd))
    except OSError:
        return False
    with conn:
        try:
            if conn.getpeername() != peer:
                return False  # closed, its descriptor now another connection's
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            return False
    return True


class QueryService:
    """The query ROUTER of one store, served on the store's IO thread."""

    def __init__(
        self,
        storage: Storage,
        *,
        port: int = 0,
        profile: str = "rfc46",
        requests_per_turn: int = REQUESTS_PER_TURN,
        readers: ReadAcl = _open,
        limits: QueryLimits | None = None,
        disk: Callable[[], tuple[int | None, int | None, int | None]] | None = None,
    ) -> None:
        if profile not in qp.PROFILES:
            raise ConfigError(f"unknown wire profile {profile!r}")
        self.storage = storage
        self.profile = profile
        self.port = port
        self.endpoint = ""
        self.requests_per_turn = requests_per_turn
        self.readers = readers
        self.disk = disk
        """(free, total, db bytes) for STATUS (None: unknown, all nil)."""
        self.limits = limits if limits is not None else QueryLimits()
        self.budget = ReplyBudget(self.limits, 0.0)
        self.stats = {
            "requests": 0,
            "malformed": 0,
            "dropped_replies": 0,
            "forbidden": 0,
            "busy": 0,
            "clamped": 0,
            "dropped_connections": 0,
        }
        # requests waiting for room, per connection; the dict's order is the connections'
        # turns (one served moves to the end)
        self._waiting: dict[bytes, deque[_Waiting]] = {}
        self.waiting = 0
        """Requests waiting, over all connections."""
        self._dropped: dict[bytes, None] = {}
        self._sock: zmq.Socket[bytes] | None = None
        self._curve: tuple[CurveConfig, Identity] | None = None

    # NodeService -------------------------------------------------------------

    def secure(self, config: CurveConfig, identity: Identity) -> None:
        """Serve over CURVE under ``identity``'s key when ``config`` is on (before open)."""
        self._curve = (config, identity)

    def open(self, context: zmq.Context[zmq.Socket[bytes]], host: str) -> zmq.Socket[bytes]:
        sock = context.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, qp.MAX_REQUEST_BYTES + 1024)
        sock.setsockopt(zmq.SNDHWM, qp.REPLY_HWM)  # replies are big: bytes waiting per client
        if self._curve is not None:
            make_server(sock, *self._curve)
        try:
            if self.port:
                sock.bind(f"tcp://{host}:{self.port}")
            else:
                self.port = sock.bind_to_random_port(f"tcp://{host}")
        except zmq.ZMQError as exc:
            sock.close(0)
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"query port {self.port} on {host} is already in use") from None
            raise ConfigError(f"cannot bind the query socket on {host}: {exc}") from None
        bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host
        self.endpoint = f"tcp://{bracketed}:{self.port}"
        self._sock = sock
        log.info("query.start endpoint=%s", self.endpoint)
        return sock

    def beacon(self, node_id: str) -> list[bytes] | None:
        return wbeacon.ServiceBeacon(node_id, self.endpoint, SERVICE_NAME).encode()

    def on_readable(self, now: float) -> None:
        """Take up to ``requests_per_turn`` requests, then serve what waits (:meth:`on_tick`).

        A request that is refused or malformed is answered at once; one to be served waits,
        after its connection's others, for room in the reply budget
        (:mod:`dafka.query.budget`)."""
        sock = self._sock
        if sock is None:
            return
        heads: dict[tuple[str, str], HeadTail] | None = None
        for _ in range(self.requests_per_turn):
            try:
                parts = recv_bounded(sock, QUERY_REQUEST_FRAMES, copy=False)
            except zmq.Again:
                break
            except TooManyFrames:
                self.stats["malformed"] += 1  # nothing to answer to: the id is unread
                continue
            if len(parts) < 2:
                self.stats["malformed"] += 1
                continue
            peer, body = parts[0].bytes, [f.bytes for f in parts[1:]]
            if peer in self._dropped:
                continue  # asked before it was dropped: no one reads the answer
            self.stats["requests"] += 1
            try:
                request = qp.decode_request(body)
            except WireError as exc:
                self.stats["malformed"] += 1
                rid = qp.request_id_of(body[0]) if len(body) == 1 else None
                if rid is not None:
                    self._send(peer, qp.ErrorReply(rid, qp.ErrorCode.BAD_REQUEST, str(exc)))
                continue  # else nothing to answer to
            if heads is None:
                heads = self.storage.heads()
            curve, client = self._client(parts[-1])
            refused, _ = authorize(request, self.readers, heads, curve=curve, client=client)
            if refused is not None:
                self.stats["forbidden"] += 1
                self._send(peer, refused)
                continue
            mine = self._waiting.get(peer)
            if self.waiting >= self.limits.parked or (
                mine is not None and len(mine) >= self.limits.parked_per_connection
            ):
                self._busy(peer, request)
                continue
            if mine is None:
                mine = self._waiting[peer] = deque()
            mine.append(_Waiting(now, peer, request, curve, client, parts[-1]))
            self.waiting += 1
        self.on_tick(now)

    def on_tick(self, now: float) -> None:
        """One round of the requests that wait: each connection's first is served in turn,
        as far as the reply budget lets, its READ clamped to a fair part of the burst (so
        that a client asking during a flood waits for one round, not for the flood's whole
        queue); those that waited ``park`` seconds are answered ``busy``, and the
        connections that do not read their replies are dropped. The store calls it each
        tick too, so that what waits is served without a new request."""
        if self._sock is None:
            return
        budget = self.budget
        budget.prune()
        self._expire(now)
        pressed = False
        heads: dict[tuple[str, str], HeadTail] | None = None
        # guard: query-serves-fair-part-burst
        part = max(MIN_PART, self.limits.burst // max(1, len(self._waiting)))
        for peer in list(self._waiting):
            room = budget.room(peer, now)
            if room is Wait.RATE:
                break
            if room is Wait.TOTAL:
                pressed = True
                break
            if room is Wait.SHARE:
                continue  # its own replies are unread: the others go on
            assert isinstance(room, int)
            mine = self._waiting.pop(peer)
            item = mine.popleft()
            self.waiting -= 1
            if mine:
                self._waiting[peer] = mine  # at the end: its next turn is after the others'
            if heads is None:
                heads = self.storage.heads()
            refused, visible = authorize(  # again: the ACL may have changed while it waited
                item.request, self.readers, heads, curve=item.curve, client=item.client
            )
            # guard: query-judges-waiting-request-read
            if refused is not None:
                self.stats["forbidden"] += 1
                self._send(peer, refused)
                continue
            request = item.request
            # guard: query-clamps-read-room-reply
            allowed = min(qp.MAX_READ_BYTES, room, part)
            if isinstance(request, qp.ReadRequest) and allowed < min(
                request.max_bytes, qp.MAX_READ_BYTES
            ):
                self.stats["clamped"] += 1
            if isinstance(request, qp.StatusRequest):
                free, total, db = self.disk() if self.disk is not None else (None, None, None)
                reply: qp.Reply = qp.StatusReply(request.request_id, free, total, db)
            else:
                reply = serve(
                    self.storage, request, visible, profile=self.profile, max_read_bytes=allowed
                )
            self._send(peer, reply, track=(budget, now, item.frame))
        for peer, where in budget.stalled(now, pressed):
            # guard: query-drops-connection-does-read
            self._drop(peer, where)

    def due(self) -> float | None:
        """When the byte rate lets the requests that wait go on (None: none waits, or they
        wait for replies to be read, which the store's tick looks at)."""
        return self.budget.refilled_at() if self.waiting else None

    def _expire(self, now: float) -> None:
        """Answer ``busy`` the requests that waited ``park`` seconds; forget those of
        dropped connections."""
        park = self.limits.park
        for peer in list(self._waiting):
            mine = self._waiting[peer]
            dropped = peer in self._dropped
            # guard: query-answers-busy-request-waited
            while mine and (dropped or now - mine[0].arrived >= park):
                item = mine.popleft()
                self.waiting -= 1
                if not dropped:
                    self._busy(peer, item.request)
            if not mine:
                del self._waiting[peer]

    def _busy(self, peer: bytes, request: qp.Request) -> None:
        self.stats["busy"] += 1
        self._send(
            peer,
            qp.ErrorReply(
                request.request_id,
                qp.ErrorCode.BUSY,
                "this store's query replies are at their bounds: ask again later",
            ),
        )

    def _send(
        self,
        peer: bytes,
        reply: qp.Reply,
        track: tuple[ReplyBudget, float, zmq.Frame] | None = None,
    ) -> int:
        """Send ``reply`` to ``peer``; with ``track``, counted in the budget until libzmq is
        done with it. The bytes sent."""
        sock = self._sock
        assert sock is not None
        frames = qp.encode_reply(reply)
        size = sum(map(len, frames))
        try:
            if track is None:
                sock.send_multipart([peer, *frames], zmq.NOBLOCK)
                return size
            budget, now, frame = track
            where = _where(frame) if not budget.held_by(peer) else None
            tracker = sock.send_multipart([peer, *frames], zmq.NOBLOCK, copy=False, track=True)
            if tracker is not None:
                budget.sent(peer, size, tracker, now, where)
        except zmq.Again:
            self.stats["dropped_replies"] += 1  # the client times out and asks again
        except zmq.ZMQError as exc:
            log.debug("query.reply_failed error=%s", exc)
        return size

    def _drop(self, peer: bytes, where: object) -> None:
        """Close the TCP connection of a client that does not read its replies: libzmq then
        frees what it queued for it. Its requests already queued are ignored."""
        self._dropped[peer] = None
        while len(self._dropped) > MAX_DROPPED:
            del self._dropped[next(iter(self._dropped))]
        if _shut(where):
            self.stats["dropped_connections"] += 1
            log.info("query.dropped_connection reason=unread_replies")

    def _client(self, frame: zmq.Frame) -> tuple[bool, frozenset[str]]:
        """Whether this socket speaks CURVE, and the node IDs of the frame's client key."""
        if self._curve is None or not self._curve[0].enabled:
            return False, frozenset()
        try:
            user = frame.get("User-Id")
        except zmq.ZMQError:
            return True, frozenset()
        return True, node_ids_of_curve_key(str(user))

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None
