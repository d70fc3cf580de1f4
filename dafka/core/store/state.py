"""The store core's configuration, in-memory tables and queries (:class:`StoreState`).

Every other part of :class:`~dafka.core.store.StoreCore` works on the tables set up
here: committed heads and retention tails per partition, the profile each partition is
pinned to, open gaps and the out-of-order buffer, pending FETCHes, the ACLs from the
metadata, deletion fences, the rate limiters and :class:`StoreStats`. Also here: the
per-call scratch state of ``handle_batch`` (``_Batch``) and the records it reports
(:class:`Equivocation`). Pure: no clock, no socket.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import ConfigError, StorageError
from ...ids import is_group_topic, is_node_id
from ...storage.base import Storage, StoredBatch
from ...wire.profiles import RFC46, Profile
from ...wire.rfc46 import Command, direct_prefix
from .. import messages as m
from ..admission import PartitionGate
from ..answers import AnswerCursor
from ..limits import RequestLimiter, TokenBucket
from ..producer_serve import PROXY_SHARE
from ..read_guard import RequestLog, Sender
from .credits import DEFAULT_SEND_CREDITS, SendCredits
from .repair import StoreRepair

log = logging.getLogger(__name__)

MAX_RETRY_FACTOR = 64
"""A gap's retry interval doubles while unanswered, up to ``fetch_retry * MAX_RETRY_FACTOR``."""

