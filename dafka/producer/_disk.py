"""A producer's state directory that cannot be written (:class:`StateDirTrouble`).

A producer with a state directory writes it on its IO thread: it reserves each turn's
offsets in the offset journal before publishing (a restart never reuses an offset), records
how far each topic is acknowledged before it resolves the futures (a restart never calls an
acknowledged offset a gap), and in durable mode logs what it publishes. When the disk is
full (or failing) those writes fail, and the producer must neither die nor claim what it
could not record:

* a turn whose offsets cannot be reserved is not published: its records fail with the
  error (``flush`` raises :class:`~dafka.errors.DeliveryError` naming it), and later sends
  are tried again as they come;
* ACKs that cannot be recorded leave their futures pending, and the record is tried again
  every :data:`RETRY_EVERY` seconds, so they resolve once there is room again, with no
  new ACK needed; ``flush``'s timeout says why they wait.

This class keeps what failed and when, and logs it: one line when it starts failing, then at
most one per :data:`LOG_EVERY` seconds (with the count), and one when writes succeed again.
Used on the IO thread; :meth:`describe` may be read from any thread.
"""

from __future__ import annotations

import logging

from ..errors import StorageError

__all__ = ["LOG_EVERY", "RETRY_EVERY", "StateDirTrouble"]

log = logging.getLogger(__name__)

LOG_EVERY = 5.0
"""Seconds between two log lines about the same trouble."""
RETRY_EVERY = 0.5
"""Seconds between two attempts to record the ACKs that could not be recorded."""


class StateDirTrouble:
    """What failed to be written to a producer's state directory, until a write succeeds."""

    def __init__(self) -> None:
        self.error: StorageError | None = None
        """The last write that failed, while failures go on (None: all well)."""
        self.failures = 0
        """Writes failed since the producer started."""
        self._logged_at = -LOG_EVERY
        self._unlogged = 0
        self._retry_at = 0.0

    def failed(self, what: str, exc: StorageError, now: float) -> None:
        """A write of ``what`` failed with ``exc`` at ``now``."""
        first = self.error is None
        self.error = exc
        self.failures += 1
        self._retry_at = now + RETRY_EVERY
        if first or now - self._logged_at >= LOG_EVERY:
            log.error(
                "producer.state_dir_failed what=%s error=%s failures=%d unlogged=%d",
                what,
                exc,
                self.failures,
                self._unlogged,
            )
            self._logged_at, self._unlogged = now, 0
        else:
            self._unlogged += 1

    def succeeded(self) -> None:
        """A write succeeded: the trouble is over (logged once)."""
        if self.error is not None:
            log.warning(
                "producer.state_dir_recovered after=%s failures=%d", self.error, self.failures
            )
            self.error = None
            self._unlogged = 0

    def retry_due(self, now: float) -> bool:
        """Whether to try again what could not be recorded."""
        return now >= self._retry_at

    def describe(self) -> str | None:
        """Why acknowledgements may be waiting, for an error message (None: no trouble)."""
        error = self.error
        if error is None:
            return None
        return f"the producer cannot write its state directory: {error}"
