"""The public Producer: thread-safe, batching, nothing dropped.

``send`` hands a record to the node's IO thread and returns a
:class:`concurrent.futures.Future` that resolves to the record's offset once it
is durable: written and fsynced by ``min_acks`` distinct stores (under the
``signed`` profile, stores whose signed ACK this producer trusts). Until then
the record is kept in memory, bounded by ``max_unacked_bytes``: when full,
``send`` blocks (or raises :class:`BufferFullError` with ``on_full="raise"``).
``send_many`` queues many records under one future, which is far cheaper per
record. Futures resolve on the IO thread, so callbacks added to them must not
block. A record over a size limit (the wire profile's, or its topic's
``max_record_bytes``) is refused by ``send`` with :class:`RecordTooLargeError`
before it is queued, so it never affects the records around it.

``flush`` raises :class:`DeliveryError` if records it waited for failed, and
``close`` returns a :class:`CloseResult` counting the records acknowledged,
unacknowledged and failed: nothing is dropped without being counted.

Under the ``signed`` profile (the default) the producer's node ID is derived
from its Ed25519 key, and whatever is queued when the IO thread wakes is
sealed into signed batches (natural batching). Records may carry keys. With a
``state_dir`` the producer keeps its key, and so its partition, and its next
offsets across restarts. Without one it is a new partition each run, like the
C reference's producers.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..config import NodeConfig, ProducerConfig, parse_trusted_stores
from ..core import messages as m
from ..core.effects import Acked, Outgoing, Publish, PublishRecords
from ..core.messages import Message, Subscription
from ..core.producer import ProducerCore
from ..core.read_guard import ReadView
from ..core.recovery import DEFAULT_WAIT as RECOVERY_WAIT
from ..errors import (
    BufferFullError,
    ClosedError,
    ConfigError,
    DafkaTimeout,
    DeliveryError,
    ProfileError,
    RecordTooLargeError,
    StorageError,
    TopicDeletedError,
)
from ..futures import BatchFuture, LazyFuture, RecordFuture
from ..ids import check_topic, new_node_id
from ..io.metrics import DEFAULT_HOST, AckTimer, NodeMetrics, check_metrics_port
from ..io.node import NodeLoop
from ..io.node_metrics import producer_metrics
from ..io.profiles import RFC46, Profile, SignedProfile
from ..metadata.client import tower_curve
from ..metadata.follower import MetadataView, require_transport
from ..metadata.state import topic_settings
from ..security.identity import Identity
from ..storage.state_dir import StateDir
from ..storage.wal import LoggedBatch, ProducerLog
from ..wire.signed import MAX_KEY_BYTES, MAX_VALUE_BYTES
from .common import node_config

log = logging.getLogger(__name__)

RFC46_MAX_IN_FLIGHT = 50_000
ACKED_JOURNAL = "acked.journal"
"""How far each topic is durable, written before the application is told."""
WAL_FILE = "producer.wal"
"""The durable producer's log of what it published and is not yet acknowledged."""

__all__ = ["CloseResult", "Producer"]


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What :meth:`Producer.close` could account for, in records."""

    acknowledged: int
    """Records acknowledged over the producer's life."""
    unacknowledged: int
    """Records sent but not acknowledged when it closed; their futures failed with ClosedError."""
    failed: int
    """Records that failed after ``send`` accepted them (their futures carry the error)."""

    @property
    def complete(self) -> bool:
        """True if every record sent was acknowledged."""
        return not self.unacknowledged and not self.failed


# queued by send()/send_many(): (topic, value or values, key or keys, future). One
# tuple shape for both, told apart on the hot path by ``type(value) is list``, which
# mypy does not narrow: hence the explained ignores where they are taken apart.
_Queued = tuple[str, object, object, LazyFuture[Any]]
# waiting for durability: (last offset, future, bytes, first offset or -1 for a single record)
_Inflight = tuple[int, LazyFuture[Any], int, int]


