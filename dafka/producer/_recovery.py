"""A restarted producer's recovery of the offsets it reserved but never saw acknowledged.

A producer reserves offsets durably (``dafka.storage.state_dir.OffsetJournal``) before it
publishes them, and records durably how far its partition was acknowledged
before it tells the application so. After a crash the offsets between the two,
``[acked, reserved)``, are of unknown fate: published and stored by some store,
published and lost, or never sent at all. Left alone they are a hole that
stores and consumers wait on for ever.

:class:`Recovery` settles one topic's range, sans IO (``docs/wire.md`` §12):

1. It FETCHes the range from whoever holds it (stores answer a FETCH addressed
   to the partition, the requester being the producer itself), again every
   ``resend`` seconds from where the contiguous run ends, until ``deadline``;
   under ``signed`` also as soon as an answer ends at its bound
   (:mod:`dafka.core.answers`), so a long range is not cut short by the deadline.
2. It keeps every batch that comes back and is genuinely its own (the profile
   verifies the signature and the key-to-partition binding first): a store can
   withhold a batch but cannot invent one.
3. When the run reaches ``reserved`` it is done; at the deadline it is done
   with what it has. The producer holds the recovered batches again (to serve
   FETCHes and count ACKs), and closes every hole left in the range with a
   signed gap statement (``signed``) so that every store and consumer moves
   past it alike, or, under ``rfc46``, which cannot sign one, continues
   numbering from the end of the run that starts at the acknowledged bound.

The acknowledged bound makes this safe: every offset below ``acked`` was
reported durable and is never declared a gap, and nothing at or above it was.

When the offset journal's last record could not be read back and was not clearly a
torn write (``OffsetJournal.in_doubt``), ``reserved`` is only a lower bound of what was
published: the recovery is then a *probe* (``probe=True``). It asks the stores past it
until the deadline and settles the range up to the end of the last batch of ours any
store answered with (at least ``reserved``), and the producer numbers nothing of that
topic before (issue 33). Its wait runs only while some store is connected to the producer
(:class:`~dafka.producer._runs.EarlierRuns`): one that asked nobody (every store down)
would number again what the lost reservation published, and the stores, back, would keep
the earlier records there for ever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..core.answers import AnswerCursor

__all__ = ["Recovery", "RecoveryResult"]

DEFAULT_WAIT = 3.0
"""Seconds a restarted producer asks stores for its unacknowledged range."""
PROBE_SPAN = 2**40
"""How far past the journal's bound a probe asks the stores (they answer what they hold)."""
RESEND = 0.5
"""Seconds between FETCHes while recovering (stores may still be connecting)."""
MAX_HELD = 4096
"""Batches out of order kept while recovering (each a verified batch of ours)."""
DEFAULT_BUDGET = 64 * 1024 * 1024
"""Bytes of recovered batches held at once. Past it, the oldest run recovered from the
start is let go: a store holds it, so it is neither held again nor closed, and recovery
goes on from its end (an old state directory may have no acknowledged bound at all)."""


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    """How a topic's range ``[start, reserved)`` was settled."""

    topic: str
    start: int
    reserved: int
    batches: tuple[tuple[int, int, bytes], ...] = field(repr=False)
    """``(first offset, count, content)`` recovered, in offset order, disjoint."""
    local: frozenset[int] = frozenset()
    """First offsets of the batches that came from the producer's own log (durable
    mode), not from a store: they must be published again."""

    @property
    def contiguous_end(self) -> int:
        """One past the run of recovered offsets that starts at :attr:`start`."""
        end = self.start
        for first, count, _ in self.batches:
            if first != end:
                break
            end += count
        return end

    def holes(self) -> list[tuple[int, int]]:
        """``(first, count)`` of every sub-range no store answered with, in order."""
        out: list[tuple[int, int]] = []
        at = self.start
        for first, count, _ in self.batches:
            if first > at:
                out.append((at, first - at))
            at = first + count
        if at < self.reserved:
            out.append((at, self.reserved - at))
        return out

    @property
    def recovered(self) -> int:
        return sum(count for _, count, _ in self.batches)

    @property
    def lost(self) -> int:
        """Offsets that were reserved (maybe published) but that no store answered with."""
        return self.reserved - self.start - self.recovered


