"""The deterministic Raft core: no IO, no clock, no threads. :class:`RaftCore` takes peer
messages (:mod:`._messages`), ticks and proposals and hands its shell a :class:`Ready`
(persist, then send, then apply; see :mod:`._ready`). Built on :mod:`dafka.raft.codec`.
"""

from __future__ import annotations

from ._core import RaftCore
from ._extensions import (
    DISPATCH_FEATURES,
    FEATURES,
    Extensions,
    decode_features,
    read_unsupported,
)
from ._membership import all_peers
from ._messages import (
    AppendEntries,
    AppendResponse,
    InstallSnapshot,
    Message,
    Request,
    RequestVote,
    SnapshotResponse,
    TimeoutNow,
    TimeoutNowResponse,
    VoteResponse,
    correlate,
)
from ._quorum import Voters
from ._ready import ProposeResult, ProposeStatus, Ready, Role, SnapshotChunk

__all__ = [
    "AppendEntries",
    "AppendResponse",
    "DISPATCH_FEATURES",
    "Extensions",
    "FEATURES",
    "InstallSnapshot",
    "Message",
    "ProposeResult",
    "ProposeStatus",
    "RaftCore",
    "Ready",
    "Request",
    "RequestVote",
    "Role",
    "SnapshotChunk",
    "SnapshotResponse",
    "TimeoutNow",
    "TimeoutNowResponse",
    "VoteResponse",
    "Voters",
    "all_peers",
    "correlate",
    "decode_features",
    "read_unsupported",
]
