"""The public Producer: thread-safe, batching, nothing dropped.

``send`` hands a record to the node's IO thread and returns a
:class:`concurrent.futures.Future` that resolves to the record's offset once it
is durable: written and fsynced by ``min_acks`` distinct stores (under the
``signed`` profile, stores whose signed ACK this producer trusts). Until then
the record is kept in memory, bounded by ``max_unacked_bytes`` (a record counts
its value and key plus 128 bytes, ``RECORD_OVERHEAD``, for what holding it costs
besides, so the producer's memory stays near the bound with small records): when full,
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

This module holds the facade (options, ``send``, ``flush``, ``close``, the metadata it
follows); its parts live beside it: ``producer_setup.py`` (identity, journals, log,
wire profile and trusted stores, opened before the producer starts),
``producer_io.py`` (the IO thread's half: batching, the offset journal hand-off,
publishing, futures resolved on ACK), ``producer_budget.py`` (the bound on
unacknowledged records that ``send`` waits on, ``flush`` and ``close``'s accounting,
:class:`CloseResult`), ``producer_durable.py`` (durable mode: ``send`` returns once
its records are in the log), ``producer_state.py`` (what this facade and the IO thread's
half share, instead of private attributes) and ``producer_ready.py`` (the durability
orders, offsets before publishing, the acked bound before futures resolve, as
:class:`~dafka.core.ready.Ready` steps).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from ..api.common import node_config
from ..config import DEFAULT_LINGER_MS, NodeConfig, ProducerConfig, parse_trusted_stores
from ..core.effects import Publish
from ..core.read_guard import ReadView
from ..errors import (
    ClosedError,
    ConfigError,
    DafkaTimeout,
    DeliveryError,
    NotAcknowledged,
    ProfileError,
    RecordTooLargeError,
)
from ..futures import BatchFuture, RecordFuture
from ..ids import check_topic_name
from ..io.metrics import DEFAULT_HOST, NodeMetrics, check_metrics_port
from ..io.node import NodeLoop
from ..io.node_metrics import producer_metrics
from ..metadata.client import tower_curve
from ..metadata.follower import MetadataView, require_transport
from ..metadata.state import topic_settings
from ..storage.state_dir import StateDir
from ..wire.signed import DEFAULT_BATCH_FORMAT, MAX_KEY_BYTES, MAX_VALUE_BYTES
from ..wire.signed_builder import RecordExtra, header_bytes
from ..wire.signed_rich import Codec, check_headers, codec_named
from ._budget import CloseResult, UnackedBudget
from ._core import ProducerCore
from ._inflight import RichValues, Values
from ._io import _ProducerHandler, _Queued
from ._recovery import DEFAULT_WAIT as RECOVERY_WAIT
from ._setup import open_state, trusted_store_ids, wire_profile
from ._state import ProducerState
from ._wal import ProducerLog
from ._why import Diagnosis, check_towers_resolve, diagnose, read_evidence

log = logging.getLogger(__name__)

RFC46_MAX_IN_FLIGHT = 50_000
MAX_TIMESTAMP_MS = 2**63 - 1
"""The latest record time ``send`` takes (Kafka's timestamps are signed 64-bit ms)."""

YIELD_EVERY = 1024
"""Each time this many more items wait for the IO thread, ``send`` lets go of the GIL
once (``time.sleep(0)``). A thread that sends flat out holds the GIL until CPython's
switch interval (5 ms) forces it to let go, and the IO thread, which lets go of the GIL
several times per batch (to hash, sign and send it) and waits for it again each time,
sealed no more than a batch every 15 ms: the queue grew, and with it what the garbage
collector walks. Measured with ``python -m benchmarks.throughput --api one --phases
acked``: see the commit that added it."""

__all__ = ["CloseResult", "Producer"]


@dataclass(frozen=True, slots=True)
class _SendPolicy:
    """What ``send`` checks on the caller's thread, taken from the cluster metadata.

    Never changed in place: the metadata follower thread replaces it whole under
    ``Producer._policy_lock``, and each ``send`` reads it once, so one call never sees
    half of a change. (The IO thread's half of a change, trusted stores and per-topic
    ``min_acks``, goes through ``NodeLoop.call``.)"""

    max_record: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """Per-topic record size caps from the metadata (topic -> bytes)."""
    topics_ok: frozenset[str] = frozenset()
    """Topics known to exist (or created on first use): ``send`` skips their check.
    Never a compacted topic: a send to one is checked for its key each time."""
    compacted: frozenset[str] = frozenset()
    """Topics whose ``cleanup_policy`` includes ``compact``: every record needs a key."""


def _topic_codec(topic: str, name: object) -> Codec:
    """A topic's ``compression`` setting as a codec; one the metadata should have refused
    is logged and taken as none (never a stop of the metadata's updates)."""
    try:
        return codec_named(name)  # type: ignore[arg-type]  # checked here
    except ValueError:
        log.warning("producer.metadata.bad_compression topic=%s compression=%r", topic, name)
        return Codec.NONE


def _check_timestamp(timestamp: object) -> int:
    """A record's own time: a whole number of ms since the epoch, 0 .. 2**63 - 1 (Kafka's
    CreateTime is a signed 64-bit count)."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise TypeError(
            f"a record timestamp is an int (ms since the epoch), not {type(timestamp).__name__}"
        )
    if not 0 <= timestamp <= MAX_TIMESTAMP_MS:
        raise ValueError(f"record timestamp {timestamp} is not within 0..{MAX_TIMESTAMP_MS} ms")
    return timestamp


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

    ``linger_ms`` (default 1; 0 under ``rfc46``, and the only choice when ``durable``)
    lets a record wait up to that long for others to share its batch: the producer
    publishes at most one batch per ``linger_ms`` (and any full ones), and a record sent
    after a quiet ``linger_ms`` goes at once. Fewer batches mean fewer signatures to make
    and to verify and fewer messages to wake every store and consumer; ``flush`` ends a
    wait at once; 0 publishes whatever is queued each time the IO thread wakes.

    ``batch_format`` (signed) is 3 by default; 1 writes the older BLAKE2b batches
    that readers of earlier versions take (``docs/wire.md`` §9.3, the upgrade order).
    A batch whose records carry headers, their own timestamps or tombstones, or that is
    compressed (``compression``: ``"none"``, ``"zstd"``, ``"lz4"``; default: the topic's
    ``compression`` setting from the metadata, else none) or for a compacted topic, is
    sealed in format 5 whatever ``batch_format`` says (``docs/records.md``).

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
        max_unacked_bytes: int = 128 * 1024 * 1024,
        max_unacked_records: int | None = None,
        on_full: Literal["block", "raise"] = "block",
        head_interval: float = 1.0,
        min_acks: int = 1,
        profile: Literal["signed", "rfc46"] = "signed",
        trusted_stores: str | Iterable[str] | None = None,
        trust_any_store: bool | None = None,
        max_batch_records: int = 8192,
        max_batch_bytes: int = 1024 * 1024,
        linger_ms: float | None = None,
        batch_format: int = DEFAULT_BATCH_FORMAT,
        node: NodeConfig | None = None,
        metadata: bool | None = None,
        cluster: str = "dafka",
        recovery_wait: float = RECOVERY_WAIT,
        durable: bool = False,
        metrics_port: int | None = None,
        metrics_host: str = DEFAULT_HOST,
        compression: str | None = None,
    ) -> None:
        self.topic = check_topic_name(topic) if topic is not None else None
        check_metrics_port(metrics_port)
        self.metrics: NodeMetrics | None = None
        """Prometheus metrics (``metrics_port``; ``docs/metrics.md``), or None."""
        if durable and state_dir is None:
            raise ConfigError("a durable producer needs a state directory (state_dir=...)")
        if durable and linger_ms:
            raise ConfigError(
                "linger_ms does not apply to a durable producer: its send returns once the "
                "record is logged, so a linger would slow every send by that much"
            )
        if linger_ms is None:  # rfc46 sends a message per record: a linger only delays
            linger_ms = 0.0 if durable or profile == "rfc46" else DEFAULT_LINGER_MS
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
            linger_ms=linger_ms,
            batch_format=batch_format,
            compression=compression,
        ).validate()
        nconf = node_config(towers, host, config=node)
        check_towers_resolve(nconf.towers)  # a misspelt name would be waited on for ever
        self._towers = nconf.towers
        self._state: StateDir | None = None
        self._wal: ProducerLog | None = None
        signed = self.config.profile == "signed"
        try:
            opened = open_state(self.config, durable)
            self._state = opened.state
            self._wal = opened.wal
            identity = opened.identity
            node_id = opened.node_id
            wire = wire_profile(self.config, identity)
            trusted = trusted_store_ids(self.config, node_id)
            self.node_id = node_id
            self._core_trusted = trusted
            self._core = ProducerCore(
                node_id,
                next_offsets=opened.next_offsets,
                head_interval=self.config.head_interval,
                profile=wire,
                min_acks=self.config.min_acks,
                trusted_stores=trusted,
                acked_offsets=opened.acked_offsets,
                recovery_wait=recovery_wait,
                logged=opened.logged,
                journal_in_doubt=opened.journal_in_doubt,
                run=opened.run,
                acked_in_doubt=opened.acked_in_doubt,
            )
            self._close_result: CloseResult | None = None
            # what a record may weigh: the signed batch format's caps, or (rfc46, one
            # frame per record) the largest message a peer's socket accepts
            self._max_value = MAX_VALUE_BYTES if signed else nconf.max_message_size
            self._max_key = MAX_KEY_BYTES
            self._keys = wire.keys
            # rfc46 sends one message per record: keep what is in flight well
            # below the sockets' high-water marks, or a burst overruns them and
            # turns into gap re-fetches (ACKs are the credit that paces us).
            if max_unacked_records is None:
                max_unacked_records = (
                    RFC46_MAX_IN_FLIGHT if self.config.profile == "rfc46" else 1 << 62
                )
            if max_unacked_records <= 0:
                raise ConfigError("max_unacked_records must be positive")
            self._budget = UnackedBudget(
                self.config.max_unacked_bytes,
                max_unacked_records,
                block=self.config.on_full != "raise",
            )
            self._shared = ProducerState(
                self.config,
                self._budget,
                towers=self._towers,
                journal=opened.journal,
                acked_journal=opened.acked_journal,
                wal=self._wal,
            )
            """What the IO thread's half shares with this facade."""
            self._handler = _ProducerHandler(self._shared, self._core)
            self._handler.named = self.topic
            self._policy_lock = threading.Lock()
            self._policy = _SendPolicy()
            """Replaced whole under ``_policy_lock``, read once per ``send``."""
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
            self._shared.loop = self._loop
            if metadata is not False:
                self._loop.gate.hold()  # CURVE: static keys only until the metadata loads
            if metrics_port is not None:
                handler = self._handler
                self.metrics, handler.ack_timer = producer_metrics(
                    self._loop,
                    self._core,
                    self._counts,
                    self.config.profile,
                    lambda: (handler.records_sent, handler.bytes_sent),
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
            max_record = {
                name: limit
                for name, t in config["topics"].items()
                if (limit := topic_settings(t)["max_record_bytes"]) is not None
            }
            settings = {name: topic_settings(t) for name, t in config["topics"].items()}
            compacted = frozenset(
                name for name, t in settings.items() if "compact" in t["cleanup_policy"]
            )
            codecs: dict[str, Codec] = {
                name: codec
                for name, t in settings.items()
                if (codec := _topic_codec(name, t["compression"])) is not Codec.NONE
            }
            with self._policy_lock:
                known = self._policy.topics_ok
                gone = [(t, r) for t, r in news if t in known]
                # a deleted topic is checked again by the next send: created again or refused;
                # a compacted one by every send (for its key)
                self._policy = _SendPolicy(
                    MappingProxyType(max_record),
                    known.difference(t for t, _ in gone).difference(compacted),
                    compacted,
                )
            for topic, revision in gone:

                def forget(now: float, topic: str = topic, revision: int = revision) -> list:
                    self._handler.topic_deleted(topic, revision)
                    return []

                self._loop.call(forget)
            stores = tuple(config["stores"])
            # a producer may ask for more ACKs than its topic's minimum, never fewer
            min_acks = {
                name: max(local_min, topic_settings(t)["min_acks"])
                for name, t in config["topics"].items()
            }
            policy = (stores or local, min_acks)
            view = ReadView.of(
                {name: topic_settings(t) for name, t in config["topics"].items()},
                stores or local or (),
            )

            def apply(now: float) -> list[Publish]:
                self._handler.set_topic_sealing(codecs, compacted)
                self._handler.apply_policy(*policy)
                self._core.set_read_view(view)  # FETCH answers (issue 32)
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

    def _topic(self, topic: str | None, policy: _SendPolicy) -> str:
        """The topic to send to, checked against the metadata unless ``policy`` (the
        snapshot this ``send`` read) knows it."""
        topic = topic if topic is not None else self.topic
        if topic is None:
            raise ValueError("no topic: pass topic= or create the Producer with a topic")
        if topic in policy.compacted:
            return topic  # in the metadata: it exists (never in topics_ok, see _SendPolicy)
        if topic not in policy.topics_ok:
            check_topic_name(topic)
            view = self._metadata
            if view is not None and view.loaded and view.topic(topic) is None:
                if not view.auto_create():
                    raise ConfigError(
                        f"topic {topic!r} does not exist and the cluster does not create "
                        f"topics on first use: run dafka topics create {topic}"
                    )
                # with the defaults; returns once committed and visible, or raises
                view.create_topic(topic)
            with self._policy_lock:
                # unless the metadata changed since this send read it (a deletion may have
                # come in between): then the next send checks again. A compacted topic is
                # never skipped: its sends are checked for a key (_keyless)
                if self._policy is policy and topic not in policy.compacted:
                    self._policy = replace(policy, topics_ok=policy.topics_ok | {topic})
        return topic

    def _too_big(
        self, topic: str, size: int, policy: _SendPolicy, key: bool = False
    ) -> RecordTooLargeError:
        if key:
            limit = self._max_key
            what = f"a record key of {size} bytes is over the {self.profile} profile's limit"
        elif size > self._max_value:
            limit = self._max_value
            what = f"a record of {size} bytes is over the {self.profile} profile's limit"
        else:
            limit = policy.max_record[topic]
            what = (
                f"a record of {size} bytes is over topic {topic!r}'s max_record_bytes "
                "(set in the cluster metadata)"
            )
        return RecordTooLargeError(f"{what} ({limit} bytes)", size, limit)

    def _keyless(self, topic: str) -> ConfigError:
        return ConfigError(
            f"topic {topic!r} is compacted (cleanup_policy includes compact): every record "
            "needs a key, the newest record of each key is what the topic keeps"
        )

    def _no_rich(self) -> ProfileError:
        return ProfileError(
            "the rfc46 wire profile has no headers, record timestamps or tombstones: "
            "send without them or use the signed profile"
        )

    def _extra(
        self,
        value: bytes | str | None,
        key: bytes | None,
        headers: object,
        timestamp: int | None,
    ) -> tuple[bytes, RecordExtra | None]:
        """A record's value (``b""`` for a tombstone) and what it carries besides (None:
        nothing), checked: headers within their bounds, the time a whole number of ms."""
        # guard: producer-rfc46-refuses-headers
        if not self._keys:
            raise self._no_rich()
        tombstone = value is None
        if tombstone:
            if key is None:
                raise ValueError(
                    "a record without a value (a tombstone) needs a key: it deletes that "
                    "key from a compacted topic"
                )
            value = b""
        elif type(value) is not bytes:
            value = _as_bytes(value, "value")  # type: ignore[arg-type]  # not None: see above
        if timestamp is not None:
            timestamp = _check_timestamp(timestamp)
        hdrs = check_headers(headers)  # TypeError, or LimitExceeded naming the bound
        if not hdrs and timestamp is None and not tombstone:
            return value, None
        weight = header_bytes(hdrs)
        return value, RecordExtra(timestamp, hdrs, tombstone, weight)

    def _no_keys(self) -> ProfileError:
        return ProfileError(
            "the rfc46 wire profile has no record keys: send without a key "
            "or use the signed profile"
        )

    def send(
        self,
        value: bytes | str | None,
        key: bytes | str | None = None,
        *,
        headers: Iterable[tuple[str, bytes | str | None]]
        | Mapping[str, bytes | str | None]
        | None = None,
        timestamp: int | None = None,
        topic: str | None = None,
    ) -> RecordFuture:
        """Queue one record; the future resolves to its offset once durable.

        ``key`` needs the signed profile (``None``: no key; ``b""`` is an empty key).
        ``headers`` (ordered ``(str, bytes | str | None)`` pairs, repeated keys allowed,
        or a mapping), ``timestamp`` (the record's own time, ms since the epoch, Kafka's
        CreateTime; without it, the time its batch is sealed) and ``value=None`` with a
        key (a tombstone) need the signed profile: such a record's batch is format 5
        (``docs/records.md``). Headers over their bounds raise :class:`LimitExceeded`
        (a ``ValueError`` naming the bound).
        """
        if headers is not None or timestamp is not None:  # the fast path's one added check
            return self._send_rich(value, key, headers, timestamp, topic)
        # the per-record API's hot path: one snapshot of the policy, checks that call
        # out only when they fail, one lock (the budget's), one deque append
        if key is not None:
            if not self._keys:
                raise self._no_keys()
            key = _as_bytes(key, "key")
        policy = self._policy  # one snapshot for the whole call
        if topic is None:
            topic = self.topic
        if topic is None or topic not in policy.topics_ok:
            topic = self._topic(topic, policy)
            # guard: producer-compacted-needs-key
            if key is None and topic in policy.compacted:
                raise self._keyless(topic)
        if type(value) is not bytes:
            if value is None:  # a tombstone
                return self._send_rich(value, key, None, None, topic)
            value = _as_bytes(value, "value")
        if key is not None and len(key) > self._max_key:
            raise self._too_big(topic, len(key), policy, key=True)
        size = len(value)
        caps = policy.max_record
        if size > self._max_value or (caps and size > caps.get(topic, size)):
            raise self._too_big(topic, size, policy)
        fut = RecordFuture()
        self._budget.reserve(1, size)
        self._enqueue((topic, value, key, fut))
        return fut

    def _send_rich(
        self,
        value: bytes | str | None,
        key: bytes | str | None,
        headers: object,
        timestamp: int | None,
        topic: str | None,
    ) -> RecordFuture:
        """``send`` of a record with headers, its own time, or a tombstone: queued as a
        one-record run of its own (:class:`RichValues`)."""
        if key is not None:
            if not self._keys:
                raise self._no_keys()
            key = _as_bytes(key, "key")
        value, extra = self._extra(value, key, headers, timestamp)
        if extra is None:  # nothing besides after all (empty headers)
            return self.send(value, key, topic=topic)
        policy = self._policy
        topic = self._topic(topic, policy)
        if key is None and topic in policy.compacted:
            raise self._keyless(topic)
        if key is not None and len(key) > self._max_key:
            raise self._too_big(topic, len(key), policy, key=True)
        size = len(value) + extra.header_bytes  # headers count towards the value's caps
        caps = policy.max_record
        if size > self._max_value or (caps and size > caps.get(topic, size)):
            raise self._too_big(topic, size, policy)
        fut = RecordFuture()
        self._budget.reserve(1, size)
        vals = RichValues([value], {0: extra}, [size], size)
        self._enqueue((topic, vals, None if key is None else [key], fut))
        return fut

    def send_many(
        self,
        values: Sequence[bytes | str | None],
        keys: Sequence[bytes | str | None] | None = None,
        *,
        headers: Sequence[object] | None = None,
        timestamps: Sequence[int | None] | None = None,
        topic: str | None = None,
    ) -> BatchFuture:
        """Queue ``values`` (with ``keys``, one per value, signed profile) as consecutive records.

        Returns one future that resolves to the ``range`` of their offsets once
        all of them are durable: one future instead of one per record, for
        throughput. They are published together, in order. ``headers`` and
        ``timestamps`` give one entry per value (``None``: none, the seal time), and a
        ``None`` value with a key is a tombstone, as :meth:`send` takes them.
        """
        policy = self._policy  # one snapshot for the whole call
        topic = self._topic(topic, policy)
        if headers is not None or timestamps is not None:
            return self._send_many_rich(values, keys, headers, timestamps, topic, policy)
        # ours to keep, measured once (Values): for the caps, the budget and the IO
        # thread's turns and batches
        vals: Values
        if not isinstance(values, list | tuple):
            values = list(values)  # any iterable: read once
        if list(map(type, values)).count(bytes) == len(values):  # one pass in C
            vals = Values(values)  # type: ignore[arg-type]  # all bytes
        elif None in values:  # tombstones
            return self._send_many_rich(values, keys, None, None, topic, policy)
        else:  # some str, bytearray or memoryview
            vals = Values([v if type(v) is bytes else _as_bytes(v, "value") for v in values])  # type: ignore[arg-type]  # no None
        if keys is not None and len(keys) != len(vals):
            raise ValueError(f"{len(keys)} keys for {len(vals)} values")
        key_list = self._many_keys(keys, len(vals), topic, policy)
        fut = BatchFuture()
        if not vals:
            fut.resolve(range(0))
            return fut
        limit = self._record_limit(topic, policy)
        if vals.size > limit and (biggest := max(vals.lengths)) > limit:  # else none can be
            raise self._too_big(topic, biggest, policy)
        self._budget.reserve(len(vals), vals.size)
        self._enqueue((topic, vals, key_list, fut))
        return fut

    def _many_keys(
        self,
        keys: Sequence[bytes | str | None] | None,
        n: int,
        topic: str,
        policy: _SendPolicy,
    ) -> list[bytes | None] | None:
        """The keys of ``n`` records of a ``send_many`` (their count checked already) as
        bytes, within the key cap; ``None`` when no record has one. On a compacted topic
        every record needs one (:meth:`_keyless`)."""
        key_list: list[bytes | None] | None = None
        if keys is not None and any(k is not None for k in keys):
            if not self._keys:
                raise self._no_keys()
            key_list = [None if k is None else _as_bytes(k, "key") for k in keys]
            longest = max(len(k) for k in key_list if k is not None)
            if longest > self._max_key:
                raise self._too_big(topic, longest, policy, key=True)
        if policy.compacted and topic in policy.compacted and n:
            if key_list is None or None in key_list:
                raise self._keyless(topic)
        return key_list

    def _record_limit(self, topic: str, policy: _SendPolicy) -> int:
        """The largest value ``topic`` takes: the profile's cap, or the topic's
        ``max_record_bytes`` if lower."""
        limit = self._max_value
        caps = policy.max_record
        if caps:
            limit = min(limit, caps.get(topic, limit))
        return limit

    def _send_many_rich(
        self,
        values: Sequence[bytes | str | None],
        keys: Sequence[bytes | str | None] | None,
        headers: Sequence[object] | None,
        timestamps: Sequence[int | None] | None,
        topic: str,
        policy: _SendPolicy,
    ) -> BatchFuture:
        """``send_many`` of records some of which carry headers, their own time or are
        tombstones: each record checked as :meth:`send` checks it."""
        values = list(values)
        n = len(values)
        for what, given in (("keys", keys), ("headers", headers), ("timestamps", timestamps)):
            if given is not None and len(given) != n:
                raise ValueError(f"{len(given)} {what} for {n} values")
        key_list = self._many_keys(keys, n, topic, policy)
        vals: list[bytes] = []
        lengths: list[int] = []
        extras: dict[int, RecordExtra] = {}
        for i, value in enumerate(values):
            key = key_list[i] if key_list is not None else None
            hdrs = headers[i] if headers is not None else None
            ts = timestamps[i] if timestamps is not None else None
            raw, extra = self._extra(value, key, hdrs, ts)
            vals.append(raw)
            size = len(raw)
            if extra is not None:
                extras[i] = extra
                size += extra.header_bytes
            lengths.append(size)
        fut = BatchFuture()
        if not vals:
            fut.resolve(range(0))
            return fut
        limit = self._record_limit(topic, policy)
        biggest = max(lengths)
        if biggest > limit:
            raise self._too_big(topic, biggest, policy)
        total = sum(lengths)
        self._budget.reserve(n, total)
        queued = (
            RichValues(vals, extras, lengths, total) if extras else Values(vals, lengths, total)
        )
        self._enqueue((topic, queued, key_list, fut))
        return fut

    def _enqueue(self, item: _Queued) -> None:
        """Hand a record (or many) to the IO thread; in durable mode, return only once
        it is in the producer's log on disk."""
        if self._wal is None:
            handler = self._handler
            queue = handler.queue
            queue.append(item)
            if handler.stopped:  # on_stop drained the queue before the item was in it
                handler.fail_queued()
                return
            linger = handler.linger
            values = item[1]
            if linger.wakes(
                self._loop.clock(),
                type(values) is not bytes and len(values) >= linger.max_items,  # type: ignore[arg-type]  # a list: see _Queued
            ):
                self._loop.wake()  # else the IO thread turns at the linger's end anyway
            if not len(queue) % YIELD_EVERY:
                time.sleep(0)  # let the IO thread have the GIL: see YIELD_EVERY
            return
        self._shared.log_wait.enqueue(self._handler.queue, item, self._loop)

    def publish_now(self) -> None:
        """End the linger (``linger_ms``) of what is queued: it is published at once.
        ``flush`` does this before it waits."""
        handler = self._handler
        linger = handler.linger
        linger.hurry()
        if not handler.queue and not linger.waiting:
            # nothing lingers (the IO thread took it all, or there was nothing): a hurry
            # left set would make the next record, sent any time later, skip its linger.
            # The IO thread clears the flag before it takes the queue, so an empty queue
            # here means what was queued is being published without it.
            linger.hurried = False
            return
        self._loop.wake()

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
        self.publish_now()
        try:
            failed, error = self._budget.wait(timeout, lambda: self._loop.alive)
        except NotAcknowledged as exc:
            why = self.diagnose(probe=False)
            raise NotAcknowledged(
                f"{exc}: {why.text}", unacknowledged=exc.unacknowledged, cause=why.cause
            ) from None
        if failed:
            raise DeliveryError(failed, error)

    def diagnose(self, probe: bool = True, wait: float = 1.0) -> Diagnosis:
        """Why records are not acknowledged, as far as this producer can tell: an
        :class:`~dafka.errors.UnackedCause` and one line saying it (``flush``'s
        :class:`~dafka.errors.NotAcknowledged` carries the same).

        ``probe`` also asks the stores the towers relay for their wire profile (up to
        about ``wait`` s each way), which alone tells stores of the other profile from
        stores that are silent for another reason (``dafka-producer`` does it)."""
        evidence = read_evidence(self._loop, self._handler.evidence, wait)
        return diagnose(evidence, self._towers, self.node_id, probe, wait)

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
        return self._budget.unacked

    @property
    def acknowledged(self) -> int:
        """Records acknowledged since the producer started."""
        return self._budget.acked_total

    @property
    def failed(self) -> int:
        """Records that failed after ``send`` accepted them, since the producer started."""
        return self._budget.failed_total

    @property
    def closed(self) -> bool:
        """True once ``close()`` has begun: the producer takes no more records."""
        return self._budget.closed

    def close(self, timeout: float | None = 30.0) -> CloseResult:
        """Flush (up to ``timeout`` s; ``0``: not at all), stop, and account for every record.

        Never drops records silently: the :class:`CloseResult` counts the records
        acknowledged over the producer's life, those still unacknowledged (their
        futures fail with :class:`ClosedError`) and those that failed; when any
        were not acknowledged it also logs them at warning. Closing again returns
        the same result.
        """
        if self._budget.closed:
            return self._close_result or self._budget.result()
        try:
            if timeout is None or timeout > 0:
                self.flush(timeout)
        except (DafkaTimeout, DeliveryError, ClosedError):
            pass  # counted in the result
        finally:
            self._budget.close()
            if self.metrics is not None:
                self.metrics.close()
            self._loop.stop()
            if self._metadata is not None:
                self._metadata.stop()
            if self._wal is not None:
                self._wal.close()
            if self._state is not None:
                self._state.close()
        result = self._close_result = self._budget.result()
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
        return self._budget.counts()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
