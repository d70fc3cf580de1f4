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
class PublishRecords:
    """Send consecutive RECORDs of one partition, ``first_offset`` onwards.

    The producer's hot path: one effect per batch instead of two objects per
    record, encoded by the shell with :func:`rfc46.encode_record`.
    """

    topic: str
    partition: str
    first_offset: int
    contents: tuple[bytes, ...]

    def messages(self) -> list[rfc46.Record]:
        """The RECORD messages this effect stands for."""
        first = self.first_offset
        return [
            rfc46.Record(self.topic, self.partition, first + i, content)
            for i, content in enumerate(self.contents)
        ]


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


Effect = Publish | PublishRecords | Deliver | Acked
