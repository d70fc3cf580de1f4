"""The background scrub: read and check every stored batch, again and again, within a
bounded share of the store's IO (``docs/storage.md``, "Scrub").

A pass walks LMDB's ``batches`` database in key order, a few hundred KiB at a time, and
checks each value against its digest (:meth:`dafka.storage.lmdb_store.LmdbStorage.scrub`);
a bad batch is taken out of what is served and logged there. The pace is a byte rate:
each step reads what the rate allowed since the last one (at most a quarter second's
worth), so the scrub's reads never exceed ``rate`` bytes a second on average, however
often it is stepped. Pure but for the storage it reads: time is passed in.
"""

from __future__ import annotations

import logging
from typing import Protocol

from ..errors import ConfigError

__all__ = ["DEFAULT_SCRUB_RATE", "Scrubber"]

log = logging.getLogger(__name__)

DEFAULT_SCRUB_RATE = 8 * 1024 * 1024
"""Bytes a second the scrub reads by default: a pass over 100 GiB takes about 3.6 hours,
and it costs a disk that reads 200 MB/s about 4% of its bandwidth."""
_MAX_STEP_SECONDS = 0.25
MIN_PASS_SECONDS = 60.0
"""A pass starts at most this long after the previous one started (a small store is not
read over and over)."""


class Scrubbable(Protocol):
    def scrub(self, after: bytes, budget: int) -> tuple[bytes | None, int]: ...


class Scrubber:
    """Steps a storage's scrub at ``rate`` bytes a second (0: never)."""

    def __init__(
        self,
        storage: Scrubbable,
        rate: float = DEFAULT_SCRUB_RATE,
        min_pass: float = MIN_PASS_SECONDS,
    ) -> None:
        if not 0 <= rate < float("inf"):
            raise ConfigError(f"scrub rate must be at least 0 bytes per second, not {rate}")
        self._storage = storage
        self.rate = rate
        self._min_pass = min_pass
        self._after = b""
        self._credit = 0.0
        self._last: float | None = None
        self._pass_started = 0.0
        self._pass_bytes = 0
        self.next_pass = 0.0
        """When the next pass may start (the current one runs until it ends)."""

    def step(self, now: float) -> int:
        """Read and check what the rate allows since the last step; returns the bytes
        read. Raises the storage's errors (a damaged environment stops the store)."""
        # guard: store-scrubs-what-holds-background
        if self.rate <= 0:
            return 0
        if self._last is None or (not self._after and now < self.next_pass):
            self._last = now
            return 0
        elapsed = max(0.0, now - self._last)
        self._last = now
        # guard: store-scrub-never-bursts-past
        self._credit = min(self._credit + elapsed * self.rate, _MAX_STEP_SECONDS * self.rate)
        if self._credit <= 0:
            return 0
        if not self._after:
            self._pass_started, self._pass_bytes = now, 0
        after, read = self._storage.scrub(self._after, int(self._credit) or 1)
        # guard: store-scrub-pays-what-read
        self._credit -= read  # a batch larger than the credit is paid off later
        self._pass_bytes += read
        if after is None:
            log.info(
                "store.scrub.pass_done bytes=%d seconds=%.1f",
                self._pass_bytes,
                now - self._pass_started,
            )
            self._after = b""
            self.next_pass = self._pass_started + self._min_pass
        else:
            self._after = after
        return read
