"""A Python client of a ØMQ RAFT cluster (``specs/zmq-raft-protocol.md``, "Client").

:class:`RaftClient` keeps one DEALER socket. It starts connected to every seed peer
and asks them, one after another (the DEALER's round robin), for the cluster state
with RequestConfig until one names a leader; then it keeps a connection only to the
leader's ROUTER and remembers every peer's URL.

"Broken known leader state" recovery, as the spec gives it:

1. a negative answer that names the leader: connect to that leader only, and send the
   request again (to it);
2. no answer within ``response_ttl`` (``SERVER_RESPONSE_TTL``, 500 ms), or a negative
   answer without a leader: connect to every known peer, wait ``election_grace``
   (``SERVER_ELECTION_GRACE_MS``, 300 ms), then send the request again, to one peer
   after another (round robin), until one answers positively or names the leader (then
   1.). While nobody knows a leader, the request goes round again every 50 ms.

A leader hint whose URL is unknown is resolved with RequestConfig. RequestUpdate and
ConfigUpdate are resent with the same reqid, which makes them idempotent; "accepted,
not committed" answers reset the response clock.

Threads: a client is single-threaded: use it from one thread at a time (one client per
thread is the simple way; they are cheap). All methods block until their answer or
their ``timeout`` (:class:`~dafka.errors.DafkaTimeout`).

Reads: :meth:`RaftClient.read` is linearizable. It sends the ClientDispatch type
``RI`` (:data:`dafka.raft.peer.DISPATCH_READ_INDEX`): the leader confirms its
leadership with a quorum (ReadIndex), waits until it applied everything committed
when the read arrived, then answers from its state machine's ``query``.
:meth:`RaftClient.read_local` (``RL``) asks one given peer for its possibly stale
state.

What each answer means for the request it answers (done, pending, redirect, retry,
fail) is decided in :mod:`dafka.raft.client._clientanswers`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import zmq

from ...errors import ConfigError, DafkaTimeout, RaftError
from .. import codec as w
from ..codec import (
    MAX_UINT32,
    Entry,
    Peer,
    RaftWireError,
    ReqIdGenerator,
    encode_reqid,
    encode_uint32,
    peer_url_problem,
)
from ..core import DISPATCH_FEATURES, SnapshotChunk, decode_features, read_unsupported
from ..peer import (
    DISPATCH_LOCAL_READ,
    DISPATCH_READ_INDEX,
    ClientCurve,
    DispatchStatus,
)
from ._clientanswers import (
    Outcome,
    decide_config,
    decide_dispatch,
    decide_update,
    dispatch_answer,
)
from ._links import ClientLinks

__all__ = [
    "SERVER_ELECTION_GRACE",
    "SERVER_RESPONSE_TTL",
    "ClusterState",
    "RaftClient",
]

log = logging.getLogger(__name__)

SERVER_RESPONSE_TTL = 0.5
SERVER_ELECTION_GRACE = 0.3
_NO_LEADER_RETRY = 0.05
_REQUEST_UPDATE = w.RequestUpdate.TYPE.value


@dataclass(frozen=True, slots=True)
class ClusterState:
    """What RequestConfig said: the leader (id and URL) and every peer's URL."""

    leader: str | None
    leader_url: str | None
    peers: dict[str, str]


@dataclass(slots=True)
class _Call:
    key: bytes
    frames: list[bytes]
    decide: Callable[[list[bytes]], tuple[Outcome, Any]]
    need_send: bool = True
    retry_at: float = 0.0
    sent_at: float = 0.0
    sent_to: str | None = None
    done: bool = False
    result: Any = None


def _seeds(peers: Iterable[str] | Mapping[str, str] | Iterable[Peer]) -> tuple[list[str], dict]:
    if isinstance(peers, Mapping):
        return list(peers.values()), dict(peers)
    urls: list[str] = []
    known: dict[str, str] = {}
    for item in peers:
        if isinstance(item, Peer):
            urls.append(item.url)
            known[item.id] = item.url
        else:
            urls.append(str(item))
    return urls, known


