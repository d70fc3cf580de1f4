"""The data sockets' frame-by-frame fast paths (issue 13: one message per record under
rfc46): :func:`dafka.io.multipart.message_sender` puts the same frames on the wire as
``send_multipart``, and :func:`dafka.io.bounds.recv_message` reads each message whole,
however many frames it has up to the maximum, from frames' own ``more``;
:class:`dafka.io.bounds.FrameSources` names their hosts only when asked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import zmq

from dafka.core.admission import SourceKeys
from dafka.errors import TooManyFrames
from dafka.io.bounds import FrameSources, recv_message
from dafka.io.multipart import message_sender, records_sender

MESSAGES = [[b"one"], [b"M\x00\x01head", b"x" * 100], [b"a", b"", b"c" * 70_000], [b""]]


@pytest.fixture
def pair() -> Iterator[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]]:
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    push = ctx.socket(zmq.PUSH)
    pull.bind("inproc://data-frames")
    push.connect("inproc://data-frames")
    yield push, pull
    push.close(0)
    pull.close(0)
    ctx.term()


def _recv(pull: zmq.Socket[bytes]) -> list[bytes]:
    assert pull.poll(5000), "nothing arrived"
    return pull.recv_multipart()


def test_message_sender_puts_the_frames_of_send_multipart_on_the_wire(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    send = message_sender(push)
    for frames in MESSAGES:
        push.send_multipart(frames)
        send(frames)
        assert _recv(pull) == frames
        assert _recv(pull) == frames  # one message each: the next one starts afresh
    send((b"a", b"b"))  # any sequence of frames
    assert _recv(pull) == [b"a", b"b"]


def test_records_sender_sends_each_head_and_content_as_one_message(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    send = records_sender(push)
    heads, contents = [b"M\x00\x01a", b"M\x00\x01b", b""], [b"x" * 100, b"", b"z" * 70_000]
    send(heads, contents)
    for head, content in zip(heads, contents, strict=True):
        assert _recv(pull) == [head, content]
    send([], [])
    with pytest.raises(ValueError):  # a head without its content is never sent half
        send([b"h", b"i"], [b"c"])
    assert _recv(pull) == [b"h", b"c"]
    assert not pull.poll(50)


def test_recv_message_reads_each_message_whole(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    for frames in MESSAGES:
        push.send_multipart(frames)
    assert pull.poll(5000)
    for frames in MESSAGES:
        first, got = recv_message(pull, max_frames=3)
        assert got == frames and first.bytes == frames[0]
    with pytest.raises(zmq.Again):
        recv_message(pull)


def test_recv_message_drops_a_longer_message_and_reads_the_next(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair
    push.send_multipart([b"a", b"b", b"c", b"d"])
    push.send_multipart([b"e"])
    push.send_multipart([b"f", b"g"])
    assert pull.poll(5000)
    with pytest.raises(TooManyFrames) as caught:
        recv_message(pull)
    assert (caught.value.frames, caught.value.limit) == (4, 2)
    assert recv_message(pull)[1] == [b"e"]
    assert recv_message(pull)[1] == [b"f", b"g"]


class CountingKeys(SourceKeys):
    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def key(self, address: str) -> str:
        self.asked += 1
        return super().key(address)


def test_frame_sources_name_each_frames_host_only_when_asked() -> None:
    ctx = zmq.Context()
    pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    try:
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        push.connect(f"tcp://127.0.0.1:{port}")
        for i in range(3):
            push.send_multipart([b"%d" % i, b"v"])
        assert pull.poll(5000)
        firsts = []
        for _ in range(3):
            assert pull.poll(5000)
            firsts.append(recv_message(pull)[0])
        keys = CountingKeys()
        sources = FrameSources(keys, firsts)
        assert len(sources) == 3 and keys.asked == 0
        assert sources[1] == "127.0.0.1" and keys.asked == 1
        assert sources[-1] == "127.0.0.1" and sources[0:2] == ["127.0.0.1"] * 2
        assert list(sources) == ["127.0.0.1"] * 3
        with pytest.raises(IndexError):
            sources[3]
    finally:
        push.close(0)
        pull.close(0)
        ctx.term()


def test_frame_sources_of_a_transport_without_addresses_are_unknown(
    pair: tuple[zmq.Socket[bytes], zmq.Socket[bytes]],
) -> None:
    push, pull = pair  # inproc: no Peer-Address
    push.send(b"x")
    assert pull.poll(5000)
    assert FrameSources(SourceKeys(), [recv_message(pull)[0]])[0] == ""
