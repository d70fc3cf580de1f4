"""Send a multipart message without ``send_multipart``'s per-frame flag arithmetic.

pyzmq's ``Socket.send_multipart`` combines ``SNDMORE`` with the caller's flags as enum
members for every frame, and its ``send`` wrapper handles options we never pass; on the commit path (a reply per update, a frame per entry in
every AppendEntries) that costs more than the send itself. Same behaviour otherwise:
non-blocking, and ``zmq.Again`` only from the first frame (once the first part of a
message is queued, ØMQ queues the whole message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import zmq
from zmq.backend import Socket as _BackendSocket

__all__ = ["send_frames"]

_MORE = int(zmq.SNDMORE | zmq.NOBLOCK)
_LAST = int(zmq.NOBLOCK)
_send = _BackendSocket.send  # pyzmq's Socket.send adds only options we do not use


def send_frames(sock: zmq.Socket[Any], frames: Sequence[bytes]) -> None:
    """``sock.send_multipart(frames, zmq.NOBLOCK)``, faster."""
    send = _send if isinstance(sock, _BackendSocket) else type(sock).send
    for frame in frames[:-1]:
        send(sock, frame, _MORE)
    send(sock, frames[-1], _LAST)
