"""Where a store keeps its :class:`~dafka.storage.retention.HeldLedger`: ``held.json``.

The ledger (the store's held clock and when it took in each partition's batches) sits
beside LMDB in the data directory, written atomically (:func:`write_atomic`). It is
saved at most every :data:`SAVE_EVERY` seconds and at a clean stop: whatever a crash
loses of it only makes batches look younger (the held clock restarts from an earlier
value; batches above the saved receipts count as received at the next retention
check), so it never needs an fsync on the path of an ACK. A missing or unreadable file
gives an empty ledger, with one log line for an unreadable one: the store then keeps
everything it holds for one more retention period.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .retention import HeldLedger
from .state_dir import write_atomic

log = logging.getLogger(__name__)

__all__ = ["HELD_FILE", "SAVE_EVERY", "HeldFile"]

HELD_FILE = "held.json"
SAVE_EVERY = 30.0
"""Seconds between saves of a changed ledger (and of the held clock's progress)."""

_MAX_BYTES = 64 * 1024 * 1024


class HeldFile:
    """Loads the ledger once and saves it when due (on the store's IO thread)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / HELD_FILE
        self._saved_at: float | None = None
        self._saved_held: int | None = None  # the held clock last written

    def load(self) -> HeldLedger:
        try:
            if self.path.stat().st_size > _MAX_BYTES:
                raise ValueError(f"over {_MAX_BYTES} bytes")
            ledger = HeldLedger.from_json(json.loads(self.path.read_bytes()))
        except FileNotFoundError:
            ledger = HeldLedger()
            self._saved_held = ledger.held_ms
            return ledger
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("store.held.unreadable path=%s error=%s action=start-empty", self.path, exc)
            return HeldLedger()
        self._saved_held = ledger.held_ms
        log.info("store.held.loaded held_ms=%d partitions=%d", ledger.held_ms, len(ledger.receipts))
        return ledger

    def save(self, ledger: HeldLedger, now: float, *, force: bool = False) -> None:
        """Write the ledger if it is due (``now``: monotonic seconds). Errors are logged:
        an unsaved ledger only delays retention."""
        if not force and self._saved_at is not None and now - self._saved_at < SAVE_EVERY:
            return
        if not ledger.dirty and ledger.held_ms == self._saved_held:
            return  # nothing changed (no retention by age, or a store at rest)
        self._saved_at = now
        try:
            write_atomic(self.path, json.dumps(ledger.to_json(), separators=(",", ":")).encode())
        except OSError as exc:
            log.warning("store.held.save_failed path=%s error=%s", self.path, exc)
            return
        ledger.dirty = False
        self._saved_held = ledger.held_ms
