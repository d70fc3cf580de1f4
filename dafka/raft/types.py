"""Value types shared by the Raft core, its storage and its wire codec."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

REQID_SIZE = 12
ZERO_REQID = bytes(REQID_SIZE)


class EntryType(enum.IntEnum):
    """Log entry types of the ØMQ RAFT protocol."""

    STATE = 0
    CONFIG = 1
    CHECKPOINT = 2


@dataclass(frozen=True, slots=True)
class Peer:
    """A cluster member: its PEER ID and the URL of its ROUTER socket."""

    id: str
    url: str


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Voters (``peers``) plus, during joint consensus, the old voter set.

    ``old is None`` means a final (non-transitional) configuration.
    ``learners`` copy the log but never vote (ZooKeeper observers).
    """

    peers: tuple[Peer, ...]
    old: tuple[Peer, ...] | None = None
    learners: tuple[Peer, ...] = ()

    @property
    def is_joint(self) -> bool:
        return self.old is not None


@dataclass(frozen=True, slots=True)
class Entry:
    """One log entry. ``index`` is not on the wire (it is implied by position)."""

    index: int
    term: int
    type: EntryType
    reqid: bytes = ZERO_REQID
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class HardState:
    """What must be on disk before any reply that depends on it."""

    term: int = 0
    voted_for: str | None = None
    commit: int = 0


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """The last log position a snapshot covers and the config at that point."""

    index: int = 0
    term: int = 0
    config: ClusterConfig = field(default_factory=lambda: ClusterConfig(()))
