"""What a member knows of its group, built from the group topic's records (pure).

Records are applied as they are read, each with the member that signed it (its
partition of the group topic) and the local time it was read; the view never
reads a clock.

* Members alive: those whose last heartbeat was read less than
  ``session_timeout`` ago and who have not left.
* Committed offsets: per (topic, partition), the commit with the highest
  ownership epoch wins; within one epoch, the later record of the same member
  (its partition is read in order) or, for two members in the same epoch (only
  while views differed), the higher member ID. A member that takes a partition
  commits with the epoch it saw plus one, so after a handover the new owner's
  commits win whatever order a reader replays the members' partitions in.
"""

from __future__ import annotations

from dataclasses import dataclass

from .assign import PartitionKey
from .records import Commit, GroupRecord, Heartbeat, Leave

__all__ = ["Committed", "GroupView", "MemberState"]


@dataclass(frozen=True)
class Committed:
    offset: int  # the next offset to read
    epoch: int
    member: str


@dataclass(frozen=True)
class MemberState:
    member: str
    topics: tuple[str, ...]
    held: frozenset[PartitionKey]
    parts: frozenset[PartitionKey]
    client: str
    seen_at: float  # local time its last heartbeat was read


class GroupView:
    def __init__(self, session_timeout: float) -> None:
        if not session_timeout > 0:
            raise ValueError("session_timeout must be positive")
        self.session_timeout = float(session_timeout)
        self._members: dict[str, MemberState] = {}
        self._committed: dict[PartitionKey, Committed] = {}
        self.records = 0

    def apply(self, member: str, record: GroupRecord, now: float) -> None:
        self.records += 1
        if isinstance(record, Heartbeat):
            parts = record.parts
            if parts is None:  # unchanged
                last = self._members.get(member)
                parts = last.parts if last is not None else frozenset()
            self._members[member] = MemberState(
                member, record.topics, record.held, parts, record.client, now
            )
        elif isinstance(record, Leave):
            self._members.pop(member, None)
        elif isinstance(record, Commit):
            for topic, partition, offset, epoch in record.offsets:
                key = (topic, partition)
                old = self._committed.get(key)
                if (
                    old is None
                    or epoch > old.epoch
                    or (epoch == old.epoch and (member == old.member or member > old.member))
                ):
                    self._committed[key] = Committed(offset, epoch, member)

    def alive(self, now: float) -> dict[str, MemberState]:
        """The members alive at ``now`` (those that went silent are forgotten)."""
        limit = now - self.session_timeout
        dead = [m for m, s in self._members.items() if s.seen_at <= limit]
        for m in dead:
            del self._members[m]
        return dict(sorted(self._members.items()))

    def committed(self) -> dict[PartitionKey, Committed]:
        return dict(self._committed)

    def epoch(self, key: PartitionKey) -> int:
        c = self._committed.get(key)
        return 0 if c is None else c.epoch
