"""In-memory Raft storage: :class:`MemoryStorage`, for tests and simulation.

It has :class:`~dafka.raft.peer.FileStorage`'s API (the
:class:`~dafka.raft.peer._storageapi.RaftStorage` protocol) and its rules (the same append
check, :func:`~dafka.raft.peer._storageapi.check_batch`; snapshots replace or keep the log the
same way), and keeps everything in memory: nothing survives the object.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import StorageError
from ..codec import Entry, HardState, SnapshotMeta
from ._storageapi import LoadedState, check_batch

__all__ = ["MemoryStorage"]


class MemoryStorage:
    """In-memory storage with the API and rules of :class:`~dafka.raft.peer.FileStorage`."""

    def __init__(self) -> None:
        self._hard = HardState()
        self._meta = SnapshotMeta()
        self._data: bytes | None = None
        self._entries: list[Entry] = []
        self._base = 1

    @property
    def hard_state(self) -> HardState:
        return self._hard

    @property
    def snapshot_meta(self) -> SnapshotMeta:
        return self._meta

    @property
    def first_index(self) -> int:
        return self._base

    @property
    def last_index(self) -> int:
        return self._base + len(self._entries) - 1

    def load(self) -> LoadedState:
        skip = max(0, self._meta.index + 1 - self._base)
        return LoadedState(self._hard, self._meta, self._entries[skip:], self._data)

    def save_hard_state(self, state: HardState, sync: bool = True) -> None:
        self._hard = state

    def append(self, entries: Sequence[Entry], sync: bool = True) -> None:
        entries = list(entries)
        check_batch(entries, self.last_index + 1, self._meta.index)
        self._entries.extend(entries)

    def truncate_from(self, index: int) -> None:
        if index <= self._meta.index:
            raise StorageError(f"cannot truncate at {index}: covered by the snapshot")
        if index <= self.last_index:
            del self._entries[index - self._base :]

    def term(self, index: int) -> int | None:
        if index == self._meta.index:
            return self._meta.term
        if self._base <= index <= self.last_index:
            return self._entries[index - self._base].term
        return None

    def read_entries(self, lo: int, hi: int) -> list[Entry]:
        """Entries ``lo <= index < hi`` (clipped to what is stored)."""
        lo, hi = max(lo, self._base), min(hi, self.last_index + 1)
        return self._entries[lo - self._base : hi - self._base] if lo < hi else []

    def save_snapshot(self, meta: SnapshotMeta, data: bytes) -> None:
        if meta.index < self._meta.index:
            raise StorageError("snapshot is older than the one stored")
        keep = self.term(meta.index) == meta.term and meta.index <= self.last_index
        self._meta, self._data = meta, bytes(data)
        if not keep:
            self._entries, self._base = [], meta.index + 1

    def snapshot_data(self) -> bytes | None:
        return self._data

    def compact(self, upto_index: int) -> None:
        if upto_index > self._meta.index:
            raise StorageError("cannot compact past the snapshot index")
        if upto_index >= self._base:
            del self._entries[: upto_index + 1 - self._base]
            self._base = upto_index + 1

    def close(self) -> None:
        pass
