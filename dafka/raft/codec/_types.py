"""Value types shared by the Raft core, its storage and its wire codec."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

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


def slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Any, ...]:
    """The ``__set__`` of each named slot of ``cls``: with them a hot path fills a frozen
    slotted dataclass made by ``object.__new__`` at about half the cost of its
    ``__init__`` (see :func:`new_entry`)."""
    return tuple(vars(cls)[name].__set__ for name in names)


_set_index, _set_term, _set_type, _set_reqid, _set_data = slot_setters(
    Entry, ("index", "term", "type", "reqid", "data")
)


def new_entry(
    index: int,
    term: int,
    kind: EntryType,
    reqid: bytes,
    data: bytes,
    _new: Any = object.__new__,
) -> Entry:
    """``Entry(index, term, kind, reqid, data)``, built in about half the time: the frozen
    dataclass's ``__init__`` stores each field through ``object.__setattr__`` looked up
    per field, this through the slots' own setters fetched once. The same object (equal,
    same hash, as frozen: assigning a field still raises); every field must be given.
    For the per-entry paths (a follower decoding what it is sent, a leader proposing)."""
    entry = _new(Entry)
    _set_index(entry, index)
    _set_term(entry, term)
    _set_type(entry, kind)
    _set_reqid(entry, reqid)
    _set_data(entry, data)
    return entry


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
