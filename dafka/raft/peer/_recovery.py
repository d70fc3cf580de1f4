"""Protocol-aware recovery at start-up: what a peer does when its log lost fsynced entries.

:class:`~dafka.raft.peer.FileStorage` (opened with ``recover=True``) tells rot in a
complete, fsynced record from a torn write (:mod:`dafka.raft.codec._rot`) and reports the
entries it can no longer read (:attr:`~dafka.raft.peer.FileStorage.lost`), writing
nothing yet. The peer may have acknowledged them: a leader counted them towards a
commit, a client was told its change was stored. So (after "Protocol-Aware Recovery
for Consensus-Based Storage", Alagappan et al., FAST 2018):

* a peer whose other voters make a quorum records that it is recovering up to the last index it held
  (``raft/recovering``, durable before the log is cut) and starts with
  :attr:`RaftCore.recovering_to <dafka.raft.core.RaftCore.recovering_to>` set: it neither
  campaigns nor grants votes (real or pre-vote) until its log matches a leader's up to
  that index, so no election can lean on its shorter log; the others refill it;
* a peer without which the other voters are no quorum (its configuration's only voter,
  or one of two) can never be refilled (no leader can be elected without its vote) and,
  alone, would lead on a log without what it acknowledged: it refuses to start
  (:func:`check_lost_entries`) and writes nothing;
* ``accept_log_loss`` (``dafka-tower --accept-log-loss``) is the operator's explicit
  choice to drop the damaged entries and go on (an error line says what was dropped).
"""

from __future__ import annotations

import logging

from ...errors import StorageError
from ..core import RaftCore, Voters
from ._storage import FileStorage

__all__ = ["check_lost_entries"]

log = logging.getLogger(__name__)


def check_lost_entries(storage: FileStorage, core: RaftCore, accept_log_loss: bool) -> None:
    """Act on entries the storage lost to rot before the peer runs (see the module doc).
    Raises :class:`StorageError` (one line: what was lost and how to recover) for a lone
    voter unless ``accept_log_loss``."""
    to = storage.recovering_to
    if to is None:
        return
    if accept_log_loss:
        storage.accept_loss()
        core.recovering_to = None
        return
    if core.recovering_to is None:  # the log reached it before the mark was dropped
        if storage.lost is None:
            storage.end_recovery()
        return
    voters = Voters.of(core.config)
    others = voters.ids - {core.id}
    # guard: raft-log-lone-voter-lost
    if not voters.has_quorum(others):
        lost = storage.lost
        what = f"entries {lost.first}..{lost.last}" if lost else f"entries up to {to}"
        who = (
            "this peer is its group's only voter"
            if not others
            else f"the other voters ({', '.join(sorted(others))}) cannot elect a leader"
            " without this peer's vote"
        )
        raise StorageError(
            f"{storage.path}/log lost {what} to damage in records that were fsynced (and"
            f" may have been acknowledged), and {who}: nobody can refill them. Restore the"
            " data directory from a copy, or start with --accept-log-loss to drop them"
            " knowingly."
        )
    if storage.lost is not None:
        storage.begin_recovery()
    log.warning(
        "raft.peer.recovering id=%s recovering_to=%d last=%d voters=%d: no vote until"
        " a leader refills the log",
        core.id,
        to,
        core.last_index,
        len(voters.ids),
    )
