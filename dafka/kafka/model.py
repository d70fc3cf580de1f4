"""The types every layer of the Kafka front door shares, and the backend contract.

The request handlers (:mod:`.handlers`) speak Kafka; the backend speaks Dafka. Between
them is :class:`Backend`: a numbered partition of a topic, Kafka records in and out,
offsets that are the Dafka partition's own offsets. A backend method that fails for a
reason a Kafka client understands raises :class:`~dafka.errors.KafkaRequestError` with
the protocol's error code; the handler puts that code in the response.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

__all__ = [
    "Backend",
    "Broker",
    "Code",
    "Deferred",
    "GroupApi",
    "FetchResult",
    "KafkaRecord",
    "PartitionInfo",
    "TopicInfo",
]


class Code(IntEnum):
    """The Kafka error codes this front door answers with (Kafka's ``Errors`` table)."""

    NONE = 0
    UNKNOWN_SERVER_ERROR = -1
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    OFFSET_METADATA_TOO_LARGE = 12
    MESSAGE_TOO_LARGE = 10
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    INVALID_CONFIG = 40
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    KAFKA_STORAGE_ERROR = 56
    OPERATION_NOT_ATTEMPTED = 55
    GROUP_ID_NOT_FOUND = 69
    UNSUPPORTED_COMPRESSION_TYPE = 76
    MEMBER_ID_REQUIRED = 79
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    GROUP_MAX_SIZE_REACHED = 81
    THROTTLING_QUOTA_EXCEEDED = 89


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """One record as Kafka clients see it. ``offset`` is absolute (the Dafka partition's
    offset); ``timestamp`` is milliseconds since the epoch (Kafka's CreateTime, or the
    seal time of its Dafka batch where the record has no own time); ``headers`` keep their
    order, repeated keys allowed, as Kafka's; ``value`` None is a null value (a tombstone
    when the record has a key)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Broker:
    """A listener as Kafka clients know a broker: an int32 node id and where it listens."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """Kafka partition ``index`` of a topic: the Dafka partition (producer node ID, 32 hex)
    that holds its records, the broker that leads it (holds its lease; None: nobody now,
    Kafka's LEADER_NOT_AVAILABLE), and whether Kafka clients may write it (False for a
    partition written natively by a Dafka producer)."""

    index: int
    dafka_partition: str
    leader: int | None
    writable: bool


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: tuple[PartitionInfo, ...]
    internal: bool = False


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What a Fetch of one partition answers: the records from the asked offset on (at
    least one whole batch when one exists, however large, as Kafka does), the high
    watermark (the next offset to be written: the last acknowledged offset + 1) and the
    log start (the oldest offset the stores still hold)."""

    high_watermark: int
    log_start: int
    records: Sequence[KafkaRecord] = field(default_factory=tuple)


class Backend(Protocol):
    """What the request handlers need of Dafka. Every method may block (the server runs
    them off its event loop, in a bounded pool) and raises
    :class:`~dafka.errors.KafkaRequestError` with a Kafka error code for an answer a
    client understands."""

    def brokers(self) -> Sequence[Broker]:
        """The live listeners (this one first)."""
        ...

    def controller(self) -> int:
        """The broker id named controller in Metadata responses (this listener's)."""
        ...

    def topics(self, names: Sequence[str] | None) -> Sequence[TopicInfo]:
        """The named topics (None: every topic). An unknown name is left out; the handler
        answers UNKNOWN_TOPIC_OR_PARTITION for it (or creates it where the cluster's
        ``auto_create`` allows and the client asked for it, via :meth:`create_topic`)."""
        ...

    def produce(
        self, topic: str, partition: int, records: Sequence[KafkaRecord], timeout: float
    ) -> int:
        """Write ``records`` (their ``offset`` fields are ignored) to Kafka partition
        ``partition`` of ``topic``, which this listener must lead; return the offset of
        the first once the topic's ``min_acks`` stores acknowledged all of them."""
        ...

    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_wait: float
    ) -> FetchResult:
        """Records from ``offset`` on, up to ``max_bytes`` (but at least one batch), waiting
        up to ``max_wait`` seconds when there are none yet. OFFSET_OUT_OF_RANGE below the
        log start or past the high watermark."""
        ...

    def list_offset(self, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
        """(offset, timestamp): ``timestamp`` -1 asks the high watermark, -2 the log start,
        otherwise the first record whose time is at or after it ((-1, -1): none)."""
        ...

    def create_topic(
        self, name: str, partitions: int, configs: Mapping[str, str | None], validate_only: bool
    ) -> None: ...

    def delete_topic(self, name: str) -> None: ...

    def group_coordinator(self, group: str) -> Broker | None:
        """The listener that coordinates ``group`` (holds its lease in the metadata; this
        one takes it when nobody holds it), or None while none can (COORDINATOR_NOT_AVAILABLE)."""
        ...

    def describe_configs(self, topic: str) -> Mapping[str, str | None]:
        """The topic's settings under Kafka's config names where one exists
        (``retention.ms``, ``cleanup.policy``, ``compression.type``,
        ``min.insync.replicas`` ...), and Dafka's own names otherwise."""
        ...

    def commit_offsets(
        self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str | None]]
    ) -> None:
        """Keep ``group``'s committed offsets ((topic, partition) -> (next offset,
        metadata)) durably in Dafka; returns once the group topic's ``min_acks`` stores
        acknowledged them."""
        ...

    def committed_offsets(
        self, group: str, partitions: Sequence[tuple[str, int]] | None
    ) -> Mapping[tuple[str, int], tuple[int, str | None]]:
        """The group's committed offsets (None: every partition it committed)."""
        ...


@dataclass(frozen=True, slots=True)
class Deferred:
    """A request answered later (a JoinGroup waiting for its rebalance, an OffsetCommit
    waiting for the stores' acknowledgement): its response comes out of
    :meth:`GroupApi.poll` under this token."""

    token: int


class GroupApi(Protocol):
    """The consumer-group APIs (FindCoordinator 10, JoinGroup 11, Heartbeat 12, LeaveGroup
    13, SyncGroup 14, OffsetCommit 8, OffsetFetch 9, DescribeGroups 15, ListGroups 16).

    Called only on the server's event-loop thread. ``request`` is the ``kio`` request
    object at the version the client sent; the answer is the ``kio`` response object of
    the same API and version, or :class:`Deferred`. Work that blocks (a durable commit)
    runs on the group API's own thread, which calls the waker given to
    :meth:`set_waker` (thread-safe) when :meth:`poll` has answers."""

    api_keys: frozenset[int]

    def set_waker(self, wake: Callable[[], None]) -> None: ...

    def handle(
        self,
        token: int,
        api_key: int,
        api_version: int,
        request: object,
        principal: str | None,
        now: float,
    ) -> object:
        """The response, or a :class:`Deferred`."""
        ...

    def poll(self, now: float) -> list[tuple[int, object]]:
        """(token, response) of deferred requests now answered (timeouts included)."""
        ...

    def next_wakeup(self) -> float | None:
        """When :meth:`poll` must be called next at the latest (session and rebalance
        timeouts), or None."""
        ...

    def close(self) -> None: ...
