"""Raft over the ØMQ RAFT protocol: a deterministic core, durable storage, peer and client.

Four layers, each importing only the ones listed before it:

* :mod:`dafka.raft.codec`: the wire and file formats, pure encoders and decoders;
* :mod:`dafka.raft.core`: the deterministic Raft core (:class:`RaftCore`, its Ready);
* :mod:`dafka.raft.peer`: the pyzmq shell that runs a core (:class:`RaftPeer`), its
  storage and state machines;
* :mod:`dafka.raft.client`: the client of a cluster (:class:`RaftClient`).

This package exports what code outside ``dafka.raft`` uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .client import RaftClient
    from .codec import (
        DEFAULT_MAX_ENTRY_BYTES,
        REQUEST_ID_TTL,
        ZERO_REQID,
        Entry,
        EntryType,
        Peer,
        reqid_time,
        served_state,
    )
    from .core import RaftCore, SnapshotChunk
    from .peer import (
        BROADCAST_FRAMES,
        CLIENT_FRAME_BYTES,
        INSECURE_NULL_COST,
        ClientCurve,
        KvStateMachine,
        PeerOptions,
        RaftCurve,
        RaftPeer,
        curve_public_key,
        parse_public_hex,
        split_key,
    )

# Imported when first used (PEP 562), as in :mod:`dafka`: a module that needs only the
# codec (``dafka.raft.codec``) does not load the peer and the client with this package.
_LAZY = {
    "DEFAULT_MAX_ENTRY_BYTES": ".codec",
    "Entry": ".codec",
    "EntryType": ".codec",
    "Peer": ".codec",
    "REQUEST_ID_TTL": ".codec",
    "ZERO_REQID": ".codec",
    "reqid_time": ".codec",
    "served_state": ".codec",
    "RaftCore": ".core",
    "SnapshotChunk": ".core",
    "BROADCAST_FRAMES": ".peer",
    "CLIENT_FRAME_BYTES": ".peer",
    "ClientCurve": ".peer",
    "INSECURE_NULL_COST": ".peer",
    "KvStateMachine": ".peer",
    "PeerOptions": ".peer",
    "RaftCurve": ".peer",
    "RaftPeer": ".peer",
    "curve_public_key": ".peer",
    "parse_public_hex": ".peer",
    "split_key": ".peer",
    "RaftClient": ".client",
}

__all__ = [
    "BROADCAST_FRAMES",
    "CLIENT_FRAME_BYTES",
    "ClientCurve",
    "DEFAULT_MAX_ENTRY_BYTES",
    "Entry",
    "EntryType",
    "INSECURE_NULL_COST",
    "KvStateMachine",
    "Peer",
    "PeerOptions",
    "REQUEST_ID_TTL",
    "RaftClient",
    "RaftCore",
    "RaftCurve",
    "RaftPeer",
    "SnapshotChunk",
    "ZERO_REQID",
    "curve_public_key",
    "parse_public_hex",
    "reqid_time",
    "served_state",
    "split_key",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
