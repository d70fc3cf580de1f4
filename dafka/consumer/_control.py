"""Kafka's consumer controls on the public :class:`~dafka.consumer._facade.Consumer`:
:meth:`~ConsumerControl.pause` / :meth:`~ConsumerControl.resume`,
:meth:`~ConsumerControl.assign` to chosen partitions, :meth:`~ConsumerControl.list_topics`
and :meth:`~ConsumerControl.offsets_for_times` (``docs/consumer.md``, "Kafka's client calls").

**Pause.** Records are pushed to a consumer as producers publish them, so pausing a
partition cannot stop them reaching it: a paused partition's records are dropped as the IO
thread hands them on (its records not polled yet too), and :meth:`resume` seeks it back to
where polling stopped (or to its first record dropped, for one not seen when paused). A
poll never returns a paused partition's records; none is lost or returned twice. Memory
stays bounded (nothing is kept for a paused partition); what it costs is reading its
records again after :meth:`resume`. Every step runs on the IO thread holding the
consumer's lock, so a delivery is seen wholly before or after it.

**Assign.** ``assign(partitions)`` reads exactly those partitions (the core's assignment
mode, the one a consumer group member uses): each from the offset given, else by
``offset_reset``. A later ``assign`` replaces the set; partitions left out stop at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..config import ConsumerConfig
from ..core.effects import Publish
from ..errors import ConfigError
from ..ids import check_topic, is_node_id
from ._core import ConsumerCore
from ._group import GroupConsumer

if TYPE_CHECKING:
    from ..api.cluster import StoreQueries, TopicMetadata
    from ..security.identity import Identity

PartitionKey = tuple[str, str]

__all__ = ["ConsumerControl", "parse_assignment"]


def parse_assignment(
    partitions: Iterable[PartitionKey | tuple[str, str, int | None]],
) -> dict[PartitionKey, int | None]:
    """``[(topic, partition), (topic, partition, offset), ...]`` -> ``{key: offset or None}``,
    checked (a topic name, a node ID, an offset >= 0); the last of a repeated key wins."""
    out: dict[PartitionKey, int | None] = {}
    for item in partitions:
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise ConfigError(f"{item!r} is not (topic, partition) or (topic, partition, offset)")
        topic, partition = item[0], item[1]
        check_topic(topic)
        if not isinstance(partition, str) or not is_node_id(partition):
            raise ConfigError(f"partition {partition!r} is not a node ID (32 upper-case hex)")
        offset = item[2] if len(item) == 3 else None
        if offset is not None and (
            isinstance(offset, bool) or not isinstance(offset, int) or offset < 0
        ):
            raise ConfigError(f"offset {offset!r} of {topic}/{partition} is not an int >= 0")
        out[(topic, partition)] = offset
    return out


class ConsumerControl(GroupConsumer):
    """The controls; the state they share with the IO thread (which partitions are
    paused or assigned) is in :class:`~dafka.consumer._shared.ConsumerShared`."""

    towers: tuple[str, ...]
    config: ConsumerConfig

    if TYPE_CHECKING:
        _core: ConsumerCore
        _loop: Any
        _handler: Any

        def _check_open(self) -> None: ...

    # ---------------------------------------------------------------- pause

    def pause(self, partitions: Iterable[PartitionKey]) -> None:
        """Stop returning records of ``partitions`` ((topic, partition) pairs) from polls
        until :meth:`resume`; records of them not polled yet are taken back, to be returned
        after it. Pausing a paused partition changes nothing."""
        keys = list(parse_assignment(partitions))

        def call(now: float) -> tuple[list[Publish], None]:
            with self._shared.cond:
                paused = self._shared.paused if self._shared.paused is not None else {}
                pos: dict[PartitionKey, int] = {}
                if any(k not in paused for k in keys):
                    pos = self._shared.polled_positions(self._core.positions())
                for key in keys:
                    if key not in paused:
                        paused[key] = pos.get(key)
                        self._shared.drop(*key)
                self._shared.paused = paused
            return [], None

        self._on_loop(call)

    def resume(self, partitions: Iterable[PartitionKey]) -> None:
        """Return records of ``partitions`` from polls again, from where they were paused.
        Resuming a partition not paused changes nothing."""
        keys = list(parse_assignment(partitions))

        def call(now: float) -> tuple[list[Publish], None]:
            out: list[Publish] = []
            with self._shared.cond:
                paused = self._shared.paused or {}
                for key in keys:
                    if key not in paused:
                        continue
                    at = paused.pop(key)
                    if at is not None and key[0] in self._core.topics():
                        out.extend(self._core.seek(key[0], key[1], at, now))
                        self._shared.drop(*key)
            return out, None

        self._on_loop(call)

    def paused(self) -> list[PartitionKey]:
        """The partitions paused now, sorted."""
        with self._shared.cond:
            return sorted(self._shared.paused or ())

    # --------------------------------------------------------------- assign

    def assign(self, partitions: Iterable[PartitionKey | tuple[str, str, int | None]]) -> None:
        """Read exactly ``partitions``: ``(topic, partition)`` pairs (from ``offset_reset``)
        or ``(topic, partition, offset)`` triples, whatever topics the consumer subscribed;
        their topics are subscribed as needed. Replaces the previous assignment (those left
        out stop at once, their records not polled dropped); ``assign([])`` reads nothing.
        Not for a group member (its group assigns)."""
        if self._shared.held is not None:
            raise ConfigError("a group member's partitions are assigned by its group")
        wanted = parse_assignment(partitions)

        def call(now: float) -> tuple[list[Publish], None]:
            out: list[Publish] = []
            with self._shared.cond:
                before = self._shared.manual if self._shared.manual is not None else set()
                gone = [k for k in before if k not in wanted]
                for key in gone:
                    self._shared.drop(*key)
                    if self._shared.paused is not None:
                        self._shared.paused.pop(key, None)
                self._shared.manual = set(wanted)
            subscribed = set(self._core.topics())
            for topic in sorted({t for t, _ in wanted} - subscribed):
                out.extend(self._core.subscribe(topic, now))
            if self._handler.loop is not None:
                self._handler.loop.sync_subscriptions()
            out.extend(self._core.assign(wanted, gone, now))
            return out, None

        self._on_loop(call)

    def assignment(self) -> list[PartitionKey]:
        """The partitions this consumer reads: those :meth:`assign` gave, or a group
        member's (raises :class:`ConfigError` for a consumer with neither)."""
        if self._shared.manual is not None:
            with self._shared.cond:
                return sorted(self._shared.manual)
        return super().assignment()

    # ---------------------------------------------------- asking the stores

    def list_topics(
        self, topics: Iterable[str] | None = None, timeout: float = 10.0
    ) -> dict[str, TopicMetadata]:
        """Topics with their partitions as the stores hold them (``topics``, or every one
        this consumer may read), with their metadata settings when the consumer follows a
        metadata group: :meth:`dafka.AdminClient.list_topics`."""
        self._check_open()
        settings = self._metadata_topics()
        with self.store_queries(timeout) as q:
            return q.list_topics(topics, settings)

    def offsets_for_times(
        self, times: Mapping[PartitionKey, int], timeout: float = 10.0
    ) -> dict[PartitionKey, int | None]:
        """``{(topic, partition): timestamp_ms}`` -> the earliest offset of each partition
        whose record is stamped at or after that time (ms since the epoch, as
        ``ConsumedRecord.timestamp * 1000``), or None when no stored record is (or no store
        holds the partition). Kafka's ``offsets_for_times``; seek there with :meth:`seek`.

        Asks the stores (their query endpoints, found through the towers) by a binary
        search of single-batch READs, each batch verified before its time is believed.
        Signed profile only (rfc46 records carry no time: :class:`ConfigError`). A store
        whose read ACL does not let this consumer read the topic answers ``forbidden``:
        :class:`~dafka.query.QueryError`, never an offset."""
        from ..api.cluster import check_times

        wanted = check_times(times)
        self._check_open()
        with self.store_queries(timeout) as q:
            return q.offsets_for_times(wanted)

    def store_queries(self, timeout: float = 10.0) -> StoreQueries:
        """Questions to the stores' query endpoints, found through this consumer's towers
        and asked under its key (what the stores' read ACLs judge): a
        :class:`~dafka.api.cluster.StoreQueries`, to use in a ``with`` block."""
        from ..api.cluster import StoreQueries

        return StoreQueries(
            self._tower_specs(),
            key=self._query_key(),
            timeout=timeout,
            max_decompressed_bytes=self.config.max_decompressed_bytes,
        )

    def _query_key(self) -> Identity | None:
        """The key the consumer speaks CURVE under (what the stores' read ACLs judge)."""
        return self._loop.identity if self._loop.curve.enabled else None

    def _tower_specs(self) -> list[str]:
        """The towers as ``HOST:PORT`` (``@KEY`` when given: CURVE to their relays)."""
        return [str(t) if t.key is None else f"{t}@{t.key.hex()}" for t in self._loop.config.towers]

    def _metadata_topics(self) -> dict[str, dict] | None:
        view = getattr(self, "metadata", None)
        if view is None:
            return None
        config = view.config
        if not config:
            return None
        from ..metadata.state import topic_settings

        return {name: topic_settings(t) for name, t in config.get("topics", {}).items()}
