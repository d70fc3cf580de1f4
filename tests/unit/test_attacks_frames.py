"""Messages of more frames than their protocol has (issue 10: libzmq bounds frames, not
messages): :func:`dafka.io.multipart.recv_bounded` keeps at most the protocol's frames,
drops the rest unread and raises :class:`~dafka.errors.TooManyFrames`; the next message
is read whole. The maxima come from the wire specs: every genuine message fits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from dafka.errors import TooManyFrames, WireError
from dafka.io.bounds import recv_message
from dafka.io.multipart import (
    BEACON_FRAMES,
    DATA_FRAMES,
    QUERY_REPLY_FRAMES,
    QUERY_REQUEST_FRAMES,
    TOWER_BEACON_FRAMES,
    recv_bounded,
)
from dafka.query import protocol as qp
from dafka.raft.codec import DEFAULT_MAX_ENTRY_BYTES, Entry, EntryType, ReqIdGenerator
from dafka.raft.codec import _wire as w
from dafka.raft.peer import (
    BROADCAST_FRAMES,
    CLIENT_ANSWER_FRAMES,
    PeerOptions,
    RaftPeer,
)
from dafka.raft.peer._guard import (
    MAX_ENTRIES_PER_MESSAGE,
    PEER_RESPONSE_FRAMES,
    router_frame_limit,
    router_max_frames,
)
from dafka.wire import beacon as wbeacon
from dafka.wire import signed
from dafka.wire.interest import InterestBeacon
from tests.signing import PRODUCER
from tests.unit.raft.solo import free_tcp_url, settle, solo_leader

FLOOD = 10_000


@pytest.fixture
def pair() -> Iterator[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]]:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    push = ctx.socket(zmq.PUSH)
    pull.bind("inproc://frames")
    push.connect("inproc://frames")
    yield push, pull
    push.close(0)
    pull.close(0)
    ctx.term()


def _wait(sock: zmq.Socket[bytes]) -> None:
    assert sock.poll(5000), "nothing arrived"


@pytest.mark.parametrize("copy", [True, False])
def test_a_message_of_10000_frames_is_dropped_and_the_next_one_read(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]], copy: bool
) -> None:
    push, pull = pair
    push.send_multipart([b"x" * 100] * FLOOD)
    push.send_multipart([b"probe", b"2"])
    _wait(pull)
    with pytest.raises(TooManyFrames) as caught:
        recv_bounded(pull, QUERY_REQUEST_FRAMES, copy=copy)  # type: ignore[call-overload]
    assert (caught.value.frames, caught.value.limit) == (FLOOD, QUERY_REQUEST_FRAMES)
    assert isinstance(caught.value, WireError)  # counted as malformed by every caller
    got = recv_bounded(pull, QUERY_REQUEST_FRAMES, copy=copy)  # type: ignore[call-overload]
    assert [bytes(f) for f in got] == [b"probe", b"2"]


def test_a_message_of_exactly_the_limit_is_kept_whole(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    push.send_multipart([b"a", b"b", b"c"])
    push.send_multipart([b"a", b"b", b"c", b"d"])
    _wait(pull)
    assert recv_bounded(pull, 3) == [b"a", b"b", b"c"]
    with pytest.raises(TooManyFrames):
        recv_bounded(pull, 3)
    with pytest.raises(zmq.Again):
        recv_bounded(pull, 3)


def test_the_data_sub_reads_at_most_two_frames(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    batch = signed.encode_batch(PRODUCER, "t", 0, [(None, b"v")], 1)
    push.send_multipart([b"Mt\x00\x02", batch, *[b""] * FLOOD])
    push.send_multipart([b"Mt\x00\x02", batch])
    _wait(pull)
    with pytest.raises(TooManyFrames):
        recv_message(pull)
    first, frames = recv_message(pull)
    assert frames == [b"Mt\x00\x02", batch] and first.bytes == b"Mt\x00\x02"


def test_every_genuine_message_fits_its_protocols_maximum() -> None:
    assert DATA_FRAMES == 2 and QUERY_REPLY_FRAMES == 2
    key = PRODUCER.public_key
    node = wbeacon.NodeBeacon(PRODUCER.node_id, "127.0.0.1", 5000, key).encode()
    tower = wbeacon.TowerBeacon(PRODUCER.node_id, "tcp://127.0.0.1:5000", key).encode()
    service = wbeacon.ServiceBeacon(PRODUCER.node_id, "tcp://127.0.0.1:5001", "store").encode()
    interest = InterestBeacon(wbeacon.decode_node_beacon(node), ("t",)).encode()
    assert len(interest) == BEACON_FRAMES and len(node) < BEACON_FRAMES
    assert len(service) <= BEACON_FRAMES
    assert len(tower) == TOWER_BEACON_FRAMES and len(service) <= TOWER_BEACON_FRAMES
    request = qp.encode_request(qp.HeadsRequest(1))
    assert 1 + len(request) < QUERY_REQUEST_FRAMES  # routing id, request
    entries = tuple(
        Entry(i, 1, EntryType.STATE, bytes(12), b"d") for i in range(1, MAX_ENTRIES_PER_MESSAGE + 1)
    )
    broadcast = w.StateBroadcast(b"c", 1, MAX_ENTRIES_PER_MESSAGE, entries).encode()
    assert len(broadcast) == BROADCAST_FRAMES
    append = w.AppendEntries(1, b"c", "leader", 1, 0, 0, 0, entries).encode()
    assert 2 + len(append) == router_max_frames(256)  # identity and REQ delimiter
    assert router_max_frames(10_000) == 2 + 8 + 10_000
    answer = w.RequestEntriesResponse(
        1, w.EntriesStatus.LAST, last_index=MAX_ENTRIES_PER_MESSAGE, entries=entries
    ).encode()
    assert len(answer) <= CLIENT_ANSWER_FRAMES
    response = w.AppendEntriesResponse(1, 1, False, 3).encode()
    assert len(response) <= PEER_RESPONSE_FRAMES


def test_the_raft_router_queues_are_bounded_in_bytes(tmp_path: Path) -> None:
    """The ROUTER read up to 100,000 messages per connection, each way, with frames of up to
    2 MiB + 84 KiB: 206 GiB a connection. Now its RCVHWM is ``queue_bytes`` (256 MiB) over
    its ZMQ_MAXMSGSIZE, and it queues 4,096 replies, not 100,000."""
    url = free_tcp_url()
    peer = RaftPeer("t1", url, [], tmp_path / "t1", "dafka")
    peer._setup()
    try:
        router = peer.router
        frame = router.getsockopt(zmq.MAXMSGSIZE)
        assert frame == router_frame_limit(DEFAULT_MAX_ENTRY_BYTES, 1 << 16)
        assert router.getsockopt(zmq.RCVHWM) * frame <= 256 << 20
        assert router.getsockopt(zmq.RCVHWM) >= 100  # a hundred frames of the largest size
        assert router.getsockopt(zmq.SNDHWM) <= 4096
    finally:
        peer._teardown()


def test_a_client_holds_at_most_8_entry_streams_open(tmp_path: Path) -> None:
    """Each RequestEntries stream keeps 5 answers of up to 256 KiB and an entry ahead of the
    client's follow-ups: a client that opened 8,000 streams (the spec's high-water mark, for
    all clients) and never read had 40,000 answers queued for it, about 50 GiB."""
    opts = PeerOptions(request_entries_batch=1, request_entries_pipeline=1)
    peer = solo_leader("t1", tmp_path / "t1", "dafka", options=opts)
    try:
        gen = ReqIdGenerator()
        for k in range(3):  # entries enough that no stream ends at its first answer
            peer._on_router_frames([b"client", gen(), b"=", b"dafka", b"x%d" % k])
            peer._flush_updates()
            settle(peer)
        assert peer.core.applied >= 3
        for rid in range(1, 101):
            for envelope in (b"greedy", b"other"):
                peer._on_router_frames([envelope, *w.RequestEntries(rid, b"dafka", 0).encode()])
        assert peer.clients.streams_of((b"greedy",)) == 8
        assert peer.clients.streams_of((b"other",)) == 8
        assert peer.clients.streams == 16
    finally:
        peer._teardown()


def test_the_raft_router_drops_a_message_of_too_many_frames_and_answers_the_next(
    tmp_path: Path,
) -> None:
    """A peer's ROUTER: an AppendEntries of 5,000 entries (over the 4,096 any leader sends)
    is dropped unread, counted malformed: it moves neither the term nor the log (before, it
    was decoded whole and stepped into the core). The RequestLogInfo behind it is answered."""
    url = free_tcp_url()
    peer = RaftPeer("t1", url, [], tmp_path / "t1", "dafka")
    peer._setup()
    ctx = zmq.Context()
    client = ctx.socket(zmq.DEALER)
    client.setsockopt(zmq.LINGER, 0)
    try:
        term, last = peer.core.term, peer.core.last_index
        entries = tuple(
            Entry(i, term + 1, EntryType.STATE, bytes(12), b"d") for i in range(1, 5001)
        )
        flood = w.AppendEntries(1, b"dafka", "t1", term + 1, 0, 0, 0, entries).encode()
        client.connect(url)
        client.send_multipart(flood)
        client.send_multipart(w.RequestLogInfo(7, b"dafka").encode())
        answer: list[bytes] = []
        for _ in range(200):  # bounded: 200 turns of at most 50 ms
            if peer.router.poll(50):
                peer._drain_router()
                peer._process_ready()
            if client.poll(0):
                answer = client.recv_multipart()
                if answer[0] == b"\x07":
                    break
        assert answer and answer[0] == b"\x07", answer
        assert peer._bad.counts.get("malformed") == 1
        assert (peer.core.term, peer.core.last_index) == (term, last)
    finally:
        client.close(0)
        ctx.term()
        peer._teardown()


class _OldPyzmq:
    """A socket as pyzmq before 26 has it: no ``recv_into``."""

    def __init__(self, sock: zmq.Socket[bytes]) -> None:
        self.recv = sock.recv
        self.getsockopt = sock.getsockopt


def test_the_rest_is_drained_without_recv_into_too(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    push.send_multipart([b"x"] * FLOOD)
    push.send_multipart([b"next"])
    _wait(pull)
    with pytest.raises(TooManyFrames) as caught:
        recv_bounded(_OldPyzmq(pull), 2)  # type: ignore[arg-type]
    assert caught.value.frames == FLOOD
    assert recv_bounded(pull, 2) == [b"next"]
