"""Read one multipart message of at most so many frames (libzmq bounds frames, not messages).

``ZMQ_MAXMSGSIZE`` bounds each frame of a message, not their number: a peer may send one
message of 10,000 frames of the largest size, or millions of empty ones (a frame costs it
2 bytes on the wire and libzmq about 64 bytes of memory). ``recv_multipart`` would turn
each into a Python object before any decoder could look at the count. :func:`recv_bounded`
reads a message frame by frame (``RCVMORE``), keeps at most ``max_frames`` of them and
reads the rest into a one-byte scratch buffer (no copy of the frame, no Python object),
then raises :class:`~dafka.errors.TooManyFrames`, a :class:`~dafka.errors.WireError`,
which every caller already counts as malformed input before reading the next message.

What this cannot bound is libzmq's own queue: a message is queued whole (every frame)
before the first frame can be read, and a message still arriving is held whatever its
length (``docs/security.md``, "What is still not bounded").

Each protocol's maximum comes from its wire spec (``docs/wire.md``): the constants below,
and :func:`dafka.raft.peer._guard.router_max_frames` for the Raft ROUTER.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import zmq

from ..errors import TooManyFrames

__all__ = [
    "BEACON_FRAMES",
    "DATA_FRAMES",
    "QUERY_REPLY_FRAMES",
    "QUERY_REQUEST_FRAMES",
    "TOWER_BEACON_FRAMES",
    "drain_rest",
    "message_sender",
    "records_sender",
    "recv_bounded",
]

DATA_FRAMES = 2
"""A data message (both profiles): frame 0, and the content of a (DIRECT-)RECORD."""
BEACON_FRAMES = 6
"""What a tower's XSUB reads: an interest beacon (6), a node beacon with its key (5), a
service beacon (4)."""
TOWER_BEACON_FRAMES = 4
"""What a node reads from a tower's XPUB: a tower beacon with a key (4), a service
beacon (4), the welcome (1)."""
QUERY_REQUEST_FRAMES = 3
"""What a store's query ROUTER reads: the routing id and the one-frame request (a second
body frame is read so that it is refused as a bad request, not dropped unanswered)."""
QUERY_REPLY_FRAMES = 2
"""A query reply: the header, and a READ's data."""


_SNDMORE = int(zmq.SNDMORE)
_NOBLOCK = int(zmq.NOBLOCK)


def _compiled_send(sock: zmq.Socket[Any]) -> Callable[[bytes, int, bool], object]:
    """The compiled socket's ``send(data, flags, copy)``, which ``zmq.Socket.send`` ends in."""
    return super(zmq.Socket, sock).send  # type: ignore[return-value]  # copy is a bool here


def message_sender(
    sock: zmq.Socket[Any], *, copy: bool = True
) -> Callable[[Sequence[bytes]], None]:
    """``sock.send_multipart`` for a message of bytes frames, at a third of its cost.

    A node sends one message per record under rfc46, and ``send_multipart`` spent more
    than the rest of a record's publishing: it checks each frame's type, and ORs
    ``zmq.SNDMORE`` into the flags (an :class:`enum.IntFlag`, so Python code) before
    the socket's Python ``send``, which only handles DRAFT options. This sends each
    frame with int flags through the compiled socket's ``send``, which
    ``zmq.Socket.send`` ends in; the frames on the wire are the same. ``copy=False``:
    frames over the socket's ``copy_threshold`` are sent without a copy (they must not
    change afterwards: bytes do not).
    """
    send = _compiled_send(sock)

    def send_message(frames: Sequence[bytes]) -> None:
        if len(frames) == 2:
            send(frames[0], _SNDMORE, copy)
            send(frames[1], 0, copy)
            return
        last = len(frames) - 1
        for i in range(last):
            send(frames[i], _SNDMORE, copy)
        send(frames[last], 0, copy)

    return send_message


def records_sender(sock: zmq.Socket[Any]) -> Callable[[Sequence[bytes], Sequence[bytes]], None]:
    """:func:`message_sender` for a run of two-frame messages, ``heads[i]`` then
    ``contents[i]`` (rfc46 RECORDs, the one profile that publishes records: a frame 0
    each, and the value as it is, small and copied): no list of frames is built per
    record."""
    send = _compiled_send(sock)

    def send_records(heads: Sequence[bytes], contents: Sequence[bytes]) -> None:
        for head, content in zip(heads, contents, strict=True):
            send(head, _SNDMORE, True)
            send(content, 0, True)

    return send_records


def drain_rest(sock: zmq.Socket[Any]) -> int:
    """Read and drop the frames left of the message being read; how many there were."""
    more = sock.getsockopt
    count = 0
    recv_into = getattr(sock, "recv_into", None)  # pyzmq 26 and later
    if recv_into is None:
        while more(zmq.RCVMORE):
            sock.recv(copy=False)  # no copy of the frame; its Frame is freed at once
            count += 1
        return count
    scratch = bytearray(1)  # libzmq copies at most 1 byte of each and frees the frame
    while more(zmq.RCVMORE):
        recv_into(scratch)
        count += 1
    return count


@overload
def recv_bounded(
    sock: zmq.Socket[Any],
    max_frames: int,
    flags: int = ...,
    *,
    copy: Literal[True] = ...,
) -> list[bytes]: ...


@overload
def recv_bounded(
    sock: zmq.Socket[Any], max_frames: int, flags: int = ..., *, copy: Literal[False]
) -> list[zmq.Frame]: ...


def recv_bounded(
    sock: zmq.Socket[Any],
    max_frames: int,
    flags: int = _NOBLOCK,
    *,
    copy: bool = True,
) -> list[bytes] | list[zmq.Frame]:
    """One message of at most ``max_frames`` frames, as bytes (or :class:`zmq.Frame` with
    ``copy=False``: their properties, and no copy of large frames). ``flags`` apply to the
    first frame (``zmq.Again`` without a message); the others are there already, since
    libzmq delivers a message whole. A longer message is read to its end and dropped:
    :class:`~dafka.errors.TooManyFrames`.

    Each frame is read as a :class:`zmq.Frame` whose ``more`` says whether another
    follows: ``getsockopt(RCVMORE)`` builds a :class:`zmq.SocketOption` enum member per
    call, which cost a third of a five-frame read (a Raft RequestUpdate)."""
    recv = sock.recv
    frame = recv(flags, False)  # positional: a keyword costs more than the read
    frames: list[Any] = [frame.bytes if copy else frame]
    while frame.more:
        # guard: message-frames-bounded-peer-reachable
        if len(frames) == max_frames:
            count = len(frames) + drain_rest(sock)
            raise TooManyFrames(count, max_frames)
        frame = recv(0, False)
        frames.append(frame.bytes if copy else frame)
    return frames