class _ProducerHandler:
    """Runs on the IO thread: seals and publishes queued records, resolves futures on ACK."""

    def __init__(self, producer: Producer, core: ProducerCore) -> None:
        self.p = producer
        self.core = core
        self.queue: deque[_Queued] = deque()
        self.inflight: dict[str, deque[_Inflight]] = {}
        self.ack_timer: AckTimer | None = None
        """Times publication to ACK for the metrics (``metrics_port``), or None."""

    def _apply_policy(self, stores: tuple[str, ...] | None, min_acks: dict[str, int]) -> None:
        """On the IO thread (queued with NodeLoop.call): trusted stores and per-topic min_acks."""
        try:
            effects = self.core.set_policy(stores, min_acks)
        except ConfigError as exc:
            log.warning("producer.metadata.rejected error=%s", exc)
            return
        self._durable([e for e in effects if type(e) is Acked])

    def _topic_deleted(self, topic: str, revision: int) -> None:
        """On the IO thread: the topic was deleted; what was not acknowledged never will be."""
        dropped = self.core.forget_unacked(topic)
        if self.ack_timer is not None:
            self.ack_timer.forget(topic)
        pending = self.inflight.pop(topic, None) or deque()
        error = TopicDeletedError(
            f"topic {topic!r} was deleted (metadata revision {revision}) before the record "
            "was acknowledged"
        )
        freed = freed_bytes = 0
        for last, fut, size, first in pending:
            fut.fail(error)
            freed += 1 if first < 0 else last + 1 - first
            freed_bytes += size
        if freed:  # failed, not acknowledged: flush and close count them so
            self.p._rejected(freed, freed_bytes, error)
        wal = self.p._wal
        if wal is not None:  # never re-published after a restart either
            try:
                wal.release({topic: self.core.next_offset(topic)})
            except StorageError as exc:
                log.warning("producer.log_release_failed error=%s", exc)
        log.warning(
            "producer.topic_deleted topic=%s revision=%d unacked=%d", topic, revision, dropped
        )

    def subscriptions(self) -> list[bytes]:
        return self.core.subscriptions()

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        return []

    def has_pending(self) -> bool:
        return False

    def accepting(self) -> bool:
        return True

    def on_commands(self, now: float) -> list[Outgoing]:
        """Natural batching: everything queued since the last wake-up, per topic."""
        queue = self.queue
        if not queue or self.core.holds_publishing:
            return []
        by_topic: dict[str, tuple[list[bytes], list[bytes | None], list[tuple]]] = {}
        keyed: set[str] = set()
        popleft = queue.popleft
        taken = len(queue)
        for _ in range(taken):
            topic, value, key, fut = popleft()
            entry = by_topic.get(topic)
            if entry is None:
                entry = by_topic[topic] = ([], [], [])
            values, keys, futures = entry
            if type(value) is list:
                n = len(value)
                values.extend(value)
                if key is None:
                    keys.extend([None] * n)
                else:
                    keys.extend(key)  # type: ignore[arg-type]  # a list: see _Queued
                    keyed.add(topic)
                futures.append((n, fut, sum(map(len, value))))
            else:
                values.append(value)  # type: ignore[arg-type]  # bytes: see _Queued
                keys.append(key)  # type: ignore[arg-type]  # bytes | None: see _Queued
                if key is not None:
                    keyed.add(topic)
                futures.append((0, fut, len(value)))  # type: ignore[arg-type]  # see _Queued
        journal = self.p._journal
        if journal is not None:
            # durable before anything is published: a restart never reuses an offset
            journal.reserve_many(
                {t: self.core.next_offset(t) + len(e[0]) for t, e in by_topic.items()}
            )
        stamp = time.time_ns() // 1_000_000
        out: list[Outgoing] = []
        for topic, (values, keys, futures) in by_topic.items():
            try:
                first, pubs = self.core.publish(
                    topic, values, now, keys if topic in keyed else None, stamp
                )
            except Exception:  # send() checks sizes, so this is a defence: isolate the bad
                first, pubs, futures = self._publish_apart(
                    topic, values, keys if topic in keyed else None, futures, now, stamp
                )
                if not futures:
                    continue
            pending = self.inflight.get(topic)
            if pending is None:
                pending = self.inflight[topic] = deque()
            offset = first
            append = pending.append
            for n, fut, size in futures:
                if n:
                    append((offset + n - 1, fut, size, offset))
                    offset += n
                else:
                    append((offset, fut, size, -1))
                    offset += 1
            out.extend(pubs)
            if self.ack_timer is not None:
                self.ack_timer.published(topic, offset - 1)
        if self.p._wal is not None:
            self._log(out, taken)
        return out

    def _log(self, effects: list[Outgoing], taken: int) -> None:
        """Durable mode: log what is about to be published (one fsync), then let the
        ``send`` calls of the ``taken`` records return."""
        wal = self.p._wal
        assert wal is not None
        batches: list[LoggedBatch] = []
        for effect in effects:
            if isinstance(effect, PublishRecords):
                first = effect.first_offset
                batches.extend(
                    LoggedBatch(effect.topic, first + i, 1, content)
                    for i, content in enumerate(effect.contents)
                )
            elif isinstance(effect.msg, m.Record):
                rec = effect.msg
                batches.append(LoggedBatch(rec.topic, rec.offset, rec.count, rec.content))
        error: StorageError | None = None
        try:
            wal.append(batches)
        except StorageError as exc:
            error = exc
            log.error("producer.log_failed error=%s", exc)
        self.p._logged(taken, error)

    def _publish_apart(
        self,
        topic: str,
        values: list[bytes],
        keys: list[bytes | None] | None,
        futures: list[tuple],
        now: float,
        stamp: int,
    ) -> tuple[int, list[Outgoing], list[tuple]]:
        """Publish each send's records on their own; fail only the sends that do not seal.

        Returns the first offset, the effects and the sends kept, whose offsets follow
        on from the first (a failed send takes no offsets).
        """
        first = -1
        out: list[Outgoing] = []
        kept: list[tuple] = []
        at = 0
        for entry in futures:
            n, fut, size = entry
            count = n or 1
            part_keys = keys[at : at + count] if keys is not None else None
            try:
                start, pubs = self.core.publish(
                    topic, values[at : at + count], now, part_keys, stamp
                )
            except Exception as exc:
                log.warning(
                    "producer.record.rejected topic=%s records=%d error=%s", topic, count, exc
                )
                fut.fail(exc)
                self.p._rejected(count, size, exc)
            else:
                if first < 0:
                    first = start
                out.extend(pubs)
                kept.append(entry)
            at += count
        return first, out, kept

    def on_messages(
        self, msgs: list[Message], now: float, sources: Sequence[str] = ()
    ) -> list[Outgoing]:
        out: list[Outgoing] = []
        acked: dict[str, Acked] = {}
        for msg in msgs:
            for effect in self.core.handle(msg, now):
                if isinstance(effect, Acked):
                    acked[effect.topic] = effect
                elif isinstance(effect, Publish | PublishRecords):
                    out.append(effect)
        if acked:
            self._durable(list(acked.values()))
        return out

    def on_tick(self, now: float) -> list[Publish]:
        return self.core.tick(now)

    def _durable(self, acked: list[Acked]) -> None:
        """Record how far each topic is durable, then tell the futures: a restart must
        never declare an acknowledged offset a gap (``dafka.core.recovery``)."""
        journal = self.p._acked_journal
        if journal is not None:
            try:
                journal.reserve_many({a.topic: a.offset + 1 for a in acked})
            except StorageError as exc:
                log.error("producer.acked_journal_failed error=%s", exc)
                return  # the futures stay pending; a later ACK tries again
        for effect in acked:
            self._resolve(effect)
        wal = self.p._wal
        if wal is not None:
            try:
                wal.release({a.topic: a.offset + 1 for a in acked})
            except StorageError as exc:
                log.warning("producer.log_release_failed error=%s", exc)

    def _resolve(self, acked: Acked) -> None:
        if self.ack_timer is not None:
            self.ack_timer.acked(acked.topic, acked.offset)
        pending = self.inflight.get(acked.topic)
        if not pending:
            return
        freed_bytes = 0
        freed = 0
        durable = acked.offset
        popleft = pending.popleft
        while pending and pending[0][0] <= durable:
            last, fut, size, first = popleft()
            if first < 0:
                fut.resolve(last)
                freed += 1
            else:
                fut.resolve(range(first, last + 1))
                freed += last + 1 - first
            freed_bytes += size
        if freed:
            self.p._released(freed, freed_bytes)

    def on_subscription(self, sub: Subscription, now: float) -> list[Publish]:
        return []

    def on_stop(self) -> None:
        error = ClosedError("producer closed before the record was acknowledged")
        for pending in self.inflight.values():
            for _, fut, _, _ in pending:
                fut.fail(error)
        while self.queue:
            _, _, _, fut = self.queue.popleft()
            fut.fail(error)


