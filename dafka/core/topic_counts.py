"""Counts per topic with a bound on how many topics get their own: the metrics' ``topic``
label.

A topic name is chosen by whoever writes or reads it (a producer may write to any number
of fresh names), so a label per topic would let a peer grow a node's exposition without
bound. :class:`TopicCounts` gives the first ``cap`` topics seen a slot of their own and
folds every other one into :data:`OTHER` (``topic="_other"``); a topic whose name is
``_other`` itself is always folded there, so no two series share a label. A topic
deleted (:meth:`TopicCounts.forget`) gives its slot back. Pure: no clock, no I/O;
callers add per batch, never per record (``docs/metrics.md``, "Per topic").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import ConfigError

__all__ = [
    "BYTES_IN",
    "BYTES_SERVED",
    "DEFAULT_TOPIC_CAP",
    "MAX_TOPIC_CAP",
    "OTHER",
    "RECORDS_IN",
    "RECORDS_SERVED",
    "TopicCounts",
    "check_topic_cap",
    "fold",
]

OTHER = "_other"
"""The label value every topic past the cap is counted under."""
DEFAULT_TOPIC_CAP = 100
"""Topics with series of their own by default (``--metrics-topic-cap``)."""
MAX_TOPIC_CAP = 100_000


def check_topic_cap(cap: int) -> int:
    """``cap`` if it is a count of topics this code accepts (0: every topic in ``_other``)."""
    if isinstance(cap, bool) or not isinstance(cap, int) or not 0 <= cap <= MAX_TOPIC_CAP:
        raise ConfigError(f"bad metrics topic cap {cap!r}: give 0 to {MAX_TOPIC_CAP}")
    return cap


RECORDS_IN, BYTES_IN, RECORDS_SERVED, BYTES_SERVED = range(4)
"""The columns of a store's :class:`TopicCounts` (``StoreStats.topics``)."""


class TopicCounts:
    """``width`` counters per topic, for at most ``cap`` topics plus :data:`OTHER`."""

    __slots__ = ("cap", "counts", "named", "width")

    def __init__(self, cap: int = DEFAULT_TOPIC_CAP, width: int = 4) -> None:
        self.cap = cap
        self.width = width
        self.counts: dict[str, list[int]] = {}
        """Topic (or :data:`OTHER`) -> its counters; at most ``cap + 1`` entries."""
        self.named = 0
        """Topics holding a slot of their own."""

    def slot(self, topic: str) -> list[int]:
        """The counters ``topic`` adds to (its own, or :data:`OTHER`'s)."""
        counts = self.counts
        got = counts.get(topic)
        if got is not None:
            return got
        # guard: metrics-topic-label-capped
        if self.named >= self.cap or topic == OTHER:
            topic = OTHER
            got = counts.get(OTHER)
        else:
            self.named += 1
        if got is None:
            got = counts[topic] = [0] * self.width
        return got

    def forget(self, topic: str) -> None:
        """``topic`` was deleted: its series goes and its slot is free for another."""
        if topic != OTHER and self.counts.pop(topic, None) is not None:
            self.named -= 1

    def column(self, index: int) -> dict[str, int]:
        """One counter of every topic (and :data:`OTHER`): a labelled metric's values."""
        return {topic: c[index] for topic, c in self.counts.items()}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicCounts):
            return NotImplemented
        return self.counts == other.counts and self.cap == other.cap

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"TopicCounts(cap={self.cap}, topics={len(self.counts)})"


def fold(values: Iterable[tuple[str, int]], cap: int) -> Mapping[str, int]:
    """Sum ``(topic, value)`` pairs per topic, the topics past the first ``cap`` (in the
    order given; sort them for a stable choice) and one named :data:`OTHER` into
    :data:`OTHER`: what a node computes at scrape time (a consumer's lag)."""
    out: dict[str, int] = {}
    named = 0
    for topic, value in values:
        if topic not in out:
            # guard: metrics-topic-fold-capped
            if named >= cap or topic == OTHER:
                topic = OTHER
                out.setdefault(OTHER, 0)
            else:
                named += 1
                out[topic] = 0
        out[topic] += value
    return out
