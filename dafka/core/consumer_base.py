"""The consumer core's state and what every layer of it shares.

:class:`ConsumerBase` validates the configuration, holds the partitions and the
counters, creates a partition seen for the first time (where it starts, and the
bounds on new partitions) and applies the topic ACLs. The behaviour is layered on
it, each layer using only those below:

* :mod:`dafka.core.consumer_fetch`: where fetching aims and the FETCH windows,
* :mod:`dafka.core.consumer_delivery`: records in: verification, the reorder
  buffer, in-order delivery, skipping what cannot be delivered,
* :mod:`dafka.core.consumer_heads`: HEADs, store heads and tails, ``caught_up`` and
  ``at_end`` (with :mod:`dafka.core.consumer_end`, the stores asked),
* :mod:`dafka.core.consumer`: :class:`~dafka.core.consumer.ConsumerCore`, the
  public face (subscriptions, dispatch, ``tick``, positions and seeking).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Collection, Mapping
from typing import Literal

from ..errors import ConfigError
from ..ids import is_node_id
from ..wire.profiles import RFC46, Profile
from .admission import PartitionGate
from .answers import FETCH_COUNT
from .consumer_end import StoreAnswers
from .consumer_state import (
    FETCH_BURST,
    FETCH_RATE,
    HINT_BURST,
    HINT_RATE,
    MAX_BUFFERED_BYTES,
    MAX_BUFFERED_BYTES_PER_PARTITION,
    MAX_EQUIVOCATION_REPORTS,
    MAX_UNCONFIRMED,
    ConsumerStats,
    Held,
)
from .consumer_state import REJECT_LOG_PERIOD as _REJECT_LOG_PERIOD
from .consumer_state import PartitionState as _Partition
from .equivocation import ConsumerEquivocation
from .limits import TokenBucket

log = logging.getLogger(__name__)

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


class ConsumerBase:
    """State, configuration and partition admission of :class:`ConsumerCore`."""

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
        trusted_stores: Collection[str] | None = None,
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
        self._unserved_after = float(unserved_after)
        self._oversized = 0
        self._unserved = 0
        self._last_oversized_log = -_REJECT_LOG_PERIOD
        self._node_id = node_id
        self._reset = offset_reset
        self._start_time = None if start_timestamp is None else float(start_timestamp)
        self._before_start = 0
        self._start_offsets = dict(start_offsets or {})
        for key, offset in self._start_offsets.items():
            if offset < 0:
                raise ConfigError(f"start offset for {key} is negative")
        # signed: the answer's bound cuts a FETCH, not its count (dafka.core.answers)
        self._window = max(fetch_window, FETCH_COUNT) if profile.batched else fetch_window
        self._timeout = float(fetch_timeout)
        self._max_buffered = max_buffered
        # the reorder buffer's byte bounds, over all partitions and per partition
        self._max_held = max_buffered_bytes
        self._max_held_part = max_buffered_bytes_per_partition
        self._held_bytes = 0
        self._max_partitions = max_partitions
        self._lead = max_head_lead
        self._profile = profile
        self._on_data_loss = on_data_loss
        self._data_lost = 0
        self._topics: dict[str, None] = {}  # an ordered set
        self._parts: dict[PartitionKey, _Partition] = {}
        self._delivered = 0
        self._duplicates = 0
        self._beyond = 0
        self._ignored = 0
        self._refused = 0
        self._fetches = 0
        self._rejected = 0
        self._rejected_heads = 0
        self._unauthorized = 0
        self._gap_offsets = 0
        self._acl: dict[str, frozenset[str]] = {}
        self._last_reject_log = -_REJECT_LOG_PERIOD
        self._trusted = frozenset(trusted_stores) if trusted_stores is not None else None
        self._ignored_tails = 0
        self._tail_claims = 0
        self._tail_waits = 0
        self._last_claim_log = -_REJECT_LOG_PERIOD
        self._unconfirmed = 0
        self._hints = TokenBucket(HINT_RATE, HINT_BURST)
        self._fetch_budget = TokenBucket(FETCH_RATE, FETCH_BURST)
        # partitions from fresh keys: a cap per topic and a rate (docs/wire.md §11.6)
        self._equivocations = 0
        self._last_equivocation_log = -_REJECT_LOG_PERIOD
        self.equivocations: deque[ConsumerEquivocation] = deque(maxlen=MAX_EQUIVOCATION_REPORTS)
        """The latest equivocations seen (a bounded report; ``stats`` counts them all)."""
        self._gate = PartitionGate(
            max_partitions_per_topic, new_partition_rate, new_partition_burst
        )
        # what stores said they hold (DIRECT-HEAD offsets) of subscribed topics: the end
        # ``caught_up`` waits for (kcat -e); bounded like the partitions
        self._store_heads: dict[PartitionKey, int] = {}
        self._store_tails: dict[PartitionKey, int] = {}  # the lowest tail a store said
        self._answers = StoreAnswers()  # which stores were asked so they could answer (-e)
        self._source = ""  # the host of the message being handled (a rate key)

    # ------------------------------------------------------------ properties

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def profile(self) -> Profile:
        return self._profile

    @property
    def stats(self) -> ConsumerStats:
        return ConsumerStats(
            delivered=self._delivered - self._gap_offsets - self._before_start,
            duplicates=self._duplicates,
            beyond_buffer=self._beyond,
            ignored=self._ignored,
            refused_partitions=self._refused,
            fetches_sent=self._fetches,
            rejected=self._rejected,
            rejected_heads=self._rejected_heads,
            unauthorized=self._unauthorized,
            data_lost=self._data_lost,
            gap_offsets=self._gap_offsets,
            ignored_tails=self._ignored_tails,
            limited_hints=self._hints.refused,
            limited_fetches=self._fetch_budget.refused,
            equivocations=self._equivocations,
            oversized=self._oversized,
            unserved=self._unserved,
            before_start=self._before_start,
            tail_claims=self._tail_claims,
            tail_waits=self._tail_waits,
        )

    @property
    def buffered_bytes(self) -> int:
        """What the reorder buffers hold, over all partitions, as the byte bounds count it."""
        return self._held_bytes

    def _unbuffer(self, p: _Partition, first: int) -> Held | None:
        """Take the batch buffered at ``first`` out of ``p``'s reorder buffer (if any)."""
        held = p.buffer.pop(first, None)
        if held is not None:
            p.buffer_ends.pop(first + held[0] - 1, None)
            p.held_bytes -= held[4]
            self._held_bytes -= held[4]
        return held

    def _drop_buffer(self, p: _Partition) -> None:
        """Forget everything ``p`` holds out of order (call before forgetting ``p``)."""
        p.buffer.clear()
        p.buffer_ends.clear()
        self._held_bytes -= p.held_bytes
        p.held_bytes = 0

    def set_trusted_stores(self, stores: Collection[str] | None) -> None:
        """The stores whose signed tails count (``None``: any store's, bounded; see class)."""
        self._trusted = frozenset(stores) if stores is not None else None

    def set_acl(self, acl: Mapping[str, Collection[str] | None]) -> None:
        """Which producers may write each topic (metadata); a topic missing or mapped to
        None is open. Batches and HEADs of other producers are dropped."""
        self._acl = {t: frozenset(ps) for t, ps in acl.items() if ps is not None}

    def _allowed(self, topic: str, partition: str) -> bool:
        allowed = self._acl.get(topic)
        if allowed is None or partition in allowed:
            return True
        self._unauthorized += 1
        return False

    def topics(self) -> list[str]:
        return list(self._topics)

    def positions(self) -> dict[PartitionKey, int]:
        """The next offset to deliver for every partition seen."""
        return {key: p.next for key, p in self._parts.items()}

    def _partition(
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
        if len(self._parts) >= self._max_partitions or not is_node_id(partition):
            self._refused += 1
            return None
        key = (topic, partition)
        if not confirmed:
            if self._gate.full(topic):
                self._refused += 1
                return None
            if self._unconfirmed >= MAX_UNCONFIRMED or not self._hints.allow(now):
                if self._unconfirmed >= MAX_UNCONFIRMED:
                    self._hints.refused += 1
                return None
        elif not self._gate.admit(key, now, self._source):
            self._refused += 1
            return None
        start = self._start_offsets.get(key)
        not_before = None
        from_end = 0
        if end is None:
            end = offset + 1
        if start is None:
            reset = self._reset
            if self._start_time is not None:
                start = 0  # pass over the batches stamped before it (no time index)
                not_before = self._start_time
            elif reset == "earliest":
                start = 0
            elif reset == "latest":
                start = offset
            elif reset < 0:  # N before the end: first find the end (_aim_from_end)
                start = end - 1
                from_end = -int(reset)
            else:
                start = int(reset)
        p = self._parts[key] = _Partition(topic, partition, start, now)
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

    def _starts_at_latest(self) -> bool:
        """Whether new partitions start at the first record or HEAD seen."""
        return self._reset == "latest" and self._start_time is None

    def _confirm(self, p: _Partition) -> None:
        p.confirmed = True
        self._unconfirmed -= 1
        self._gate.add((p.topic, p.partition))
