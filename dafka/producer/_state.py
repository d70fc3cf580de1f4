"""What the producer's facade and its IO-thread half share (:class:`ProducerState`).

:class:`~dafka.producer._facade.Producer` (the application's threads) builds it, and
:class:`~dafka.producer._io._ProducerHandler` (the IO thread) is given it: neither
reaches into the other's private attributes. Who writes what:

* ``config``, ``towers``, ``journal``, ``acked_journal``, ``wal``: set once, before the
  IO thread starts (the files are written on the IO thread only, closed by the facade
  once it has stopped);
* ``budget`` (thread-safe): the facade reserves in it, the IO thread tells it what was
  acknowledged (``released``), what failed (``rejected``) and that it stopped;
* ``log_wait`` (thread-safe, durable mode): ``send`` waits in it, the IO thread tells it
  what is logged;
* ``loop``: set by the facade once the node loop exists (the IO thread reads whether a
  tower welcomed it, to say why nothing is acknowledged).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..config import ProducerConfig
from ..storage.state_dir import OffsetJournal
from ._durable import LogWait
from ._wal import ProducerLog

if TYPE_CHECKING:
    from ..io.node import NodeLoop

__all__ = ["Accounts", "ProducerState"]


class Accounts(Protocol):
    """The records' accounts the IO thread keeps up to date
    (:class:`~dafka.producer._budget.UnackedBudget`)."""

    def released(self, count: int, size: int) -> None:
        """``count`` records of ``size`` bytes were acknowledged."""
        ...

    def rejected(self, count: int, size: int, error: BaseException) -> None:
        """``count`` records of ``size`` bytes failed: counted for ``flush`` and ``close``."""
        ...

    def io_stopped(self) -> None:
        """The IO thread ended: ``send`` raises instead of waiting."""
        ...


@dataclass(eq=False, slots=True)
class ProducerState:
    """The facade's and the IO thread's shared state (see the module's docstring)."""

    config: ProducerConfig
    budget: Accounts
    towers: Sequence[object] = ()
    journal: OffsetJournal | None = None
    """Next offsets, reserved before anything is published (state directory only)."""
    acked_journal: OffsetJournal | None = None
    """How far each topic is acknowledged, written before futures resolve."""
    wal: ProducerLog | None = None
    """Durable mode's log of what was published and is not acknowledged yet."""
    log_wait: LogWait = field(default_factory=LogWait)
    loop: NodeLoop | None = None

    @property
    def durable(self) -> bool:
        """Whether ``send`` returns only once its records are logged."""
        return self.wal is not None
