"""Per-requester rate limits for requests a peer controls (FETCH, GET-HEADS, HELLO).

FETCH, GET-HEADS and the HELLOs are not signed (``docs/wire.md`` §9.7): anyone
can send them, under any requester ID. Nodes therefore bound the work they do
for them: a token bucket per requester, and one shared by all requesters so
that requests under fresh (spoofed) IDs are bounded too. The table of buckets
is bounded; the least recently used one is forgotten first. Time is passed in
(``now``): the limiter reads no clock.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["RequestLimiter", "TokenBucket"]


class _Bucket:
    __slots__ = ("at", "tokens")

    def __init__(self, tokens: float, at: float) -> None:
        self.tokens = tokens
        self.at = at


class RequestLimiter:
    """Admit requests while the requester's and the shared bucket hold tokens.

    A requester may make ``burst`` requests at once and ``rate`` per second after
    that; all requesters together ``total_burst`` and ``total_rate``.
    """

    def __init__(
        self,
        rate: float,
        burst: float,
        *,
        total_rate: float | None = None,
        total_burst: float | None = None,
        max_requesters: int = 4096,
    ) -> None:
        if rate <= 0 or burst < 1 or max_requesters < 1:
            raise ValueError("rate must be positive, burst at least 1, max_requesters at least 1")
        self.rate = float(rate)
        self.burst = float(burst)
        self.total_rate = float(total_rate if total_rate is not None else rate * 16)
        self.total_burst = float(total_burst if total_burst is not None else burst * 16)
        self._max = max_requesters
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._total = _Bucket(self.total_burst, float("-inf"))
        self.refused = 0

    def _fill(self, bucket: _Bucket, now: float, rate: float, burst: float) -> None:
        if now > bucket.at:
            bucket.tokens = _level(bucket, now, rate, burst)
            bucket.at = now

    def allow(self, requester: str, now: float, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens for ``requester`` (and from the shared bucket) if both hold
        at least one; they may then owe the rest (a whole batch is charged). False (and
        counted) if either is empty."""
        bucket = self._buckets.get(requester)
        if bucket is None:
            if len(self._buckets) >= self._max:
                self._buckets.popitem(last=False)
            bucket = self._buckets[requester] = _Bucket(self.burst, now)
        else:
            self._buckets.move_to_end(requester)
            self._fill(bucket, now, self.rate, self.burst)
        total = self._total
        if total.at == float("-inf"):
            total.at = now
        self._fill(total, now, self.total_rate, self.total_burst)
        # guard: rate-limits
        if bucket.tokens < 1.0 or total.tokens < 1.0:
            self.refused += 1
            return False
        bucket.tokens -= cost
        total.tokens -= cost
        return True

    def ready_at(self, requester: str, now: float) -> float:
        """When :meth:`allow` will let ``requester`` through at the earliest: ``now`` if it
        would now, else when both its bucket and the shared one hold a token again (what
        they owe paid back at their rates). Changes nothing."""
        at = now
        bucket = self._buckets.get(requester)
        if bucket is not None:
            at = max(at, _refilled(bucket, now, self.rate, self.burst))
        if self._total.at != float("-inf"):
            at = max(at, _refilled(self._total, now, self.total_rate, self.total_burst))
        return at

    def charge(self, requester: str, cost: float) -> None:
        """Take ``cost`` more tokens for what ``requester`` was just allowed."""
        bucket = self._buckets.get(requester)
        if bucket is not None:
            bucket.tokens -= cost
        self._total.tokens -= cost

    def __len__(self) -> int:
        return len(self._buckets)


def _level(bucket: _Bucket, now: float, rate: float, burst: float) -> float:
    """The tokens ``bucket`` holds at ``now``: what it held at its last fill, plus ``rate``
    a second since, at most ``burst``."""
    return min(burst, bucket.tokens + max(0.0, now - bucket.at) * rate)


def _refilled(bucket: _Bucket, now: float, rate: float, burst: float, want: float = 1.0) -> float:
    """When ``bucket`` holds ``want`` tokens again (a whole one by default; ``now`` if it
    does): a microsecond late rather than early, so that a turn woken then finds them."""
    tokens = _level(bucket, now, rate, burst)
    return now if tokens >= want else now + (want - tokens) / rate + 1e-6


class TokenBucket:
    """One token bucket: ``burst`` at once, ``rate`` per second after that."""

    __slots__ = ("_bucket", "burst", "rate", "refused")

    def __init__(self, rate: float, burst: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self.rate = float(rate)
        self.burst = float(burst)
        self._bucket = _Bucket(self.burst, float("-inf"))
        self.refused = 0

    def allow(self, now: float, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens if at least one is there (the bucket may then owe the rest,
        paid back before anything else is allowed); False (and counted) if there is none."""
        b = self._bucket
        if b.at == float("-inf"):
            b.at = now
        elif now > b.at:
            b.tokens = _level(b, now, self.rate, self.burst)
            b.at = now
        if b.tokens < 1.0:
            self.refused += 1
            return False
        b.tokens -= cost
        return True

    def charge(self, cost: float) -> None:
        """Take ``cost`` more tokens for what was just allowed (the bucket may owe them)."""
        self._bucket.tokens -= cost

    def ready_at(self, now: float, tokens: float = 1.0) -> float:
        """When the bucket holds ``tokens`` (at most ``burst``) at the earliest: ``now`` if it
        does, else when what it owes and lacks is paid back at ``rate`` (a microsecond late
        rather than early). :meth:`allow` lets a cost through from one token. Changes
        nothing."""
        b = self._bucket
        if b.at == float("-inf"):
            return now  # untouched: full
        return _refilled(b, now, self.rate, self.burst, min(max(tokens, 1.0), self.burst))
