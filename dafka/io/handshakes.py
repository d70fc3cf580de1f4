"""The events of a SUB socket's connections, from its ZMQ socket monitor, for discovery.

Under CURVE a node learns whether the key it connected a peer endpoint with is the
peer's only from the handshake: libzmq reports ``HANDSHAKE_SUCCEEDED`` or
``HANDSHAKE_FAILED_*`` (and ``CONNECTED`` / ``DISCONNECTED`` around them) on the socket's
monitor, each with the endpoint as the socket connected it (for a host given as an IP
literal, as beacons give it, the same text). :class:`HandshakeMonitor` turns them into
:class:`dafka.core.peer_keys.Handshake` events for :meth:`dafka.core.discovery.Discovery.on_handshake`.
"""

from __future__ import annotations

import logging
import struct

import zmq

from ..core.peer_keys import Handshake

log = logging.getLogger(__name__)

EVENTS: dict[int, Handshake] = {
    zmq.EVENT_CONNECTED: Handshake.CONNECTED,
    zmq.EVENT_HANDSHAKE_SUCCEEDED: Handshake.SUCCEEDED,
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: Handshake.FAILED,
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: Handshake.FAILED,
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: Handshake.FAILED,
    zmq.EVENT_DISCONNECTED: Handshake.DISCONNECTED,
}
_MASK = 0
for _event in EVENTS:
    _MASK |= _event
MAX_EVENTS_PER_READ = 1000


class HandshakeMonitor:
    """The monitor of one socket (loop thread only): poll :attr:`sock`, then :meth:`read`."""

    def __init__(self, watched: zmq.Socket[bytes]) -> None:
        self._watched = watched
        self.sock: zmq.Socket[bytes] = watched.get_monitor_socket(_MASK)
        self.sock.setsockopt(zmq.LINGER, 0)

    def read(self) -> list[tuple[str, Handshake]]:
        """The events queued now (at most :data:`MAX_EVENTS_PER_READ`), oldest first."""
        out: list[tuple[str, Handshake]] = []
        for _ in range(MAX_EVENTS_PER_READ):
            try:
                frames = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            # libzmq's own frames: a 6-byte head (16-bit event, 32-bit value), the endpoint
            if len(frames) != 2 or len(frames[0]) != 6:
                continue
            event = EVENTS.get(struct.unpack("=hi", frames[0])[0] & 0xFFFF)
            try:
                endpoint = frames[1].decode("ascii")
            except UnicodeDecodeError:
                continue
            # guard: node-hears-data-sub-handshake
            if event is not None:
                out.append((endpoint, event))
        return out

    def close(self) -> None:
        try:
            self._watched.disable_monitor()
        except zmq.ZMQError:
            pass
        self.sock.close(0)
