"""The consumer's reorder buffers: verified batches that arrived ahead of delivery.

Each partition keeps its own (``PartitionState.buffer``: first offset -> the batch,
``buffer_ends``: last offset -> first, ``held_bytes``); :class:`ReorderBuffers` is
the only thing that puts a batch in or takes one out, so the byte bounds hold: a
batch costs its wire size plus ``HELD_OVERHEAD`` a record, at most
``max_buffered_bytes_per_partition`` per partition and ``max_buffered_bytes`` over all.
"""

from __future__ import annotations

from ._partition import Held
from ._partition import PartitionState as _Partition

__all__ = ["ReorderBuffers"]


class ReorderBuffers:
    """The byte bounds over every partition's reorder buffer, and the buffers' edits."""

    def __init__(self, max_held: int, max_held_part: int) -> None:
        self._max_held = max_held
        self._max_held_part = max_held_part
        self._held_bytes = 0

    @property
    def held_bytes(self) -> int:
        """What the reorder buffers hold, over all partitions, as the byte bounds count it."""
        return self._held_bytes

    def room(self, p: _Partition, size: int) -> bool:
        """Whether a batch of ``size`` bytes (see ``HELD_OVERHEAD``) may wait out of order
        within the byte bounds: ``max_buffered_bytes_per_partition`` for ``p`` and
        ``max_buffered_bytes`` over all partitions. One not kept is fetched again when
        delivery reaches it (a self-signed flood skipping offset 0 pins no more)."""
        # guard: consumer-reorder-buffer-bounded-bytes
        return (
            p.held_bytes + size <= self._max_held_part and self._held_bytes + size <= self._max_held
        )

    def hold(self, p: _Partition, first: int, last: int, held: Held) -> None:
        """Keep a batch ``[first, last]`` in ``p``'s buffer (``room`` said there is room)."""
        p.buffer[first] = held
        p.buffer_ends[last] = first
        p.held_bytes += held[4]
        self._held_bytes += held[4]

    def unbuffer(self, p: _Partition, first: int) -> Held | None:
        """Take the batch buffered at ``first`` out of ``p``'s reorder buffer (if any)."""
        held = p.buffer.pop(first, None)
        if held is not None:
            p.buffer_ends.pop(first + held[0] - 1, None)
            p.held_bytes -= held[4]
            self._held_bytes -= held[4]
        return held

    def drop(self, p: _Partition) -> None:
        """Forget everything ``p`` holds out of order (call before forgetting ``p``)."""
        p.buffer.clear()
        p.buffer_ends.clear()
        self._held_bytes -= p.held_bytes
        p.held_bytes = 0

    def below(self, p: _Partition, offset: int) -> None:
        """Forget the buffered batches of ``p`` that start below ``offset``."""
        for first in [f for f in p.buffer if f < offset]:
            self.unbuffer(p, first)

    def prune(self, p: _Partition) -> None:
        """Forget buffered batches that start below the delivery point (they overlap it).

        Batches of one partition have the same boundaries whoever serves them,
        so this only happens with equivocating producers; what they held is
        fetched again from ``next``.
        """
        self.below(p, p.next)
