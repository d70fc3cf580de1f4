"""The console's readings of the cluster over time: the last good metadata, and how old it is.

The console's background refresh (:mod:`dafka.console.web`) reads the cluster at most every
few seconds and publishes a :class:`Reading`; pages and ``/metrics`` show the last one and
never wait for the cluster. :func:`next_reading` is pure: from the previous reading and what
this one could read, the next. When the metadata does not answer (no tower up, no leader),
the reading does not turn what it knew into "unknown": it keeps the last reading whose
metadata answered (its topics, their settings, the trusted stores, what the stores held,
their copies) with the towers' rows and errors of now, says since when the metadata is
unreachable and how old the data shown is (:meth:`Reading.banner`, the gauges
``dafka_console_metadata_up`` and ``dafka_console_reading_age_seconds``).

While the metadata answers, a store that does not (or is not heard through the towers any
more, while the metadata still trusts it) keeps the partitions it held at its last answer
listed, as not answering and not counted as a copy: a partition only it holds shows 0 copies
(below ``min_acks``) rather than vanishing with its series. What a store held is remembered
for the stores of the reading only (trusted or heard).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cli.holdings import StoreView
from ..query.protocol import PartitionInfo
from .model import Snapshot, build_snapshot, tower_rows

__all__ = ["Reading", "next_reading"]


@dataclass(frozen=True, slots=True)
class Reading:
    snapshot: Snapshot
    """What the pages show: this reading's, or the last good one's with today's towers."""
    taken: float
    """Wall-clock time of this reading."""
    metadata_up: bool
    """Whether this reading's metadata answered."""
    good_at: float | None
    """Wall-clock time of the last reading whose metadata answered (the data shown)."""
    down_since: float | None = None
    """Wall-clock time of the first reading of this outage that the metadata did not answer."""
    started: float = 0.0
    """When the console started (the age before any good reading)."""
    held: Mapping[str, tuple[PartitionInfo, ...]] = dataclasses.field(default_factory=dict)
    """What each store known held when it last answered (see :func:`next_reading`)."""

    def age(self, now: float | None = None) -> float:
        """Seconds since the data shown was read (since the start, before any good reading)."""
        now = time.time() if now is None else now
        return max(0.0, now - (self.good_at if self.good_at is not None else self.started))

    @property
    def known(self) -> bool:
        """Whether the metadata was ever read: else "no topics" means "not read yet"."""
        return self.good_at is not None

    def banner(self, now: float | None = None) -> str | None:
        """The line every page shows while the metadata is unreachable, else None."""
        if self.metadata_up:
            return None
        since = time.strftime("%H:%M:%S", time.localtime(self.down_since or self.taken))
        if self.good_at is None:
            return f"metadata unreachable since {since} (nothing read yet: no data to show)"
        return f"metadata unreachable since {since} (showing data {self.age(now):.0f} s old)"


def next_reading(
    prev: Reading | None,
    status: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None,
    stores: Sequence[StoreView],
    errors: Sequence[str] = (),
    *,
    now: float | None = None,
    started: float = 0.0,
) -> Reading:
    """The reading after ``prev`` from what was read now (``config`` None: the metadata did
    not answer; see the module)."""
    now = time.time() if now is None else now
    started = prev.started if prev is not None else started
    if config is not None:
        remembered = dict(prev.held) if prev is not None else {}
        remembered.update((s.node_id, s.partitions) for s in stores if s.partitions is not None)
        snap = build_snapshot(status, config, stores, errors, remembered)
        held = {s.node_id: remembered[s.node_id] for s in snap.stores if s.node_id in remembered}
        return Reading(snap, now, True, now, None, started, held)
    down_since = prev.down_since if prev is not None and not prev.metadata_up else now
    # guard: console-keeps-last-good-metadata
    if prev is not None and prev.good_at is not None:
        kept = dataclasses.replace(prev.snapshot, towers=tower_rows(status), errors=tuple(errors))
        return Reading(kept, now, False, prev.good_at, down_since, started, prev.held)
    snap = build_snapshot(status, None, stores, errors)
    return Reading(snap, now, False, None, down_since, started)
