"""The cluster-side metrics ``dafka console`` serves on ``/metrics`` (docs/metrics.md).

Built from one :class:`~dafka.console.model.Snapshot` and the groups described, by pure
functions (:func:`cluster_families`), and collected by :class:`ConsoleCollector` at each
scrape from whatever the console read last:

* ``dafka_group_lag_records{group,topic,partition}``: records a group has not committed
  (log-end offset over the stores - committed offset). ``partition`` is the partition's
  Kafka number when the metadata gave it one (``partition.number``), else its id.
* ``dafka_partition_stores{topic,partition}``: trusted stores holding the partition's head.
* ``dafka_partitions_under_min_acks{topic}``: partitions with fewer such stores than the
  topic's ``min_acks``.

A partition held only by untrusted stores (when the metadata trusts some) is in neither of
the last two: anyone may run a store and claim one. Each of the three families has at most
``cap`` series in all (default 1000, in label order), the overflow series included: past
the cap, every other series is folded into one whose labels are all ``_other``, its value
the sum of the lags, the fewest copies, or the sum of the partitions below min_acks.

* ``dafka_console_stores_answering`` / ``dafka_console_stores_known``: stores that answered
  the last reading / stores the metadata trusts or the towers relay.
* ``dafka_console_refresh_seconds``: a histogram of how long a reading took.
* ``dafka_console_metadata_up``: 1 when the last reading's metadata answered, else 0 (the
  other series then keep the last known values: :mod:`dafka.console.reading`);
  ``dafka_console_reading_age_seconds``: how old the data served is (:class:`ReadingCollector`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..core.topic_counts import OTHER
from ..groups.admin import GroupInfo
from .model import Snapshot
from .reading import Reading

__all__ = [
    "DEFAULT_SERIES_CAP",
    "OTHER",
    "ConsoleCollector",
    "ReadingCollector",
    "capped",
    "cluster_families",
    "group_lag",
    "partition_stores",
    "refresh_histogram",
    "under_min_acks",
]

DEFAULT_SERIES_CAP = 1000


def _label(snapshot: Snapshot, topic: str, partition: str) -> str:
    row = snapshot.topics.get(topic)
    part = next((p for p in row.partitions if p.partition == partition), None) if row else None
    return partition if part is None or part.number is None else str(part.number)


K = TypeVar("K", bound=tuple[str, ...])


def capped(
    series: Iterable[tuple[K, int]], cap: int, other: K, fold: Callable[[int, int], int]
) -> dict[K, int]:
    """``series`` (in order) as at most ``cap`` series in all: when there are more, the first
    ``cap - 1`` keep their own and every other one is folded (``fold``) into ``other``."""
    rows = list(series)
    # guard: console-series-cap-counts-the-overflow-series
    own = cap if len(rows) <= cap else cap - 1
    out: dict[K, int] = {}
    for i, (key, value) in enumerate(rows):
        # guard: console-caps-group-lag-series
        if i < own:
            where = key
        else:
            where = other
        out[where] = fold(out[where], value) if where in out else value
    return out


def _sum(a: int, b: int) -> int:
    return a + b


def group_lag(
    snapshot: Snapshot, groups: Mapping[str, GroupInfo], cap: int
) -> dict[tuple[str, str, str], int]:
    """``(group, topic, partition label) -> lag``, at most ``cap`` series (see module)."""
    rows = sorted(
        (g, r.topic, r.partition, r.lag)
        for g, info in groups.items()
        for r in info.rows
        if r.lag is not None
    )
    return capped(
        (((g, t, _label(snapshot, t, p)), lag) for g, t, p, lag in rows),
        cap,
        (OTHER, OTHER, OTHER),
        _sum,
    )


def partition_stores(snapshot: Snapshot, cap: int) -> dict[tuple[str, str], int]:
    """``(topic, partition label) -> trusted stores holding its head``, capped (module); a
    partition held only by untrusted stores is left out."""
    rows = (
        ((name, p.label), p.copies)
        for name in sorted(snapshot.topics)
        for p in snapshot.topics[name].counted
    )
    return capped(rows, cap, (OTHER, OTHER), min)


def under_min_acks(snapshot: Snapshot, cap: int) -> dict[tuple[str], int]:
    """``(topic,) -> its partitions below min_acks`` for each topic with a partition a
    trusted store holds, capped (module; ``_other`` sums the topics folded)."""
    rows = [
        ((name,), len(row.below)) for name, row in sorted(snapshot.topics.items()) if row.counted
    ]
    # guard: console-caps-under-min-acks-series
    out = capped(rows, cap, (OTHER,), _sum)
    return out


def cluster_families(
    snapshot: Snapshot | None, groups: Mapping[str, GroupInfo], cap: int = DEFAULT_SERIES_CAP
) -> list[GaugeMetricFamily]:
    """The gauges of the module from one reading (none before the first)."""
    lag = GaugeMetricFamily(
        "dafka_group_lag_records",
        "Records a consumer group has not committed, per partition (log-end - committed).",
        labels=["group", "topic", "partition"],
    )
    stores = GaugeMetricFamily(
        "dafka_partition_stores",
        "Trusted stores holding the partition's head.",
        labels=["topic", "partition"],
    )
    under = GaugeMetricFamily(
        "dafka_partitions_under_min_acks",
        "Partitions of the topic held by fewer trusted stores than its min_acks.",
        labels=["topic"],
    )
    answering = GaugeMetricFamily(
        "dafka_console_stores_answering", "Stores that answered the console's last reading."
    )
    known = GaugeMetricFamily(
        "dafka_console_stores_known", "Stores the metadata trusts or the towers relay."
    )
    if snapshot is not None:
        for (g, t, p), value in sorted(group_lag(snapshot, groups, cap).items()):
            lag.add_metric([g, t, p], value)
        for (t, p), value in sorted(partition_stores(snapshot, cap).items()):
            stores.add_metric([t, p], value)
        for (t,), value in sorted(under_min_acks(snapshot, cap).items()):
            under.add_metric([t], value)
        answering.add_metric([], snapshot.stores_answering)
        known.add_metric([], len(snapshot.stores))
    return [lag, stores, under, answering, known]


class ConsoleCollector(Collector):
    """Yields :func:`cluster_families` of what ``latest()`` returns at each scrape."""

    def __init__(
        self,
        latest: Callable[[], tuple[Snapshot | None, Mapping[str, GroupInfo]]],
        cap: int = DEFAULT_SERIES_CAP,
    ) -> None:
        self.latest = latest
        self.cap = cap

    def collect(self) -> Iterator[Any]:
        snapshot, groups = self.latest()
        yield from cluster_families(snapshot, groups, self.cap)


def refresh_histogram(registry: CollectorRegistry) -> Histogram:
    return Histogram(
        "dafka_console_refresh_seconds",
        "Seconds one reading of the cluster took (metadata and every store's heads).",
        registry=registry,
        buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    )


class ReadingCollector(Collector):
    """``dafka_console_metadata_up`` and ``dafka_console_reading_age_seconds`` of the reading
    ``latest()`` returns at each scrape (None before the first: 0, and the age since
    ``started``)."""

    def __init__(self, latest: Callable[[], Reading | None], started: float) -> None:
        self.latest = latest
        self.started = started

    def collect(self) -> Iterator[Any]:
        reading = self.latest()
        up = GaugeMetricFamily(
            "dafka_console_metadata_up",
            "1 when the console's last reading of the metadata answered, else 0 (the other "
            "series then keep their last known values).",
        )
        up.add_metric([], 1 if reading is not None and reading.metadata_up else 0)
        age = GaugeMetricFamily(
            "dafka_console_reading_age_seconds",
            "Seconds since the data the console serves was read (the last reading whose "
            "metadata answered).",
        )
        age.add_metric([], reading.age() if reading is not None else time.time() - self.started)
        yield up
        yield age
