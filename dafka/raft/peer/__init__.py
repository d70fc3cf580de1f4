"""The Raft peer: the pyzmq IO shell around :class:`~dafka.raft.core.RaftCore`
(:class:`RaftPeer`), its durable storage, state machines, snapshots, CURVE and guards,
and the server side of the client RPCs. Built on :mod:`dafka.raft.core` and
:mod:`dafka.raft.codec`.
"""

from __future__ import annotations

from ._clientservice import DISPATCH_LOCAL_READ, DISPATCH_READ_INDEX, DispatchStatus
from ._curve import (
    ClientCurve,
    RaftCurve,
    curve_public_key,
    parse_public_hex,
    split_key,
)
from ._fastsend import send_frames
from ._guard import (
    BROADCAST_FRAMES,
    CLIENT_ANSWER_FRAMES,
    CLIENT_FRAME_BYTES,
    INSECURE_NULL_COST,
)
from ._memstorage import MemoryStorage
from ._peer import RaftPeer
from ._peerstate import PeerOptions
from ._statemachine import KvStateMachine, StateMachine, put_command
from ._storage import FileStorage

__all__ = [
    "BROADCAST_FRAMES",
    "CLIENT_ANSWER_FRAMES",
    "CLIENT_FRAME_BYTES",
    "ClientCurve",
    "DISPATCH_LOCAL_READ",
    "DISPATCH_READ_INDEX",
    "DispatchStatus",
    "FileStorage",
    "INSECURE_NULL_COST",
    "KvStateMachine",
    "MemoryStorage",
    "PeerOptions",
    "RaftCurve",
    "RaftPeer",
    "StateMachine",
    "curve_public_key",
    "parse_public_hex",
    "put_command",
    "send_frames",
    "split_key",
]
