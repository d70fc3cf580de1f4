"""How far a peer message may raise a Raft core's term (:class:`TermCeiling`).

Part of the deterministic core (:mod:`dafka.raft.core._core`): time is ticks, and log lines are
counted, not timed.
"""

from __future__ import annotations

import logging

from ..codec import MAX_TERM

__all__ = ["TERM_RISE_PER_TICK", "TERM_WINDOW", "TermCeiling"]

log = logging.getLogger(__name__)

TERM_WINDOW = 1 << 32
"""How far above the term a peer started with (or last reached by its own campaign) a
message may take it at once."""
TERM_RISE_PER_TICK = 4
"""How much that ceiling rises per tick, over and above the window."""


class TermCeiling:
    """The highest term a peer message may make us adopt (issue 10: a configured peer
    sent terms up to 2**56 - 1, after which no peer could campaign again).

    Terms legitimately rise only by elections, and an election needs an election
    timeout (pre-vote: a majority that has not heard from a leader), so the term of a
    cluster rises by a few per election timeout at the very most. The ceiling is the
    term this peer started with plus :data:`TERM_WINDOW`, rising by
    :data:`TERM_RISE_PER_TICK` per tick and never below our own term (our own
    campaigns move it). A message above it is dropped, which Raft tolerates as a lost
    message: a peer that is far behind catches up as the ceiling rises. A peer that
    pushes our term to the ceiling again and again gains at most the rise per tick, so
    reaching :data:`~dafka.raft.codec.MAX_TERM` (4 billion plus 2**56 / 4 ticks)
    takes millions of years. Pure: time is ticks, and log lines are counted, not timed
    (the 1st, 2nd, 4th, 8th... refusal is logged).
    """

    __slots__ = ("ceiling", "peer_id", "refused", "_exhausted")

    def __init__(self, peer_id: str, term: int) -> None:
        self.peer_id = peer_id
        self.ceiling = min(MAX_TERM, term + TERM_WINDOW)
        self.refused = 0
        self._exhausted = 0

    def tick(self) -> None:
        if self.ceiling < MAX_TERM:
            self.ceiling = min(MAX_TERM, self.ceiling + TERM_RISE_PER_TICK)

    def admits(self, term: int, our_term: int, sender: str) -> bool:
        """Whether a message at ``term`` may raise our term (``our_term``) to it."""
        self.ceiling = max(self.ceiling, our_term)
        # guard: raft-term-ceiling-what-peer
        if term <= self.ceiling:
            return True
        self.refused += 1
        if self.refused & (self.refused - 1) == 0:
            log.warning(
                "raft.term.refused id=%s frm=%s term=%d ceiling=%d our_term=%d count=%d "
                "(a term jump no election can make: a faulty or hostile peer)",
                self.peer_id,
                sender,
                term,
                self.ceiling,
                our_term,
                self.refused,
            )
        return False

    def may_campaign(self, our_term: int) -> bool:
        """False once our term is :data:`MAX_TERM` (no entry could hold a higher one),
        with a logged error: this peer can no longer be elected."""
        if our_term < MAX_TERM:
            return True
        self._exhausted += 1
        if self._exhausted & (self._exhausted - 1) == 0:
            log.error(
                "raft.term.exhausted id=%s term=%d: this peer cannot campaign any more; "
                "the group needs a new log (dafka-raft peer with a fresh data directory)",
                self.peer_id,
                our_term,
            )
        return False
