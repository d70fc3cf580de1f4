"""Which work of a Ready the shell may do before that Ready's log write is durable.

The shell's rule is "persist, then send, then apply" (:mod:`dafka.raft.ready`). Two
exceptions shorten the commit path without weakening it:

* A leader's AppendEntries may leave *before* its own fsync of the same entries (Raft
  thesis §10.2.1: the leader writes its log in parallel with replicating it). The leader
  counts its own log towards a commit, so this is safe only because the loop finishes
  this fsync before it handles any answer: a commit computed later counts only entries
  already durable here. It is not done when the Ready changes term or vote (they must
  be durable before any message of the new term), installs a snapshot or truncates.
* Committed entries that were durable here *before* this Ready (index at most the
  stored log's last index) may be applied, and their clients answered, before the new
  entries are written: their fsync does not delay those answers.
"""

from __future__ import annotations

import dataclasses

from .messages import AppendEntries
from .ready import Ready
from .types import HardState

__all__ = ["appends_first", "split_durable"]


def appends_first(rd: Ready, is_leader: bool, stored: HardState) -> tuple[AppendEntries, ...]:
    """The AppendEntries of ``rd`` a leader may send before persisting ``rd``."""
    if not is_leader or rd.snapshot is not None or rd.truncate_from is not None:
        return ()
    if rd.snapshot_chunks or (
        rd.hard_state is not None
        and (rd.hard_state.term, rd.hard_state.voted_for) != (stored.term, stored.voted_for)
    ):
        return ()
    return tuple(msg for msg in rd.messages if isinstance(msg, AppendEntries))


def split_durable(rd: Ready, stored_last: int) -> tuple[Ready | None, Ready]:
    """(what may be applied before persisting ``rd``, the rest): committed entries up to
    ``stored_last`` (the stored log's last index before ``rd``) go first."""
    entries = rd.committed_entries
    if rd.snapshot is not None or not entries or not rd.entries or entries[0].index > stored_last:
        return None, rd
    k = next((k for k, e in enumerate(entries) if e.index > stored_last), len(entries))
    early = dataclasses.replace(rd, committed_entries=entries[:k], read_states=())
    return early, dataclasses.replace(rd, committed_entries=entries[k:])
