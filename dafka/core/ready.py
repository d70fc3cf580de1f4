"""The one contract between a node core and its shell (etcd raft's ``Ready``).

Every node core (producer, consumer, store; the Raft peer has its own
:class:`dafka.raft.core.Ready` of the same shape) is driven the same way::

    core.step(message, now)     # a message from a peer
    core.tick(now)              # time passed
    core.command(..., now)      # the application asked for something
    while core.has_ready():
        rd = core.ready()
        # 1. persist rd.persist (fsync when rd.must_sync): nothing below happens
        #    before it is durable; if it fails, none of 2-3 happens and
        #    core.advance(rd, failed=error) tells the core
        # 2. publish rd.publish on the data socket
        # 3. deliver rd.deliver to the application, then resolve rd.resolve
        # 4. core.advance(rd)

The order *persist, then publish, then deliver/resolve* is written once, in
:func:`dafka.io.ready_shell.run_ready`; a shell may run step 1 on a writer thread
(:class:`dafka.io.ready_writer.ReadyWriter`), steps 2-4 then run on the loop thread
once the write is reported. Cores never read the clock: ``now`` comes in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .effects import Outgoing

__all__ = ["Persister", "Ready", "ReadyCore", "Resolve"]


@dataclass(frozen=True, slots=True)
class Resolve:
    """Complete ``future`` with ``result``, or fail it with ``error`` when that is set."""

    future: Any
    result: Any = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class Ready:
    """One batch of work for the shell, executed in field order.

    * ``persist``: writes for the node's :class:`Persister` (opaque to the shell);
    * ``must_sync``: fsync them before anything below leaves;
    * ``publish``: effects for the data socket;
    * ``deliver``: items for the application, in order;
    * ``resolve``: futures to complete, after ``deliver``.
    """

    persist: tuple[Any, ...] = ()
    must_sync: bool = False
    publish: tuple[Outgoing, ...] = ()
    deliver: tuple[Any, ...] = ()
    resolve: tuple[Resolve, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.persist or self.publish or self.deliver or self.resolve)


class ReadyCore(Protocol):
    """What the shell needs of a core, beyond its own ``step``/``tick``/``command``."""

    def has_ready(self) -> bool: ...

    def ready(self) -> Ready: ...

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        """``rd`` was executed (``failed``: its persist raised, nothing else of it ran)."""
        ...


class Persister(Protocol):
    """Makes a Ready's ``persist`` durable; raises :class:`dafka.errors.StorageError`."""

    def persist(self, writes: Sequence[Any], sync: bool) -> None: ...
