"""The in-memory Raft log of the core, and what of it the shell still has to persist.

Entries ``first_index .. last_index`` are held in memory; the entry at ``base_index``
(``first_index - 1``) was compacted into a snapshot or is the log's origin (0, term 0),
and only its term is kept so that AppendEntries right after it can be checked.

Persistence bookkeeping: entries up to ``_handed`` were given to the shell in a
:class:`~dafka.raft.core.Ready`; a conflict that removes handed entries records
``truncate_from`` so the next Ready tells the shell to drop them too.

Durability bookkeeping: entries up to :attr:`RaftLog.stable_index` are known durable
here. Each hand-over of entries is a numbered *write* (:meth:`RaftLog.take_unstable`);
the shell reports writes durable by number (:meth:`RaftLog.stable_to`), in order, a
report covering every earlier write. A report counts only for entries still in the log
as they were written: a truncation forgets the writes it cut into (their report, if it
comes, moves nothing) and lowers the stable index below the cut.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from ...errors import RaftError
from ..codec import Entry

__all__ = ["RaftLog"]


class RaftLog:
    __slots__ = (
        "_base_index",
        "_base_term",
        "_entries",
        "_handed",
        "_stable",
        "_truncate_from",
        "_write",
        "_writes",
    )

    def __init__(self, base_index: int = 0, base_term: int = 0, entries: Sequence[Entry] = ()):
        self._base_index = base_index
        self._base_term = base_term
        self._entries: list[Entry] = []
        for k, entry in enumerate(entries):
            if entry.index != base_index + 1 + k:
                raise RaftError(
                    f"log entries must follow index {base_index} without gaps, "
                    f"got {entry.index} at position {k}"
                )
            self._entries.append(entry)
        self._handed = self.last_index  # what we were given is already on disk
        self._stable = self.last_index
        self._truncate_from: int | None = None
        self._write = 0  # number of the last write handed out
        self._writes: deque[tuple[int, int, int]] = deque()  # (write, last index, its term)

    # -- reading -------------------------------------------------------------------------

    @property
    def base_index(self) -> int:
        return self._base_index

    @property
    def base_term(self) -> int:
        return self._base_term

    @property
    def first_index(self) -> int:
        return self._base_index + 1

    @property
    def last_index(self) -> int:
        return self._base_index + len(self._entries)

    @property
    def last_term(self) -> int:
        return self._entries[-1].term if self._entries else self._base_term

    def term(self, index: int) -> int | None:
        """The term at ``index``; ``None`` when compacted away or past the end."""
        if index == self._base_index:
            return self._base_term
        if self._base_index < index <= self.last_index:
            return self._entries[index - self._base_index - 1].term
        return None

    @property
    def stable_index(self) -> int:
        """The last index known durable here (reported by the shell)."""
        return self._stable

    def entry(self, index: int) -> Entry:
        if not self._base_index < index <= self.last_index:
            raise IndexError(index)
        return self._entries[index - self._base_index - 1]

    def slice(self, lo: int, hi: int) -> list[Entry]:
        """Entries ``lo <= index <= hi`` (clipped to what is held)."""
        lo = max(lo, self.first_index)
        hi = min(hi, self.last_index)
        if lo > hi:
            return []
        return self._entries[lo - self._base_index - 1 : hi - self._base_index]

    def is_up_to_date(self, last_index: int, last_term: int) -> bool:
        """§5.4.1: is a log ending at (last_index, last_term) at least as up to date as ours?"""
        mine = self.last_term
        return last_term > mine or (last_term == mine and last_index >= self.last_index)

    def find_conflict_by_term(self, index: int, term: int) -> int:
        """The largest ``i <= index`` (not below ``base_index``) with ``term(i) <= term``."""
        i = min(index, self.last_index)
        while i > self._base_index:
            t = self.term(i)
            if t is not None and t <= term:
                return i
            i -= 1
        return self._base_index

    # -- writing -------------------------------------------------------------------------

    def append(self, entries: Iterable[Entry]) -> None:
        held = self._entries
        follows = self._base_index + len(held) + 1
        batch = list(entries)
        # consecutive from ``follows``: one comparison of the batch's indexes, not a loop
        if [entry.index for entry in batch] != list(range(follows, follows + len(batch))):
            for entry in batch:  # which one does not follow
                if entry.index != follows:
                    raise RaftError(f"append at {entry.index} does not follow {follows - 1}")
                follows += 1
        held.extend(batch)

    def truncate(self, index: int) -> list[Entry]:
        """Drop entries ``>= index``; returns them."""
        if index <= self._base_index:
            raise RaftError(f"cannot truncate at {index}: compacted up to {self._base_index}")
        if index > self.last_index:
            return []
        removed = self._entries[index - self._base_index - 1 :]
        del self._entries[index - self._base_index - 1 :]
        if index <= self._handed:
            self._handed = index - 1
            if self._truncate_from is None or index < self._truncate_from:
                self._truncate_from = index
        self._stable = min(self._stable, index - 1)
        while self._writes and self._writes[-1][1] >= index:
            self._writes.pop()  # a late report of these must not count the new entries
        return removed

    def compact(self, upto: int) -> None:
        """Forget entries ``<= upto`` (keeping the term at ``upto``)."""
        if upto <= self._base_index:
            return
        if upto > self.last_index:
            raise RaftError(f"cannot compact to {upto}: the log ends at {self.last_index}")
        term = self.term(upto)
        assert term is not None
        del self._entries[: upto - self._base_index]
        self._base_index, self._base_term = upto, term
        self._handed = max(self._handed, upto)

    def restore(self, index: int, term: int) -> None:
        """Replace the whole log by a snapshot's position (the shell persists the snapshot)."""
        self._entries = []
        self._base_index, self._base_term = index, term
        self._handed = index
        self._truncate_from = None
        self._stable = min(self._stable, index)
        self._writes.clear()

    # -- persistence ---------------------------------------------------------------------

    def has_unstable(self) -> bool:
        return self._truncate_from is not None or self._handed < self.last_index

    def take_unstable(self) -> tuple[int | None, tuple[Entry, ...]]:
        """What the shell must persist now: (truncate_from, entries to append). When there
        are entries this is write number :attr:`last_write`."""
        truncate_from = self._truncate_from
        entries = tuple(self.slice(self._handed + 1, self.last_index))
        self._handed = self.last_index
        self._truncate_from = None
        if entries:
            self._write += 1
            self._writes.append((self._write, entries[-1].index, entries[-1].term))
        return truncate_from, entries

    @property
    def last_write(self) -> int:
        """The number of the last write :meth:`take_unstable` handed out (0: none yet)."""
        return self._write

    def stable_to(self, write: int) -> bool:
        """Write number ``write`` and every earlier one are durable; returns whether
        :attr:`stable_index` grew. A write a truncation cut into no longer counts."""
        if write > self._write:
            raise RaftError(f"write {write} reported durable, only {self._write} handed out")
        last = None
        while self._writes and self._writes[0][0] <= write:
            last = self._writes.popleft()
        if last is None:
            return False
        _, index, term = last
        if index <= self._stable or self.term(index) != term:
            return False
        self._stable = index
        return True
