"""RaftClient against scripted fake peers (ROUTER sockets on 127.0.0.1), and the peer's
client-facing behaviour (RequestEntries pipelining, RI/RL dispatch, debouncing) against
a one-peer in-process cluster.

Fake peers answer from a handler ``(body frames) -> list of answer bodies``; the client
runs with a short ``response_ttl`` / ``election_grace`` to keep the tests quick.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from dafka.errors import ConfigError, DafkaTimeout, RaftError
from dafka.raft.client import RaftClient
from dafka.raft.codec import (
    Entry,
    Peer,
    decode_json,
    decode_uint,
    encode_json,
    encode_uint,
)
from dafka.raft.codec import _wire as w
from dafka.raft.core import SnapshotChunk
from dafka.raft.peer import (
    FileStorage,
    KvStateMachine,
    PeerOptions,
    RaftPeer,
    put_command,
)
from dafka.raft.peer._guard import PeerGuard
from dafka.raft.peer._statemachine import decode_value, dump_query, get_query

CLUSTER = b"unit"
Handler = Callable[[list[bytes]], list[list[bytes]]]


class FakePeer:
    """A ROUTER on an ephemeral 127.0.0.1 port answering with ``handler``."""

    def __init__(self, ctx: zmq.Context[Any], handler: Handler | None = None) -> None:
        self.sock = ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.url = f"tcp://127.0.0.1:{port}"
        self.handler: Handler = handler or (lambda frames: [])
        self.received: list[list[bytes]] = []
        self.later: list[tuple[float, bytes, list[bytes]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.sock.poll(5):
                frames = self.sock.recv_multipart()
                ident, body = frames[0], frames[1:]
                self.ident = ident
                self.received.append(body)
                for answer in self.handler(body):
                    self.sock.send_multipart([ident, *answer])
            now = time.monotonic()
            for item in [x for x in self.later if x[0] <= now]:
                self.later.remove(item)
                self.sock.send_multipart([item[1], *item[2]])

    def send_later(self, delay: float, answer: list[bytes]) -> None:
        self.later.append((time.monotonic() + delay, self.ident, answer))

    def updates(self) -> list[bytes]:
        return [body[0] for body in self.received if body[1] == b"="]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close(0)


@pytest.fixture
def ctx() -> Iterator[zmq.Context[Any]]:
    context = zmq.Context()
    yield context
    context.term()


@pytest.fixture
def fakes(ctx: zmq.Context[Any]) -> Iterator[Callable[[], FakePeer]]:
    made: list[FakePeer] = []

    def make() -> FakePeer:
        peer = FakePeer(ctx)
        made.append(peer)
        return peer

    yield make
    for peer in made:
        peer.close()


def config_answer(leader: str | None, peers: dict[str, FakePeer | str], is_leader: bool = False):
    plist = tuple(Peer(k, v if isinstance(v, str) else v.url) for k, v in peers.items())

    def answer(body: list[bytes]) -> list[bytes]:
        rid = decode_uint(body[0])
        return w.RequestConfigResponse(rid, is_leader, leader, plist).encode()

    return answer


def committed(body: list[bytes], index: int = 7) -> list[bytes]:
    return w.RequestUpdateResponse(body[0], w.UpdateStatus.COMMITTED, index=index).encode()


def not_leader(body: list[bytes], leader: str | None) -> list[bytes]:
    return w.RequestUpdateResponse(body[0], w.UpdateStatus.NOT_LEADER, leader=leader).encode()


def client_for(ctx: zmq.Context[Any], *peers: FakePeer | str, **kw: Any) -> RaftClient:
    kw.setdefault("timeout", 5)
    kw.setdefault("response_ttl", 0.15)
    kw.setdefault("election_grace", 0.05)
    urls = [p if isinstance(p, str) else p.url for p in peers]
    return RaftClient(urls, CLUSTER, context=ctx, **kw)


def cluster_of(a: FakePeer, b: FakePeer, leader: str, **extra: Any) -> Callable[..., Any]:
    """Handlers answering RequestConfig the same way on both fakes."""
    peers = {"a": a, "b": b, **extra}

    def install(peer: FakePeer, on_update: Callable[[list[bytes]], list[list[bytes]]]) -> None:
        name = "a" if peer is a else "b"
        config = config_answer(leader, peers, is_leader=name == leader)

        def handler(body: list[bytes]) -> list[list[bytes]]:
            if body[1] == b"^":
                return [config(body)]
            return on_update(body)

        peer.handler = handler

    return install


# -- leader discovery and the broken-leader recovery ------------------------------------------


def test_discovery_asks_until_a_leader_is_named_then_talks_to_it_only(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    asked = {"n": 0}
    config_b = config_answer("b", {"a": a, "b": b}, is_leader=True)

    def handle_a(body: list[bytes]) -> list[list[bytes]]:
        if body[1] == b"^":
            asked["n"] += 1  # an election is going on: no leader the first two times
            leader = "b" if asked["n"] > 2 else None
            return [config_answer(leader, {"a": a, "b": b})(body)]
        return [not_leader(body, "b")]

    a.handler = handle_a
    b.handler = lambda body: [config_b(body)] if body[1] == b"^" else [committed(body, 3)]
    with client_for(ctx, a, b) as client:
        state = client.request_config()
        assert (state.leader, state.leader_url) == ("b", b.url)
        assert state.peers == {"a": a.url, "b": b.url}
        before = len(a.received)
        assert [client.update(b"x") for _ in range(5)] == [3] * 5
        assert len(a.received) == before and len(b.updates()) == 5


def test_scenario_1_a_named_leader_gets_the_same_request_again(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")
    install(b, lambda body: [not_leader(body, "a")])  # b lost leadership to a
    install(a, lambda body: [committed(body, 11)])
    with client_for(ctx, b) as client:  # seeded with b only: a's URL comes from RequestConfig
        assert client.update(b"payload") == 11
        assert client.leader == ("a", a.url)
    assert b.updates() == a.updates() and len(a.updates()) == 1


def test_scenario_2_a_silent_leader_then_each_peer_in_turn(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")
    install(b, lambda body: [])  # b went silent
    install(a, lambda body: [committed(body, 5)])  # a leads now
    with client_for(ctx, a, b) as client:
        client.request_config()
        start = time.monotonic()
        assert client.update(b"x") == 5
        elapsed = time.monotonic() - start
        assert client.leader == ("a", a.url)  # a positive answer names the leader
    assert elapsed >= 0.15 + 0.05  # response TTL, then the election grace
    assert a.updates() and all(r == a.updates()[0] for r in b.updates() + a.updates())


def test_scenario_2_a_negative_answer_without_leader(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")
    calls = {"a": 0}

    def on_a(body: list[bytes]) -> list[list[bytes]]:
        calls["a"] += 1
        return [not_leader(body, None)] if calls["a"] < 3 else [committed(body, 9)]

    install(b, lambda body: [not_leader(body, None)])  # b stepped down, no leader known
    install(a, on_a)
    with client_for(ctx, a, b) as client:
        client.request_config()
        assert client.update(b"x") == 9


def test_a_hint_naming_an_unreachable_peer_is_a_broken_leader_too(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    dead = "tcp://127.0.0.1:9"  # nothing listens there
    install = cluster_of(a, b, leader="b", dead=dead)
    install(b, lambda body: [not_leader(body, "dead")])  # a lagging follower's stale hint
    install(a, lambda body: [committed(body, 4)])
    with client_for(ctx, a, b, timeout=20) as client:
        client.request_config()
        start = time.monotonic()
        assert client.update(b"x") == 4
        # a liveness bound, not a speed figure: the dead hint did not cost the update
        # its whole time budget (it is given up after response_ttl, 0.15 s)
        assert time.monotonic() - start < 10


def test_accepted_answers_reset_the_response_clock(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")

    def on_b(body: list[bytes]) -> list[list[bytes]]:
        pending = w.RequestUpdateResponse(body[0], w.UpdateStatus.PENDING).encode()
        for k in range(1, 8):
            b.send_later(0.06 * k, pending)
        b.send_later(0.5, committed(body, 21))
        return [pending]

    install(b, on_b)
    install(a, lambda body: [committed(body, 99)])
    with client_for(ctx, a, b) as client:
        client.request_config()
        assert client.update(b"x") == 21  # 0.5 s > TTL, but keep-alives came
    assert len(b.updates()) == 1 and not a.updates()


def test_an_expired_update_fails_for_good(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")
    install(b, lambda body: [w.RequestUpdateResponse(body[0], w.UpdateStatus.EXPIRED).encode()])
    with client_for(ctx, a, b) as client, pytest.raises(RaftError, match="expired"):
        client.update(b"x")


def test_no_peer_answers_is_a_timeout(ctx) -> None:
    with client_for(ctx, "tcp://127.0.0.1:9", timeout=0.5) as client:
        with pytest.raises(DafkaTimeout):
            client.update(b"x")


def test_config_update_retries_when_busy_and_reports_refusals(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")
    seen: list[bytes] = []

    def on_b(body: list[bytes]) -> list[list[bytes]]:
        seen.append(body[0])
        status = w.ConfigUpdateStatus
        if len(seen) == 1:
            return [w.ConfigUpdateResponse(body[0], status.BUSY).encode()]
        b.send_later(0.05, w.ConfigUpdateResponse(body[0], status.ACCEPTED, index=12).encode())
        return [w.ConfigUpdateResponse(body[0], status.ACCEPTED).encode()]

    install(b, on_b)
    peers = [Peer("a", a.url), Peer("b", b.url)]
    with client_for(ctx, a, b) as client:
        assert client.config_update(peers) == 12
        assert len(seen) == 2 and seen[0] == seen[1]  # the same reqid again
        install(
            b,
            lambda body: [
                w.ConfigUpdateResponse(
                    body[0],
                    w.ConfigUpdateStatus.ARGUMENT_ERROR,
                    error_name="TypeError",
                    error_message="bad peers",
                ).encode()
            ],
        )
        with pytest.raises(ConfigError, match="bad peers"):
            client.config_update(peers)


def test_update_many_keeps_the_window_full_and_returns_indexes_in_order(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")
    outstanding: list[list[bytes]] = []
    peak = {"n": 0}

    def on_b(body: list[bytes]) -> list[list[bytes]]:
        outstanding.append(body)
        peak["n"] = max(peak["n"], len(outstanding))
        if len(outstanding) < 8:
            return []
        answers = [committed(req, 100 + int(req[3])) for req in reversed(outstanding)]
        outstanding.clear()
        return answers

    install(b, on_b)
    with client_for(ctx, a, b) as client:
        datas = [str(k).encode() for k in range(40)]
        assert client.update_many(datas, window=8) == [100 + k for k in range(40)]
    assert peak["n"] == 8


def test_read_follows_a_not_leader_dispatch_answer(ctx, fakes) -> None:
    a, b = fakes(), fakes()
    install = cluster_of(a, b, leader="b")
    install(b, lambda body: [[body[0], encode_uint(0), encode_json("a")]])
    install(a, lambda body: [[body[0], encode_uint(1), encode_json(5), b"answer", *body[3:]]])
    with client_for(ctx, a, b) as client:
        client.request_config()
        assert client.read([b"q1", b"q2"]) == [b"answer", b"q1", b"q2"]
        assert [r[1] for r in a.received if r[1] == b"RI"]


# -- a real one-peer cluster in-process --------------------------------------------------------


@pytest.fixture
def solo(tmp_path: Path, ctx: zmq.Context[Any]) -> Iterator[RaftPeer]:
    with zmq.Context() as probe:
        sock = probe.socket(zmq.ROUTER)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        sock.close(0)
    url = f"tcp://127.0.0.1:{port}"
    options = PeerOptions(
        tick=0.01, snapshot_every=30, keep_entries=0, request_entries_batch=5, fsync=False
    )
    peer = RaftPeer("solo", url, [], tmp_path / "solo", CLUSTER, KvStateMachine(), options=options)
    peer.start()
    yield peer
    peer.stop()


def test_one_peer_cluster_updates_reads_and_log_info(solo: RaftPeer, ctx) -> None:
    with client_for(ctx, solo.url, response_ttl=0.5) as client:
        indexes = client.update_many([put_command(f"k{i}", i) for i in range(20)])
        assert decode_value(client.read(get_query("k19"))) == 19
        applied, frames = client.read_local(solo.url, dump_query())
        assert applied >= indexes[-1] and decode_value(frames)["k0"] == 0
        info = client.log_info()
        assert info.is_leader and info.commit_index >= indexes[-1] == info.last_applied
        assert client.peer_config(solo.url).peers == (Peer("solo", solo.url),)
        assert client.broadcast_url() is None
        with pytest.raises(RaftError, match="query failed"):
            client.read([b"nonsense"])


def test_stream_entries_pipeline_stop_and_snapshot(solo: RaftPeer, ctx) -> None:
    with client_for(ctx, solo.url, response_ttl=0.5) as client:
        client.update_many([put_command(f"k{i}", i) for i in range(20)])
        stream = client.stream_entries(0)
        first = [next(stream) for _ in range(3)]
        assert [e.index for e in first] == [1, 2, 3]
        stream.close()  # sends "stop"
        assert [e.index for e in client.stream_entries(10, count=7)] == list(range(11, 18))
        client.update_many([put_command(f"k{i}", i) for i in range(20, 40)])
        # the snapshot is written off the loop thread, then installed
        assert wait_for(lambda: solo.info().snapshot_index >= 30)
        # the log was compacted: the snapshot comes first, then what follows it
        items = list(client.stream_entries(0))
        chunks = [i for i in items if isinstance(i, SnapshotChunk)]
        entries = [i for i in items if isinstance(i, Entry)]
        assert chunks and chunks[-1].last
        sm = KvStateMachine()
        sm.restore(b"".join(c.data for c in chunks))
        for e in entries:
            assert e.index > chunks[-1].index
            sm.apply(e)
        assert sm.kv == {f"k{i}": i for i in range(40)}
    assert wait_for(lambda: solo.clients.streams == 0)


def test_a_count_the_snapshot_covers_ends_the_stream_after_it(solo: RaftPeer, ctx) -> None:
    # the follow-up after the snapshot asked for a negative count: RaftWireError
    with client_for(ctx, solo.url, response_ttl=0.5) as client:
        client.update_many([put_command(f"k{i}", i) for i in range(40)])
        assert wait_for(lambda: solo.info().snapshot_index >= 30)
        items = list(client.stream_entries(0, count=5))
        assert items and all(isinstance(i, SnapshotChunk) for i in items) and items[-1].last
    assert wait_for(lambda: solo.clients.streams == 0)


def wait_for(pred: Callable[[], object], timeout: float = 3) -> object:
    deadline = time.monotonic() + timeout
    while not (value := pred()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return value


def test_request_entries_sends_five_ahead_of_the_follow_ups(solo: RaftPeer, ctx) -> None:
    with client_for(ctx, solo.url, response_ttl=0.5) as client:
        client.update_many([put_command(f"k{i}", i) for i in range(25)])
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(solo.url)
    try:
        sock.send_multipart(w.RequestEntries(77, CLUSTER, 0).encode())
        got = []
        while sock.poll(300):
            got.append(w.RequestEntriesResponse.decode(sock.recv_multipart()))
        assert len(got) == 5 and all(r.status is w.EntriesStatus.MORE for r in got)
        assert [r.last_index for r in got] == [5, 10, 15, 20, 25]
        sock.send_multipart(w.RequestEntries(77, CLUSTER, 5).encode())  # one follow-up
        assert sock.poll(300)
        assert w.RequestEntriesResponse.decode(sock.recv_multipart()).last_index > 25
        assert not sock.poll(200)
        sock.send_multipart(w.RequestEntries(77, CLUSTER, 10, 0).encode())  # stop
        assert wait_for(lambda: solo.clients.streams == 0)
    finally:
        sock.close(0)


def test_peer_rpcs_are_debounced_and_other_clusters_ignored(solo: RaftPeer, ctx) -> None:
    # as under --raft-insecure-null, so that a stranger's vote reaches the debounce (a
    # default NULL peer drops every peer RPC: tests/unit/raft/test_peer_guard.py)
    solo.guard = PeerGuard("solo", None, insecure_null=True)
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(solo.url)
    try:
        wait_for(lambda: solo.info().role == "leader")
        vote = w.RequestVote(7, CLUSTER, "stranger", 1, 0, 0).encode()
        sock.send_multipart(vote)
        sock.send_multipart(vote)  # the same message id again
        answers = []
        while sock.poll(300):
            answers.append(sock.recv_multipart())
        assert len(answers) in (1, 2) and all(a == answers[0] for a in answers)
        assert decode_uint(answers[0][0]) == 7
        assert not w.RequestVoteResponse.decode(answers[0]).granted
        sock.send_multipart(w.RequestConfig(1, b"other").encode())
        assert not sock.poll(200)
        sock.send_multipart([encode_uint(5), b"XX", CLUSTER])
        assert sock.poll(1000)
        reply = sock.recv_multipart()
        assert decode_uint(reply[1]) == 2 and "unknown" in decode_json(reply[2])
    finally:
        sock.close(0)


def test_the_loop_keeps_committing_while_a_snapshot_is_written(
    tmp_path: Path, ctx: zmq.Context[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot file is written on another thread: updates commit meanwhile."""
    release, writing = threading.Event(), threading.Event()
    stage = FileStorage.stage_snapshot

    def slow_stage(self: FileStorage, meta: Any, data: bytes) -> Path:
        writing.set()
        assert release.wait(10)
        return stage(self, meta, data)

    monkeypatch.setattr(FileStorage, "stage_snapshot", slow_stage)
    with zmq.Context() as probe:
        sock = probe.socket(zmq.ROUTER)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        sock.close(0)
    options = PeerOptions(tick=0.01, snapshot_every=10, keep_entries=0, fsync=False)
    url = f"tcp://127.0.0.1:{port}"
    peer = RaftPeer("solo", url, [], tmp_path / "solo", CLUSTER, KvStateMachine(), options=options)
    peer.start()
    try:
        with client_for(ctx, url, response_ttl=0.5) as client:
            client.update_many([put_command(f"k{i}", i) for i in range(12)])
            assert writing.wait(5)
            indexes = client.update_many([put_command(f"k{i}", i) for i in range(12, 30)])
            assert peer.info().snapshot_index == 0  # still being written
            release.set()
            assert wait_for(lambda: peer.info().snapshot_index >= 10)
            assert decode_value(client.read(get_query("k29"))) == 29
            assert indexes[-1] > peer.info().snapshot_index
    finally:
        release.set()
        peer.stop()
