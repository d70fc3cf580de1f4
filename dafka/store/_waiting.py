"""What arrives while a store's commit is in flight (:class:`WaitingDrain`).

A store core ingests a drain only once the commit before it is reported (its heads are
those of the last commit until then). What arrives meanwhile is gathered into one
waiting drain, each piece verified ahead (``StoreIngest.verify_ahead``), and ingested as
one once the commit is reported: group commit. The shell bounds it (it stops reading
while the drain is as big as one drain may be). Pure: no clock, no socket.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import overload

from ..core import messages as m
from ..core.read_guard import Sender
from ._state import SenderSources

__all__ = ["MESSAGE_OVERHEAD", "DrainSources", "WaitingDrain"]

_CARRIERS = (m.Record, m.DirectRecord)
"""The messages with content (the others are counted for ``MESSAGE_OVERHEAD`` only)."""
MESSAGE_OVERHEAD = 64
"""Bytes a waiting message is counted for besides its content (a HEAD, a FETCH)."""


class DrainSources(Sequence[str]):
    """The sources of the pieces of a waiting drain, as one sequence (each piece's looked
    up only when asked for, see ``dafka.io.bounds.FrameSources``)."""

    __slots__ = ("_pieces", "_starts")

    def __init__(self) -> None:
        self._pieces: list[Sequence[str]] = []
        self._starts: list[int] = []

    def add(self, start: int, sources: Sequence[str]) -> None:
        self._pieces.append(sources)
        self._starts.append(start)

    def __len__(self) -> int:
        return self._starts[-1] + len(self._pieces[-1]) if self._pieces else 0

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not 0 <= index < len(self):
            raise IndexError(index)
        at = bisect.bisect_right(self._starts, index) - 1
        piece = self._pieces[at]
        offset = index - self._starts[at]
        return piece[offset] if offset < len(piece) else ""

    def sender(self, index: int) -> Sender | None:
        """The node whose connection message ``index`` came on (``FrameSources.sender``)."""
        if not 0 <= index < len(self):
            return None
        at = bisect.bisect_right(self._starts, index) - 1
        piece = self._pieces[at]
        if not isinstance(piece, SenderSources):
            return None
        return piece.sender(index - self._starts[at])


class WaitingDrain:
    """What arrived while a commit was in flight: one drain, verified piece by piece."""

    __slots__ = ("bytes", "checked", "msgs", "since", "sources")

    def __init__(self, since: float = 0.0) -> None:
        self.since = since
        """The time its first piece was received (the ACK latency measured from it)."""
        self.msgs: list[m.Message] = []
        self.sources = DrainSources()
        self.checked: dict[int, tuple[object, Exception | None]] = {}
        self.bytes = 0

    def add(
        self,
        msgs: Sequence[m.Message],
        sources: Sequence[str],
        checked: dict[int, tuple[object, Exception | None]],
    ) -> None:
        start = len(self.msgs)
        self.msgs.extend(msgs)
        self.sources.add(start, sources)
        for i, verdict in checked.items():
            self.checked[start + i] = verdict
        size = MESSAGE_OVERHEAD * len(msgs)
        for msg in msgs:
            if isinstance(msg, _CARRIERS):
                size += len(msg.content)
        self.bytes += size
