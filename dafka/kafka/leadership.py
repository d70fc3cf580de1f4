"""Who leads what: which listener writes each numbered partition and coordinates each group.

:class:`Leadership` is what the backend asks; :class:`SoleListener` is the single-listener
answer (this listener leads every partition and every group). The lease keeper
(``dafka.kafka.leases``) answers the same questions from leases kept in the metadata.
"""

from __future__ import annotations

from typing import Protocol

from .model import Broker

__all__ = ["Leadership", "SoleListener"]


class Leadership(Protocol):
    """Thread-safe answers about leadership; ``now`` is ``time.monotonic()``."""

    def leads(self, topic: str, index: int, now: float) -> bool:
        """Whether this listener may write Kafka partition ``index`` of ``topic`` now."""
        ...

    def leader(self, topic: str, index: int) -> Broker | None:
        """The listener that writes the partition (None: nobody holds it now)."""
        ...

    def group_coordinator(self, group: str) -> Broker | None:
        """The listener that coordinates ``group`` (None: none can now)."""
        ...

    def brokers(self) -> list[Broker]:
        """The live listeners, this one first."""
        ...


class SoleListener:
    """Single-listener mode: ``me`` leads every partition and coordinates every group."""

    def __init__(self, me: Broker) -> None:
        self.me = me

    def leads(self, topic: str, index: int, now: float) -> bool:
        return True

    def leader(self, topic: str, index: int) -> Broker | None:
        return self.me

    def group_coordinator(self, group: str) -> Broker | None:
        return self.me

    def brokers(self) -> list[Broker]:
        return [self.me]
