"""The client of a ØMQ RAFT cluster (:class:`RaftClient`) and how it judges answers.
Built on :mod:`dafka.raft.codec`, the core's extensions and the peer's socket helpers
(CURVE, frame limits).
"""

from __future__ import annotations

from ._client import ClusterState, RaftClient

__all__ = [
    "ClusterState",
    "RaftClient",
]