_MAX_U32 = (1 << 32) - 1
MAX_EQUIVOCATION_REPORTS = 100

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
    """Topics left out of head answers by the bound on DIRECT-HEADs sent per second."""
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
    (``dafka.core.store.serve``)."""
    oversized: int = 0
    """Records over ``max_message_size`` (their content dropped by the IO shell): under
    rfc46 the offset is refused and the records after it stored (see ``dafka.core.store``)."""
    claims_dropped: int = 0
    """Other stores' unsigned heads followed for rounds without bringing anything: dropped
    (``dafka.core.store.replicate``)."""
    retention_skips: int = 0
    """Partitions continued from a tail another store signed, what they asked for having
    been trimmed by retention there (``dafka.core.store.replicate``)."""


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
        "nexts",
        "now",
        "index",
        "reack",
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
        self.head_requests: list[tuple[str, Sequence[str]]] = []
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
        get = getattr(self.sources, "sender", None)
        return get(self.index) if get is not None else None


class StoreState:
    """The store's configuration and tables, and the queries over them.

    :class:`~dafka.core.store.StoreCore` is built on it, and this is its constructor:
    it checks the options and loads the heads, tails, profiles and deletion fences
    the storage holds.
    """

    def __init__(
        self,
        node_id: str,
        storage: Storage,
        *,
        max_fetch_count: int = 100_000,
        serve_chunk: int = 2000,
        fetch_retry: float = 0.5,
        max_pending_fetches: int = 1024,
        max_buffered_bytes: int = 64 * 1024 * 1024,
        max_head_lead: int = 1_000_000,
        profile: Profile = RFC46,
        fetch_rate: float = 2000.0,
        fetch_burst: float = 4000.0,
        heads_rate: float = 20.0,
        heads_burst: float = 40.0,
        heads_answer_rate: float = 5000.0,
        heads_answer_burst: float = 10000.0,
        serve_rate: float = 64 * 1024 * 1024,
        serve_total_rate: float = 256 * 1024 * 1024,
        max_partitions_per_topic: int = 10_000,
        new_partition_rate: float = 100.0,
        new_partition_burst: float = 1000.0,
        send_credits: int | None = DEFAULT_SEND_CREDITS,
    ) -> None:
        if not is_node_id(node_id):
            raise ConfigError(f"store node ID {node_id!r} is not 32 upper-case hex characters")
        if not 1 <= max_fetch_count <= _MAX_U32:
            raise ConfigError(f"max_fetch_count must be in 1..{_MAX_U32}, not {max_fetch_count}")
        if serve_chunk < 1 or max_pending_fetches < 1:
            raise ConfigError("serve_chunk and max_pending_fetches must be at least 1")
        if not fetch_retry > 0 or max_buffered_bytes < 0:
            raise ConfigError("fetch_retry must be positive and max_buffered_bytes not negative")
        if max_head_lead < max_fetch_count:
            raise ConfigError("max_head_lead must be at least max_fetch_count")
        self._node_id = node_id
        self._storage = storage
        self._max_fetch_count = max_fetch_count
        self._serve_chunk = serve_chunk
        self._fetch_retry = fetch_retry
        self._max_retry = fetch_retry * MAX_RETRY_FACTOR
        self._max_pending = max_pending_fetches
        self._max_buffered_bytes = max_buffered_bytes
        self._lead = max_head_lead
        self._profile = profile
        self._signed = profile.batched
        self._name = profile.name
        self._heads: dict[PartitionKey, int] = {k: ht[0] for k, ht in storage.heads().items()}
        # new partitions: a cap per topic and a rate (docs/wire.md §11.6)
        self._gate = PartitionGate(
            max_partitions_per_topic, new_partition_rate, new_partition_burst, self._heads
        )
        self._tails: dict[PartitionKey, int] = {k: ht[1] for k, ht in storage.heads().items()}
        self._acl: dict[str, frozenset[str]] = {}
        self._readers: dict[str, frozenset[str]] = {}
        self._retention: dict[str, tuple[int | None, int | None]] = {}
        self._profiles: dict[PartitionKey, str] = storage.profiles()
        # partitions of the other profile (a data directory reused under this one): static,
        # since this store only ever creates partitions of its own profile
        self._foreign: frozenset[PartitionKey] = frozenset(
            key for key, name in self._profiles.items() if name != profile.name
        )
        self._signed_heads: dict[PartitionKey, m.Head] = {}
        self._gaps: dict[PartitionKey, _Gap] = {}
        # rfc46: offsets refused as oversized, [start, end), not yet covered by a stored batch
        self._holes: dict[PartitionKey, tuple[int, int]] = {}
        self._last_oversized_log = -math.inf
        self._next_gap_check = math.inf
        # out-of-order batches: first offset -> (last offset, content), verified
        self._buffers: dict[PartitionKey, dict[int, tuple[int, bytes]]] = {}
        self._buffered_bytes = 0
        self._pending: deque[_PendingFetch] = deque()
        self._pending_keys: set[tuple[str, str, str, int]] = set()
        self._last_error_log = -math.inf
        self._last_reject_log = -math.inf
        self._fetch_limiter = RequestLimiter(fetch_rate, fetch_burst)
        self._heads_limiter = RequestLimiter(heads_rate, heads_burst)
        # requests in another node's name (NULL, ``read_guard.check_requester``): a budget
        # of their own per recipient, PROXY_SHARE times smaller (requests and bytes)
        self._requests = RequestLog(node_id)
        self._proxied_fetches = RequestLimiter(
            fetch_rate / PROXY_SHARE, max(1.0, fetch_burst / PROXY_SHARE)
        )
        self._proxied_heads = RequestLimiter(
            heads_rate / PROXY_SHARE, max(1.0, heads_burst / PROXY_SHARE)
        )
        self._proxied_bytes = RequestLimiter(
            serve_rate / PROXY_SHARE,
            2 * serve_rate / PROXY_SHARE,
            total_rate=serve_total_rate / PROXY_SHARE,
            total_burst=2 * serve_total_rate / PROXY_SHARE,
        )
        # bytes served per requester and in total: what a requester that never reads can
        # pile up in the data PUB's queue grows at most this fast (docs/wire.md §11.6)
        self._bytes_limiter = RequestLimiter(
            serve_rate,
            2 * serve_rate,
            total_rate=serve_total_rate,
            total_burst=2 * serve_total_rate,
        )
        # DIRECT-HEADs sent in answer to GET-HEADS / CONSUMER-HELLO, over all requesters
        # (one request may name 1,024 topics of many partitions each): charged per topic
        self._heads_out = TokenBucket(heads_answer_rate, heads_answer_burst)
        # signed: what one requester may have on its way (the data XPUB keeps few messages)
        self._credits = (
            SendCredits(send_credits) if self._signed and send_credits is not None else None
        )
        self._held_heads: dict[str, deque[m.DirectHead]] = {}
        self._held_count = 0
        self._held_acks: dict[str, dict[PartitionKey, int]] = {}
        """Per producer, the ACKs waiting for its credit: a partition's latest committed
        head, one per partition held (so bounded by them)."""
        self._held_fetches: dict[str, dict[PartitionKey, m.Fetch]] = {}
        """Per producer, the gap FETCHes waiting for credit (its own and every store's,
        :data:`~.credits.FETCH_SUBSCRIBERS`): one per partition with a gap, the latest
        replacing one still held (so bounded by the open gaps)."""
        self.serve_at = math.inf
        """When serving can go on: now while budgets ran out, the end of a requester's
        hold while every fetch waits for credit, ``inf`` when nothing waits."""
        self._last_equivocation_log = -math.inf
        self.stats = StoreStats()
        self.last_storage_error: StorageError | None = None
        self._full_since: float | None = None  # when appends began to fail for a full disk
        self.repair = StoreRepair(
            node_id, signed=self._signed, held_bad=getattr(storage, "bad", None)
        )
        """Corrupt batches asked for from the other stores, and the copies that came."""
        self.equivocations: deque[Equivocation] = deque(maxlen=MAX_EQUIVOCATION_REPORTS)
        """The latest equivocations seen (a bounded report; ``stats`` counts them all)."""
        self._deleted: frozenset[str] = frozenset()  # deleted in the metadata, not re-created
        self._applied_deletions: dict[str, int] = {}
        self._fences: dict[PartitionKey, int] = {}  # last offset of a deleted topic's partition
        if hasattr(storage, "deletions"):
            self._applied_deletions, fences = storage.deletions()
            self._fence(fences)

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def profile(self) -> Profile:
        return self._profile

    def head(self, topic: str, partition: str) -> int | None:
        """The committed head of a partition, or ``None`` if nothing is stored."""
        return self._heads.get((topic, partition))

    @property
    def paces_requesters(self) -> bool:
        """Whether what goes to one requester is paced by its credit (``signed``): the
        shell's data XPUB then keeps a byte-safe count (``dafka.io.bounds``)."""
        return self._credits is not None

    def has_pending(self, now: float = math.inf) -> bool:
        """True while fetches or head answers can be served at ``now``: the shell should
        poll without blocking (:attr:`serve_at` says when the waiting ones can)."""
        if self._credits is None:
            return bool(self._pending)
        held = self._held_heads or self._held_acks or self._held_fetches
        return bool(self._pending or held) and now >= self.serve_at

    def subscriptions(self) -> list[bytes]:
        """The SUB prefixes a store needs (wire reference §4, writer and reader as one node)."""
        return [
            Command.RECORD.value,
            Command.HEAD.value,
            Command.FETCH.value,
            Command.GET_HEADS.value,
            direct_prefix(Command.DIRECT_RECORD, self._node_id),
            direct_prefix(Command.CONSUMER_HELLO, self._node_id),
            direct_prefix(Command.DIRECT_HEAD, self._node_id),  # other stores' heads
        ]

    def _fence(self, fences: Mapping[PartitionKey, int]) -> None:
        self._fences.update(fences)
        for key, fence in fences.items():
            if key not in self._heads:
                self._tails[key] = fence + 1  # below it: deleted (answered like retention)

    def may_write(self, topic: str, partition: str) -> bool:
        """Whether the topic's write ACL (the metadata) lets ``partition``'s producer write it.
        A consumer group's topic (``__group.NAME``) without one is written by those who may
        read it: its consumer ACL, if set (``docs/groups.md``, who may join a group)."""
        allowed = self._acl.get(topic) if self._acl else None
        if allowed is None and is_group_topic(topic):
            allowed = self._readers.get(topic)
        return allowed is None or partition in allowed

    def _pinned_elsewhere(self, key: PartitionKey) -> bool:
        """True (and counted) if ``key`` is pinned to the other wire profile."""
        if self._foreign and key in self._foreign:
            self.stats.wrong_profile += 1
            return True
        return False
