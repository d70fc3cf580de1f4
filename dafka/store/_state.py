"""What the parts of a store core share: :class:`StoreConfig`, :class:`StoreStats`, the
per-call scratch state of ``handle_batch`` (``_Batch``), the records it reports
(:class:`Equivocation`) and the small records the parts keep (``_Gap``,
``_PendingFetch``). Each table lives in the one part that writes it (see
:mod:`dafka.store`). Pure: no clock, no socket.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..core.answers import AnswerCursor
from ..core.read_guard import Sender
from ..core.topic_counts import TopicCounts
from ..errors import ConfigError
from ..ids import is_node_id
from ..storage.base import StoredBatch
from ..wire.profiles import RFC46, Profile

log = logging.getLogger(__name__)

MAX_RETRY_FACTOR = 64
"""A gap's retry interval doubles while unanswered, up to ``fetch_retry * MAX_RETRY_FACTOR``."""

_MAX_U32 = (1 << 32) - 1

PartitionKey = tuple[str, str]  # (topic, partition)


@dataclass(slots=True)
class StoreStats:
    """Counters for metrics and tests; the core only ever increments them."""

    records_stored: int = 0
    duplicates: int = 0
    buffered: int = 0
    dropped_out_of_order: int = 0
    malformed: int = 0
    ignored: int = 0
    fetches_sent: int = 0
    fetches_queued: int = 0
    fetches_refused: int = 0
    records_served: int = 0
    bytes_served: int = 0  # of the batches sent in FETCH answers, as stored
    heads_sent: int = 0
    acks_sent: int = 0
    append_failures: int = 0
    gaps_refused: int = 0
    rejected: int = 0
    """Batches that failed verification: forged, tampered, another partition's key."""
    rejected_heads: int = 0
    """HEADs that failed verification."""
    equivocations: int = 0
    """Validly signed batches for offsets already held with other content (kept first)."""
    superseded: int = 0
    """Offsets of batches a producer never got acknowledged, replaced by its later signed
    gap statement after a restart (docs/wire.md §12)."""
    wrong_profile: int = 0
    """Records, HEADs or FETCHes for a partition pinned to the other wire profile."""
    fetches_limited: int = 0
    """FETCHes and head requests refused by the per-requester rate limit."""
    fetches_paced: int = 0
    """Serving turns a pending FETCH waited in for its requester's bytes per second (or
    all requesters' together) to be paid back."""
    partitions_refused: int = 0
    """Batches and HEADs of partitions not held yet, refused by the per-topic partition cap
    or the rate of new partitions (the producer's next batch or HEAD tries again)."""
    heads_limited: int = 0
    """Topics left out of head answers: past the bounds of those waiting for the budget of
    DIRECT-HEADs sent per second, or waiting past its age bound (``dafka.store._heads_deferred``);
    and DIRECT-HEADs past the bound of those waiting for their requester's credit."""
    heads_deferred: int = 0
    """Topics of head requests that met the DIRECT-HEAD budget spent and waited for it (then
    answered in turns, or dropped after ``MAX_DEFER_AGE`` and counted in ``heads_limited``)."""
    unauthorized: int = 0
    """Batches from producers the topic's ACL (metadata) does not allow."""
    retention_trims: int = 0
    """Partitions whose tail moved because of retention."""
    retention_paused: int = 0
    """Retention checks that trimmed nothing by age: the wall clock ran ahead of the
    store's monotonic measure (``dafka.storage.retention``)."""
    deleted_topic: int = 0
    """Messages about a topic deleted in the metadata (dropped, not stored nor answered)."""
    read_refused: int = 0
    """FETCHes, GET-HEADS and CONSUMER-HELLO topics from requesters the topic's read ACL
    (metadata ``consumers``) does not name: dropped, not answered."""
    requests_forged: int = 0
    """FETCHes, GET-HEADS and CONSUMER-HELLOs refused: they named another node than the one
    their connection belongs to (the key it proved under CURVE; without CURVE, the node
    announced for its endpoint), or, under CURVE, came on a connection not known."""
    requests_proxied: int = 0
    """Such requests without CURVE on a connection that matches no announced endpoint:
    answered only within a small budget of their own per recipient
    (``dafka.store._serve``)."""
    oversized: int = 0
    """Records over ``max_message_size`` (their content dropped by the IO shell): under
    rfc46 the offset is refused and the records after it stored (see ``dafka.store``)."""
    claims_dropped: int = 0
    """Other stores' unsigned heads followed for rounds without bringing anything: dropped
    (``dafka.store._replicate``)."""
    retention_skips: int = 0
    """Partitions continued from a tail another store signed, what they asked for having
    been trimmed by retention there (``dafka.store._replicate``)."""
    compact_refused: int = 0
    """Producers' batches refused on a compacted topic: not format 5, a record without a
    key, or records not readable within the bound (``dafka.store._compaction``)."""
    compaction_batches: int = 0
    """Batches rewritten in their compacted form."""
    compaction_reclaimed_bytes: int = 0
    """Bytes those rewrites returned (old size minus new)."""
    compaction_passes: int = 0
    """Compaction passes completed over the compacted partitions."""
    compaction_pass_ms: int = 0
    """How long the last compaction pass took (milliseconds, paced by its byte rate)."""
    compaction_skipped: int = 0
    """Partitions a pass left alone: a batch not readable, or too many keys to index."""
    compaction_unjustified: int = 0
    """Compacted batches held (fetched from another store) that dropped a record no
    compaction would drop: the newest of its key."""
    topics: TopicCounts = field(default_factory=TopicCounts)
    """Records and bytes in (committed) and served (FETCH answers) per topic, the topics
    past the cap folded into ``_other`` (:mod:`dafka.core.topic_counts`); added to per
    batch."""


