"""Store node logic, sans-IO, for both wire profiles.

:class:`StoreCore` takes drained batches of decoded messages and the time, and
returns :class:`~dafka.core.effects.Publish` effects. It never reads a clock,
sleeps or touches a socket; the IO shell (``dafka.api.store``) drives it.

It does what the C reference store does (wire reference §7) with DESIGN's fixes:

* **Group commit, ACK after commit.** All records accepted from one drained
  batch go to storage in one ``append`` (one fsynced transaction); only when it
  returns does one ACK per partition go out, carrying the new head. If it
  raises, nothing is ACKed and the heads stay where they were.
* **Duplicates are re-ACKed** (the reference drops them silently, so a producer
  whose ACK was lost waits forever). A HEAD at or below what we hold is
  re-ACKed for the same reason.
* **Gaps.** A record beyond ``head + 1`` opens a gap: the store sends
  ``FETCH(head + 1, count = gap size)``. Out-of-order records are kept in a
  bounded buffer (``max_buffered_bytes``; 0 restores the reference's
  drop-and-refetch behaviour) and drained into the write batch when the gap
  fills, so a store behind a live stream catches up in one round trip instead
  of chasing the stream forever. Gap FETCHes are rate-limited per partition:
  a new one only when the previous one was fully answered, or after the retry
  interval (``fetch_retry``, doubling while nothing arrives, up to 64x), so a
  flood of records or HEADs never becomes a flood of FETCHes.
* **Serving.** A FETCH is answered with exactly the stored records in
  ``[offset, offset + count)`` (the reference sends ``count + 1``), served at
  most ``serve_chunk`` records per call, round-robin across pending fetches, so
  the IO loop stays responsive. Heads are matched by exact topic.
* **Bad input** never raises out of :meth:`StoreCore.handle_batch`: it is
  counted in :attr:`StoreCore.stats` and dropped.
* **Records over the size bound** (rfc46: a C producer has no cap) reach the core
  as :class:`~dafka.core.messages.Oversized`, their content dropped by the IO
  shell. The store refuses that offset and goes on: the next record is stored as
  one batch spanning the refused offsets and itself (an rfc46 batch of more than
  one offset holds only the record at its last offset), so the records after it
  are stored and ACKed (cumulatively, which frees the refused one at a C
  producer) and the refusal is counted (``oversized``) and logged. Served, such a
  batch yields its one record: nobody can serve the refused offsets.
* **A FETCH answered in full below the head** (rfc46) is followed by a DIRECT-HEAD
  to its requester, so a C consumer, which asks in windows and only when told of
  more, does not stop after its first window (``docs/wire.md`` §13).

A RECORD is a batch (``dafka.core.messages``): one record under ``rfc46``, a
producer-signed batch blob under ``signed``. Under ``signed`` the store:

* **verifies before it keeps**: a batch is stored (or buffered) only if the
  profile accepts it (signature, the signing key owns the partition, topic,
  offsets); forgeries are dropped and counted (``rejected``);
* keeps the **blob verbatim** (one :class:`StoredBatch` per blob) and serves
  it verbatim in DIRECT-RECORD, so consumers check the producer's signature
  whoever served the bytes;
* tells **replays from equivocation**: a batch at offsets it already holds is
  a duplicate (re-ACKed, never verified) when it is byte-identical to the
  stored one; otherwise it is verified, and a second validly signed batch for
  stored offsets is equivocation: the first is kept, the second counted
  (``equivocations``), logged and reported in :attr:`StoreCore.equivocations`;
* verifies a HEAD before it opens a gap for it, keeps the newest verified
  HEAD per partition to pass on in DIRECT-HEAD, and lets a HEAD move the gap
  target at most ``max_head_lead`` offsets past what it holds.

Each partition is pinned to the profile of its first batch (the storage
records it); a store speaks one profile, and its partitions of the other
profile (a data directory reused under another profile) are neither written
nor served (``wrong_profile``). FETCHes and head requests are rate-limited per
requester (``dafka.core.limits``) on top of the pending-fetch cap.

A FETCH's identity for de-duplication is ``(requester, topic, partition,
offset)``: under rfc46 one producer ID names one partition in each topic it
writes, so the partition ID alone does not say which records are asked for.
"""

from __future__ import annotations

import logging
import math
import struct
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, DafkaError, StorageError, StoreFullError, WireError
from ..ids import is_node_id
from ..io.profiles import RFC46, Profile
from ..storage.base import Storage, StoredBatch
from ..storage.keys import partition_prefix
from ..storage.retention import retention_cut
from ..wire.rfc46 import Command, direct_prefix
from ..wire.signed import peek_batch
from . import messages as m
from .admission import PartitionGate
from .effects import Publish
from .limits import RequestLimiter, TokenBucket

__all__ = ["MAX_HELLO_TOPICS", "MAX_OPEN_GAPS", "StoreCore", "StoreStats"]

log = logging.getLogger(__name__)

MAX_HELLO_TOPICS = 1024
"""Topics answered per CONSUMER-HELLO; the rest are ignored (a peer controls the list)."""

MAX_OPEN_GAPS = 16384
"""Partitions being caught up at once; beyond this, new gaps wait for the next HEAD."""

MAX_RETRY_FACTOR = 64
"""A gap's retry interval doubles while unanswered, up to ``fetch_retry * MAX_RETRY_FACTOR``."""

BUFFER_ENTRY_OVERHEAD = 64
"""Bytes charged per buffered record on top of its content, so empty records are bounded too."""

