"""Which new partitions a node takes on: a cap per topic and a rate over all topics.

Anyone can make a key, and so a partition of its own, one batch at a time
(issue 10: 100,500 partitions from fresh keys filled a consumer's table and a
real producer's records were never delivered). Nodes therefore admit a
partition they do not hold yet only while its topic has fewer than
``max_per_topic`` partitions and the shared token bucket (``rate`` per second,
bursts of ``burst``) has a token. A partition once admitted is never refused
again, so fresh ones can never push out or starve one that has state; a
partition refused by the rate is admitted when its producer's next batch or
HEAD finds a token. Sans IO: time is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable

from .limits import TokenBucket

__all__ = ["PartitionGate"]

PartitionKey = tuple[str, str]


class PartitionGate:
    """Admit new ``(topic, partition)`` keys under a per-topic cap and a shared rate."""

    __slots__ = ("_admitted", "_bucket", "_counts", "max_per_topic", "refused_cap")

    def __init__(
        self,
        max_per_topic: int,
        rate: float,
        burst: float,
        existing: Iterable[PartitionKey] = (),
    ) -> None:
        if max_per_topic < 1:
            raise ValueError("max_per_topic must be at least 1")
        self.max_per_topic = max_per_topic
        self._bucket = TokenBucket(rate, burst)
        self._admitted: set[PartitionKey] = set()
        self._counts: dict[str, int] = {}
        self.refused_cap = 0
        for key in existing:
            self.add(key)

    @property
    def refused_rate(self) -> int:
        return self._bucket.refused

    def add(self, key: PartitionKey) -> None:
        """Admit ``key`` whatever the bounds (it has state already)."""
        if key not in self._admitted:
            self._admitted.add(key)
            self._counts[key[0]] = self._counts.get(key[0], 0) + 1

    def __contains__(self, key: PartitionKey) -> bool:
        return key in self._admitted

    def full(self, topic: str) -> bool:
        """Whether ``topic`` is at its cap (a cheap check before verifying anything)."""
        return self._counts.get(topic, 0) >= self.max_per_topic

    def admit(self, key: PartitionKey, now: float) -> bool:
        """True if ``key`` is admitted (already, or now: a token is taken)."""
        if key in self._admitted:
            return True
        if self.full(key[0]):
            self.refused_cap += 1
            return False
        if not self._bucket.allow(now):
            return False
        self.add(key)
        return True

    def forget(self, key: PartitionKey) -> None:
        if key in self._admitted:
            self._admitted.discard(key)
            self._counts[key[0]] -= 1

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self._admitted if k[0] == topic]:
            self._admitted.discard(key)
        self._counts.pop(topic, None)
