"""What a member knows of its group, built from the group topic's records (pure).

Records are applied as they are read, each with the member that signed it (its
partition of the group topic) and the local time it was read; the view never
reads a clock. Every writer of the group topic is someone: the view listens to
those the group admits (:class:`~dafka.groups.admission.Admission`) and takes
from them only what a member may say:

* Members alive: admitted writers whose last heartbeat was read less than
  ``session_timeout`` ago and who have not left. A heartbeat claims only
  partitions of the topics it names; a claim lapses with the heartbeats.
* Committed offsets: a commit counts only from an admitted writer, for a
  partition its own last heartbeat (in its partition, read in order, so in every
  reader alike) said it held, or that the member applies itself (``own``: it
  checked what it holds), and only with an epoch at most :data:`MAX_EPOCH_STEP`
  above the highest this view holds for the partition. Per partition, the commit
  with the highest epoch wins; within one epoch, the later record of the same
  member or, for two members in the same epoch (only while views differed), the
  higher member ID. A member that takes a partition commits with the epoch it
  saw plus one, so after a handover the new owner's commits win whatever order a
  reader replays the members' partitions in, and no writer can put an epoch out
  of an honest successor's reach: 2^64 needs 2^44 accepted commits.
* An admin's resets (:mod:`.resets`, from the metadata: :meth:`GroupView.set_resets`)
  count as commits of their epoch by :data:`~.resets.RESET_MEMBER`, under the same rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .admission import OPEN, Admission
from .assign import PartitionKey
from .records import Commit, GroupRecord, Heartbeat, Leave
from .resets import RESET_MEMBER

__all__ = ["MAX_COMMITTERS", "MAX_EPOCH_STEP", "Committed", "GroupView", "MemberState"]

MAX_EPOCH_STEP = 1 << 20
"""How far above the highest epoch held for a partition a commit's epoch may go. An honest
member uses the highest it saw plus one; a reader replaying the members' partitions in
another order may see a later epoch first, so the bound leaves room for a million
handovers of one partition (a rebalance every minute for two years) in any order."""
MAX_COMMITTERS = 8
"""Commits kept per partition (each writer's latest; the lowest epochs go first)."""


@dataclass(frozen=True)
class Committed:
    offset: int  # the next offset to read
    epoch: int
    member: str
    metadata: str | None = None  # a Kafka client's commit metadata


@dataclass(frozen=True)
class MemberState:
    member: str
    topics: tuple[str, ...]
    held: frozenset[PartitionKey]
    parts: frozenset[PartitionKey]
    client: str
    seen_at: float  # local time its last heartbeat was read


def _rank(c: Committed) -> tuple[int, str]:
    return c.epoch, c.member


class GroupView:
    def __init__(self, session_timeout: float, admission: Admission = OPEN) -> None:
        if not session_timeout > 0:
            raise ValueError("session_timeout must be positive")
        self.session_timeout = float(session_timeout)
        self.admission = admission
        self._members: dict[str, MemberState] = {}
        self._commits: dict[PartitionKey, dict[str, Committed]] = {}  # per writer, its latest
        self._resets: dict[PartitionKey, Committed] = {}  # the admin's, from the metadata
        self.records = 0
        self.refused = 0  # records or commit entries the rules above ignored

    def set_admission(self, admission: Admission) -> None:
        """Who the group admits now (the metadata changed): applies to what is held too."""
        self.admission = admission

    def set_resets(self, resets: Mapping[PartitionKey, tuple[int, int]]) -> None:
        """The admin's resets now ({(topic, partition): (offset, epoch)}, from
        :func:`.resets.from_config`): replaces the previous ones in one step."""
        self._resets = {k: Committed(o, e, RESET_MEMBER) for k, (o, e) in resets.items()}

    def apply(self, member: str, record: GroupRecord, now: float, own: bool = False) -> None:
        self.records += 1
        # guard: view-no-record-poses-as-reset
        if member == RESET_MEMBER:  # no writer is nobody: a reset comes from the metadata
            self.refused += 1
            return
        if isinstance(record, Heartbeat):
            self._heartbeat(member, record, now)
        elif isinstance(record, Leave):
            self._members.pop(member, None)
        elif isinstance(record, Commit):
            meta = record.metadata or ()
            for i, (topic, partition, offset, epoch) in enumerate(record.offsets):
                if self._may_commit(member, (topic, partition), epoch, own):
                    m = meta[i] if i < len(meta) else None
                    self._keep((topic, partition), Committed(offset, epoch, member, m))
                else:
                    self.refused += 1

    def _heartbeat(self, member: str, record: Heartbeat, now: float) -> None:
        if not self.admission.admits(member, record.topics):
            self.refused += 1
            self._members.pop(member, None)  # its earlier claims are not renewed
            return
        parts = record.parts
        last = self._members.get(member)
        if parts is None:  # unchanged
            parts = last.parts if last is not None else frozenset()
        topics = set(record.topics)
        # guard: heartbeat-claims-partitions-topics-names
        held = frozenset(k for k in record.held if k[0] in topics)
        self._members[member] = MemberState(member, record.topics, held, parts, record.client, now)

    def _may_commit(self, member: str, key: PartitionKey, epoch: int, own: bool) -> bool:
        if not self.admission.admits(member, (key[0],)):
            return False
        if not own:
            state = self._members.get(member)
            # guard: group-counts-commit-what-writer
            if state is None or key not in state.held:
                return False  # not a member, or not its partition
        # guard: group-takes-commit-epoch-within
        return epoch <= self.epoch(key) + MAX_EPOCH_STEP

    def _keep(self, key: PartitionKey, commit: Committed) -> None:
        by = self._commits.setdefault(key, {})
        by[commit.member] = commit
        # guard: group-keeps-bounded-number-commits
        if len(by) > MAX_COMMITTERS:
            del by[min(by.values(), key=_rank).member]

    def _best(self, key: PartitionKey) -> Committed | None:
        best = self._best_commit(key)
        reset = self._resets.get(key)
        # guard: view-orders-reset-by-epoch
        if reset is not None and (best is None or _rank(reset) > _rank(best)):
            return reset
        return best

    def _best_commit(self, key: PartitionKey) -> Committed | None:
        by = self._commits.get(key)
        if not by:
            return None
        admits = self.admission.admits
        return max((c for c in by.values() if admits(c.member, key[:1])), key=_rank, default=None)

    def alive(self, now: float) -> dict[str, MemberState]:
        """The admitted members alive at ``now`` (those that went silent are forgotten)."""
        limit = now - self.session_timeout
        dead = [m for m, s in self._members.items() if s.seen_at <= limit]
        for m in dead:
            del self._members[m]
        admits = self.admission.admits
        return {m: s for m, s in sorted(self._members.items()) if admits(m, s.topics)}

    def committed(self) -> dict[PartitionKey, Committed]:
        out: dict[PartitionKey, Committed] = {}
        for key in (*self._commits, *(k for k in self._resets if k not in self._commits)):
            best = self._best(key)
            if best is not None:
                out[key] = best
        return out

    def best(self, key: PartitionKey) -> Committed | None:
        """The committed offset of one partition (what :meth:`committed` says for it)."""
        return self._best(key)

    def epoch(self, key: PartitionKey) -> int:
        c = self._best(key)
        return 0 if c is None else c.epoch
