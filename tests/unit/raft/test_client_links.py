"""ClientLinks alone: the sockets of a RaftClient, against plain ROUTERs (no Raft)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import zmq

from dafka.errors import DafkaTimeout
from dafka.raft.client._links import ClientLinks


@pytest.fixture
def ctx() -> Iterator[zmq.Context[Any]]:
    context: zmq.Context[Any] = zmq.Context()
    yield context
    context.term()


@pytest.fixture
def routers(ctx: zmq.Context[Any]) -> Iterator[list[tuple[str, zmq.Socket[Any]]]]:
    socks = []
    for _ in range(2):
        sock = ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        socks.append((f"tcp://127.0.0.1:{port}", sock))
    yield socks
    for _, sock in socks:
        sock.close(0)


def _recv(sock: zmq.Socket[Any]) -> list[bytes]:
    assert sock.poll(2000), "nothing arrived"
    return sock.recv_multipart()


def test_sends_go_to_the_connected_peers_and_answers_come_back_with_their_url(ctx, routers):
    links = ClientLinks(ctx, None)
    try:
        assert not links.connected and links.send_now([b"k"]) is None
        (url_a, router_a), (url_b, router_b) = routers
        links.connect_only({url_a, url_b})
        assert links.connected
        deadline = time.monotonic() + 2
        sent: dict[str, list[bytes]] = {url_a: [], url_b: []}
        n = 0
        while not all(sent.values()) and time.monotonic() < deadline:  # round robin
            n += 1
            url = links.send_now([str(n).encode()])
            if url is None:
                time.sleep(0.005)  # no peer connected yet
            else:
                sent[url].append(str(n).encode())
        assert all(sent.values())
        links.connect_only({url_a})  # the leader only
        assert links.send_when_ready([b"last"], deadline) == url_a
        frames_a = [_recv(router_a) for _ in range(len(sent[url_a]) + 1)]
        assert [f[1] for f in frames_a] == [*sent[url_a], b"last"]
        envelope = frames_a[-1][0]
        router_a.send_multipart([envelope, b"other", b"x"])
        router_a.send_multipart([envelope, b"key", b"y"])
        url, frames = links.recv_for(b"key", time.monotonic() + 2) or ("", [])
        assert (url, frames) == (url_a, [b"key", b"y"])
        assert links.receive(0) == [(url_a, [b"other", b"x"])]  # put aside, then handed out
        assert links.receive(0) == []
    finally:
        links.close()


def test_a_direct_call_waits_for_its_own_answer_and_times_out_alone(ctx, routers):
    links = ClientLinks(ctx, None)
    (url_a, router_a), (url_b, _router_b) = routers
    try:
        deadline = time.monotonic() + 2

        def answer() -> None:
            frames = _recv(router_a)
            router_a.send_multipart([frames[0], b"not-it"])
            router_a.send_multipart([frames[0], frames[1], b"ok"])

        thread = threading.Thread(target=answer)
        thread.start()
        assert links.direct_call(url_a, [b"rid", b"q"], deadline) == [b"rid", b"ok"]
        thread.join()
        with pytest.raises(DafkaTimeout):
            links.direct_call(url_b, [b"rid2"], time.monotonic() + 0.2)
    finally:
        links.close()
