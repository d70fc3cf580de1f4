"""The data sockets' frame-by-frame fast path (issue 13: one message per record under
rfc46): :func:`dafka.io.multipart.message_sender` puts the same frames on the wire as
``send_multipart``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import zmq

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
