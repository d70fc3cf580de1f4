"""The data sockets' frame-by-frame fast paths (issue 13: one message per record under
rfc46): :func:`dafka.io.multipart.message_sender` puts the same frames on the wire as
``send_multipart``, and :func:`dafka.io.bounds.recv_message` reads each message whole,
however many frames it has up to the maximum, from frames' own ``more``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import zmq

from dafka.errors import TooManyFrames
from dafka.io.bounds import recv_message
from dafka.io.multipart import message_sender

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
