"""The one exception tree of Dafka.

Every error Dafka raises on purpose derives from :class:`DafkaError`::

    DafkaError
    ├── ConfigError (ValueError)          bad settings, endpoints, topics, paths
    │   ├── InvalidTopic                  a topic with NUL or a control char, empty, > 255 bytes
    │   └── NothingToChange               an admin change the metadata has already
    ├── ProtocolError                     a peer or we broke the wire protocol
    │   └── WireError (ValueError)        bytes that do not decode
    │       └── TooManyFrames             a message of more frames than its protocol has
    │   └── KafkaRequestError             a Kafka request answered with a Kafka error code
    ├── StorageError                      the store could not read or write
    │   ├── StoreFullError                the disk (not the LMDB map) is full
    │   └── DataLossError                 data asked for is below the retention tail
    ├── TopicDeletedError                 the topic was deleted in the cluster metadata
    ├── ProducerError
    │   ├── BufferFullError               the unacknowledged buffer is full
    │   ├── RecordTooLargeError (ValueError)  a value or key over a size limit
    │   ├── DeliveryError                 records failed since the last flush
    │   └── NotAcknowledged (DafkaTimeout)  records not acknowledged in time; ``cause`` says why
    ├── ProfileError (ValueError)         a feature the chosen wire profile cannot carry
    ├── RaftError
    │   ├── NotLeader                     carries the leader hint, if any
    │   └── ProposalDropped
    ├── CommitFailedError                 a group commit of positions an admin's reset moved
    ├── ClosedError                       the node was closed
    └── DafkaTimeout (TimeoutError)       a deadline passed

``retriable`` tells callers whether trying again later can succeed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar


class DafkaError(Exception):
    """Base class of every error Dafka raises on purpose."""

    retriable: ClassVar[bool] = False


class ConfigError(DafkaError, ValueError):
    """A setting, endpoint, path or option is not acceptable."""


class InvalidTopic(ConfigError):
    """A topic name that the wire cannot carry."""


class NothingToChange(ConfigError):
    """An admin change that would leave the metadata as it is (a store trusted already,
    settings a topic has already): the leader takes no log entry for it, and ``dafka``
    reports it and exits 0, so admin scripts can be run again."""


class ProtocolError(DafkaError):
    """The wire protocol was broken."""


class WireError(ProtocolError, ValueError):
    """Frames that do not decode as a Dafka message."""


class TooManyFrames(WireError):
    """A multipart message of more frames than its protocol allows; the frames beyond the
    limit were read off the socket and dropped unkept (:func:`dafka.io.multipart.recv_bounded`)."""

    def __init__(self, frames: int, limit: int) -> None:
        super().__init__(f"a message of {frames} frames, at most {limit} allowed")
        self.frames = frames
        self.limit = limit


class KafkaRequestError(ProtocolError):
    """A Kafka-protocol request (``dafka-kafka``) answered with Kafka error ``code``
    (:class:`dafka.kafka.model.Code`) instead of its result."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or f"kafka error code {code}")
        self.code = int(code)


class StorageError(DafkaError):
    """The store could not read or write its data."""