_MAX_U32 = (1 << 32) - 1
_BAD_INPUT = (DafkaError, ValueError, TypeError, OverflowError, struct.error)
_ERROR_LOG_PERIOD = 5.0
MAX_EQUIVOCATION_REPORTS = 100
MAX_SUPERSEDED_BATCHES = 4096
"""Batches a gap statement may replace at once; more is left as equivocation."""
SIGNED_READ_BATCHES = 4
"""Signed batches read per serving step of one FETCH (each may be up to 16 MiB)."""
SERVE_BYTES = 16 * 1024 * 1024
"""Bytes of batches served per step, over every pending FETCH."""

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
    partitions_refused: int = 0
    """Batches and HEADs of partitions not held yet, refused by the per-topic partition cap
    or the rate of new partitions (the producer's next batch or HEAD tries again)."""
    heads_limited: int = 0
    """Topics left out of head answers by the bound on DIRECT-HEADs sent per second."""
    unauthorized: int = 0
    """Batches from producers the topic's ACL (metadata) does not allow."""
    retention_trims: int = 0
    """Partitions whose tail moved because of retention."""
    deleted_topic: int = 0
    """Messages about a topic deleted in the metadata (dropped, not stored nor answered)."""
    read_refused: int = 0
    """FETCHes, GET-HEADS and CONSUMER-HELLO topics from requesters the topic's read ACL
    (metadata ``consumers``) does not name: dropped, not answered."""
    oversized: int = 0
    """Records over ``max_message_size`` (their content dropped by the IO shell): under
    rfc46 the offset is refused and the records after it stored (see the module)."""


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


@dataclass(slots=True)
class _PendingFetch:
    """A FETCH being served chunk by chunk; ``next`` advances, ``end`` is exclusive."""

    key: tuple[str, str, str, int]
    requester: str
    topic: str
    partition: str
    next: int
    end: int


class _Batch:
    """Scratch state of one ``handle_batch`` call; nothing here is committed."""

    __slots__ = (
        "accepted",
        "advanced",
        "blobs",
        "gap_keys",
        "head_requests",
        "nexts",
        "now",
        "reack",
        "source",
        "tail_answers",
    )

    def __init__(self, now: float) -> None:
        self.now = now
        self.source = ""  # the host of the message being handled (a rate key)
        self.accepted: list[StoredBatch] = []
        self.blobs: dict[tuple[str, str, int], StoredBatch] = {}  # accepted, by first offset
        self.nexts: dict[PartitionKey, int] = {}  # next expected offset, chained in-batch
        self.advanced: set[PartitionKey] = set()
        self.reack: set[PartitionKey] = set()
        self.gap_keys: set[PartitionKey] = set()
        self.head_requests: list[tuple[str, Sequence[str]]] = []
        self.tail_answers: list[tuple[str, str, str]] = []  # FETCHes below the tail


def _valid_partition_key(topic: str, partition: str) -> bool:
    try:
        partition_prefix(topic, partition)
    except (DafkaError, TypeError):
        return False
    return True


