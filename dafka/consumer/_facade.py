"""The public Consumer: subscribe to topics, receive each partition in order.

Records arrive live from producers; gaps, late joins and ``earliest`` starts
are filled by FETCHing from producers and stores. Every partition is delivered
in offset order with no duplicates and no gaps. Under the ``signed`` profile
(the default) every batch is verified (the producer's signature, that its key
owns the partition, the topic and the offsets) before any of its records is
delivered, whoever sent it. Iterate over a Consumer, or call
:meth:`Consumer.poll` or :meth:`Consumer.poll_batch`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, TypeVar

from ..api.common import node_config
from ..config import ConsumerConfig, NodeConfig, OffsetReset, parse_trusted_stores
from ..core import messages as m
from ..core.effects import ConsumedRecord, Publish, RecordBatch
from ..core.topic_counts import DEFAULT_TOPIC_CAP, check_topic_cap
from ..errors import ClosedError, ConfigError, DafkaTimeout
from ..groups.member import GroupSettings
from ..ids import check_topic_name, new_node_id
from ..io.metrics import DEFAULT_HOST, NodeMetrics, check_metrics_port
from ..io.node import NodeLoop
from ..io.node_metrics import consumer_metrics
from ..metadata.client import tower_curve
from ..metadata.follower import MetadataView, require_transport
from ..security.identity import Identity
from ..wire.profiles import make_profile
from ..wire.signed_rich import MAX_RAW_BYTES
from ._control import ConsumerControl
from ._core import ConsumerCore
from ._io import END_QUIET, _ConsumerHandler
from ._shared import ConsumerShared

log = logging.getLogger(__name__)

__all__ = ["ConsumedRecord", "Consumer", "RecordBatch"]

_T = TypeVar("_T")


class Consumer(ConsumerControl):
    """Receives records of one or more topics, each partition in order."""

    def __init__(
        self,
        topics: str | Iterable[str] = (),
        *,
        towers: str | Iterable[str] | None = None,
        host: str = "127.0.0.1",
        offset_reset: OffsetReset | int = "latest",
        start_offsets: Mapping[tuple[str, str], int] | None = None,
        max_backlog: int = 100_000,
        profile: Literal["signed", "rfc46"] = "signed",
        node: NodeConfig | None = None,
        metadata: bool | None = None,
        cluster: str = "dafka",
        on_data_loss: Literal["raise", "skip"] = "raise",
        trusted_stores: str | Iterable[str] | None = None,
        identity: Identity | None = None,
        metrics_port: int | None = None,
        metrics_host: str = DEFAULT_HOST,
        start_timestamp: float | None = None,
        group: str | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        on_assign: Callable[[list[tuple[str, str]]], object] | None = None,
        on_revoke: Callable[[list[tuple[str, str]]], object] | None = None,
        session_timeout: float = 10.0,
        heartbeat_interval: float = 2.0,
        state_dir: str | os.PathLike[str] | None = None,
        min_acks: int = 1,
        max_decompressed_bytes: int = MAX_RAW_BYTES,
        compacted_topics: Iterable[str] = (),
        metrics_topic_cap: int = DEFAULT_TOPIC_CAP,
        unserved_after: float = 10.0,
    ) -> None:
        """``offset_reset``: where a partition seen for the first time starts:
        ``"earliest"``, ``"latest"`` (the default), an offset, or ``-N``: ``N`` offsets
        before its end, the last ``N`` records (the highest end claimed, once proven);
        ``start_offsets`` ``{(topic, partition): offset}`` override it per partition.

        ``start_timestamp`` (seconds since the epoch, like ``ConsumedRecord.timestamp``;
        signed profile only, rfc46 records carry no timestamp): every partition is
        delivered from its first record whose time (its own, else its batch's seal time)
        is at or after it, then in offset order whatever later records' times. It
        replaces ``offset_reset``. There is no time index: the records before it are
        fetched and passed over.

        ``trusted_stores`` (node IDs or public keys; the cluster metadata's list
        replaces it when it has one): the stores whose signed retention tails may
        move delivery past deleted records. Without any, a validly signed tail from
        any store counts, but only below what the producer's own signed records and
        HEADs show to exist (``docs/wire.md`` §9.6).

        ``unserved_after``: without trusted stores, how many seconds a range a store says
        its retention deleted must go unserved by every store before it is skipped as a
        data loss (a store lying about its tail costs this wait, never records another
        serves).

        ``on_data_loss``: what to do when a store's retention deleted records this
        consumer still had to deliver (signed profile): ``"raise"`` makes the next
        poll raise :class:`~dafka.errors.DataLossError` once, then delivery goes on
        from the store's tail; ``"skip"`` skips ahead to the tail silently (counted
        in the core's ``ConsumerStats.data_lost``).

        ``metrics_port``: serve Prometheus metrics on ``metrics_host:metrics_port``
        (0: a free port, see :attr:`metrics`; ``docs/metrics.md``); ``metrics_topic_cap``:
        topics with a lag series of their own, the rest summed under ``topic="_other"``.

        ``group``: join that consumer group (``docs/groups.md``): read the partitions it
        assigns, from its committed offsets (``offset_reset`` where none is); commit with
        :meth:`commit`, and every ``auto_commit_interval`` s if ``enable_auto_commit``.
        ``on_assign`` / ``on_revoke`` get the partitions taken or given up (a revoked
        one's position is committed first), on the caller's thread inside a poll, before
        the records they precede (``docs/groups.md``); ``session_timeout``: a member silent that
        long is dead; ``state_dir`` keeps the member's key; ``min_acks``: stores that
        hold a commit before :meth:`commit` returns.

        ``max_decompressed_bytes``: the most this consumer decompresses of one batch (a
        compressed format-5 batch's records, checked before decompressing; 64 MiB by
        default, the most a producer may seal): a batch over it is refused as a forged one
        is, counted in ``dafka_consumer_batches_unopened_total`` (``docs/records.md``).

        ``compacted_topics``: topics known to be compacted besides those the followed
        metadata says are (``cleanup_policy`` with ``compact``): only their batches may come
        in the compacted form; any other topic's is refused (``reason="compacted"``) and
        fetched again, since a store may rewrite any format-5 batch so, dropping records."""
        check_metrics_port(metrics_port)
        check_topic_cap(metrics_topic_cap)
        self.metrics: NodeMetrics | None = None
        if on_data_loss not in ("raise", "skip"):
            raise ConfigError(f"on_data_loss must be 'raise' or 'skip', not {on_data_loss!r}")
        self.metadata: MetadataView | None = None
        """The cluster metadata this consumer follows (topic ACLs)."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        initial = [check_topic_name(t) for t in dict.fromkeys(topic_list)]
        self.config = ConsumerConfig(
            offset_reset=offset_reset,
            start_offsets=dict(start_offsets or {}),
            max_backlog=max_backlog,
            profile=profile,
            max_decompressed_bytes=max_decompressed_bytes,
        ).validate()
        nconf = node_config(towers, host, config=node)
        self.towers: tuple[str, ...] = tuple(str(t) for t in nconf.towers)
        """The tower addresses this consumer beacons to (``HOST:PORT``)."""
        self.node_id = new_node_id()  # a consumer signs nothing: its ID is only an address
        if nconf.curve:
            # CURVE: the consumer's key names it (``identity``: a known key, for read ACLs)
            identity = identity if identity is not None else Identity.generate()
            self.node_id = identity.node_id
        wire = make_profile(
            self.config.profile, max_decompressed_bytes=self.config.max_decompressed_bytes
        )
        self._core = ConsumerCore(
            self.node_id,
            offset_reset=self.config.offset_reset,
            start_offsets=self.config.start_offsets,
            fetch_window=self.config.fetch_window,
            fetch_timeout=self.config.fetch_timeout,
            max_buffered_bytes=self.config.max_buffered_bytes,
            max_buffered_bytes_per_partition=self.config.max_buffered_bytes_per_partition,
            profile=wire,
            on_data_loss=on_data_loss,
            trusted_stores=parse_trusted_stores(trusted_stores) or None,
            start_timestamp=start_timestamp,
            unserved_after=unserved_after,
        )
        self._core_trusted = parse_trusted_stores(trusted_stores)
        self._table_args: dict[str, Any] = {  # table(): a consumer of its own, alike
            "towers": towers,
            "host": host,
            "node": node,
            "profile": profile,
            "metadata": metadata,
            "cluster": cluster,
            "trusted_stores": trusted_stores,
            "identity": identity,
            "max_decompressed_bytes": max_decompressed_bytes,
            "compacted_topics": tuple(
                [compacted_topics] if isinstance(compacted_topics, str) else compacted_topics
            ),
        }
        told_list = [compacted_topics] if isinstance(compacted_topics, str) else compacted_topics
        told = frozenset(check_topic_name(t) for t in told_list)
        self._core.delivery.compacted_ok = lambda t: t in told or self._compacted_in_metadata(t)
        # what this thread and the IO thread share: records to poll, errors, what is read
        self._shared = ConsumerShared(initial, self.config.max_backlog)
        self._handler = _ConsumerHandler(self._shared, self._core)
        self._group_events = deque()  # rebalance callbacks for the next poll (groups only)
        self._group_callbacks = {}
        self._closed = False
        if group is not None:
            settings = GroupSettings(
                session_timeout, heartbeat_interval, enable_auto_commit, auto_commit_interval
            )
            self._group_mode(group)  # before the IO thread starts: nothing read until assigned
        self._loop = NodeLoop(
            self.node_id,
            nconf,
            self._handler,
            name=f"dafka-consumer-{self.node_id[:8]}",
            profile=wire,
            identity=identity,
        )
        if metadata is not False:
            self._loop.gate.hold()  # CURVE: static keys only until the metadata loads
        if metrics_port is not None:
            handler = self._handler
            handler.count_bytes = True
            self.metrics = consumer_metrics(
                self._loop,
                self._core,
                lambda: self._shared.count,
                self.config.profile,
                lambda: handler.delivered_bytes,
                lambda: self._shared.lag(self._core.positions(), self._core.watermarks()),
                metrics_topic_cap,
            ).serve(metrics_host, metrics_port)
        try:
            self._loop.start()
        except BaseException:
            if self.metrics is not None:
                self.metrics.close()
            raise
        if metadata is not False:
            try:
                self._follow_metadata(nconf, cluster, required=metadata is True)
            except BaseException:
                self.close()
                raise
        if group is not None:  # the member: its producer and reader of the group topic
            nodes: dict[str, object] = {"towers": towers, "host": host, "node": node}
            nodes.update(cluster=cluster, metadata=metadata, trusted_stores=trusted_stores)
            self._start_group(group, settings, nodes, state_dir, min_acks, on_assign, on_revoke)
        log.info("consumer.start id=%s topics=%s", self.node_id, ",".join(initial))

    def _compacted_in_metadata(self, topic: str) -> bool:
        """True if the followed metadata says ``topic``'s cleanup_policy contains compact."""
        view = self.metadata
        found = view.topic(topic) if view is not None else None
        return found is not None and "compact" in str(found.get("cleanup_policy") or "")

    def _follow_metadata(self, nconf: NodeConfig, cluster: str, required: bool) -> None:
        curve = tower_curve(nconf.towers, self._loop.identity)  # towers given with @KEY
        view = MetadataView([str(t) for t in nconf.towers], cluster=cluster, curve=curve)
        self.metadata = view
        if not view.start(wait=5.0 if required else 1.0) and required:
            raise ConfigError("no tower's metadata peer answered")
        require_transport(view, nconf.curve)
        self._loop.gate.follow(view)

        seen: dict[str, int] | None = None  # tombstones already known (None: first config)
        local = self._core_trusted

        def on_change(config: dict) -> None:
            nonlocal seen
            acl = {n: t.get("producers") for n, t in config["topics"].items()}
            stores = tuple(config.get("stores", ())) or local
            deleted = dict(config.get("deleted", {}))
            news = (
                [] if seen is None else [(t, r) for t, r in deleted.items() if r > seen.get(t, -1)]
            )
            seen = deleted

            def call(now: float) -> list[Publish]:
                self._core.set_acl(acl)
                self._core.set_trusted_stores(stores or None)
                for topic, revision in news:
                    if topic in self._core.topics():
                        dropped = self._shared.topic_deleted(topic, revision)
                        log.info(
                            "consumer.topic_deleted topic=%s revision=%d dropped=%d",
                            topic,
                            revision,
                            dropped,
                        )
                return []

            self._loop.call(call)

        view.subscribe(on_change)

    # ------------------------------------------------------------------ API

    def subscribe(self, topic: str) -> None:
        """Read ``topic`` too (on the IO thread, soon). Raises :class:`ClosedError` once
        the consumer is closed or its IO thread has stopped."""
        check_topic_name(topic)
        self._check_open()
        if self._shared.held is not None:
            raise ConfigError("a group member's topics are fixed when it is made")

        def call(now: float) -> list[Publish]:
            out = self._core.subscribe(topic, now)
            assert self._handler.loop is not None
            self._handler.loop.sync_subscriptions()
            return out

        self._loop.call(call)

    def unsubscribe(self, topic: str) -> None:
        """Stop reading ``topic``. Raises :class:`ClosedError` like :meth:`subscribe`."""
        self._check_open()

        def call(now: float) -> list[Publish]:
            self._core.unsubscribe(topic)
            assert self._handler.loop is not None
            self._handler.loop.sync_subscriptions()
            return []

        self._loop.call(call)

    def _wait_ready(self, deadline: float | None) -> bool:
        """Wait (holding ``_cond``) until records or group callbacks are ready; False at
        the deadline.

        Raises a pending :class:`DataLossError` (each once)."""
        while not (self._shared.count or self._group_events) or self._shared.errors:
            if self._shared.errors:
                raise self._shared.errors.popleft()
            if self._closed:
                raise ClosedError("consumer is closed")
            if not self._loop.alive:  # nothing more can arrive: say so, do not wait for ever
                raise ClosedError("consumer IO thread has stopped")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            self._shared.cond.wait(0.2 if left is None else min(left, 0.2))
        return True

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until a poll would not block; take nothing.

        True when records (or an error a poll would raise, or group callbacks a poll
        would run) are ready. For front ends
        that take records on another thread than the one that waits (``dafka.api.aio``).
        """
        deadline = time.monotonic() + timeout
        with self._shared.cond:
            while not (self._shared.count or self._shared.errors or self._group_events):
                if self._closed or not self._loop.alive:
                    return True  # a poll raises ClosedError at once
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._shared.cond.wait(min(left, 0.2))
            return True

    def _poll(self, max_records: int, timeout: float | None) -> list[RecordBatch]:
        """Run the group callbacks queued (on this thread, not holding ``_cond``), then
        take up to ``max_records`` records; again if more callbacks came meanwhile, so
        none is ever run after a record it comes before."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._group_events:
                self._run_group_callbacks()
            with self._shared.cond:
                if not self._wait_ready(deadline):
                    return []
                if not self._group_events:
                    return self._shared.take(max_records)

    def poll(self, timeout: float | None = None) -> ConsumedRecord | None:
        """The next record, or ``None`` if none arrived within ``timeout`` seconds.

        A group member's ``on_assign`` and ``on_revoke`` run here (every poll method),
        on the caller's thread, before the records they come before."""
        runs = self._poll_runs(1, timeout, lists=True)
        return runs[0].records()[0] if runs else None

    def poll_batch(
        self, max_records: int = 10_000, timeout: float | None = None
    ) -> list[ConsumedRecord]:
        """Up to ``max_records`` records at once (waits up to ``timeout`` for the first).

        The cheap way to consume many records: one lock round trip per call.
        """
        out: list[ConsumedRecord] = []
        for run in self._poll_runs(max_records, timeout, lists=True):
            out.extend(run.records())
        return out

    def poll_batches(
        self, max_records: int = 100_000, timeout: float | None = None
    ) -> list[RecordBatch]:
        """Up to ``max_records`` records as runs of one partition: the fastest way to consume.

        Each :class:`RecordBatch` holds consecutive records of one partition as
        columns (``offset`` of the first, ``values``, ``keys`` or ``None``,
        ``timestamp``), verified like every record; ``records()`` turns one
        into :class:`ConsumedRecord` objects, which is what costs most at high
        rates. Waits up to ``timeout`` for the first record. Under the signed
        profile ``values`` and ``keys`` are :class:`~dafka.wire.columns.Column`
        views of the verified batches (``docs/consumer.md``, reading in bulk). Runs of
        format-5 batches also carry ``timestamps`` and ``headers`` per record, and a
        tombstone's value is ``None`` (``docs/records.md``, "Consuming").
        """
        return self._poll_runs(max_records, timeout, lists=False)

    def _poll_runs(self, max_records: int, timeout: float | None, lists: bool) -> list[RecordBatch]:
        """:meth:`_poll`, for a reader of records (``lists``: the IO thread makes the runs'
        values as it verifies them, see ``_ConsumerHandler.lists``) or of columns."""
        if max_records < 1:
            raise ValueError("max_records must be at least 1")
        self._handler.lists = lists
        return self._poll(max_records, timeout)

    def __iter__(self) -> Iterator[ConsumedRecord]:
        while not self._closed:
            record = self.poll(0.5)
            if record is not None:
                yield record

    def at_end(self) -> bool:
        """True when every record the stores said they hold was polled: every store that
        greeted this consumer was asked for its heads once it could hear it (and we it),
        none has said anything for a moment since, every partition they hold was
        delivered up to its head, and no delivered record waits to be polled.

        This is what ``dafka-consumer -e`` waits for (kcat's end of partition). Decided in
        one step on the IO thread, which owns the core's state and delivers the records
        (``docs/consumer.md``, the end of stream).
        """
        with self._shared.cond:
            if self._shared.count:
                return False  # a shortcut: the IO thread looks again, in the same step
        if self._group is not None and not self._group.settled(time.monotonic(), 2 * END_QUIET):
            return False  # a group member: at the end of what the group assigns it
        return self._on_loop(lambda now: ([], self._handler.at_end(now)))

    @property
    def tower_answered(self) -> bool:
        """True once any tower has answered (welcomed this consumer).

        While it is False the consumer cannot find producers or stores: no
        tower runs at :attr:`towers`, or it cannot be reached.
        """
        return self._loop.welcomed

    @property
    def store_answered(self) -> bool:
        """True once a store could be asked for its heads (what :meth:`at_end` needs
        first): it greeted this consumer and subscribed to its greetings, so that a
        CONSUMER-HELLO reached it. A greeting alone is not enough: a store connects to
        this consumer when its beacon reaches it, which can be seconds later."""
        return self._core.stores_asked > 0

    def stores_waiting(self) -> dict[str, float]:
        """The stores that greeted this consumer (or subscribed to its greetings) but
        cannot be asked for their heads yet, one direction of the connection not being up:
        ``{store ID: seconds since first seen}``. :meth:`at_end` waits for them."""
        return self._on_loop(lambda now: ([], self._core.stores_waiting(now)))

    # ------------------------------------------------- positions and seeking

    def positions(self) -> dict[tuple[str, str], int]:
        """The offset of the next record a poll returns, per (topic, partition) seen.

        Records delivered and not polled yet count as not read (Kafka's ``position``).
        A snapshot: records keep arriving."""

        def positions(now: float) -> dict[tuple[str, str], int]:
            with self._shared.cond:
                return self._shared.polled_positions(self._core.positions())

        return self._on_loop(lambda now: ([], positions(now)))

    def position(self, topic: str, partition: str) -> int | None:
        """The offset of the next record a poll returns of one partition (``None``: not
        seen yet)."""
        return self.positions().get((topic, partition))

    def seek(self, topic: str, partition: str, offset: int) -> None:
        """Read ``partition`` of ``topic`` (a subscribed topic; the partition is its
        producer's node ID) from ``offset`` on, back or forward: the next poll returns
        its records from there. Records of it not polled yet are dropped; a partition
        not seen yet starts there when it is. Raises :class:`ConfigError` for a topic
        not subscribed, a malformed partition or a negative offset."""
        self._seek(topic, partition, lambda now: self._core.seek(topic, partition, offset, now))

    def seek_to_beginning(self, topic: str, partition: str | None = None) -> None:
        """Seek ``partition`` (every partition of ``topic`` seen so far when ``None``) to
        offset 0, as ``offset_reset="earliest"`` starts: records below a store's
        retention tail are then skipped as a data loss (``on_data_loss``)."""
        self._seek(
            topic, partition, lambda now: self._core.seek_to_beginning(topic, partition, now)
        )

    def seek_to_end(self, topic: str, partition: str | None = None) -> None:
        """Seek to one past the newest record the producer's signed statements show to
        exist (a partition named must have been seen: its end is not known otherwise)."""
        self._seek(topic, partition, lambda now: self._core.seek_to_end(topic, partition, now))

    def seek_to_timestamp(self, topic: str, partition: str | None, timestamp: float) -> None:
        """Read from the first record whose time (its own, else its batch's seal time) is
        at or after ``timestamp`` (seconds since the epoch; signed profile only) of
        ``partition`` (every one seen when ``None``): the partition is read again from 0,
        the records before it passed over, so the earliest one is found whatever order
        record times come in."""
        self._seek(
            topic,
            partition,
            lambda now: self._core.seek_to_timestamp(topic, partition, timestamp, now),
        )

    def watermarks(
        self, topics: Iterable[str] | None = None, timeout: float = 5.0
    ) -> dict[tuple[str, str], tuple[int, int]]:
        """``(low, high)`` offsets per partition of ``topics`` (subscribed; all when
        ``None``), like Kafka's watermarks: ``low`` the lowest offset a store still holds,
        ``high`` one past the newest offset known to exist (stores' heads, the producer's
        signed head). Asks the stores and waits for their answers (until they have been
        quiet for a moment, at most ``timeout`` seconds). Raises
        :class:`~dafka.errors.DafkaTimeout` when no store answered at all."""
        named = None if topics is None else {check_topic_name(t) for t in topics}
        node = self.node_id

        def ask(now: float) -> tuple[list[Publish], set[str]]:
            subscribed = set(self._core.topics())
            wanted = subscribed if named is None else named
            missing = wanted - subscribed
            if missing:
                raise ConfigError(
                    f"not subscribed to {', '.join(sorted(missing))}: subscribe first"
                )
            return [Publish(m.GetHeads(t, node)) for t in sorted(wanted)], wanted

        h = self._handler
        before = h.heads_seen
        wanted = self._on_loop(ask)
        # A GET-HEADS reaches only the stores connected already: ask again once one can
        # be asked (it greeted us and subscribed to us); a store with nothing of these
        # topics says nothing, so give up on answers a moment after that.
        core = self._core
        asked_connected = core.stores_asked > 0
        asked_at = time.monotonic()
        deadline = asked_at + timeout
        while (now := time.monotonic()) < deadline:
            if h.heads_seen > before:
                if now - h.last_news >= END_QUIET:
                    break
            elif asked_connected:
                if now - asked_at >= 2 * END_QUIET:
                    break
            elif core.stores_asked:
                self._on_loop(ask)
                asked_connected, asked_at = True, now
            with self._shared.cond:
                self._shared.cond.wait(0.05)
        if h.heads_seen == before and not core.stores_asked:
            raise DafkaTimeout(f"no store answered within {timeout:g} s; is dafka-store running?")
        marks = self._on_loop(lambda now: ([], self._core.watermarks()))
        return {k: v for k, v in marks.items() if k[0] in wanted}

    def table(
        self, topic: str, timeout: float = 30.0, *, max_keys: int = 1_000_000
    ) -> dict[bytes, ConsumedRecord]:
        """The newest record of every key of ``topic`` (signed profile), in key order:
        every partition read from its beginning to the end the stores report, by a
        consumer of its own (this one's positions and subscriptions do not move). A
        tombstone (value ``None``) removes its key; across partitions the latest record
        time wins, ties to the greater partition ID (``docs/consumer.md``, the table view).

        Raises :class:`~dafka.consumer._kv_table.CompactionError` (a
        :class:`~dafka.errors.DataLossError`) when a store dropped a record compaction
        must keep (the newest of a key, a tombstone younger than ``delete_retention_ms``),
        ``TableTooLarge`` over ``max_keys`` keys, :class:`~dafka.errors.DafkaTimeout` when
        no store answered or the end was not reached within ``timeout`` seconds."""
        from ._kv_read import read_table

        self._check_open()
        args = self._table_args
        return read_table(
            lambda: Consumer(offset_reset="earliest", on_data_loss="skip", **args),
            topic,
            timeout=timeout,
            max_keys=max_keys,
        )[0]

    def _seek(
        self, topic: str, partition: str | None, fn: Callable[[float], list[Publish]]
    ) -> None:
        def call(now: float) -> tuple[list[Publish], None]:
            out = fn(now)  # raises before anything moved when the seek is bad
            self._shared.drop(topic, partition)
            self._shared.reseek_paused(topic, partition)
            return out, None

        self._on_loop(call)

    def _on_loop(
        self, fn: Callable[[float], tuple[list[Publish], _T]], timeout: float = 10.0
    ) -> _T:
        """Run ``fn`` on the IO thread and wait for its value (or its exception)."""
        self._check_open()
        done = threading.Event()
        box: list[Any] = []

        def call(now: float) -> list[Publish]:
            try:
                out, value = fn(now)
            except Exception as exc:  # handed to the caller's thread
                box.append(exc)
                out = []
            else:
                box.append(value)
            done.set()
            return out

        self._loop.call(call)
        if not done.wait(timeout):
            if not self._loop.alive:
                raise ClosedError("consumer IO thread has stopped")
            raise DafkaTimeout(f"the consumer's IO thread did not answer within {timeout:g} s")
        if isinstance(box[0], Exception):
            raise box[0]
        return box[0]

    def _check_open(self) -> None:
        """Raise :class:`ClosedError` once nothing handed to the IO thread would run."""
        if self._closed:
            raise ClosedError("consumer is closed")
        if not self._loop.alive:
            raise ClosedError("consumer IO thread has stopped")

    def remaining(self) -> int | None:
        """Records known to exist and not yet polled: from each partition's next offset to the
        end its heads announce, plus :attr:`backlog` (a snapshot, racy by nature; None when the
        IO thread changed the partitions while it was taken). ``dafka-consumer -e`` shows it."""
        core = self._core
        try:
            ahead = sum(
                max(0, (core.known_end(topic, partition) or nxt) - nxt)
                for (topic, partition), nxt in core.positions().items()
            )
        except RuntimeError:  # a partition was added meanwhile: ask again later
            return None
        return ahead + self._shared.count

    @property
    def backlog(self) -> int:
        """Records delivered by the IO thread and not yet polled."""
        return self._shared.count

    def close(self) -> None:
        if self._closed:
            return
        if self._group is not None:
            self._group.close()  # commits (auto-commit) and leaves while data still flows
        self._closed = True
        if self.metrics is not None:
            self.metrics.close()
        if self.metadata is not None:
            self.metadata.stop()
        self._loop.stop()
        self._shared.wake()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
