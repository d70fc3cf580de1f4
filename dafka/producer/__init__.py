"""The producer: one package holding its core, its facade and its IO-thread half.

* the facade, :class:`Producer` (``_facade.py``), on the application's threads: ``send``,
  ``send_many``, ``flush``, ``close``; its set-up (``_setup.py``: identity, journals, the
  durable log, profile, trusted stores), the unacknowledged budget (``_budget.py``), why
  nothing was acknowledged (``_why.py``), durable mode's hand-off (``_durable.py``);
* the state both halves share, :class:`~dafka.producer._state.ProducerState`
  (``_state.py``): neither reaches into the other's attributes;
* the IO-thread half, ``_ProducerHandler`` (``_io.py``): the queue into batches (the
  linger, ``_linger.py``; what each send waits for, ``_inflight.py``), its durability
  orders (reserve offsets before publishing, log before publishing, the acked journal
  before futures resolve) as :class:`~dafka.core.ready.Ready` steps (``_ready.py``) run
  by :func:`~dafka.io.ready_shell.run_ready`; a state directory that cannot be written
  (``_disk.py``), the durable log (``_wal.py``);
* the core, :class:`ProducerCore` (``_core.py``), sans IO: numbering, holding batches
  until ``min_acks`` trusted stores acknowledged them, ACKs, HEADs; its FETCH answers
  within each requester's rates (``_serve.py``), a restart's recovery (``_recovery.py``)
  and what it closes of earlier runs (``_runs.py``).

The names below are imported when first used (PEP 562), as ``dafka``'s are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ._core import ProducerCore
    from ._facade import CloseResult, Producer

__all__ = ["ACKED_JOURNAL", "CloseResult", "Producer", "ProducerCore"]

ACKED_JOURNAL = "acked.journal"
"""The producer state's journal of the highest acknowledged offset (``<state>/acked.journal``)."""

_LAZY = {
    "CloseResult": "._facade",
    "Producer": "._facade",
    "ProducerCore": "._core",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
