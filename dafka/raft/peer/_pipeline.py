"""Which work of a Ready the shell may do before that Ready's log write is durable.

The shell's rule is "persist, then send, then apply" (:mod:`dafka.raft.core._ready`). Two
exceptions shorten the commit path without weakening it:

* A leader's Ready that only appends (:func:`plain`: no term or vote change, no
  truncation, no snapshot) may be sent and applied *before* its own fsync: the peer hands
  that fsync to a thread (:mod:`dafka.raft.peer._logsync`) and reports it durable to the core
  later (Raft thesis §10.2.1: the leader writes its log in parallel with replicating it).
  The core counts the leader's own log towards a commit only up to what was reported
  durable, so every commit still stands on a majority of durable copies, and the
  messages of such a Ready depend on no new term or vote. With ``fsync`` off, or in any
  other Ready, the shell persists first (waiting for the thread), and may still send the
  leader's AppendEntries first (:func:`appends_first`).
* A follower's :func:`plain` Ready is written at once and fsynced on the same thread too,
  but its messages (the acknowledgements) are held until the thread reports every write
  before them durable: a follower still acknowledges only what is durable. Its committed
  entries (durable on a majority already) are applied at once.
* Committed entries that were durable here *before* this Ready (index at most the
  stored log's last index) may be applied, and their clients answered, before the new
  entries are written: their fsync does not delay those answers.
"""

from __future__ import annotations

from ..codec import HardState
from ..core import AppendEntries, Ready

__all__ = ["appends_first", "plain", "split_durable"]


def plain(rd: Ready, stored: HardState) -> bool:
    """Does ``rd`` only append (and move the commit index)? No term or vote change
    (``stored`` is the durable hard state), no truncation, no snapshot."""
    if rd.snapshot is not None or rd.truncate_from is not None or rd.snapshot_chunks:
        return False
    hs = rd.hard_state
    return hs is None or (hs.term, hs.voted_for) == (stored.term, stored.voted_for)


def appends_first(rd: Ready, is_leader: bool, stored: HardState) -> tuple[AppendEntries, ...]:
    """The AppendEntries of ``rd`` a leader may send before persisting ``rd``: those of a
    :func:`plain` Ready."""
    if not (is_leader and plain(rd, stored)):
        return ()
    return tuple(msg for msg in rd.messages if isinstance(msg, AppendEntries))


def split_durable(rd: Ready, stored_last: int) -> tuple[Ready | None, Ready]:
    """(what may be applied before persisting ``rd``, the rest): committed entries up to
    ``stored_last`` (the stored log's last index before ``rd``) go first."""
    entries = rd.committed_entries
    if rd.snapshot is not None or not entries or not rd.entries or entries[0].index > stored_last:
        return None, rd
    k = next((k for k, e in enumerate(entries) if e.index > stored_last), len(entries))
    return rd.applying(entries[:k], ()), rd.applying(entries[k:], rd.read_states)
