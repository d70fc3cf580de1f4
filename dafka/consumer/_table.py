"""The consumer core's configuration and its partition table.

:class:`ConsumerSettings` validates the configuration once (immutable after);
:class:`PartitionTable` holds the partitions seen and the topics subscribed, admits
a partition seen for the first time (where it starts, the bounds on new partitions)
and applies the topic ACLs. They are two of the parts :class:`~dafka.consumer._core.
ConsumerCore` is composed of; the others are in :mod:`~dafka.consumer._buffer`
(the reorder buffers' bytes), :mod:`~dafka.consumer._fetch` (FETCH planning),
:mod:`~dafka.consumer._delivery` (records in, in-order delivery, data loss),
:mod:`~dafka.consumer._heads` (HEADs, store heads and tails) and
:mod:`~dafka.consumer._end` (the stores asked, for the end of stream).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Literal

from ..core.admission import PartitionGate
from ..core.answers import FETCH_COUNT
from ..core.limits import TokenBucket
from ..errors import ConfigError
from ..ids import is_node_id
from ..wire.profiles import RFC46, Profile
from ._partition import (
    HINT_BURST,
    HINT_RATE,
    MAX_BUFFERED_BYTES,
    MAX_BUFFERED_BYTES_PER_PARTITION,
    MAX_UNCONFIRMED,
)
from ._partition import PartitionState as _Partition

log = logging.getLogger(__name__)

__all__ = ["ConsumerSettings", "OffsetReset", "PartitionKey", "PartitionTable"]

OffsetReset = Literal["earliest", "latest"] | int
"""Where a partition seen for the first time starts: ``"earliest"``, ``"latest"``, an
offset ``>= 0``, or ``-N``: ``N`` offsets before its end (kcat's ``-o -N``)."""
PartitionKey = tuple[str, str]


def check_offset_reset(reset: object) -> None:
    """Raise :class:`ConfigError` unless ``reset`` is an :data:`OffsetReset`."""
    if isinstance(reset, bool) or not (reset in ("earliest", "latest") or isinstance(reset, int)):
        raise ConfigError(
            "offset_reset must be 'earliest', 'latest', an offset >= 0 or -N "
            f"(N before the end), not {reset!r}"
        )


class ConsumerSettings:
    """The consumer core's configuration, checked once; nothing writes it afterwards."""

    __slots__ = (
        "lead",
        "max_buffered",
        "max_held",
        "max_held_part",
        "max_partitions",
        "max_partitions_per_topic",
        "new_partition_burst",
        "new_partition_rate",
        "node_id",
        "on_data_loss",
        "profile",
        "reset",
        "start_offsets",
        "start_time",
        "timeout",
        "unserved_after",
        "window",
    )

    def __init__(
        self,
        node_id: str,
        *,
        offset_reset: OffsetReset = "latest",
        start_offsets: Mapping[PartitionKey, int] | None = None,
        fetch_window: int = 10_000,
        fetch_timeout: float = 1.0,
        max_buffered: int = 100_000,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
        max_buffered_bytes_per_partition: int = MAX_BUFFERED_BYTES_PER_PARTITION,
        max_partitions: int = 100_000,
        max_head_lead: int = 1_000_000,
        profile: Profile = RFC46,
        on_data_loss: Literal["raise", "skip"] = "raise",
        max_partitions_per_topic: int = 10_000,
        new_partition_rate: float = 100.0,
        new_partition_burst: float = 1000.0,
        unserved_after: float = 10.0,
        start_timestamp: float | None = None,
    ) -> None:
        if on_data_loss not in ("raise", "skip"):
            raise ConfigError(f"on_data_loss must be 'raise' or 'skip', not {on_data_loss!r}")
        check_offset_reset(offset_reset)
        if start_timestamp is not None:
            if isinstance(start_timestamp, bool) or not (
                isinstance(start_timestamp, int | float) and start_timestamp >= 0
            ):
                raise ConfigError(
                    f"start_timestamp must be seconds since the epoch, not {start_timestamp!r}"
                )
            if not profile.batched:
                raise ConfigError(
                    "start_timestamp needs the signed profile: rfc46 records carry no timestamp"
                )
        if fetch_window <= 0 or max_buffered <= 0 or max_partitions <= 0:
            raise ConfigError("fetch_window, max_buffered and max_partitions must be positive")
        if fetch_timeout <= 0:
            raise ConfigError("fetch_timeout must be positive")
        if not 0 <= max_buffered_bytes_per_partition <= max_buffered_bytes:
            raise ConfigError(
                "max_buffered_bytes_per_partition must be 0..max_buffered_bytes "
                f"({max_buffered_bytes_per_partition!r} > {max_buffered_bytes!r})"
            )
        if max_head_lead < fetch_window:
            raise ConfigError("max_head_lead must be at least fetch_window")
        if not unserved_after > 0:
            raise ConfigError("unserved_after must be positive")
        starts = dict(start_offsets or {})
        for key, offset in starts.items():
            if offset < 0:
                raise ConfigError(f"start offset for {key} is negative")
        self.node_id = node_id
        self.reset: OffsetReset = offset_reset
        self.start_time = None if start_timestamp is None else float(start_timestamp)
        self.start_offsets = starts
        """As given; the partition table keeps (and seeks change) its own copy."""
        # signed: the answer's bound cuts a FETCH, not its count (dafka.core.answers)
        self.window = max(fetch_window, FETCH_COUNT) if profile.batched else fetch_window
        self.timeout = float(fetch_timeout)
        self.max_buffered = max_buffered
        # the reorder buffer's byte bounds, over all partitions and per partition
        self.max_held = max_buffered_bytes
        self.max_held_part = max_buffered_bytes_per_partition
        self.max_partitions = max_partitions
        self.lead = max_head_lead
        self.profile = profile
        self.on_data_loss = on_data_loss
        self.unserved_after = float(unserved_after)
        self.max_partitions_per_topic = max_partitions_per_topic
        self.new_partition_rate = new_partition_rate
        self.new_partition_burst = new_partition_burst

    def starts_at_latest(self) -> bool:
        """Whether new partitions start at the first record or HEAD seen."""
        return self.reset == "latest" and self.start_time is None


class PartitionTable:
    """The partitions seen, the topics subscribed, where new partitions start and which
    are admitted (bounds on partitions from fresh keys and unsigned hints), and the ACLs.

    The only writer of ``parts``, ``topics``, ``start_offsets`` and the counts below."""

    def __init__(self, settings: ConsumerSettings) -> None:
        self._settings = settings
        self._max_partitions = settings.max_partitions
        self.parts: dict[PartitionKey, _Partition] = {}
        self.topics: dict[str, None] = {}  # an ordered set
        self.start_offsets: dict[PartitionKey, int] = dict(settings.start_offsets)
        """Where partitions not seen yet start (given, or by a seek or an assignment)."""
        self.acl: dict[str, frozenset[str]] = {}
        self.refused = 0  # new partitions refused (ConsumerStats.refused_partitions)
        self.unauthorized = 0
        self._unconfirmed = 0
        self._hints = TokenBucket(HINT_RATE, HINT_BURST)
        # partitions from fresh keys: a cap per topic and a rate (docs/wire.md §11.6)
        self._gate = PartitionGate(
            settings.max_partitions_per_topic,
            settings.new_partition_rate,
            settings.new_partition_burst,
        )
        self._source = ""  # the host of the message being handled (a rate key)

    @property
    def limited_hints(self) -> int:
        """Unsigned hints for unknown partitions refused (rate or count bound)."""
        return self._hints.refused

    @property
    def unconfirmed(self) -> int:
        """Partitions known only from unsigned store hints."""
        return self._unconfirmed

    def subscribe(self, topic: str) -> None:
        self.topics[topic] = None

    def unsubscribe(self, topic: str) -> None:
        self.topics.pop(topic, None)

    def start_at(self, key: PartitionKey, offset: int | None) -> None:
        """Where ``key`` starts when it is seen (None: by the reset)."""
        if offset is None:
            self.start_offsets.pop(key, None)
        else:
            self.start_offsets[key] = offset

    def set_source(self, source: str) -> None:
        """The host the message being handled came from (whose budget it spends)."""
        self._source = source

    def set_acl(self, acl: Mapping[str, Collection[str] | None]) -> None:
        """Which producers may write each topic (metadata); a topic missing or mapped to
        None is open."""
        self.acl = {t: frozenset(ps) for t, ps in acl.items() if ps is not None}

    def allowed(self, topic: str, partition: str) -> bool:
        """Whether the topic's ACL lets ``partition``'s producer write it (counted if not)."""
        allowed = self.acl.get(topic)
        if allowed is None or partition in allowed:
            return True
        self.unauthorized += 1
        return False

    def never_read(self, topic: str, partition: str) -> bool:
        """Whether the ACL keeps ``partition`` from being read here (not counted)."""
        allowed = self.acl.get(topic)
        return allowed is not None and partition not in allowed

    def refuses(self, topic: str, partition: str) -> bool:
        """Whether a partition not seen yet would be refused whatever it brings (checked
        before paying for verification; counted)."""
        # guard: consumer-admits-new-partitions-under-2
        if (
            len(self.parts) >= self._max_partitions
            or not is_node_id(partition)
            or self._gate.full(topic)
        ):
            self.refused += 1
            return True
        return False

    def note(self, key: PartitionKey, now: float) -> bool:
        """Group mode: whether an unassigned partition may be noted (a node ID, the
        per-topic cap and the rate of new partitions per source)."""
        return is_node_id(key[1]) and self._gate.admit(key, now, self._source)

    def positions(self) -> dict[PartitionKey, int]:
        """The next offset to deliver for every partition seen."""
        return {key: p.next for key, p in self.parts.items()}

    def seen(self, topic: str) -> list[PartitionKey]:
        return [key for key in self.parts if key[0] == topic]

    def create(
        self,
        topic: str,
        partition: str,
        offset: int,
        now: float,
        *,
        end: int | None = None,
        confirmed: bool = True,
    ) -> _Partition | None:
        """Create the state of a partition seen for the first time (at ``offset``;
        ``end``: one past the last offset known to exist, ``offset + 1`` if not given).

        ``confirmed=False``: known from an unsigned store hint only, so bounded."""
        if len(self.parts) >= self._max_partitions or not is_node_id(partition):
            self.refused += 1
            return None
        key = (topic, partition)
        if not confirmed:
            if self._gate.full(topic):
                self.refused += 1
                return None
            # guard: partitions-unsigned-hints-bounded
            if self._unconfirmed >= MAX_UNCONFIRMED or not self._hints.allow(now):
                if self._unconfirmed >= MAX_UNCONFIRMED:
                    self._hints.refused += 1
                return None
        # guard: consumer-admits-new-partitions-under
        elif not self._gate.admit(key, now, self._source):
            self.refused += 1
            return None
        start = self.start_offsets.get(key)
        not_before = None
        from_end = 0
        if end is None:
            end = offset + 1
        if start is None:
            settings = self._settings
            reset = settings.reset
            if settings.start_time is not None:
                start = 0  # pass over the batches stamped before it (no time index)
                not_before = settings.start_time
            elif reset == "earliest":
                start = 0
            elif reset == "latest":
                start = offset
            elif reset < 0:  # N before the end: first find the end (FetchPlanning.aim_from_end)
                start = end - 1
                from_end = -int(reset)
            else:
                start = int(reset)
        p = self.parts[key] = _Partition(topic, partition, start, now)
        p.not_before = not_before
        if from_end:
            # nothing is proven yet: the caller raises these with what it verified
            p.from_end = from_end
            p.known_end = end
            p.seen_end = p.signed_end = 0
        if not confirmed:
            p.confirmed = False
            self._unconfirmed += 1
        log.debug("partition.new topic=%s partition=%s start=%d", topic, partition, start)
        return p

    def confirm(self, p: _Partition) -> None:
        """A verified batch or signed HEAD backs a partition known from a hint only."""
        p.confirmed = True
        self._unconfirmed -= 1
        self._gate.add((p.topic, p.partition))

    def forget(self, key: PartitionKey) -> _Partition | None:
        """Forget a partition's state (its reorder buffer is the caller's to drop)."""
        p = self.parts.pop(key, None)
        if p is not None and not p.confirmed:
            self._unconfirmed -= 1
        return p