@dataclass(frozen=True, slots=True)
class Equivocation:
    """A producer signed two different batches for overlapping offsets; the first was kept."""

    topic: str
    partition: str
    first_offset: int
    last_offset: int
    kept_first: int
    kept_last: int
    at: float


@dataclass(slots=True)
class _Gap:
    """What we know is missing for one partition, and our last FETCH for it."""

    target: int  # the highest offset known to exist
    retry: float  # current retry interval (backs off while unanswered)
    sent_at: float | None = None
    sent_start: int = -1
    sent_end: int = -1  # exclusive end of the range the last FETCH asked for
    answer: AnswerCursor | None = None  # signed: where the last FETCH's answer was cut


@dataclass(slots=True)
class _PendingFetch:
    """A FETCH being served chunk by chunk; ``next`` advances, ``end`` is exclusive."""

    key: tuple[str, str, str, int]
    requester: str
    topic: str
    partition: str
    next: int
    end: int
    batches: int = 0  # sent so far (signed: an answer ends at ANSWER_BATCHES / ANSWER_BYTES)
    nbytes: int = 0
    proxied: bool = False  # not asked on the requester's own connection (NULL): own budget


@runtime_checkable
class SenderSources(Protocol):
    """Sources that also know the node whose connection each message came on (the IO
    shell's :class:`~dafka.io.bounds.FrameSources`; a plain sequence of hosts does not)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> str: ...

    def sender(self, index: int) -> Sender | None: ...


class _Batch:
    """Scratch state of one ``handle_batch`` call; nothing here is committed."""

    __slots__ = (
        "accepted",
        "advanced",
        "blobs",
        "checked",
        "continuing",
        "gap_keys",
        "head_requests",
        "index",
        "nexts",
        "now",
        "reack",
        "received",
        "sources",
        "tail_answers",
    )

    def __init__(
        self,
        now: float,
        sources: Sequence[str] = (),
        checked: Mapping[int, tuple[object, Exception | None]] | None = None,
    ) -> None:
        self.now = now
        self.received = now  # when its first message arrived (a waiting drain's: earlier)
        self.sources = sources  # the host of each message (a rate key), looked up if asked
        self.index = 0  # the message being handled
        # verified ahead (StoreIngest.verify_ahead): message index -> (the message, the
        # profile's verdict, None if genuine); a message not in it is verified when handled
        self.checked = checked
        self.accepted: list[StoredBatch] = []
        self.blobs: dict[tuple[str, str, int], StoredBatch] = {}  # accepted, by first offset
        self.nexts: dict[PartitionKey, int] = {}  # next expected offset, chained in-batch
        self.advanced: set[PartitionKey] = set()
        # rfc46: partitions a record of this batch was accepted into, whose checks (ACL,
        # profile pin, admission) the next record at the next offset need not repeat
        self.continuing: set[PartitionKey] = set()
        self.reack: set[PartitionKey] = set()
        self.gap_keys: set[PartitionKey] = set()
        self.head_requests: list[
            tuple[str, Sequence[str], bool]
        ] = []  # (requester, topics, proxied)
        self.tail_answers: list[tuple[str, str, str]] = []  # FETCHes below the tail

    @property
    def source(self) -> str:
        """The host the message being handled came from ("" when unknown): read only to
        admit a partition not held yet, so a lazy ``sources`` (the IO shell's
        :class:`~dafka.io.bounds.FrameSources`) looks up only those."""
        sources = self.sources
        return sources[self.index] if self.index < len(sources) else ""

    @property
    def sender(self) -> Sender | None:
        """The node whose connection the message being handled came on (None: not known,
        e.g. in-process): looked up only for requests (FETCH, GET-HEADS, CONSUMER-HELLO)."""
        sources = self.sources
        return sources.sender(self.index) if isinstance(sources, SenderSources) else None


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """What every part of a store core is configured with (checked by :meth:`check`)."""

    node_id: str
    profile: Profile = RFC46
    max_fetch_count: int = 100_000
    serve_chunk: int = 2000
    fetch_retry: float = 0.5
    max_pending_fetches: int = 1024
    max_buffered_bytes: int = 64 * 1024 * 1024
    max_head_lead: int = 1_000_000

    @property
    def signed(self) -> bool:
        """Whether the profile batches and signs (``signed``)."""
        return self.profile.batched

    @property
    def name(self) -> str:
        """The profile's name, which every partition this store creates is pinned to."""
        return self.profile.name

    @property
    def max_retry(self) -> float:
        return self.fetch_retry * MAX_RETRY_FACTOR

    def check(self) -> None:
        """Raise :class:`ConfigError` for an option out of its range."""
        if not is_node_id(self.node_id):
            raise ConfigError(f"store node ID {self.node_id!r} is not 32 upper-case hex characters")
        if not 1 <= self.max_fetch_count <= _MAX_U32:
            raise ConfigError(
                f"max_fetch_count must be in 1..{_MAX_U32}, not {self.max_fetch_count}"
            )
        if self.serve_chunk < 1 or self.max_pending_fetches < 1:
            raise ConfigError("serve_chunk and max_pending_fetches must be at least 1")
        if not self.fetch_retry > 0 or self.max_buffered_bytes < 0:
            raise ConfigError("fetch_retry must be positive and max_buffered_bytes not negative")
        if self.max_head_lead < self.max_fetch_count:
            raise ConfigError("max_head_lead must be at least max_fetch_count")