class StoreFullError(StorageError):
    """The disk under the store is full; nothing was acknowledged.

    ``path`` is the store's directory, ``need_bytes`` about how much more room
    the failed write needed and ``free_bytes`` what the filesystem had left,
    when known.
    """

    retriable = True

    def __init__(
        self,
        message: str = "disk full",
        *,
        path: str | None = None,
        need_bytes: int | None = None,
        free_bytes: int | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.need_bytes = need_bytes
        self.free_bytes = free_bytes


class StorageDamagedError(StorageError):
    """The store's environment is damaged (a truncated or unreadable file, a corrupt
    B-tree, an I/O error on a write): nothing more may be acknowledged from it. The store
    stops; recover by wiping its data directory (the other stores refill it)."""


class DataLossError(StorageError):
    """Records were asked for below a partition's retention tail."""


class TopicDeletedError(DafkaError):
    """The topic was deleted in the cluster metadata (``dafka topics delete``): its
    records are gone from the stores; a consumer is told once, from its next poll."""


class ProducerError(DafkaError):
    """A producer could not accept or deliver a record."""


class BufferFullError(ProducerError):
    """The producer's unacknowledged buffer is full."""

    retriable = True


class RecordTooLargeError(ProducerError, ValueError):
    """A record's value or key is over a limit (the wire profile's or its topic's).

    Raised by ``send``/``send_many`` before the record is queued, so nothing else is
    affected; ``size`` and ``limit`` are in bytes.
    """

    def __init__(self, message: str, size: int = 0, limit: int = 0) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class DeliveryError(ProducerError):
    """Records accepted by ``send`` failed before they could be acknowledged.

    ``failed`` is how many, ``first`` the first error; the failed records' futures
    carry their own errors.
    """

    def __init__(self, failed: int, first: BaseException | None) -> None:
        super().__init__(f"{failed} record(s) failed since the last flush; the first: {first}")
        self.failed = failed
        self.first = first


class UnackedCause(StrEnum):
    """Why a producer's records were not acknowledged, as far as it can tell
    (:class:`NotAcknowledged`, ``Producer.diagnose``)."""

    TOWER_UNREACHABLE = "tower_unreachable"
    """No tower answered: nothing was discovered through it."""
    NO_STORE = "no_store"
    """No store is connected to the producer (nor, probed, announced through the towers)."""
    OTHER_PROFILE = "other_profile"
    """The stores found speak the other wire profile (signed or rfc46)."""
    UNTRUSTED_STORES = "untrusted_stores"
    """Stores acknowledged, but none whose ACKs count (``trusted_stores``)."""
    TOO_FEW_STORES = "too_few_stores"
    """Fewer distinct stores acknowledged than the producer's ``min_acks`` asks."""
    TOPIC_MIN_ACKS = "topic_min_acks"
    """A topic's ``min_acks`` (cluster metadata) is above the stores that can acknowledge it."""
    STATE_DIR = "state_dir"
    """The producer cannot write its state directory (a full disk)."""
    NO_ACK = "no_ack"
    """Stores are connected but acknowledged nothing, for none of the reasons above."""


class ProfileError(DafkaError, ValueError):
    """The chosen wire profile cannot carry what was asked (e.g. keys under rfc46)."""


class RaftError(DafkaError):
    """The consensus layer refused or lost a request."""


class NotLeader(RaftError):
    """This peer is not the leader; ``leader`` names the one it knows, if any."""

    retriable = True

    def __init__(self, message: str = "not the leader", leader: str | None = None) -> None:
        super().__init__(message)
        self.leader = leader


class ExtensionUnsupported(RaftError):
    """A Raft peer does not speak the Dafka extension asked of it (e.g. a ØMQ RAFT
    reference peer leading, asked for a linearizable read)."""


class ProposalDropped(RaftError):
    """A proposal was dropped before it could be committed."""

    retriable = True


class CommitFailedError(DafkaError):
    """A group commit refused before anything was written: the positions it names were
    read before the group's assignment of them changed (an admin reset their offsets);
    poll, then commit (Kafka's ``CommitFailedException``)."""

    retriable = True


class ClosedError(DafkaError):
    """The node was closed."""


class DafkaTimeout(DafkaError, TimeoutError):
    """A deadline passed."""

    retriable = True


class NotAcknowledged(DafkaTimeout, ProducerError):
    """Records were not acknowledged within a deadline (``Producer.flush``).

    ``unacknowledged`` is how many; ``cause`` (an :class:`UnackedCause`) and the message
    say why, as far as the producer can tell from what it heard.
    """

    def __init__(
        self,
        message: str,
        *,
        unacknowledged: int = 0,
        cause: UnackedCause = UnackedCause.NO_ACK,
    ) -> None:
        super().__init__(message)
        self.unacknowledged = unacknowledged
        self.cause = cause
