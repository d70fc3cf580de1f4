"""Which new partitions a node takes on: a cap per topic and a rate per source host.

Anyone can make a key, and so a partition of its own, one batch at a time
(issue 10: 100,500 partitions from fresh keys filled a consumer's table and a
real producer's records were never delivered). Nodes therefore admit a
partition they do not hold yet only while its topic has fewer than
``max_per_topic`` partitions and the token bucket of the host the message came
from (``rate`` per second, bursts of ``burst``) and the one shared by all hosts
(:data:`TOTAL_FACTOR` times that) have a token. The source is the address of the
connection the message arrived on (ZeroMQ's ``Peer-Address``, see
:func:`source_key`), not anything the message says, so a host flooding fresh keys
spends its own budget and a real producer on another host is still admitted
(issue 10: with one bucket for everyone the flood starved it). Messages of no
known source share one bucket. A partition once admitted is never refused
again, so fresh ones can never push out or starve one that has state; a
partition refused by the rate is admitted when its producer's next batch or
HEAD finds a token. Sans IO: time is passed in.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from .limits import RequestLimiter

__all__ = ["MAX_SOURCES", "TOTAL_FACTOR", "PartitionGate", "SourceKeys", "source_key"]

PartitionKey = tuple[str, str]

TOTAL_FACTOR = 16
"""All sources together may add this many times one source's rate and burst."""
MAX_SOURCES = 1024
"""Source buckets kept (the least recently used is forgotten; the shared one still holds)."""


def source_key(address: str) -> str:
    """The rate key of a peer address: an IPv4 address, or the /64 of an IPv6 one (what
    one host is usually given); anything else as it is ("" when unknown)."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped is None:
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip.ipv4_mapped or ip) if ip.version == 6 else str(ip)


class SourceKeys:
    """:func:`source_key` of peer addresses, remembered (at most ``size``; then forgotten)."""

    __slots__ = ("_keys", "_size")

    def __init__(self, size: int = 4096) -> None:
        self._keys: dict[str, str] = {}
        self._size = size

    def key(self, address: str) -> str:
        key = self._keys.get(address)
        if key is None:
            if len(self._keys) >= self._size:
                self._keys.clear()
            key = self._keys[address] = source_key(address)
        return key


class PartitionGate:
    """Admit new ``(topic, partition)`` keys under a per-topic cap and a rate per source."""

    __slots__ = ("_admitted", "_limiter", "_counts", "max_per_topic", "refused_cap")

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
        self._limiter = RequestLimiter(
            rate,
            burst,
            total_rate=rate * TOTAL_FACTOR,
            total_burst=burst * TOTAL_FACTOR,
            max_requesters=MAX_SOURCES,
        )
        self._admitted: set[PartitionKey] = set()
        self._counts: dict[str, int] = {}
        self.refused_cap = 0
        for key in existing:
            self.add(key)

    @property
    def refused_rate(self) -> int:
        return self._limiter.refused

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

    def admit(self, key: PartitionKey, now: float, source: str = "") -> bool:
        """True if ``key`` is admitted (already, or now: a token of ``source``, a
        :func:`source_key`, and a shared one are taken)."""
        if key in self._admitted:
            return True
        if self.full(key[0]):
            self.refused_cap += 1
            return False
        # guard: new-partitions-rated-per-source
        if not self._limiter.allow(source, now):
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
