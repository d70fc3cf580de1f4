"""How much one FETCH answer holds under the signed profile, for both of its ends.

A store or producer answers a signed FETCH with at most :data:`ANSWER_BATCHES` batches
and at most :data:`ANSWER_BYTES` bytes of batch blobs, whatever ``count`` asks for: it
sends batches from the one holding the asked offset on, and stops after the batch that
reaches either bound (one batch always goes out, even a 16 MiB one). A requester that
wants more FETCHes again from where the answer ended, as soon as its last batch
arrives. A count of 2^32 - 1 costs a store one answer, and one answer in flight per
partition and requester is what lets a store's byte-safe data XPUB queue hold a reading
consumer's answers (``docs/wire.md`` §11.6, :mod:`dafka.store._credits`).

The requester sees where an answer was cut without any marker on the wire: it counts
the batches it receives from the offset it asked for, in offset order, by the same
rule (:class:`AnswerCursor`). Served blobs are the producer's, verbatim, so both ends
count the same bytes. The rfc46 profile answers ``count`` records exactly (interop
with the C reference) and is not cut. Pure: no clock, no socket.
"""

from __future__ import annotations

__all__ = ["ANSWER_BATCHES", "ANSWER_BYTES", "FETCH_COUNT", "AnswerCursor", "answer_full"]

ANSWER_BATCHES = 8
"""Batches in one signed FETCH answer, at most: a store's credit per requester
(:mod:`dafka.store._credits`, half its data XPUB's 16 messages), so a whole answer
goes out at once and the next FETCH frees it. Each answer costs a round trip, so small
batches would want more: 100,000 records in batches of 16 caught up in 0.92 s with 8,
0.70 s with 32, 0.65 s with 64 (``docs/security.md``)."""
ANSWER_BYTES = 8 * 1024 * 1024
"""Bytes of batch blobs in one signed FETCH answer: it ends after the batch that reaches
this (a larger batch goes out alone)."""
FETCH_COUNT = 100_000
"""The count a consumer puts in a signed FETCH, at least (``fetch_window`` if larger), so
that the answer's bound cuts it rather than the count: stores and producers answer at
most ``max_fetch_count`` (100,000 by default) records of one FETCH. With a count of
``fetch_window`` (10,000) an answer of 8,192-record batches held two, and a catch-up
paid a round trip every two: 1,000,000 x 100 B caught up at 6.75M records/s, 8.54M with
this (medians of 5 alternating runs, ``benchmarks/throughput.py``)."""


def answer_full(batches: int, nbytes: int) -> bool:
    """Whether an answer of ``batches`` batches and ``nbytes`` bytes is complete."""
    return batches >= ANSWER_BATCHES or nbytes >= ANSWER_BYTES


class AnswerCursor:
    """The requester's count of one FETCH answer, to tell where it was cut.

    ``cursor`` is the next offset the answer carries; :meth:`take` counts a batch that
    holds it (a copy from any source counts once, at its place in offset order).
    """

    __slots__ = ("batches", "cursor", "nbytes")

    def __init__(self, start: int) -> None:
        self.cursor = start
        self.batches = 0
        self.nbytes = 0

    @property
    def full(self) -> bool:
        """The answer reached its bound: nothing at or after :attr:`cursor` follows."""
        return answer_full(self.batches, self.nbytes)

    def take(self, first: int, last: int, size: int) -> bool:
        """Count the batch ``[first, last]`` of ``size`` bytes if it holds the cursor; True
        if that made the answer full (it ended there: FETCH again from :attr:`cursor`)."""
        if self.full or not first <= self.cursor <= last:
            return False
        self.cursor = last + 1
        self.batches += 1
        self.nbytes += size
        return self.full