class StoreCore:
    """The store's state machine: records in, (FETCH | DIRECT-* | STORE-HELLO | ACK) out.

    ``profile`` is the store's wire profile (``rfc46`` unless given); it
    verifies what the store keeps. ACKs come out unsigned and the profile signs
    them in the shell.
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
        fetch_rate: float = 200.0,
        fetch_burst: float = 400.0,
        heads_rate: float = 20.0,
        heads_burst: float = 40.0,
        heads_answer_rate: float = 5000.0,
        heads_answer_burst: float = 10000.0,
        serve_rate: float = 64 * 1024 * 1024,
        serve_total_rate: float = 256 * 1024 * 1024,
        max_partitions_per_topic: int = 10_000,
        new_partition_rate: float = 100.0,
        new_partition_burst: float = 1000.0,
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
        self._last_equivocation_log = -math.inf
        self.stats = StoreStats()
        self.last_storage_error: StorageError | None = None
        self._full_since: float | None = None  # when appends began to fail for a full disk
        self.equivocations: deque[Equivocation] = deque(maxlen=MAX_EQUIVOCATION_REPORTS)
        """The latest equivocations seen (a bounded report; ``stats`` counts them all)."""
        self._deleted: frozenset[str] = frozenset()  # deleted in the metadata, not re-created
        self._applied_deletions: dict[str, int] = {}
        self._fences: dict[PartitionKey, int] = {}  # last offset of a deleted topic's partition
        if hasattr(storage, "deletions"):
            self._applied_deletions, fences = storage.deletions()
            self._fence(fences)

    # ------------------------------------------------------------------ queries

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def profile(self) -> Profile:
        return self._profile

    def head(self, topic: str, partition: str) -> int | None:
        """The committed head of a partition, or ``None`` if nothing is stored."""
        return self._heads.get((topic, partition))

    def has_pending(self) -> bool:
        """True while fetches are being served: the shell should poll without blocking."""
        return bool(self._pending)

    def subscriptions(self) -> list[bytes]:
        """The SUB prefixes a store needs (wire reference §4, writer and reader as one node)."""
        return [
            Command.RECORD.value,
            Command.HEAD.value,
            Command.FETCH.value,
            Command.GET_HEADS.value,
            direct_prefix(Command.DIRECT_RECORD, self._node_id),
            direct_prefix(Command.CONSUMER_HELLO, self._node_id),
        ]

    # ------------------------------------------------------------------ inputs

    def handle_batch(
        self, msgs: Sequence[m.Message], now: float, sources: Sequence[str] = ()
    ) -> list[Publish]:
        """Process one drained batch: store, then publish FETCHes, answers and ACKs (last).

        ``sources[i]``: the host ``msgs[i]`` came from, whose budget of new partitions
        it spends (:class:`~dafka.core.admission.PartitionGate`; "" or none: unknown)."""
        b = _Batch(now)
        for i, msg in enumerate(msgs):
            b.source = sources[i] if i < len(sources) else ""
            try:
                self._dispatch(msg, b)
            except _BAD_INPUT as exc:
                self.stats.malformed += 1
                log.debug("store.malformed type=%s error=%s", type(msg).__name__, exc)
        committed = self._commit(b, now)
        out: list[Publish] = []
        self._decide_fetches(b.gap_keys | b.advanced, now, out)
        for requester, topics in b.head_requests:
            self._answer_heads(requester, topics, out, now)
        for requester, topic, partition in b.tail_answers:
            self._answer_tail(requester, topic, partition, out)
        self._serve(out, now)
        if committed:
            heads = self._heads
            for key in sorted(b.advanced | b.reack):
                head = heads.get(key)
                if head is not None:
                    out.append(Publish(m.Ack(key[1], key[0], head)))
                    self.stats.acks_sent += 1
        return out

    def on_subscription(self, sub: m.Subscription, now: float) -> list[Publish]:
        """Greet a consumer that subscribes to its STORE-HELLOs (``L`` + consumer ID)."""
        if not (sub.subscribe and sub.cmd == Command.STORE_HELLO.value):
            return []
        try:
            consumer = sub.rest.decode("ascii")
        except UnicodeDecodeError:
            return []
        if not is_node_id(consumer) or consumer == self._node_id:
            return []
        return [Publish(m.StoreHello(consumer, self._node_id))]

    def tick(self, now: float) -> list[Publish]:
        """Retry FETCHes for gaps still open, then serve the next chunk of pending fetches."""
        out: list[Publish] = []
        if now >= self._next_gap_check:
            self._next_gap_check = math.inf
            self._decide_fetches(list(self._gaps), now, out)
        self._serve(out, now)
        return out

    # ------------------------------------------------------------------ metadata

    def set_policy(
        self, topics: Mapping[str, Mapping[str, Any]], stores: Iterable[str] = ()
    ) -> None:
        """Take per-topic settings from the cluster metadata: ``producers`` (None: any
        producer may write), ``consumers`` (None: anyone may read; else those node IDs and
        the trusted ``stores``, which fill their gaps from each other) and
        ``retention_ms`` / ``retention_bytes``."""
        acl: dict[str, frozenset[str]] = {}
        readers: dict[str, frozenset[str]] = {}
        trusted = frozenset(stores)
        retention: dict[str, tuple[int | None, int | None]] = {}
        for topic, settings in topics.items():
            producers = settings.get("producers")
            if producers is not None:
                acl[topic] = frozenset(producers)
            consumers = settings.get("consumers")
            if consumers is not None:
                readers[topic] = frozenset(consumers) | trusted
            age, size = settings.get("retention_ms"), settings.get("retention_bytes")
            if age is not None or size is not None:
                retention[topic] = (age, size)
        self._acl = acl
        self._readers = readers
        self._retention = retention
        if readers and self._pending:  # FETCHes queued before the ACL closed are not served
            kept = [f for f in self._pending if self.may_read(f.requester, f.topic)]
            self.stats.read_refused += len(self._pending) - len(kept)
            self._pending = deque(kept)
            self._pending_keys = {f.key for f in kept}

    def readers_of(self, topic: str) -> frozenset[str] | None:
        """The node IDs the topic's read ACL names (with the trusted stores); None: open."""
        return self._readers.get(topic)

    def may_read(self, requester: str, topic: str) -> bool:
        """Whether the topic's read ACL lets ``requester`` (a node ID) read it."""
        allowed = self._readers.get(topic)
        return allowed is None or requester in allowed

    def apply_deletions(
        self, deleted: Mapping[str, int], live: Iterable[str]
    ) -> list[tuple[str, int]]:
        """Apply the metadata's topic deletions (topic -> revision of the deletion; ``live``:
        the topics that exist, some of them re-created). A deletion newer than the last this
        store applied for its topic drops every batch and head of the topic in one
        transaction (:meth:`LmdbStorage.delete_topic`) and everything held of it in memory.
        Each partition keeps a fence at its deleted head: records at or below it are the
        deleted topic's and are never stored again, and a re-created topic's partition
        starts above it. While a topic stays deleted, messages about it are dropped.
        Returns ``(topic, batches deleted)`` for the deletions applied now."""
        done: list[tuple[str, int]] = []
        delete = getattr(self._storage, "delete_topic", None)
        for topic, revision in deleted.items():
            if delete is None or revision <= self._applied_deletions.get(topic, -1):
                continue
            count, fences = delete(topic, revision)  # StorageError: retried on the next call
            self._applied_deletions[topic] = revision
            self._forget(topic)
            self._gate.forget_topic(topic)
            self._fence(fences)
            done.append((topic, count))
            log.info("store.topic_deleted topic=%s revision=%d batches=%d", topic, revision, count)
        self._deleted = frozenset(deleted) - frozenset(live)
        return done

    def _fence(self, fences: Mapping[PartitionKey, int]) -> None:
        self._fences.update(fences)
        for key, fence in fences.items():
            if key not in self._heads:
                self._tails[key] = fence + 1  # below it: deleted (answered like retention)

    def _forget(self, topic: str) -> None:
        """Drop everything held in memory about ``topic`` (its storage is already gone)."""
        tables = (self._heads, self._tails, self._profiles, self._signed_heads, self._gaps)
        for table in (*tables, self._holes):
            for key in [k for k in table if k[0] == topic]:
                del table[key]
        for key in [k for k in self._buffers if k[0] == topic]:
            for _, content in self._buffers.pop(key).values():
                self._buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
        self._pending = deque(f for f in self._pending if f.topic != topic)
        self._pending_keys = {k for k in self._pending_keys if k[1] != topic}
        self._foreign = frozenset(k for k in self._foreign if k[0] != topic)

    def apply_retention(self, now_ms: int) -> list[tuple[str, str, int]]:
        """Delete whole batches that fell out of their topic's retention; returns the
        ``(topic, partition, new tail)`` of every partition whose tail moved."""
        storage = self._storage
        if not self._retention or not hasattr(storage, "trim"):
            return []
        moved: list[tuple[str, str, int]] = []
        for (topic, partition), _head in list(self._heads.items()):
            limits = self._retention.get(topic)
            if limits is None:
                continue
            infos = storage.batch_infos(topic, partition)  # type: ignore[attr-defined]  # with trim()
            cut = retention_cut(infos, max_age_ms=limits[0], max_bytes=limits[1], now_ms=now_ms)
            if not cut:
                continue
            tail = storage.trim(topic, partition, infos[cut].first_offset)
            if tail is not None:
                self._tails[(topic, partition)] = tail
                self.stats.retention_trims += 1
                moved.append((topic, partition, tail))
                log.info(
                    "store.retention topic=%s partition=%s tail=%d deleted_batches=%d",
                    topic,
                    partition,
                    tail,
                    cut,
                )
        return moved

    # ------------------------------------------------------------------ messages

    def _dispatch(self, msg: m.Message, b: _Batch) -> None:
        if self._deleted and getattr(msg, "topic", None) in self._deleted:
            self.stats.deleted_topic += 1
            return
        if isinstance(msg, m.Record) or (
            isinstance(msg, m.DirectRecord) and msg.recipient == self._node_id
        ):
            self._on_record(msg, b)
        elif isinstance(msg, m.Head):
            self._on_head(msg, b)
        elif isinstance(msg, m.Fetch):
            self._on_fetch(msg, b)
        elif isinstance(msg, m.GetHeads):
            self._on_head_request(msg.requester, (msg.topic,), b)
        elif isinstance(msg, m.ConsumerHello) and msg.store == self._node_id:
            topics = tuple(dict.fromkeys(msg.topics[:MAX_HELLO_TOPICS]))
            self._on_head_request(msg.consumer, topics, b)
        elif isinstance(msg, m.Oversized) and msg.recipient in (None, self._node_id):
            self._on_oversized(msg, b)
        else:
            self.stats.ignored += 1  # ACKs, DIRECT-HEADs, other nodes' direct messages

    def _expected(self, key: PartitionKey, b: _Batch) -> int | None:
        """Next offset ``key`` can accept in this batch; ``None`` if the key is invalid."""
        nxt = b.nexts.get(key)
        if nxt is None:
            head = self._heads.get(key)
            if head is None:
                if not _valid_partition_key(*key):
                    self.stats.malformed += 1
                    return None
                if key not in self._gate and self._gate.full(key[0]):
                    self.stats.partitions_refused += 1  # cheap, before verifying anything
                    return None
                nxt = self._fences.get(key, -1) + 1 if self._fences else 0
            else:
                nxt = head + 1
            if self._holes:
                nxt = self._past_hole(key, nxt)
            b.nexts[key] = nxt
        return nxt

    def _past_hole(self, key: PartitionKey, nxt: int) -> int:
        """``nxt``, or the end of the refused offsets that start there."""
        hole = self._holes.get(key)
        if hole is None or hole[0] != nxt:
            return nxt
        return hole[1]

    def _on_oversized(self, msg: m.Oversized, b: _Batch) -> None:
        """A record too big to take (its content was dropped): count and log it, and under
        rfc46 refuse its offset so the records after it are stored (see the module)."""
        self.stats.oversized += 1
        if b.now - self._last_oversized_log >= _ERROR_LOG_PERIOD:
            self._last_oversized_log = b.now
            log.warning(
                "store.oversized topic=%s partition=%s offset=%d bytes=%d total=%d "
                "(refused; the records after it are stored)",
                msg.topic,
                msg.partition,
                msg.offset,
                msg.size,
                self.stats.oversized,
            )
        if self._signed:
            return  # a signed producer caps its batches: nothing to make room for
        key = (msg.topic, msg.partition)
        nxt = self._expected(key, b)
        if nxt is None or msg.offset != nxt or self._pinned_elsewhere(key):
            # Below: held or refused already. Above: fetched (again) when the partition
            # gets there; a C producer keeps it until it is acknowledged.
            return
        if self._acl:
            allowed = self._acl.get(key[0])
            if allowed is not None and key[1] not in allowed:
                self.stats.unauthorized += 1
                return
        if not self._admitted(key, b):
            return
        hole = self._holes.get(key)
        start = hole[0] if hole is not None and hole[1] == nxt else nxt
        self._holes[key] = (start, nxt + 1)
        b.nexts[key] = nxt + 1
        buf = self._buffers.get(key)
        if buf and nxt + 1 in buf:
            b.nexts[key] = self._drain(key, buf, nxt + 1, b)
            b.advanced.add(key)

    def _hole_start(self, key: PartitionKey, first: int) -> int:
        """Where a batch starting at ``first`` is stored: at the refused offsets before it."""
        hole = self._holes.get(key)
        return hole[0] if hole is not None and hole[1] == first else first

    def _pinned_elsewhere(self, key: PartitionKey) -> bool:
        """True (and counted) if ``key`` is pinned to the other wire profile."""
        if self._foreign and key in self._foreign:
            self.stats.wrong_profile += 1
            return True
        return False

    def _reject(self, key: PartitionKey, first: int, last: int, exc: Exception, now: float) -> None:
        self.stats.rejected += 1
        if now - self._last_reject_log >= _ERROR_LOG_PERIOD:
            self._last_reject_log = now
            log.warning(
                "store.rejected topic=%s partition=%s offsets=%d..%d error=%s total=%d",
                key[0],
                key[1],
                first,
                last,
                exc,
                self.stats.rejected,
            )

    def _genuine(self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch) -> bool:
        """Whether the profile accepts ``msg`` (always under rfc46); count it if not."""
        if not self._signed:
            return True
        try:
            self._profile.check_records(msg)
        except WireError as exc:
            self._reject(key, msg.offset, msg.offset + msg.count - 1, exc, b.now)
            return False
        return True

    def _on_record(self, msg: m.Record | m.DirectRecord, b: _Batch) -> None:
        topic = msg.topic
        key = (topic, msg.partition)
        nxt = self._expected(key, b)
        if nxt is None:
            return
        if self._foreign and self._pinned_elsewhere(key):
            return
        if self._acl:
            allowed = self._acl.get(topic)
            if allowed is not None and msg.partition not in allowed:
                self.stats.unauthorized += 1
                return
        first = msg.offset
        last = first + msg.count - 1
        if msg.count < 1:
            self.stats.malformed += 1
        elif first == nxt:
            if self._signed and not self._genuine(msg, key, b):
                return
            if not self._admitted(key, b):
                return
            self._accept(msg, key, last, b)
        elif first < nxt:
            if first < self._tails.get(key, 0):
                self.stats.duplicates += 1  # below our tail: retention deleted it
            elif not self._signed or self._replay(msg, key, b):
                self.stats.duplicates += 1
                b.reack.add(key)
            elif self._genuine(msg, key, b):
                if self._supersede(msg, key, b):
                    self._accept(msg, key, last, b)
                else:
                    self._equivocation(msg, key, b)
        elif self._note_gap(key, last, b):
            buf = self._buffers.get(key)
            if buf is not None and first in buf:
                held_last, held = buf[first]
                if held_last == last and held == msg.content:
                    self.stats.duplicates += 1
                elif self._genuine(msg, key, b):
                    self._equivocation(msg, key, b, (first, held_last))
            elif self._genuine(msg, key, b) and self._admitted(key, b):
                self._hold(key, first, last, msg.content, nxt)
        else:
            self.stats.dropped_out_of_order += 1

    def _accept(
        self, msg: m.Record | m.DirectRecord, key: PartitionKey, last: int, b: _Batch
    ) -> None:
        """Take a batch that continues the partition into the write batch (and what it
        unblocks from the buffer)."""
        first = msg.offset
        start = self._hole_start(key, first) if self._holes else first
        batch = StoredBatch(key[0], key[1], start, last, msg.content, self._name)
        b.accepted.append(batch)
        if self._signed:
            b.blobs[(key[0], key[1], first)] = batch
        nxt = last + 1
        buf = self._buffers.get(key)
        if buf:
            nxt = self._drain(key, buf, nxt, b)
        b.nexts[key] = nxt
        b.advanced.add(key)

    def _supersede(self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch) -> bool:
        """A verified gap statement over batches we hold that its producer signed earlier
        and never got acknowledged (``docs/wire.md`` §12): drop them and let the gap in, so
        that every store keeps the same history. True if that was done.

        Only the exact case qualifies: the gap starts where a held batch starts, covers
        everything held from there to the head, and is newer (by the producer's signed
        clock) than every batch it replaces, none of which is a gap itself."""
        if key in b.advanced:
            return False  # batches of it wait in this very write batch: keep it simple
        try:
            gap = peek_batch(msg.content)
        except WireError:
            return False
        first, last = msg.offset, msg.offset + msg.count - 1
        head = self._heads.get(key)
        if not gap.is_gap or head is None or head > last:
            return False
        try:
            held = self._storage.read(key[0], key[1], first, MAX_SUPERSEDED_BATCHES)
            if not held or held[0].first_offset != first or held[-1].last_offset != head:
                return False
            for old in held:
                was = peek_batch(old.blob)
                if was.is_gap or was.timestamp_ms >= gap.timestamp_ms:
                    return False
            self._storage.truncate(key[0], key[1], first)
        except (StorageError, WireError) as exc:
            log.warning("store.supersede_failed topic=%s error=%s", key[0], exc)
            return False
        if first > self._tails.get(key, 0):
            self._heads[key] = first - 1
        else:
            self._heads.pop(key, None)
            self._profiles.pop(key, None)
        b.nexts[key] = first
        self.stats.superseded += head - first + 1
        log.warning(
            "store.superseded topic=%s partition=%s offsets=%d..%d gap=%d..%d total=%d",
            key[0],
            key[1],
            first,
            head,
            first,
            last,
            self.stats.superseded,
        )
        return True

    def _admitted(self, key: PartitionKey, b: _Batch) -> bool:
        """Whether this store takes on ``key`` (verified already): held partitions always,
        new ones under the per-topic cap and the rate of new partitions of their source."""
        if key in self._gate or self._gate.admit(key, b.now, b.source):
            return True
        self.stats.partitions_refused += 1
        return False

    def _replay(self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch) -> bool:
        """True if ``msg`` is byte for byte the batch held at its offsets (a replay)."""
        first = msg.offset
        held = b.blobs.get((key[0], key[1], first))
        if held is None:
            try:
                found = self._storage.read(key[0], key[1], first, 1)
            except StorageError:
                return False
            held = found[0] if found else None
        return (
            held is not None
            and held.first_offset == first
            and held.last_offset == first + msg.count - 1
            and held.blob == msg.content
        )

    def _equivocation(
        self,
        msg: m.Record | m.DirectRecord,
        key: PartitionKey,
        b: _Batch,
        kept: tuple[int, int] | None = None,
    ) -> None:
        """A second validly signed batch for offsets we hold: keep the first, count, report."""
        first, last = msg.offset, msg.offset + msg.count - 1
        if kept is None:
            kept = (first, last)
            held = b.blobs.get((key[0], key[1], first))
            if held is None:
                try:
                    found = self._storage.read(key[0], key[1], first, 1)
                except StorageError:
                    found = []
                held = found[0] if found else None
            if held is not None:
                kept = (held.first_offset, held.last_offset)
        self.stats.equivocations += 1
        self.equivocations.append(Equivocation(key[0], key[1], first, last, *kept, b.now))
        if b.now - self._last_equivocation_log < _ERROR_LOG_PERIOD:
            return  # counted and reported; one log line per period
        self._last_equivocation_log = b.now
        log.warning(
            "store.equivocation topic=%s partition=%s offsets=%d..%d kept=%d..%d total=%d",
            key[0],
            key[1],
            first,
            last,
            kept[0],
            kept[1],
            self.stats.equivocations,
        )

    def _on_head(self, msg: m.Head, b: _Batch) -> None:
        key = (msg.topic, msg.partition)
        nxt = self._expected(key, b)
        if nxt is None:
            return
        if self._pinned_elsewhere(key):
            return
        verified = False
        if self._signed:
            newest = self._signed_heads.get(key)
            if newest is None or msg.offset > newest.offset:
                # A head beyond the newest verified one must be the producer's own;
                # an older one is implied by a head already verified.
                if not self._profile.check_head(msg):
                    self.stats.rejected_heads += 1
                    return
                verified = True
        if msg.offset >= nxt:
            if not self._admitted(key, b):
                return
            opened = self._note_gap(key, min(msg.offset, nxt - 1 + self._lead), b)
            if verified and opened:
                self._signed_heads[key] = msg
        else:
            if key in self._heads:
                b.reack.add(key)
            if verified and (key in self._heads or key in b.advanced):
                self._signed_heads[key] = msg

    def _on_fetch(self, msg: m.Fetch, b: _Batch) -> None:
        now = b.now
        if msg.requester == self._node_id or msg.count == 0:
            self.stats.ignored += 1
            return
        if self._readers and not self.may_read(msg.requester, msg.topic):
            self.stats.read_refused += 1
            return
        key = (msg.topic, msg.partition)
        head = self._heads.get(key)
        if head is None or msg.offset > head:
            return  # nothing stored to answer with; the producer or another store may
        if not is_node_id(msg.requester):
            self.stats.malformed += 1
            return
        if self._pinned_elsewhere(key):
            return
        if self._signed and msg.offset < self._tails.get(key, 0):
            # Below the retention tail: say so (DIRECT-HEAD with the tail), rate-limited.
            if not self._fetch_limiter.allow(msg.requester, now):
                self.stats.fetches_limited += 1
                return
            answer = (msg.requester, msg.topic, msg.partition)
            if answer not in b.tail_answers:  # one per requester and partition per batch
                b.tail_answers.append(answer)
            return
        pkey = (msg.requester, msg.topic, msg.partition, msg.offset)
        if pkey in self._pending_keys:
            return
        if len(self._pending) >= self._max_pending:
            self.stats.fetches_refused += 1
            log.debug("store.fetch_refused requester=%s", msg.requester)
            return
        if not self._fetch_limiter.allow(msg.requester, now):
            self.stats.fetches_limited += 1
            return
        end = msg.offset + min(msg.count, self._max_fetch_count)
        self._pending.append(
            _PendingFetch(pkey, msg.requester, msg.topic, msg.partition, msg.offset, end)
        )
        self._pending_keys.add(pkey)
        self.stats.fetches_queued += 1

    def _on_head_request(self, requester: str, topics: Sequence[str], b: _Batch) -> None:
        if not is_node_id(requester):
            self.stats.malformed += 1
            return
        if self._readers:
            allowed = tuple(t for t in topics if self.may_read(requester, t))
            if len(allowed) < len(topics):
                self.stats.read_refused += 1
                if not allowed:
                    return
            topics = allowed
        if not self._heads_limiter.allow(requester, b.now):
            self.stats.fetches_limited += 1
            return
        b.head_requests.append((requester, topics))

    # ------------------------------------------------------------------ gaps & buffer

    def _note_gap(self, key: PartitionKey, offset: int, b: _Batch) -> bool:
        """Record that ``offset`` exists; False if too many gaps are open to track one more."""
        gap = self._gaps.get(key)
        if gap is None:
            if len(self._gaps) >= MAX_OPEN_GAPS:
                self.stats.gaps_refused += 1
                return False
            self._gaps[key] = _Gap(target=offset, retry=self._fetch_retry)
        elif offset > gap.target:
            gap.target = offset
        b.gap_keys.add(key)
        return True

    def _hold(self, key: PartitionKey, first: int, last: int, content: bytes, nxt: int) -> None:
        """Buffer an out-of-order batch if it is in the fetch window and there is room."""
        cost = len(content) + BUFFER_ENTRY_OVERHEAD
        if (
            last - nxt >= self._max_fetch_count
            or self._buffered_bytes + cost > self._max_buffered_bytes
        ):
            self.stats.dropped_out_of_order += 1
            return
        buf = self._buffers.setdefault(key, {})
        if first not in buf:
            buf[first] = (last, content)
            self._buffered_bytes += cost
            self.stats.buffered += 1

    def _drain(
        self, key: PartitionKey, buf: dict[int, tuple[int, bytes]], nxt: int, b: _Batch
    ) -> int:
        """Move buffered batches that now follow the head into the write batch."""
        topic, partition = key
        while (held := buf.pop(nxt, None)) is not None:
            last, content = held
            self._buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
            start = self._hole_start(key, nxt) if self._holes else nxt
            batch = StoredBatch(topic, partition, start, last, content, self._name)
            b.accepted.append(batch)
            if self._signed:
                b.blobs[(topic, partition, nxt)] = batch
            nxt = last + 1
        stale = [first for first in buf if first < nxt]
        for first in stale:  # overlapping what is now held: only an equivocator sends these
            _, content = buf.pop(first)
            self._buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
        if not buf:
            del self._buffers[key]
        return nxt

    def _decide_fetches(self, keys: Iterable[PartitionKey], now: float, out: list[Publish]) -> None:
        """For each partition in ``keys``: close its gap, or FETCH if the rate limit allows."""
        for key in keys:
            gap = self._gaps.get(key)
            if gap is None:
                continue
            start = self._heads.get(key, -1) + 1
            if self._holes:
                start = self._past_hole(key, start)
            if gap.target < start:
                del self._gaps[key]
                continue
            if gap.sent_at is not None and start < gap.sent_end:
                if start > gap.sent_start:
                    gap.retry = self._fetch_retry  # the last FETCH is being answered
                due = gap.sent_at + gap.retry
                if now < due:
                    self._next_gap_check = min(self._next_gap_check, due)
                    continue
                if start == gap.sent_start:
                    # Unanswered since the last try: back off.
                    gap.retry = min(gap.retry * 2, self._max_retry)
            elif gap.sent_at is not None:
                gap.retry = self._fetch_retry  # the last FETCH was fully answered
            self._send_fetch(key, gap, start, now, out)

    def _send_fetch(
        self, key: PartitionKey, gap: _Gap, start: int, now: float, out: list[Publish]
    ) -> None:
        limit = gap.target + 1
        buf = self._buffers.get(key)
        if buf:
            # The gap ends where the buffered records begin.
            limit = min(limit, min(buf))
        count = min(limit - start, self._max_fetch_count)
        topic, partition = key
        out.append(Publish(m.Fetch(partition, self._node_id, topic, start, count)))
        gap.sent_at = now
        gap.sent_start = start
        gap.sent_end = start + count
        self._next_gap_check = min(self._next_gap_check, now + gap.retry)
        self.stats.fetches_sent += 1
        log.debug(
            "store.fetch_sent topic=%s partition=%s from=%d n=%d", topic, partition, start, count
        )

    # ------------------------------------------------------------------ commit

    def _commit(self, b: _Batch, now: float) -> bool:
        """Append the batch's records; advance heads only if the append returned."""
        if not b.accepted:
            return True
        try:
            self._storage.append(b.accepted)
        except StorageError as exc:
            self.stats.append_failures += 1
            self.last_storage_error = exc
            full = isinstance(exc, StoreFullError)
            if full and self._full_since is None:
                self._full_since = now
            if now - self._last_error_log >= _ERROR_LOG_PERIOD:
                self._last_error_log = now
                if isinstance(exc, StoreFullError):
                    log.error(
                        "store.disk_full dir=%s need_bytes=%s free_bytes=%s records=%d "
                        "failures=%d acks=paused",
                        exc.path,
                        exc.need_bytes,
                        exc.free_bytes,
                        len(b.accepted),
                        self.stats.append_failures,
                    )
                else:
                    log.error("store.append_failed records=%d error=%s", len(b.accepted), exc)
            # Nothing was stored: remember the records exist so tick() fetches them again.
            for key in b.advanced:
                self._note_gap(key, b.nexts[key] - 1, b)
            b.advanced.clear()
            return False
        if self._full_since is not None:
            log.warning("store.disk_full.cleared after_s=%.1f", now - self._full_since)
            self._full_since = None
            self._last_error_log = -math.inf
        profiles = self._profiles
        for key in b.advanced:
            self._heads[key] = b.nexts[key] - 1
            if key not in profiles:
                profiles[key] = self._name
        if self._holes:
            for key in b.advanced:
                hole = self._holes.get(key)
                if hole is not None and self._heads[key] >= hole[0]:
                    del self._holes[key]  # stored, spanned by the batch after it
        if self._signed:
            self.stats.records_stored += sum(
                batch.last_offset - batch.first_offset + 1 for batch in b.accepted
            )
        else:
            self.stats.records_stored += len(b.accepted)
        return True

    # ------------------------------------------------------------------ answers

    def _answer_heads(
        self, requester: str, topics: Sequence[str], out: list[Publish], now: float
    ) -> None:
        budget = self._heads_out
        for topic in topics:
            if not budget.allow(now):  # a topic read costs one, each answer one more
                self.stats.heads_limited += 1
                continue
            try:
                parts = self._storage.partitions(topic)
            except StorageError as exc:
                log.warning("store.heads_failed topic=%r error=%s", topic, exc)
                continue
            budget.charge(len(parts))
            profiles = self._profiles
            signed_heads = self._signed_heads
            for partition, head in parts:
                key = (topic, partition)
                if profiles.get(key, self._name) != self._name:
                    continue
                proof = signed_heads.get(key)
                tail = self._tails.get(key, 0) if self._signed else 0
                out.append(
                    Publish(
                        m.DirectHead(
                            requester, topic, partition, head, proof, tail if tail > 0 else None
                        )
                    )
                )
                self.stats.heads_sent += 1

    def _answer_tail(self, requester: str, topic: str, partition: str, out: list[Publish]) -> None:
        """Tell a consumer that FETCHed below the tail where the partition now starts."""
        key = (topic, partition)
        head = self._heads.get(key)
        tail = self._tails.get(key, 0)
        if head is None or tail <= 0:
            return
        proof = self._signed_heads.get(key)
        out.append(Publish(m.DirectHead(requester, topic, partition, head, proof, tail)))
        self.stats.heads_sent += 1

    def _serve(self, out: list[Publish], now: float) -> None:
        """Serve up to ``serve_chunk`` records and ``SERVE_BYTES`` bytes, round-robin.

        Whole batches are charged, so one step never sends more than the
        budgets plus one batch, however many fetches are pending. A fetch whose
        requester (or all requesters together) spent its bytes per second is
        dropped and counted (``fetches_limited``); the requester asks again.
        """
        budget = self._serve_chunk
        room = SERVE_BYTES
        queue = self._pending
        while budget > 0 and room > 0 and queue:
            share = max(1, budget // len(queue))
            for _ in range(len(queue)):
                if budget <= 0 or room <= 0:
                    break
                fetch = queue.popleft()
                if not self._bytes_limiter.allow(fetch.requester, now, 0.0):
                    self.stats.fetches_limited += 1
                    self._pending_keys.discard(fetch.key)
                    continue
                sent, size, done = self._serve_one(fetch, min(share, budget), out)
                self._bytes_limiter.charge(fetch.requester, size)
                budget -= sent
                room -= size
                if done:
                    self._pending_keys.discard(fetch.key)
                    if not self._signed and fetch.next >= fetch.end:
                        self._tell_more(fetch, out)
                else:
                    queue.append(fetch)

    def _tell_more(self, fetch: _PendingFetch, out: list[Publish]) -> None:
        """rfc46: a FETCH whose count ran out below what is held is followed by a
        DIRECT-HEAD to its requester. A C consumer FETCHes only when a record shows a
        gap or a HEAD / DIRECT-HEAD shows more (in windows up to the next multiple of
        100,000), so without it a C consumer catching up with no live producer stops
        after its first window; ours take it as the hint it is."""
        head = self._heads.get((fetch.topic, fetch.partition))
        if head is None or head < fetch.end:
            return
        out.append(Publish(m.DirectHead(fetch.requester, fetch.topic, fetch.partition, head)))
        self.stats.heads_sent += 1

    def _serve_one(
        self, fetch: _PendingFetch, limit: int, out: list[Publish]
    ) -> tuple[int, int, bool]:
        """Send about ``limit`` records of ``fetch``; return (records sent, bytes, finished).

        Batches go out whole and verbatim; the first may start before the
        offset asked for (a signed batch holding it).
        """
        want = min(limit, fetch.end - fetch.next)
        if want <= 0:
            return 0, 0, True
        # rfc46 batches hold one record; signed ones up to 64 Ki, so read a few at a time
        max_batches = min(want, SIGNED_READ_BATCHES) if self._signed else want
        try:
            batches = self._storage.read(fetch.topic, fetch.partition, fetch.next, max_batches)
        except StorageError as exc:
            log.warning(
                "store.read_failed topic=%s offset=%d error=%s", fetch.topic, fetch.next, exc
            )
            return 0, 0, True
        sent = 0
        size = 0
        name = self._name
        finished = len(batches) < max_batches
        signed = self._signed
        for batch in batches:
            first, last = batch.first_offset, batch.last_offset
            if first > fetch.next or last < fetch.next or batch.profile != name:
                finished = True  # a hole, or a batch this profile cannot carry
                break
            # rfc46: one record, at the batch's last offset (offsets before it were refused)
            offset, count = (first, last - first + 1) if signed else (last, 1)
            out.append(
                Publish(
                    m.DirectRecord(
                        fetch.requester,
                        fetch.topic,
                        fetch.partition,
                        offset,
                        batch.blob,
                        count,
                    )
                )
            )
            sent += last - first + 1
            size += len(batch.blob)
            fetch.next = last + 1
            if fetch.next >= fetch.end or sent >= want:
                finished = False  # stopped early: what was read is not all there is
                break
        self.stats.records_served += sent
        return sent, size, finished or fetch.next >= fetch.end
