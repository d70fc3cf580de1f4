"""Majority and joint-majority arithmetic (Raft §4.3 / §6 joint consensus).

A :class:`Voters` is the voting part of a :class:`~dafka.raft.codec.ClusterConfig`:
``incoming`` (the new or only voter set) and ``outgoing`` (the old set while a change
is in progress, else empty). A decision needs a majority of *each* non-empty set.
Learners never appear here. An empty set agrees to everything, so a final config is
simply a joint config whose outgoing half is empty.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from ..codec import ClusterConfig

__all__ = [
    "VoteResult",
    "Voters",
    "committed_index",
    "has_quorum",
    "vote_result",
]

INFINITY = 1 << 63


class VoteResult(enum.Enum):
    PENDING = "pending"
    WON = "won"
    LOST = "lost"


def _majority(n: int) -> int:
    return n // 2 + 1


def vote_result(voters: Collection[str], votes: Mapping[str, bool]) -> VoteResult:
    """The outcome of an election among ``voters`` given the ``votes`` received so far."""
    if not voters:
        return VoteResult.WON
    granted = sum(1 for v in voters if votes.get(v) is True)
    refused = sum(1 for v in voters if votes.get(v) is False)
    need = _majority(len(voters))
    if granted >= need:
        return VoteResult.WON
    if refused > len(voters) - need:
        return VoteResult.LOST
    return VoteResult.PENDING


def committed_index(voters: Collection[str], match: Mapping[str, int]) -> int:
    """The highest index that a majority of ``voters`` has (``INFINITY`` if none vote)."""
    if not voters:
        return INFINITY
    acked = sorted((match.get(v, 0) for v in voters), reverse=True)
    return acked[_majority(len(voters)) - 1]


def has_quorum(voters: Collection[str], present: Collection[str]) -> bool:
    """Whether ``present`` holds a majority of ``voters``."""
    if not voters:
        return True
    return sum(1 for v in voters if v in present) >= _majority(len(voters))


@dataclass(frozen=True, slots=True)
class Voters:
    incoming: frozenset[str]
    outgoing: frozenset[str] = frozenset()

    @classmethod
    def of(cls, config: ClusterConfig) -> Voters:
        old = config.old if config.old is not None else ()
        return cls(frozenset(p.id for p in config.peers), frozenset(p.id for p in old))

    @property
    def ids(self) -> frozenset[str]:
        return self.incoming | self.outgoing

    def __contains__(self, peer_id: object) -> bool:
        return peer_id in self.incoming or peer_id in self.outgoing

    def vote_result(self, votes: Mapping[str, bool]) -> VoteResult:
        a = vote_result(self.incoming, votes)
        b = vote_result(self.outgoing, votes)
        if VoteResult.LOST in (a, b):
            return VoteResult.LOST
        if a is VoteResult.WON and b is VoteResult.WON:
            return VoteResult.WON
        return VoteResult.PENDING

    def committed_index(self, match: Mapping[str, int]) -> int:
        return min(committed_index(self.incoming, match), committed_index(self.outgoing, match))

    def has_quorum(self, present: Iterable[str]) -> bool:
        present = set(present)
        return has_quorum(self.incoming, present) and has_quorum(self.outgoing, present)
