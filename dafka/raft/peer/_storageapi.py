"""The storage interface of a Raft peer: what every storage gives the peer
(:class:`RaftStorage`), what its ``load`` returns (:class:`LoadedState`), and the append
rule every storage checks alike (:func:`check_batch`).

Implemented by :class:`~dafka.raft.peer.FileStorage` (:mod:`._storage`, durable) and
:class:`~dafka.raft.peer.MemoryStorage` (:mod:`._memstorage`, for tests and simulation).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from ...errors import StorageError
from ..codec import Entry, HardState, SnapshotMeta

__all__ = ["LoadedState", "RaftStorage", "check_batch"]


class LoadedState(NamedTuple):
    """What :meth:`FileStorage.load` returns (unpacks as a 4-tuple)."""

    hard_state: HardState
    snapshot_meta: SnapshotMeta
    entries: list[Entry]
    """The log after ``snapshot_meta.index``: consecutive, starting at ``index + 1``."""
    snapshot: bytes | None


class RaftStorage(Protocol):
    """The storage API the Raft peer uses; :class:`FileStorage` and
    :class:`~dafka.raft.peer.MemoryStorage`."""

    @property
    def hard_state(self) -> HardState: ...
    @property
    def snapshot_meta(self) -> SnapshotMeta: ...
    @property
    def first_index(self) -> int: ...
    @property
    def last_index(self) -> int: ...
    def load(self) -> LoadedState: ...
    def save_hard_state(self, state: HardState, sync: bool = True) -> None: ...
    def append(self, entries: Sequence[Entry], sync: bool = True) -> None: ...
    def truncate_from(self, index: int) -> None: ...
    def term(self, index: int) -> int | None: ...
    def read_entries(self, lo: int, hi: int) -> list[Entry]: ...
    def save_snapshot(self, meta: SnapshotMeta, data: bytes) -> None: ...
    def snapshot_data(self) -> bytes | None: ...
    def compact(self, upto_index: int) -> None: ...
    def close(self) -> None: ...


def check_batch(entries: Sequence[Entry], next_index: int, snapshot_index: int) -> None:
    """Raise :class:`StorageError` unless ``entries`` may be appended at ``next_index``."""
    if not entries:
        return
    if entries[0].index != next_index:
        raise StorageError(
            f"append must continue the log at index {next_index}, got {entries[0].index}"
            " (truncate_from first to replace entries)"
        )
    for before, after in itertools.pairwise(entries):
        if after.index != before.index + 1:
            raise StorageError(f"entries are not consecutive at index {after.index}")
    if entries[0].index <= snapshot_index:
        raise StorageError("cannot append entries covered by the snapshot")