def _as_bytes(data: bytes | str | bytearray | memoryview, what: str) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"a record {what} must be bytes or str, not {type(data).__name__}")


class Producer:
    """Publishes records to its own partition of one or more topics.

    ``profile`` is the wire profile (``"signed"`` by default, or ``"rfc46"`` to
    interoperate with C reference nodes). Under ``signed``, ``trusted_stores``
    lists the stores (node IDs or public keys, as ``dafka-keys show`` prints
    them) whose ACKs count, and ``min_acks`` how many distinct ones make a
    record durable; see :class:`~dafka.config.ProducerConfig` for what an empty
    list means.

    >>> with Producer("events", towers="127.0.0.1:5556") as p:   # doctest: +SKIP
    ...     offset = p.send(b"hello").result(timeout=10)
    """

    def __init__(
        self,
        topic: str | None = None,
        *,
        towers: str | Iterable[str] | None = None,
        host: str = "127.0.0.1",
        state_dir: str | os.PathLike[str] | None = None,
        max_unacked_bytes: int = 256 * 1024 * 1024,
        max_unacked_records: int | None = None,
        on_full: Literal["block", "raise"] = "block",
        head_interval: float = 1.0,
        min_acks: int = 1,
        profile: Literal["signed", "rfc46"] = "signed",
        trusted_stores: str | Iterable[str] | None = None,
        trust_any_store: bool | None = None,
        max_batch_records: int = 8192,
        max_batch_bytes: int = 1024 * 1024,
        node: NodeConfig | None = None,
        metadata: bool | None = None,
        cluster: str = "dafka",
        recovery_wait: float = RECOVERY_WAIT,
        durable: bool = False,
        metrics_port: int | None = None,
        metrics_host: str = DEFAULT_HOST,
    ) -> None:
        self.topic = check_topic(topic) if topic is not None else None
        check_metrics_port(metrics_port)
        self.metrics: NodeMetrics | None = None
        """Prometheus metrics (``metrics_port``; ``docs/metrics.md``), or None."""
        if durable and state_dir is None:
            raise ConfigError("a durable producer needs a state directory (state_dir=...)")
        self._metadata: MetadataView | None = None
        self.config = ProducerConfig(
            state_dir=Path(state_dir) if state_dir is not None else None,
            head_interval=head_interval,
            max_unacked_bytes=max_unacked_bytes,
            on_full=on_full,
            min_acks=min_acks,
            profile=profile,
            trusted_stores=parse_trusted_stores(trusted_stores),
            trust_any_store=trust_any_store,
            max_batch_records=max_batch_records,
            max_batch_bytes=max_batch_bytes,
        ).validate()
        nconf = node_config(towers, host, config=node)
        self._state: StateDir | None = None
        self._journal = None
        self._acked_journal = None
        self._wal: ProducerLog | None = None
        self._wal_cond = threading.Condition()
        self._wal_seq = 0
        self._wal_done = 0
        self._wal_failed: deque[tuple[int, int, StorageError]] = deque(maxlen=256)
        logged: list[tuple[str, int, int, bytes]] = []
        next_offsets: dict[str, int] = {}
        acked_offsets: dict[str, int] = {}
        signed = self.config.profile == "signed"
        try:
            identity: Identity | None = None
            if self.config.state_dir is not None:
                self._state = StateDir(self.config.state_dir)
                self._state.pin_profile(self.config.profile)
                if signed:
                    identity = self._state.identity()
                    node_id = identity.node_id
                else:
                    node_id = self._state.node_id()
                self._journal = self._state.offset_journal()
                next_offsets = self._journal.load()
                self._acked_journal = self._state.offset_journal(ACKED_JOURNAL)
                acked_offsets = self._acked_journal.load()
                if durable:
                    self._wal = ProducerLog(self._state.path / WAL_FILE)
                    for b in self._wal.pending(acked_offsets):
                        logged.append((b.topic, b.first, b.count, b.content))
                    for topic, end in self._wal.ends().items():
                        next_offsets[topic] = max(next_offsets.get(topic, 0), end)
            elif signed:
                identity = Identity.generate()
                node_id = identity.node_id
            else:
                node_id = new_node_id()
            wire: Profile = (
                SignedProfile(
                    identity,
                    max_batch_records=self.config.max_batch_records,
                    max_batch_bytes=self.config.max_batch_bytes,
                )
                if signed
                else RFC46
            )
            trusted: tuple[str, ...] | None = self.config.trusted_stores or None
            if self.config.trusts_any_store:
                trusted = None
                if self.config.trust_any_store is None:
                    log.warning(
                        "producer.trust_any_store id=%s: no trusted stores configured, so an "
                        "ACK from any store whose signature verifies counts (fine for a local "
                        "platform; pin stores with trusted_stores=[node IDs or public keys])",
                        node_id,
                    )
                else:
                    log.info("producer.trust_any_store id=%s", node_id)
            self.node_id = node_id
            self._core_trusted = trusted
            self._core = ProducerCore(
                node_id,
                next_offsets=next_offsets,
                head_interval=self.config.head_interval,
                profile=wire,
                min_acks=self.config.min_acks,
                trusted_stores=trusted,
                acked_offsets=acked_offsets,
                recovery_wait=recovery_wait,
                logged=logged,
            )
            self._handler = _ProducerHandler(self, self._core)
            self._lock = threading.Lock()  # the fast path takes the bare lock
            self._cond = threading.Condition(self._lock)
            self._unacked_bytes = 0
            self._unacked = 0
            self._acked_total = 0
            self._failed_total = 0
            self._failed = 0  # since the last flush
            self._first_error: BaseException | None = None
            self._closed = False
            self._close_result: CloseResult | None = None
            # what a record may weigh: the signed batch format's caps, or (rfc46, one
            # frame per record) the largest message a peer's socket accepts
            self._max_value = MAX_VALUE_BYTES if signed else nconf.max_message_size
            self._max_key = MAX_KEY_BYTES
            self._keys = wire.keys
            self._limit = self.config.max_unacked_bytes
            # rfc46 sends one message per record: keep what is in flight well
            # below the sockets' high-water marks, or a burst overruns them and
            # turns into gap re-fetches (ACKs are the credit that paces us).
            if max_unacked_records is None:
                max_unacked_records = (
                    RFC46_MAX_IN_FLIGHT if self.config.profile == "rfc46" else 1 << 62
                )
            if max_unacked_records <= 0:
                raise ConfigError("max_unacked_records must be positive")
            self._max_records = max_unacked_records
            self._topics_ok: set[str] = set()
            self._max_record: dict[str, int] = {}
            """Per-topic record size caps from the metadata (topic -> bytes)."""
            self._loop = NodeLoop(
                node_id,
                nconf,
                self._handler,
                name=f"dafka-producer-{node_id[:8]}",
                profile=wire,
                identity=identity,
                # CURVE: subscriptions wait for the metadata's read ACLs (docs/security.md)
                read_view=None
                if metadata is not False
                else ReadView(stores=frozenset(trusted or ())),
            )
            if metadata is not False:
                self._loop.gate.hold()  # CURVE: static keys only until the metadata loads
            if metrics_port is not None:
                self.metrics, self._handler.ack_timer = producer_metrics(
                    self._loop, self._core, self._counts, self.config.profile
                )
                self.metrics.serve(metrics_host, metrics_port)
            self._loop.start()
            if metadata is not False:
                self._follow_metadata(nconf, cluster, required=metadata is True)
        except BaseException:
            if self.metrics is not None:
                self.metrics.close()
            if self._metadata is not None:
                self._metadata.stop()
            if getattr(self, "_loop", None) is not None and self._loop.alive:
                self._loop.stop()
            if self._wal is not None:
                self._wal.close()
            if self._state is not None:
                self._state.close()
            raise
        log.info("producer.start id=%s profile=%s", node_id, self.config.profile)

    def _follow_metadata(self, nconf: NodeConfig, cluster: str, required: bool) -> None:
        """Take trusted stores and per-topic min_acks from the cluster metadata.

        The metadata's trusted stores replace the local ones when it lists any; a topic's
        ``min_acks`` applies unless the producer's own is higher.
        """
        curve = tower_curve(nconf.towers, self._loop.identity)  # towers given with @KEY
        view = MetadataView([str(t) for t in nconf.towers], cluster=cluster, curve=curve)
        self._metadata = view
        if not view.start(wait=5.0 if required else 1.0) and required:
            raise ConfigError(
                f"no tower's metadata peer answered (towers {', '.join(map(str, nconf.towers))})"
            )
        require_transport(view, nconf.curve)
        self._loop.gate.follow(view)
        local = self._core_trusted
        local_min = self.config.min_acks
        seen: dict[str, int] | None = None  # tombstones already known (None: first config)

        def on_change(config: dict) -> None:
            nonlocal seen
            deleted = dict(config.get("deleted", {}))
            news = (
                [] if seen is None else [(t, r) for t, r in deleted.items() if r > seen.get(t, -1)]
            )
            seen = deleted
            for topic, revision in news:
                if topic in self._topics_ok:
                    self._topics_ok.discard(topic)  # the next send creates it again or fails

                    def forget(now: float, topic: str = topic, revision: int = revision) -> list:
                        self._handler._topic_deleted(topic, revision)
                        return []

                    self._loop.call(forget)
            stores = tuple(config["stores"])
            # a producer may ask for more ACKs than its topic's minimum, never fewer
            min_acks = {
                name: max(local_min, topic_settings(t)["min_acks"])
                for name, t in config["topics"].items()
            }
            self._max_record = {
                name: limit
                for name, t in config["topics"].items()
                if (limit := topic_settings(t)["max_record_bytes"]) is not None
            }
            policy = (stores or local, min_acks)
            view = ReadView.of(
                {name: topic_settings(t) for name, t in config["topics"].items()},
                stores or local or (),
            )

            def apply(now: float) -> list[Publish]:
                self._handler._apply_policy(*policy)
                self._loop.set_read_view(view)
                return []

            self._loop.call(apply)  # in order, never overwritten by the next change

        view.subscribe(on_change)

    @property
    def metadata(self) -> MetadataView | None:
        """The cluster metadata this producer follows (None when it runs on local settings)."""
        return self._metadata

    # ------------------------------------------------------------------ API

    @property
    def partition(self) -> str:
        """This producer's partition ID (its node ID) in every topic it writes."""
        return self.node_id

    @property
    def profile(self) -> str:
        """The wire profile this producer speaks."""
        return self.config.profile

    def _topic(self, topic: str | None) -> str:
        topic = topic if topic is not None else self.topic
        if topic is None:
            raise ValueError("no topic: pass topic= or create the Producer with a topic")
        if topic not in self._topics_ok:
            check_topic(topic)
            view = self._metadata
            if view is not None and view.loaded and view.topic(topic) is None:
                if not view.auto_create():
                    raise ConfigError(
                        f"topic {topic!r} does not exist and the cluster does not create "
                        f"topics on first use: run dafka topics create {topic}"
                    )
                # with the defaults; returns once committed and visible, or raises
                view.create_topic(topic)
            self._topics_ok.add(topic)
        return topic

    def _too_big(self, topic: str, size: int, key: bool = False) -> RecordTooLargeError:
        if key:
            limit = self._max_key
            what = f"a record key of {size} bytes is over the {self.profile} profile's limit"
        elif size > self._max_value:
            limit = self._max_value
            what = f"a record of {size} bytes is over the {self.profile} profile's limit"
        else:
            limit = self._max_record[topic]
            what = (
                f"a record of {size} bytes is over topic {topic!r}'s max_record_bytes "
                "(set in the cluster metadata)"
            )
        return RecordTooLargeError(f"{what} ({limit} bytes)", size, limit)

    def _no_keys(self) -> ProfileError:
        return ProfileError(
            "the rfc46 wire profile has no record keys: send without a key "
            "or use the signed profile"
        )

    def _reserve(self, count: int, size: int) -> None:
        """Account for ``count`` records of ``size`` bytes; block or raise while full."""
        with self._lock:
            if self._closed:
                raise ClosedError("producer is closed")
            limit, most = self._limit, self._max_records
            if (
                self._unacked_bytes + size > limit or self._unacked + count > most
            ) and self._unacked:
                if self.config.on_full == "raise":
                    raise BufferFullError(
                        f"{self._unacked} records ({self._unacked_bytes} bytes) await "
                        "acknowledgement; is a store running?"
                    )
                while (
                    (self._unacked_bytes + size > limit or self._unacked + count > most)
                    and self._unacked
                    and not self._closed
                ):
                    self._cond.wait(0.5)
                if self._closed:
                    raise ClosedError("producer is closed")
            self._unacked_bytes += size
            self._unacked += count

    def send(
        self,
        value: bytes | str,
        key: bytes | str | None = None,
        *,
        topic: str | None = None,
    ) -> RecordFuture:
        """Queue one record; the future resolves to its offset once durable.

        ``key`` needs the signed profile (``None``: no key; ``b""`` is an empty key).
        """
        if key is not None:
            if not self._keys:
                raise self._no_keys()
            key = _as_bytes(key, "key")
        topic = self._topic(topic)
        if type(value) is not bytes:
            value = _as_bytes(value, "value")
        if key is not None and len(key) > self._max_key:
            raise self._too_big(topic, len(key), key=True)
        size = len(value)
        if size > self._max_value or (
            self._max_record and size > self._max_record.get(topic, size)
        ):
            raise self._too_big(topic, size)
        fut = RecordFuture()
        self._reserve(1, len(value))
        self._enqueue((topic, value, key, fut))
        return fut

    def send_many(
        self,
        values: Sequence[bytes | str],
        keys: Sequence[bytes | str | None] | None = None,
        *,
        topic: str | None = None,
    ) -> BatchFuture:
        """Queue ``values`` (with ``keys``, one per value, signed profile) as consecutive records.

        Returns one future that resolves to the ``range`` of their offsets once
        all of them are durable: one future instead of one per record, for
        throughput. They are published together, in order.
        """
        topic = self._topic(topic)
        vals = [v if type(v) is bytes else _as_bytes(v, "value") for v in values]
        key_list: list[bytes | None] | None = None
        if keys is not None:
            if len(keys) != len(vals):
                raise ValueError(f"{len(keys)} keys for {len(vals)} values")
            if any(k is not None for k in keys):
                if not self._keys:
                    raise self._no_keys()
                key_list = [None if k is None else _as_bytes(k, "key") for k in keys]
                longest = max(len(k) for k in key_list if k is not None)
                if longest > self._max_key:
                    raise self._too_big(topic, longest, key=True)
        if vals:
            biggest = max(map(len, vals))
            if biggest > self._max_value or (
                self._max_record and biggest > self._max_record.get(topic, biggest)
            ):
                raise self._too_big(topic, biggest)
        fut = BatchFuture()
        if not vals:
            fut.resolve(range(0))
            return fut
        self._reserve(len(vals), sum(map(len, vals)))
        self._enqueue((topic, vals, key_list, fut))
        return fut

    def _enqueue(self, item: _Queued) -> None:
        """Hand a record (or many) to the IO thread; in durable mode, return only once
        it is in the producer's log on disk."""
        if self._wal is None:
            self._handler.queue.append(item)
            self._loop.wake()
            return
        cond = self._wal_cond
        with cond:
            self._wal_seq += 1
            seq = self._wal_seq
            self._handler.queue.append(item)
        self._loop.wake()
        with cond:
            while self._wal_done < seq:
                if not self._loop.alive:
                    raise ClosedError("producer IO thread has stopped")
                cond.wait(0.2)
            error = next((e for lo, hi, e in self._wal_failed if lo < seq <= hi), None)
        if error is not None:
            raise StorageError(
                f"{error}: the record was sent but is not in the producer log, so it would "
                "not survive a crash"
            )

    def _logged(self, count: int, error: StorageError | None) -> None:
        """IO thread: the next ``count`` queued items are in the log (or failed to be)."""
        with self._wal_cond:
            if error is not None:  # the turns whose records are not in the log (recent ones)
                self._wal_failed.append((self._wal_done, self._wal_done + count, error))
            self._wal_done += count
            self._wal_cond.notify_all()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent so far is acknowledged or has failed.

        Returns normally only if every record sent since the last ``flush`` was
        acknowledged. Raises :class:`DeliveryError` (how many failed, and the first
        error) if some failed after ``send`` accepted them; the count then starts
        again from zero, and the failed records' futures carry their errors.
        Raises :class:`DafkaTimeout` if records are still unacknowledged after
        ``timeout`` seconds (failures stay counted for the next ``flush``), and
        :class:`ClosedError` if the producer's IO thread has stopped.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._unacked:
                if not self._loop.alive:
                    raise ClosedError("producer IO thread has stopped")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise DafkaTimeout(
                        f"{self._unacked} records not acknowledged within {timeout} s"
                    )
                self._cond.wait(0.2 if left is None else min(left, 0.2))
            failed, error = self._failed, self._first_error
            self._failed, self._first_error = 0, None
        if failed:
            raise DeliveryError(failed, error)

    @property
    def max_value_bytes(self) -> int:
        """The largest value ``send`` accepts under this wire profile (a topic may cap lower)."""
        return self._max_value

    @property
    def max_key_bytes(self) -> int:
        """The largest key ``send`` accepts (signed profile)."""
        return self._max_key

    @property
    def unacked(self) -> int:
        """Records sent but not yet acknowledged (nor failed)."""
        return self._unacked

    @property
    def acknowledged(self) -> int:
        """Records acknowledged since the producer started."""
        return self._acked_total

    @property
    def failed(self) -> int:
        """Records that failed after ``send`` accepted them, since the producer started."""
        return self._failed_total

    @property
    def closed(self) -> bool:
        """True once ``close()`` has begun: the producer takes no more records."""
        return self._closed

    def close(self, timeout: float | None = 30.0) -> CloseResult:
        """Flush (up to ``timeout`` s; ``0``: not at all), stop, and account for every record.

        Never drops records silently: the :class:`CloseResult` counts the records
        acknowledged over the producer's life, those still unacknowledged (their
        futures fail with :class:`ClosedError`) and those that failed; when any
        were not acknowledged it also logs them at warning. Closing again returns
        the same result.
        """
        if self._closed:
            return self._close_result or self._result()
        try:
            if timeout is None or timeout > 0:
                self.flush(timeout)
        except (DafkaTimeout, DeliveryError, ClosedError):
            pass  # counted in the result
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            if self.metrics is not None:
                self.metrics.close()
            self._loop.stop()
            if self._metadata is not None:
                self._metadata.stop()
            if self._wal is not None:
                self._wal.close()
            if self._state is not None:
                self._state.close()
        result = self._close_result = self._result()
        if not result.complete:
            log.warning(
                "producer.close.incomplete id=%s acknowledged=%d unacknowledged=%d failed=%d",
                self.node_id,
                result.acknowledged,
                result.unacknowledged,
                result.failed,
            )
        return result

    def _counts(self) -> tuple[int, int, int, int]:
        """(acknowledged, failed, unacknowledged, unacknowledged bytes), for the metrics."""
        with self._lock:
            return self._acked_total, self._failed_total, self._unacked, self._unacked_bytes

    def _result(self) -> CloseResult:
        with self._lock:
            return CloseResult(self._acked_total, self._unacked, self._failed_total)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------- IO-thread callback

    def _released(self, count: int, size: int) -> None:
        """``count`` records of ``size`` bytes were acknowledged."""
        with self._lock:
            self._unacked -= count
            self._unacked_bytes -= size
            self._acked_total += count
            self._cond.notify_all()

    def _rejected(self, count: int, size: int, error: BaseException) -> None:
        """``count`` records of ``size`` bytes failed: counted for ``flush`` and ``close``."""
        with self._lock:
            self._unacked -= count
            self._unacked_bytes -= size
            self._failed_total += count
            self._failed += count
            if self._first_error is None:
                self._first_error = error
            self._cond.notify_all()
