"""What a leader knows about each follower's log (etcd's tracker.Progress, our own take).

States:

* ``PROBE``: the leader does not know where the logs agree; it sends one
  AppendEntries at a time (``paused`` until a response or the next heartbeat) and
  walks ``next`` back on rejections.
* ``REPLICATE``: the logs agree up to ``match``; entries are pipelined, at most
  ``max_inflight`` AppendEntries with entries unanswered (``inflight`` holds the last
  index of each). A round without progress puts the follower back into ``PROBE``.
* ``SNAPSHOT``: the entries the follower needs were compacted; the leader streams the
  snapshot ``snap_index`` chunk by chunk from ``snap_offset``, one chunk at a time.

A follower may truncate its log at ``prev + 1`` on every AppendEntries (the ØMQ RAFT
reference server does, and dies when that is below its commit index). So the leader
never sends one behind the last it sent (``sent_last``: heartbeats, probes sent again
and the first one after a probe matched all resume there), except right after a
rejection (``rewind``), which proves the follower's log ends before it; rejections of
AppendEntries sent before that re-probe (``seq < reset_seq``) are stale, and so are, in
``PROBE``, those at another ``prev`` than ``next - 1``, but for the re-probe's own
(``probe_prev``): heartbeats sent while it is unanswered resume at ``sent_last``.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field

__all__ = ["Progress", "ProgressState"]


class ProgressState(enum.Enum):
    PROBE = "probe"
    REPLICATE = "replicate"
    SNAPSHOT = "snapshot"


@dataclass(slots=True)
class Progress:
    next: int
    match: int = 0
    state: ProgressState = ProgressState.PROBE
    learner: bool = False
    """Not a voter (a learner, or a peer being removed)."""
    paused: bool = False
    inflight: deque[int] = field(default_factory=deque)
    recent_active: bool = True
    """Heard from in the current check-quorum window."""
    acked_seq: int = 0
    """Highest AppendEntries ``seq`` answered in this term (ReadIndex rounds)."""
    progressed: bool = False
    """``match`` moved since the last heartbeat."""
    stalled: int = 0
    """Heartbeats in a row with entries in flight and no progress (2 → re-probe)."""
    snap_index: int = 0
    snap_term: int = 0
    snap_offset: int = 0
    sent_last: int = 0
    """Last index of the newest AppendEntries sent (the follower's log end if it got it)."""
    rewind: bool = False
    """A rejection proved the follower's log ends before ``sent_last``: the next
    AppendEntries may go back to ``next - 1``."""
    reset_seq: int = 0
    """Rejections of AppendEntries with a lower ``seq`` predate the last re-probe."""
    probe_prev: int = -1
    """``prev`` of the last re-probe (the first AppendEntries after a rewind). Its
    rejection is not stale although heartbeats sent since resumed at ``sent_last``."""

    def note_sent(self, last_index: int) -> None:
        self.sent_last, self.rewind = last_index, False

    def maybe_update(self, index: int) -> bool:
        """The follower has our log up to ``index``; returns whether ``match`` grew."""
        if index > self.match:
            self.match = index
            self.progressed = True
            self.next = max(self.next, index + 1)
            return True
        self.next = max(self.next, index + 1)
        return False

    def become_probe(self, next_index: int | None = None) -> None:
        if next_index is None:
            next_index = self.match + 1
            if self.state is ProgressState.SNAPSHOT:
                next_index = max(next_index, self.snap_index + 1)
        self.state = ProgressState.PROBE
        self.next = max(next_index, self.match + 1)
        self.paused = False
        self.inflight.clear()

    def become_replicate(self) -> None:
        self.state = ProgressState.REPLICATE
        self.next = self.match + 1
        self.paused = False
        self.inflight.clear()

    def become_snapshot(self, index: int, term: int) -> None:
        self.state = ProgressState.SNAPSHOT
        self.snap_index = index
        self.snap_term = term
        self.snap_offset = 0
        self.paused = False
        self.inflight.clear()

    def sent(self, last_index: int, has_entries: bool) -> None:
        """Book an AppendEntries ending at ``last_index``."""
        if self.state is ProgressState.REPLICATE:
            if has_entries:
                self.inflight.append(last_index)
                self.next = last_index + 1
        elif self.state is ProgressState.PROBE:
            self.paused = True

    def acked(self, last_index: int) -> None:
        while self.inflight and self.inflight[0] <= last_index:
            self.inflight.popleft()

    def is_paused(self, max_inflight: int) -> bool:
        if self.state is ProgressState.PROBE:
            return self.paused
        if self.state is ProgressState.REPLICATE:
            return len(self.inflight) >= max_inflight
        return True
