"""What node cores return: messages to publish and events for the application.

Cores never touch sockets; the IO shell (``dafka.io``) turns effects into sends.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire import rfc46


@dataclass(frozen=True, slots=True)
class Publish:
    """Send ``msg`` on the node's data socket."""

    msg: rfc46.Message


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """A record as the application sees it."""

    topic: str
    partition: str
    offset: int
    value: bytes
    key: bytes | None = None
    timestamp: float | None = None


@dataclass(frozen=True, slots=True)
class Deliver:
    """Consumer: hand ``record`` to the application (in partition order)."""

    record: ConsumedRecord


@dataclass(frozen=True, slots=True)
class Acked:
    """Producer: every record of ``topic`` up to ``offset`` is durable."""

    topic: str
    offset: int


Effect = Publish | Deliver | Acked
