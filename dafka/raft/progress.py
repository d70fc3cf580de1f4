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

Followers that truncate at ``prev + 1`` (the ØMQ RAFT reference server does, on every
AppendEntries, and dies when that is below its commit index) are safe because:

* since the last re-probe (``reset_seq``), the ``prev`` of what the leader sends never
  goes down: heartbeats go at ``next - 1`` (never behind what is in flight), a stall
  re-probes at ``next``, and only a fresh rejection, which proves where the follower's
  log ends, moves ``next`` back; older rejections are stale;
* an AppendEntries never tells a commit index above what the follower will hold at its
  ``prev`` once it is processed, so no later ``prev`` is below the follower's commit;
* an acknowledgement only proves entries no later AppendEntries can have truncated:
  :meth:`Progress.proven` clamps it to the shortest ``last`` sent after it (``ends``).
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field

__all__ = ["Progress", "ProgressState"]

_ENDS_CAP = 64


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
    reset_seq: int = 0
    """Rejections of AppendEntries with a lower ``seq`` predate the last re-probe: stale."""
    ends: deque[tuple[int, int]] = field(default_factory=deque)
    """``(seq, last index)`` of AppendEntries sent, kept as suffix minima of ``last``."""

    def note_sent(self, seq: int, last_index: int) -> None:
        """Remember an AppendEntries ``seq`` ending at ``last_index`` (for :meth:`proven`)."""
        ends = self.ends
        while ends and ends[-1][1] >= last_index:
            ends.pop()  # a later, shorter one bounds every query the longer one did
        ends.append((seq, last_index))
        if len(ends) > _ENDS_CAP:  # merge the two oldest, conservatively
            _, first = ends.popleft()
            second, _ = ends.popleft()
            ends.appendleft((second, first))

    def proven(self, seq: int, last_index: int) -> int:
        """How much of our log a success answer to AppendEntries ``seq`` still proves: a
        follower that truncates at ``prev + 1`` keeps only up to the ``last`` of any
        shorter AppendEntries sent after it."""
        for sent, last in self.ends:
            if sent > seq:
                return min(last_index, last)
        return last_index

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
        """Probe at ``next_index``; by default where we are (never behind what was sent)."""
        if next_index is None:
            next_index = self.next
            if self.state is ProgressState.SNAPSHOT:
                next_index = max(self.match + 1, self.snap_index + 1)
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