class Recovery:
    """One topic's unacknowledged range being recovered (see the module docstring)."""

    __slots__ = (
        "_answer",
        "_batches",
        "_budget",
        "_bytes",
        "_local",
        "_next_fetch",
        "deadline",
        "floor",
        "reserved",
        "start",
        "topic",
    )

    def __init__(
        self,
        topic: str,
        start: int,
        reserved: int,
        budget: int = DEFAULT_BUDGET,
        *,
        paced: bool = False,
        probe: bool = False,
    ) -> None:
        """``paced``: answers end at their bound (the signed profile; rfc46 answers whole).
        ``probe``: ``reserved`` is only a lower bound (see the module docstring)."""
        self.floor: int | None = reserved if probe else None
        """A probe's lower bound of what was reserved (None: not a probe)."""
        if probe:
            reserved = min(reserved + PROBE_SPAN, 2**64 - 1)
        if not 0 <= start < reserved:
            raise ValueError(f"nothing to recover in [{start}, {reserved})")
        self.topic = topic
        self.start = start
        self.reserved = reserved
        self.deadline: float | None = None
        self._next_fetch: float | None = None
        self._batches: dict[int, tuple[int, bytes]] = {}
        self._local: set[int] = set()
        self._budget = budget
        self._bytes = 0
        self._answer = AnswerCursor(start) if paced else None

    def begin(self, now: float, wait: float) -> None:
        self.deadline = now + wait
        self._next_fetch = now

    @property
    def contiguous_end(self) -> int:
        """One past the last offset recovered contiguously from :attr:`start`."""
        end = self.start
        batches = self._batches
        while (held := batches.get(end)) is not None:
            end += held[0]
        return end

    def fetch_due(self, now: float) -> tuple[int, int] | None:
        """``(offset, count)`` to FETCH now, or None (not due, or nothing missing)."""
        if self._next_fetch is None or now < self._next_fetch:
            return None
        start = self.contiguous_end
        if start >= self.reserved:
            return None
        self._next_fetch = now + RESEND
        if self._answer is not None:
            self._answer = AnswerCursor(start)
        return start, self.reserved - start

    def offer(self, first: int, count: int, content: bytes, *, local: bool = False) -> bool:
        """Keep a batch of ours (already verified, or ``local``: read back from our own
        log) if it lies in the range; True if kept."""
        last = first + count - 1
        if first < self.start or last >= self.reserved or count < 1:
            return False
        if first in self._batches or (len(self._batches) >= MAX_HELD and not local):
            return False
        self._batches[first] = (count, content)
        self._bytes += len(content)
        if local:
            self._local.add(first)
        elif self._answer is not None and self._answer.take(first, last, len(content)):
            self._next_fetch = -math.inf  # the answer ended at its bound: ask again at once
        self._let_go()
        return True

    def _let_go(self) -> None:
        """Over the budget: forget the oldest batches of the run from :attr:`start` (but
        never our own log's, which must be published again)."""
        batches = self._batches
        while self._bytes > self._budget:
            held = batches.get(self.start)
            if held is None or self.start in self._local:
                return
            count, content = held
            del batches[self.start]
            self._bytes -= len(content)
            self.start += count

    def complete(self) -> bool:
        return self.floor is None and self.contiguous_end >= self.reserved

    def expired(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline

    def result(self) -> RecoveryResult:
        """Every batch recovered, in offset order (an overlapping one, which only a
        key used by two processes at once could sign, is dropped)."""
        out: list[tuple[int, int, bytes]] = []
        end = self.start
        for first in sorted(self._batches):
            count, content = self._batches[first]
            if first < end:
                continue
            out.append((first, count, content))
            end = first + count
        local = frozenset(f for f, _, _ in out if f in self._local)
        reserved = self.reserved
        if self.floor is not None:  # a probe: what was published ends at the last batch found
            reserved = max(self.floor, end, self.start)
        return RecoveryResult(self.topic, self.start, reserved, tuple(out), local)
