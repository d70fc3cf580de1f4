"""A tower's Prometheus metrics: its beacon relay and its metadata Raft peer.

Threads. The Raft values come from :meth:`RaftPeer.info`, the immutable copy of the
peer's state the Raft thread publishes at the end of every loop turn for other
threads; the relay's counters are ints only the relay thread increments (and the
number of service beacons it keeps, a dict's length), and
reading one int attribute is atomic, so a scrape sees a value each held at some
instant (the two are not read at one instant, and need not be). Nothing is read
from the Raft core or the sockets.

The refusal counts carry a ``kind`` label whose values are the fixed set of kinds
:class:`~dafka.raft.peer._guard.BadInput` is called with in the parts of the peer
(:mod:`dafka.raft.peer._peer`, :mod:`~dafka.raft.peer._peertransport`, :mod:`~dafka.raft.peer._clientservice`:
``update-refused`` counts RequestUpdates the metadata admission refused); no label takes a
value a peer sends (``docs/security.md``, "Bounds").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dafka.io.metrics import NodeCollector, NodeMetrics, Spec, Values, counter, gauge

if TYPE_CHECKING:
    from .metadata import TowerNode

__all__ = ["TOWER_SPECS", "tower_metrics"]

TOWER_SPECS: tuple[Spec, ...] = (
    counter("relayed", "dafka_tower_beacons_relayed", "Beacons relayed to every node."),
    counter("malformed", "dafka_frames_malformed", "Beacons dropped: they did not decode."),
    counter(
        "peer_relayed",
        "dafka_tower_peer_beacons_relayed",
        "Beacons from peer towers relayed to this tower's nodes.",
    ),
    counter(
        "peer_malformed",
        "dafka_tower_peer_messages_malformed",
        "Messages from peer towers dropped: no tower or service beacon.",
    ),
    gauge(
        "service_kept",
        "dafka_tower_service_beacons_kept",
        "Service beacons kept to replay to new locators.",
    ),
    counter(
        "service_not_kept",
        "dafka_tower_service_beacons_not_kept",
        "Service beacons of new nodes not kept for replay: the most were kept already.",
    ),
    counter(
        "service_replays",
        "dafka_tower_service_replays",
        "Replays of the kept service beacons to new subscribers.",
    ),
    gauge("term", "dafka_raft_term", "The Raft peer's current term."),
    gauge("commit", "dafka_raft_commit_index", "Highest log index known committed."),
    gauge("applied", "dafka_raft_applied_index", "Highest log index applied to the metadata."),
    gauge("last", "dafka_raft_last_index", "Last index in this peer's log."),
    gauge("snapshot", "dafka_raft_snapshot_index", "Index of the latest snapshot."),
    gauge(
        "apply_lag",
        "dafka_raft_apply_lag_entries",
        "Log entries committed and not yet applied to the metadata (commit - applied index).",
    ),
    gauge("leader", "dafka_raft_is_leader", "1 while this peer is the leader."),
    gauge("has_leader", "dafka_raft_has_leader", "1 while this peer knows a leader."),
    gauge("members", "dafka_raft_members", "Peers in the group's configuration."),
    counter("leader_changes", "dafka_raft_leader_changes", "Times this peer saw a new leader."),
    counter("refused", "dafka_raft_refused", "Raft input refused, by kind.", label="kind"),
)


def tower_metrics(node: TowerNode) -> NodeMetrics:
    """The tower's metrics (nothing served until :meth:`NodeMetrics.serve`)."""
    raft, relay = node.raft, node.relay

    def read() -> Values | None:  # an HTTP thread: immutable or atomic values only
        if not node.running:
            return None
        info = raft.info()
        replay = relay.replay  # set once by the relay thread; its ints and len are atomic reads
        return {
            "relayed": relay.relayed,
            "malformed": relay.malformed,
            "peer_relayed": relay.relayed_from_peers,
            "peer_malformed": relay.malformed_from_peers,
            "service_kept": 0 if replay is None else len(replay),
            "service_not_kept": 0 if replay is None else replay.not_kept,
            "service_replays": 0 if replay is None else replay.replays,
            "term": info.term,
            "commit": info.commit,
            "applied": info.applied,
            "apply_lag": max(0, info.commit - info.applied),
            "last": info.last_index,
            "snapshot": info.snapshot_index,
            "leader": 1 if info.role == "leader" else 0,
            "has_leader": 0 if info.leader is None else 1,
            "members": len(info.config),
            "leader_changes": info.leader_changes,
            "refused": dict(info.refused),
        }

    labels = {"node_id": node.peer_id, "cluster": node.cluster}
    return NodeMetrics(NodeCollector("tower", labels, read, TOWER_SPECS))