class RaftClient:
    """A client of one ØMQ RAFT cluster; see the module docstring.

    ``peers``: seed peer URLs (or ``{id: url}``, or :class:`Peer` objects); ``cluster``:
    the cluster ident; ``timeout``: default deadline of every call, in seconds.
    """

    def __init__(
        self,
        peers: Iterable[str] | Mapping[str, str] | Iterable[Peer],
        cluster: bytes | str,
        *,
        timeout: float = 10.0,
        response_ttl: float = SERVER_RESPONSE_TTL,
        election_grace: float = SERVER_ELECTION_GRACE,
        context: zmq.Context[Any] | None = None,
        reqids: Callable[[], bytes] | None = None,
        curve: ClientCurve | None = None,
    ) -> None:
        self._seed_urls, self._peers = _seeds(peers)
        if not self._seed_urls:
            raise ConfigError("a Raft client needs at least one peer URL")
        self.cluster = cluster.encode() if isinstance(cluster, str) else bytes(cluster)
        self.timeout = timeout
        self.response_ttl = response_ttl
        self.election_grace = election_grace
        self._reqids = reqids or ReqIdGenerator()
        self._next_id = random.randrange(MAX_UINT32)
        self._links = ClientLinks(context, curve)
        """The DEALERs to the peers and what arrived on them (:class:`ClientLinks`)."""
        self._blocked_since: float | None = None
        self._leader: tuple[str, str] | None = None
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._links.close()

    def __enter__(self) -> RaftClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def leader(self) -> tuple[str, str] | None:
        """``(id, url)`` of the leader this client currently talks to, if it knows one."""
        return self._leader

    @property
    def peers(self) -> dict[str, str]:
        """Every peer id and URL this client learned of."""
        return dict(self._peers)

    # -- public API --------------------------------------------------------------------------

    def request_config(self, timeout: float | None = None) -> ClusterState:
        """Find the leader with RequestConfig (asking the known peers in turn)."""
        self._discover(self._deadline(timeout))
        assert self._leader is not None
        return ClusterState(self._leader[0], self._leader[1], dict(self._peers))

    def update(
        self, data: bytes, *, reqid: bytes | None = None, timeout: float | None = None
    ) -> int:
        """Append ``data`` to the log (RequestUpdate); returns its committed LOG INDEX."""
        return self.update_many([data], timeout=timeout, reqids=[reqid] if reqid else None)[0]

    def update_many(
        self,
        datas: Iterable[bytes],
        *,
        window: int = 64,
        timeout: float | None = None,
        reqids: Sequence[bytes] | None = None,
    ) -> list[int]:
        """Pipelined RequestUpdates, at most ``window`` in flight; their LOG INDEXes in
        order. ``timeout`` bounds the whole batch."""
        items = list(datas)
        ids = list(reqids) if reqids is not None else [self._reqids() for _ in items]
        calls = (self._update_call(reqid, data) for reqid, data in zip(ids, items, strict=True))
        return self._run(calls, window, self._deadline(timeout))

    def read(self, query: Sequence[bytes], *, timeout: float | None = None) -> list[bytes]:
        """A linearizable state machine query (``RI``, ReadIndex on the leader)."""
        call = self._dispatch_call(DISPATCH_READ_INDEX, query)
        try:
            return self._run(iter([call]), 1, self._deadline(timeout))[0][1]
        except DafkaTimeout as exc:  # no leader, or one that does not speak RI?
            raise (read_unsupported(self) or exc) from None

    def features(self, url: str, *, timeout: float | None = None) -> frozenset[str]:
        """The Dafka extensions the peer at ``url`` speaks (``XF``; a timeout: none)."""
        frames = [encode_uint32(self._new_id()), DISPATCH_FEATURES, self.cluster]
        return decode_features(self._direct_call(url, frames, timeout))

    def read_local(
        self, url: str, query: Sequence[bytes], *, timeout: float | None = None
    ) -> tuple[int, list[bytes]]:
        """``(last applied index, answer)`` of one peer's own state machine (``RL``)."""
        rid = self._new_id()
        frames = [encode_uint32(rid), DISPATCH_LOCAL_READ, self.cluster, *query]
        answer = self._direct_call(url, frames, timeout)
        status, meta, result = dispatch_answer(answer)
        if status != DispatchStatus.OK:
            raise RaftError(f"{url}: {meta}")
        return int(meta), result

    def config_update(
        self,
        peers: Sequence[Peer],
        *,
        learners: Sequence[Peer] | None = None,
        timeout: float | None = None,
    ) -> int:
        """Change the cluster's voters to ``peers`` (ConfigUpdate, joint consensus).

        Returns the LOG INDEX of the change once the new configuration is in force.
        Raises :class:`ConfigError` when the peers refuse the configuration.
        """
        reqid = self._reqids()
        msg = w.ConfigUpdate(reqid, self.cluster, tuple(peers), tuple(learners or ()))
        call = _Call(reqid, msg.encode(), decide_config)
        return self._run(iter([call]), 1, self._deadline(timeout))[0]

    def log_info(
        self, url: str | None = None, *, timeout: float | None = None
    ) -> w.RequestLogInfoResponse:
        """RequestLogInfo of the peer at ``url`` (default: the leader)."""
        if url is None:
            url = self.request_config(timeout).leader_url
            assert url is not None
        rid = self._new_id()
        answer = self._direct_call(url, w.RequestLogInfo(rid, self.cluster).encode(), timeout)
        return w.RequestLogInfoResponse.decode(answer)

    def peer_config(self, url: str, *, timeout: float | None = None) -> w.RequestConfigResponse:
        """RequestConfig of the peer at ``url`` (what that one peer believes)."""
        rid = self._new_id()
        answer = self._direct_call(url, w.RequestConfig(rid, self.cluster).encode(), timeout)
        return w.RequestConfigResponse.decode(answer)

    def broadcast_url(self, *, timeout: float | None = None) -> str | None:
        """The leader's StateBroadcast PUB URL (RequestBroadcastStateUrl), if it has one."""
        url = self.request_config(timeout).leader_url
        assert url is not None
        rid = self._new_id()
        frames = w.RequestBroadcastStateUrl(rid, self.cluster).encode()
        return w.RequestBroadcastStateUrlResponse.decode(
            self._direct_call(url, frames, timeout)
        ).url

    def stream_entries(
        self, prev_index: int = 0, *, count: int | None = None, timeout: float | None = None
    ) -> Iterator[Entry | SnapshotChunk]:
        """Committed log entries after ``prev_index`` (RequestEntries), up to ``count`` of
        them or to the leader's commit index at the time the stream reaches it.

        When ``prev_index`` is below the leader's log, the leader's state machine
        snapshot comes first as :class:`SnapshotChunk` items (``index``/``term`` of the
        snapshot; an ``offset == 0`` chunk starts it over), then the entries after it.
        The leader sends up to 5 responses ahead of our follow-ups; closing the
        generator early tells it to stop. ``timeout`` bounds each wait for progress.
        """
        limit = self.timeout if timeout is None else timeout
        end = None if count is None else prev_index + count
        prev = prev_index
        rid: int | None = None
        snap_next = 0
        finished = False
        last_progress = time.monotonic()

        def remaining() -> int | None:
            return None if end is None else end - prev

        try:
            while True:
                now = time.monotonic()
                if now - last_progress > limit:
                    raise DafkaTimeout(f"no RequestEntries progress for {limit} s")
                if end is not None and prev >= end:
                    finished = True
                    return
                if rid is None:
                    self._discover(last_progress + limit)
                    rid = self._new_id()
                    snap_next = 0
                    msg = w.RequestEntries(rid, self.cluster, prev, remaining())
                    if not self._links.send_when_ready(msg.encode(), now + self.response_ttl):
                        rid = None
                        self._break(wait=True)  # the leader we knew is unreachable
                        continue
                key = encode_uint32(rid)
                got = self._links.recv_for(key, now + self.response_ttl)
                if got is None:
                    self._stop_stream(rid, prev)
                    rid = None
                    self._break(wait=True)
                    continue
                resp = w.RequestEntriesResponse.decode(got[1])
                last_progress = time.monotonic()
                if resp.status is w.EntriesStatus.NOT_LEADER:
                    rid = None
                    self._redirect(resp.leader, last_progress + limit)
                    continue
                if resp.status is w.EntriesStatus.SNAPSHOT:
                    if resp.chunk_offset == 0:
                        snap_next = 0
                    if resp.chunk_offset == snap_next:
                        yield SnapshotChunk(
                            resp.last_index,
                            resp.snapshot_term,
                            resp.chunk_offset,
                            resp.snapshot_size,
                            resp.chunk,
                        )
                        snap_next += len(resp.chunk)
                        if resp.is_last_chunk:
                            prev, snap_next = resp.last_index, 0
                            if end is not None and prev >= end:
                                return  # the snapshot covers the count (finally: "stop")
                    offset = snap_next if snap_next else None
                    follow = w.RequestEntries(rid, self.cluster, prev, remaining(), offset)
                    self._links.send_now(follow.encode())
                    continue
                if resp.prev_index == prev:
                    yield from resp.entries
                    prev = resp.last_index
                elif resp.last_index > prev:
                    # a gap (the leader lost the stream): start over from where we are
                    self._stop_stream(rid, prev)
                    rid = None
                    continue
                if resp.status is w.EntriesStatus.LAST:
                    finished = True
                    return
                self._links.send_now(
                    w.RequestEntries(rid, self.cluster, prev, remaining()).encode()
                )
        finally:
            if rid is not None and not finished and not self._closed:
                self._stop_stream(rid, prev)

    # -- calls -------------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id = (self._next_id + 1) & MAX_UINT32
        return self._next_id

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    def _stop_stream(self, rid: int, prev: int) -> None:
        self._links.send_now(w.RequestEntries(rid, self.cluster, prev, 0).encode())

    def _direct_call(self, url: str, frames: list[bytes], timeout: float | None) -> list[bytes]:
        """One request to one given peer on a socket of its own; the answer's frames."""
        return self._links.direct_call(url, frames, self._deadline(timeout))

    def _update_call(self, reqid: bytes, data: bytes) -> _Call:
        # w.RequestUpdate(reqid, self.cluster, data).encode(), without building one
        frames = [encode_reqid(reqid), _REQUEST_UPDATE, self.cluster, data]
        return _Call(reqid, frames, decide_update)

    def _dispatch_call(self, kind: bytes, query: Sequence[bytes]) -> _Call:
        key = encode_uint32(self._new_id())
        return _Call(key, [key, kind, self.cluster, *query], decide_dispatch)

    def _run(self, calls: Iterator[_Call], window: int, deadline: float) -> list[Any]:
        """Drive ``calls`` to completion, at most ``window`` in flight; results in order.

        A turn costs what arrived, not the window: the calls are walked to send only when
        one may need it (``resend``), and for the response clock only once ``check_at``
        passed, a bound below every sent call's ``sent_at + ttl`` (that minimum never
        falls: calls leave, and ``sent_at`` only moves forward)."""
        order: list[_Call] = []
        active: dict[bytes, _Call] = {}
        exhausted = False
        ttl = self.response_ttl
        resend = False
        check_at = 0.0
        while True:
            while not exhausted and len(active) < window:
                call = next(calls, None)
                if call is None:
                    exhausted = True
                else:
                    order.append(call)
                    active[call.key] = call
                    resend = True
            if not active:
                return [c.result for c in order]
            now = time.monotonic()
            if now > deadline:
                raise DafkaTimeout(
                    f"no answer from the Raft cluster within the timeout ({len(active)} pending)"
                )
            if self._leader is None and not self._links.connected:
                self._discover(deadline)
            blocked = False
            wake = min(deadline, check_at)
            if resend:
                resend = False
                for call in active.values():
                    if not call.need_send:
                        continue
                    if now < call.retry_at:
                        resend = True
                        wake = min(wake, call.retry_at)
                        continue
                    url = self._links.send_now(call.frames)
                    if url is None:
                        blocked = True  # no connection yet
                        resend = True
                        break
                    call.need_send = False
                    call.sent_at = now
                    call.sent_to = url
            if blocked:
                wake = now + 0.005  # the call that could not go is due
                if self._blocked_since is None:
                    self._blocked_since = now
                elif now - self._blocked_since > ttl:
                    # cannot even reach the peer we believed leads (a stale hint naming a
                    # dead peer): that is a broken leader state as well
                    log.debug("raft.client.unreachable leader=%s", self._leader)
                    self._blocked_since = None
                    self._break()
                    for call in active.values():
                        call.retry_at = now + self.election_grace
            else:
                self._blocked_since = None
            for url, frames in self._links.receive(max(0.0, wake - time.monotonic())):
                call = active.get(frames[0]) if frames else None
                if call is None:
                    continue
                try:
                    outcome, value = call.decide(frames)
                except RaftWireError:
                    continue
                current = url == call.sent_to and not call.need_send
                if outcome == Outcome.DONE:
                    call.result = value
                    del active[call.key]
                    if self._leader is None:
                        self._found(url)  # a positive answer: that peer leads
                elif outcome == Outcome.FAIL:
                    raise value
                elif not current:
                    # an answer to an earlier send of a call that went elsewhere since
                    if (
                        outcome == Outcome.REDIRECT
                        and value is not None
                        and value != self._leader_id
                    ):
                        self._redirect_calls(value, active, deadline)
                        resend = True
                elif outcome == Outcome.PENDING:
                    call.sent_at = time.monotonic()
                elif outcome == Outcome.RETRY:
                    call.need_send = True
                    call.retry_at = time.monotonic() + value
                    resend = True
                else:
                    self._redirect_calls(value, active, deadline)
                    resend = True
            now = time.monotonic()
            if now < check_at:
                continue
            oldest = min((c.sent_at for c in active.values() if not c.need_send), default=None)
            if oldest is None or now - oldest <= ttl:
                check_at = now + ttl if oldest is None else oldest + ttl
                continue
            log.debug("raft.client.no_answer leader=%s pending=%d", self._leader, len(active))
            self._break()
            for call in active.values():
                call.need_send = True
                call.retry_at = now + self.election_grace
            resend = True

    def _redirect_calls(
        self, leader: str | None, active: dict[bytes, _Call], deadline: float
    ) -> None:
        log.debug("raft.client.not_leader hint=%s leader=%s", leader, self._leader)
        now = time.monotonic()
        if leader is None:
            if self._leader is not None:
                self._break()  # scenario 2
                delay = self.election_grace
            else:
                delay = _NO_LEADER_RETRY  # nobody knows a leader yet: ask the next peer
        else:
            self._redirect(leader, deadline)  # scenario 1
            delay = 0.0
        for call in active.values():
            call.need_send = True
            call.retry_at = now + delay

    # -- leader tracking ---------------------------------------------------------------------

    def _redirect(self, leader: str | None, deadline: float) -> None:
        """Follow a NOT_LEADER answer: to the leader it names, or scenario 2."""
        if leader is None:
            self._break(wait=True)
            return
        url = self._peers.get(leader)
        if url is None:
            self._leader = None
            self._discover(deadline)  # who is that? RequestConfig knows the URLs
            return
        self._use_leader(leader, url)

    def _use_leader(self, leader: str, url: str) -> None:
        log.debug("raft.client.leader id=%s url=%s", leader, url)
        self._leader = (leader, url)
        self._links.connect_only({url})

    @property
    def _leader_id(self) -> str | None:
        return None if self._leader is None else self._leader[0]

    def _found(self, url: str) -> None:
        for peer_id, peer_url in self._peers.items():
            if peer_url == url:
                self._use_leader(peer_id, url)
                return

    def _break(self, wait: bool = False) -> None:
        """Scenario 2: connect to every known peer (and, if ``wait``, sit out the grace)."""
        self._leader = None
        self._links.connect_only(set(self._seed_urls) | set(self._peers.values()))
        if wait:
            end = time.monotonic() + self.election_grace
            while (left := end - time.monotonic()) > 0:
                self._links.wait(left)

    def _discover(self, deadline: float) -> None:
        """RequestConfig to the known peers in turn until one names a leader we can reach."""
        if self._leader is not None:
            return
        self._links.connect_only(set(self._seed_urls) | set(self._peers.values()))
        while True:
            rid = self._new_id()
            if not self._links.send_when_ready(
                w.RequestConfig(rid, self.cluster).encode(), deadline
            ):
                raise DafkaTimeout("no Raft peer reachable")
            got = self._links.recv_for(encode_uint32(rid), min(deadline, time.monotonic() + 0.25))
            if got is not None:
                try:
                    answer = w.RequestConfigResponse.decode(got[1])
                except RaftWireError:
                    answer = None
                if answer is not None:
                    if answer.peers:  # a URL libzmq would refuse is never connected to
                        # guard: raft-client-skips-unconnectable-urls
                        good = (p for p in answer.peers if peer_url_problem(p.url) is None)
                        self._peers.update({p.id: p.url for p in good})
                    if answer.is_leader and answer.leader is not None:
                        self._peers.setdefault(answer.leader, got[0])
                    if answer.leader is not None and answer.leader in self._peers:
                        self._use_leader(answer.leader, self._peers[answer.leader])
                        return
                    self._links.connect_only(set(self._seed_urls) | set(self._peers.values()))
            if time.monotonic() > deadline:
                raise DafkaTimeout("no Raft leader found within the timeout")
            self._links.wait(_NO_LEADER_RETRY)
