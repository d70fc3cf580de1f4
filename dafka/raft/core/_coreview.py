"""What the shell may read of a :class:`~dafka.raft.core.RaftCore`: its configuration,
role, log bounds and snapshot. Read-only: it declares no state of its own and writes
nothing; every field it reads is written in ``_core.py`` or by the part it names."""

from __future__ import annotations

from ...errors import RaftError
from ..codec import ClusterConfig, Entry, HardState, SnapshotMeta
from ._configs import Configs
from ._log import RaftLog
from ._ready import Role, SoftState
from ._replication import Replication
from ._requests import RequestIds

__all__ = ["CoreView"]


class CoreView:
    """Read-only properties and queries of the core; see the module docstring."""

    role: Role
    term: int
    voted_for: str | None
    commit: int
    leader: str | None
    _prev_hs: HardState
    _prev_ss: SoftState
    _applied: int
    requests: RequestIds
    _log: RaftLog
    _snapshot: SnapshotMeta
    configs: Configs
    replication: Replication

    @property
    def config(self) -> ClusterConfig:
        """The latest configuration in the log (committed or not)."""
        return self.configs.latest

    @property
    def config_index(self) -> int:
        """Log index of the entry holding :attr:`config` (a snapshot index for the base
        config); the change is committed once ``commit >= config_index``."""
        return self.configs.latest_index

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def applied(self) -> int:
        return self._applied

    @property
    def applied_in_term(self) -> bool:
        """A leader whose state machine applied an entry of its own term (its first entry):
        from then on the state machine holds everything any earlier leader acknowledged."""
        return self.role is Role.LEADER and self._log.term(self._applied) == self.term

    def holds(self, reqid: bytes) -> bool:
        """An entry proposed with ``reqid`` is in the log (a resend is answered from it)."""
        return reqid in self.requests

    @property
    def first_index(self) -> int:
        return self._log.first_index

    @property
    def last_index(self) -> int:
        return self._log.last_index

    @property
    def stable_index(self) -> int:
        """The last log index reported durable here (``Ready.write``)."""
        return self._log.stable_index

    @property
    def last_term(self) -> int:
        return self._log.last_term

    @property
    def snapshot(self) -> SnapshotMeta:
        """The latest snapshot this core knows of (given, compacted to, or installed)."""
        return self._snapshot

    @property
    def transferee(self) -> str | None:
        return self.replication.transferee

    def term_at(self, index: int) -> int | None:
        return self._log.term(index)

    def entries(self, lo: int, hi: int) -> list[Entry]:
        """Log entries ``lo <= index <= hi`` still held in memory."""
        return self._log.slice(lo, hi)

    def config_at(self, index: int) -> ClusterConfig:
        """The configuration in force at ``index`` (not below the compaction point)."""
        return self.configs.at(index)

    def snapshot_meta(self, index: int) -> SnapshotMeta:
        """The :class:`SnapshotMeta` for a state machine snapshot taken at ``index``."""
        term = self._log.term(index)
        if term is None or index > self._applied:
            raise RaftError(f"cannot describe a snapshot at {index}: not applied or compacted")
        return SnapshotMeta(index, term, self.config_at(index))

    def _hard_state(self) -> HardState:
        return HardState(self.term, self.voted_for, self.commit)

    def _soft_state(self) -> SoftState:
        return SoftState(self.leader, self.role)

    def _state_changed(self) -> bool:
        """``_hard_state() != _prev_hs or _soft_state() != _prev_ss``, field by field:
        asked twice a loop turn, and building the two values cost more than comparing."""
        hs, ss = self._prev_hs, self._prev_ss
        return (
            self.term != hs.term
            or self.voted_for != hs.voted_for
            or self.commit != hs.commit
            or self.leader != ss.leader
            or self.role is not ss.role
        )
