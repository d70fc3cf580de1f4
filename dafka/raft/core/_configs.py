"""The configurations in a :class:`~dafka.raft.core.RaftCore`'s log: a part the core owns.

A configuration takes effect when its entry is appended, committed or not, and is rolled
back when the entry is truncated (thesis §4.1); the list starts at the snapshot's (or the
given) configuration and loses its head as the log is compacted. :attr:`Configs.voters`
are the latest configuration's voters.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..codec import ClusterConfig, Entry, EntryType, config_or_none
from ._quorum import Voters

__all__ = ["Configs"]

_CONFIG = EntryType.CONFIG  # a module global: an Enum class attribute costs 10x per entry


class Configs:
    """``(index, config)`` of every configuration from the compaction point on, oldest
    first, and the voters of the latest. Written only here."""

    __slots__ = ("_list", "voters")

    def __init__(self, index: int, config: ClusterConfig) -> None:
        self._list: list[tuple[int, ClusterConfig]] = [(index, config)]
        self.voters = Voters.of(config)

    @property
    def latest(self) -> ClusterConfig:
        return self._list[-1][1]

    @property
    def latest_index(self) -> int:
        return self._list[-1][0]

    def at(self, index: int) -> ClusterConfig:
        """The configuration in force at ``index`` (not below the compaction point)."""
        current = self._list[0][1]
        for at, cfg in self._list:
            if at > index:
                break
            current = cfg
        return current

    def since_committed(self, commit: int) -> list[ClusterConfig]:
        """The last configuration committed by ``commit`` and every later one."""
        committed = 0
        for k, (at, _) in enumerate(self._list):
            if at <= commit:
                committed = k
        return [cfg for _, cfg in self._list[committed:]]

    def promotable(self, id: str, commit: int) -> bool:
        """May ``id`` start elections? As a voter of the latest config, or of an earlier one
        that the latest may not have replaced yet: until the change commits it may be
        needed to elect anyone (thesis §4.2.2)."""
        latest = self.latest
        for at, cfg in reversed(self._list):
            if id in (self.voters if cfg is latest else Voters.of(cfg)):
                return True
            if at <= commit:
                return False
        return False

    def appended(self, entries: Sequence[Entry]) -> bool:
        """Take the configurations among appended ``entries``; whether any was."""
        changed = False
        for entry in entries:
            if entry.type is _CONFIG:
                cfg = config_or_none(entry.data)
                if cfg is not None:
                    self._list.append((entry.index, cfg))
                    changed = True
        if changed:
            self.voters = Voters.of(self.latest)
        return changed

    def truncate(self, index: int) -> bool:
        """Entries from ``index`` on are gone: roll back their configurations; whether any."""
        if self._list[-1][0] < index:
            return False
        self._list = [(at, cfg) for at, cfg in self._list if at < index]
        self.voters = Voters.of(self.latest)
        return True

    def compact(self, index: int) -> None:
        """The log was compacted to ``index``: keep the configuration in force there on."""
        keep = 0
        for k, (at, _) in enumerate(self._list):
            if at <= index:
                keep = k
        del self._list[:keep]

    def restore(self, index: int, config: ClusterConfig) -> None:
        """A snapshot at ``index`` replaced the log: ``config`` is all there is."""
        self._list = [(index, config)]
        self.voters = Voters.of(config)
