"""What a consumer remembers of the batches it took, to tell replays from equivocation.

A producer that signs two different batches for the same offsets can show one
to a single consumer (by DIRECT-RECORD) and the other to everyone else. The
consumer keeps, per partition, the signatures of the last few batches it
delivered or buffered: Ed25519 signatures are deterministic, so the same
content signed by the same key has the same signature, and a batch at those
offsets with another signature is either a forgery (it fails verification) or
equivocation. Remembering signatures costs no hashing on the fast path.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REMEMBERED_BATCHES", "BatchMemory", "ConsumerEquivocation"]

REMEMBERED_BATCHES = 8
"""Batches remembered per partition (older replays are dropped as duplicates unchecked)."""


@dataclass(frozen=True, slots=True)
class ConsumerEquivocation:
    """A second validly signed batch for offsets this consumer already took; it was dropped.

    ``delivered``: the first one's records were delivered already (the application saw
    a history that other nodes may contradict); otherwise they were only buffered.
    """

    topic: str
    partition: str
    first_offset: int
    last_offset: int
    kept_first: int
    kept_last: int
    delivered: bool
    at: float


class BatchMemory:
    """The last :data:`REMEMBERED_BATCHES` batches of one partition: first -> (last, sig)."""

    __slots__ = ("_batches",)

    def __init__(self) -> None:
        self._batches: dict[int, tuple[int, bytes]] = {}

    def remember(self, first: int, last: int, signature: bytes) -> None:
        batches = self._batches
        batches.pop(first, None)
        batches[first] = (last, signature)
        if len(batches) > REMEMBERED_BATCHES:
            del batches[next(iter(batches))]

    def conflict(self, first: int, last: int, signature: bytes) -> tuple[int, int] | None:
        """The remembered batch that ``[first, last]`` overlaps with other content, if any
        (same offsets and signature: a replay, ``None``)."""
        held = self._batches.get(first)
        if held is not None:
            return None if held == (last, signature) else (first, held[0])
        for h_first, (h_last, _) in self._batches.items():
            if h_first <= last and first <= h_last:
                return (h_first, h_last)  # another cut of remembered offsets
        return None
