"""Request-id dedup with expiry, a part of :class:`~dafka.raft.core.RaftCore`.

Every proposed entry carries a 12-byte request id (:mod:`dafka.raft.codec._reqid`) whose
first 4 bytes are its creation time in seconds. :class:`RequestIds` remembers the index
and term of every id in the log, so that a client's resend is answered with the
original entry (``duplicate=True``) instead of appending it twice, and refuses an id
older than the TTL (``EXPIRED``): once it is that old it may have been forgotten. The
core tells it what entered the log (:meth:`RequestIds.note`), what was cut from it
(:meth:`~RequestIds.forget`) and what a snapshot replaced (:meth:`~RequestIds.keep_through`).

Time is the requests' own: the clock is the newest of the ``now`` of the proposals and
the stamps of the ids seen, and nothing here reads a wall clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..codec import (
    REQID_SIZE,
    ZERO_REQID,
    Entry,
    EntryType,
    RaftWireError,
    new_entry,
    reqid_expired,
)
from ._ready import ProposeResult, ProposeStatus, accepted_result

__all__ = ["PRUNE_AT_LEAST", "RequestIds"]

PRUNE_AT_LEAST = 1024
"""Ids held before the first look for expired ones (then twice what the last look kept)."""


class RequestIds:
    """The request ids of the log: ``reqid -> (index, term)``; see the module docstring."""

    __slots__ = ("_prune_after", "_prune_at", "clock", "ids", "ttl")

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.ids: dict[bytes, tuple[int, int]] = {}
        self.clock = 0.0
        """The newest time seen: a proposal's ``now`` or an id's stamp."""
        self._prune_at = PRUNE_AT_LEAST
        self._prune_after = 0.0  # see prune

    def __contains__(self, reqid: bytes) -> bool:
        return reqid in self.ids

    def __len__(self) -> int:
        return len(self.ids)

    def check(self, reqid: bytes, now: float, commit: int) -> ProposeResult | None:
        """The answer to a proposal of ``reqid`` at ``now`` if it is not to be appended (a
        duplicate, or expired), else None. Raises :class:`RaftWireError` for an id that is
        not 12 bytes."""
        if len(reqid) != REQID_SIZE:
            raise RaftWireError(f"a reqid is {REQID_SIZE} bytes, got {len(reqid)}")
        seen = self.ids.get(reqid)
        if seen is not None:
            return ProposeResult(ProposeStatus.ACCEPTED, seen[0], seen[1], duplicate=True)
        if reqid_expired(reqid, now, self.ttl):
            return ProposeResult(ProposeStatus.EXPIRED)
        self.clock = max(self.clock, now)
        self.prune_if_due(commit)
        return None

    def admit_many(
        self,
        items: Sequence[tuple[bytes, bytes]],
        now: float,
        last_index: int,
        term: int,
        commit: int,
    ) -> tuple[list[ProposeResult], list[Entry]]:
        """:meth:`check` for every ``(data, reqid)`` of ``items``, inline (one length check,
        one stamp per id): one result per item (a bad reqid is ``ARGUMENT_ERROR`` for
        that item only), and the new STATE entries, numbered from ``last_index + 1`` at
        ``term``, already noted (a resend within the batch is a duplicate at once)."""
        results: list[ProposeResult] = []
        added: list[Entry] = []
        index, reqids = last_index, self.ids
        clock, ttl, state = self.clock, self.ttl, EntryType.STATE
        for data, reqid in items:
            if len(reqid) != REQID_SIZE:
                error = f"a reqid is {REQID_SIZE} bytes, got {len(reqid)}"
                results.append(ProposeResult(ProposeStatus.ARGUMENT_ERROR, error=error))
            elif (seen := reqids.get(reqid)) is not None:
                results.append(ProposeResult(ProposeStatus.ACCEPTED, *seen, duplicate=True))
            elif now - (stamp := int.from_bytes(reqid[:4], "big")) >= ttl:
                results.append(ProposeResult(ProposeStatus.EXPIRED))
            else:
                index += 1
                added.append(new_entry(index, term, state, reqid, data))
                reqids[reqid] = (index, term)  # note's work: a resend in the batch
                if stamp > clock:  # is a duplicate at once
                    clock = stamp
                results.append(accepted_result(index, term))
        if added:
            self.clock = max(clock, now)
            self.prune_if_due(commit)
        return results, added

    def note(self, entries: Sequence[Entry]) -> None:
        """``entries`` entered the log (every entry a follower gets: locals, one clock
        update)."""
        reqids, clock = self.ids, self.clock
        for entry in entries:
            reqid = entry.reqid
            if reqid != ZERO_REQID:
                reqids.setdefault(reqid, (entry.index, entry.term))
                stamp = int.from_bytes(reqid[:4], "big")  # reqid_time, inline: per entry
                if stamp > clock:
                    clock = float(stamp)
        self.clock = clock

    def forget(self, removed: Sequence[Entry]) -> None:
        """``removed`` were truncated from the log."""
        for entry in removed:
            if self.ids.get(entry.reqid, (0, 0))[0] == entry.index:
                del self.ids[entry.reqid]

    def keep_through(self, index: int) -> None:
        """A snapshot at ``index`` replaced the log: forget the ids of later entries."""
        self.ids = {r: v for r, v in self.ids.items() if v[0] <= index}

    def prune_if_due(self, commit: int) -> None:
        """:meth:`prune` once enough ids are held (a follower forgets what a leader would)."""
        if len(self.ids) >= self._prune_at:
            self.prune(commit)

    def prune(self, commit: int) -> None:
        """Forget committed reqids past their TTL (they would be refused as expired); no
        scan until the oldest reqid the last scan kept can have expired."""
        reqids, horizon = self.ids, self.clock - self.ttl
        if self.clock >= self._prune_after:
            oldest = None
            for reqid, (index, _) in list(reqids.items()):
                stamp = int.from_bytes(reqid[:4], "big")  # reqid_time
                if index <= commit and stamp <= horizon:
                    del reqids[reqid]
                elif oldest is None or stamp < oldest:
                    oldest = stamp
            self._prune_after = 0.0 if oldest is None else oldest + self.ttl
        self._prune_at = max(PRUNE_AT_LEAST, 2 * len(reqids))
