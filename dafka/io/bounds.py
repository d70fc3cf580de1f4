"""Socket options and frame metadata that bound what a peer can make a node hold.

libzmq bounds a connection's queue in messages (``SNDHWM``/``RCVHWM``), not bytes, and
a frame by ``ZMQ_MAXMSGSIZE``; :func:`bound_data_sockets` derives the high-water marks
from a byte budget per connection (``NodeConfig.queue_bytes``, ``docs/security.md``).
:func:`recv_message` reads a message of at most 2 frames with its first frame's metadata, and
:func:`frame_source` names the host it came from, the key of the rate of new
partitions (:class:`dafka.core.admission.PartitionGate`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import overload

import zmq

from ..config import NodeConfig
from ..core.admission import SourceKeys
from ..core.read_guard import Sender
from ..errors import TooManyFrames
from .multipart import DATA_FRAMES, drain_rest
from .node_plugins import MessageSources
from .request_senders import PeerSenders

__all__ = [
    "SMALL_FRAME_BYTES",
    "FrameSources",
    "SourceKeys",
    "bound_data_sockets",
    "xpub_hwm",
    "frame_source",
    "recv_message",
]

_NOBLOCK = int(zmq.NOBLOCK)

SMALL_FRAME_BYTES = 4096
"""``ZMQ_MAXMSGSIZE`` where peers only send subscriptions, beacons or welcomes."""


def xpub_hwm(cfg: NodeConfig, frame_bytes: int | None, min_hwm: int = 1) -> int:
    """The data XPUB's ``SNDHWM`` for a node whose largest frame to a subscriber is
    ``frame_bytes`` (None: not said, ``high_watermark``), at least ``min_hwm`` (a
    producer's, for its unacknowledged budget); a store's credit per requester is derived
    from it (:func:`dafka.store._credits.credits_for_hwm`)."""
    if frame_bytes is None:
        return cfg.high_watermark
    return max(min_hwm, cfg.hwm(frame_bytes))


def bound_data_sockets(
    cfg: NodeConfig,
    batched: bool,
    ceiling: int,
    xpub: zmq.Socket[bytes],
    sub: zmq.Socket[bytes],
    small: Iterable[zmq.Socket[bytes]],
    xpub_frame_bytes: int | None = None,
    xpub_min_hwm: int = 1,
) -> None:
    """The SUB's queue in bytes per connection: ``NodeConfig.hwm`` messages of the largest
    frame (``ceiling``); the rfc46 profile (one unsigned record per message, which a
    byte-safe count stalls) keeps ``high_watermark``.

    The XPUB's queue too, when the node says what the largest frame it sends is
    (``xpub_frame_bytes``), so that a subscriber that never reads costs at most
    ``queue_bytes`` per connection; libzmq drops what would go past the mark, and the
    subscriber gets it back by FETCH, as any lost message:

    - a signed store: ``max_message_size``, the largest batch a peer can make it hold,
      so 16 messages. Its core sends one requester no more than half of that before the
      requester has taken it (:mod:`dafka.store._credits`): sent at once, its bursts
      to one reader were dropped at 16 (a whole FETCH answer, until a catching-up
      consumer stalled; one DIRECT-HEAD per partition for a CONSUMER-HELLO, so that a
      fresh consumer of 60 partitions learned 15 of them);
    - a signed producer: its ``max_batch_bytes`` (1 MiB: 256 messages), since it only
      sends its own batches, and at least twice its ``max_unacked_bytes`` in full batches
      plus one (``xpub_min_hwm``: 257 with the default 128 MiB), since everything sent to a
      store stays unacknowledged until the store answers and libzmq hears of what a
      subscriber read in steps of half the mark. A record larger than that is a batch
      alone and still one message, so the bound is that many of the producer's largest
      batches; it is the producer's own choice of record sizes and budget, never a
      peer's (docs/security.md). A count of 16 slowed its live publishing.

    Consumers send small messages and keep ``high_watermark``, and so does the rfc46
    profile (one record per message)."""
    # guard: signed-stores-producers-data-xpubs
    xpub.setsockopt(zmq.SNDHWM, xpub_hwm(cfg, xpub_frame_bytes, xpub_min_hwm))
    sub.setsockopt(zmq.RCVHWM, cfg.hwm(ceiling) if batched else cfg.high_watermark)
    sub.setsockopt(zmq.MAXMSGSIZE, ceiling)
    for sock in small:
        sock.setsockopt(zmq.MAXMSGSIZE, SMALL_FRAME_BYTES)


def frame_source(keys: SourceKeys, frame: zmq.Frame) -> str:
    """The rate key of the host of ``frame``'s connection (its ``Peer-Address``); "" when
    the transport has none."""
    try:
        return keys.key(str(frame.get("Peer-Address")))
    except zmq.ZMQError:
        return ""


class FrameSources(MessageSources):
    """:func:`frame_source` of each of ``frames``, looked up when asked for.

    A node passes its core the source of every message it read, and a store core reads
    one only to admit a partition it does not hold yet: reading ``Peer-Address`` of
    every frame cost a store 0.3 us a record under rfc46 (8% of its time). Holds the
    frames of one loop turn (at most ``MAX_DRAIN``) until the core is done with them.

    :meth:`sender` is the node whose connection a message came on (``peers``; None
    without), looked up only for requests (FETCH, GET-HEADS, CONSUMER-HELLO).
    """

    __slots__ = ("_frames", "_keys", "_peers")

    def __init__(
        self, keys: SourceKeys, frames: list[zmq.Frame], peers: PeerSenders | None = None
    ) -> None:
        self._keys = keys
        self._frames = frames
        self._peers = peers

    def sender(self, index: int) -> Sender | None:
        """The node whose connection ``frames[index]`` came on (None: not known here)."""
        peers = self._peers
        if peers is None or not 0 <= index < len(self._frames):
            return None
        return peers.sender(self._frames[index])

    def __len__(self) -> int:
        return len(self._frames)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [frame_source(self._keys, f) for f in self._frames[index]]
        return frame_source(self._keys, self._frames[index])


def recv_message(
    sock: zmq.Socket[bytes], max_frames: int = DATA_FRAMES
) -> tuple[zmq.Frame, list[bytes]]:
    """One message without blocking (``zmq.Again`` if none): its first frame as a
    :class:`zmq.Frame`, whose properties :func:`frame_source` reads, and every frame's bytes.
    A message of more than ``max_frames`` frames is read to its end and dropped
    (:class:`~dafka.errors.TooManyFrames`, see :mod:`dafka.io.multipart`)."""
    # every record passes here: the frames' own ``more`` and plain int flags, since the
    # socket's ``get(zmq.RCVMORE)`` (an enum through pyzmq's Python layer) cost more than
    # the rest of the read (about 1.5 us of 2.5 us per message)
    recv = sock.recv
    first = recv(_NOBLOCK, copy=False)
    frames = [first.bytes]
    more = first.more
    while more:
        # guard: data-message-frames-bounded-data
        if len(frames) == max_frames:
            raise TooManyFrames(len(frames) + drain_rest(sock), max_frames)
        frame = recv(0, copy=False)
        frames.append(frame.bytes)
        more = frame.more
    return first, frames
