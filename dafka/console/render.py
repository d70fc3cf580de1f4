"""How the console shows peer-controlled bytes and reads a user's input: pure functions.

Keys, header values and record values are a producer's bytes: they are shown as text
(UTF-8; bytes that are not are shown as hex, and said so), pretty JSON or hex, never more
than :data:`MAX_SHOWN_BYTES` of one (the rest is cut, with a note). The HTML escaping
itself is the templates' (tornado's autoescape, :mod:`dafka.console.web`): these
functions return plain text.

A user's input (an offset, a time, a page size) is checked here: one :class:`ConfigError`
line for what is not one; the page size is capped at :data:`MAX_PAGE`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from ..errors import ConfigError

__all__ = [
    "DEFAULT_PAGE",
    "MAX_OFFSET",
    "MAX_PAGE",
    "MAX_SHOWN_BYTES",
    "Format",
    "Shown",
    "page_size",
    "parse_offset",
    "parse_time",
    "show_bytes",
    "show_disk",
    "show_time",
]

MAX_PAGE = 100
"""Records on one record-browser page, however many are asked."""
DEFAULT_PAGE = 20
MAX_SHOWN_BYTES = 4096
"""Bytes of one key, header or value shown; the rest is cut, with a note."""
MAX_INPUT_CHARS = 40


class Format(Enum):
    TEXT = "text"
    JSON = "json"
    HEX = "hex"

    @classmethod
    def parse(cls, text: str | None) -> Format:
        try:
            return cls(text or "text")
        except ValueError:
            shown = (text or "")[:MAX_INPUT_CHARS]
            raise ConfigError(f"bad format {shown!r}: text, json or hex") from None


@dataclass(frozen=True, slots=True)
class Shown:
    """Bytes as shown: ``text``, and ``note`` when the text is not all of them or not as
    asked (cut, not UTF-8, not JSON)."""

    text: str
    note: str | None = None


def show_bytes(data: bytes | None, fmt: Format = Format.TEXT) -> Shown:
    """``data`` as text, JSON or hex, at most :data:`MAX_SHOWN_BYTES` of it."""
    if data is None:
        return Shown("", "none (a tombstone or no key)")
    notes: list[str] = []
    whole = len(data)
    # guard: console-cuts-shown-values
    data = data[:MAX_SHOWN_BYTES]
    if len(data) < whole:
        notes.append(f"truncated: the first {len(data)} of {whole} bytes")
    if fmt is Format.HEX:
        text = data.hex(" ")
    else:
        try:
            text = data.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            if len(data) < whole and exc.start >= len(data) - 3:  # a character cut in two
                text = data[: exc.start].decode()
            else:
                notes.append("not UTF-8: shown as hex")
                text = data.hex(" ")
                fmt = Format.HEX
        if fmt is Format.JSON:
            try:
                text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            except ValueError:
                notes.append("not JSON (or cut): shown as text")
    return Shown(text, "; ".join(notes) or None)


MAX_OFFSET = (1 << 63) - 1


def parse_offset(text: str | None, default: int = 0) -> int:
    """An offset a user typed: a whole number from 0 to :data:`MAX_OFFSET`."""
    if text is None or text.strip() == "":
        return default
    clean = text.strip()
    if not clean.isascii() or not clean.isdigit() or len(clean) > 20 or int(clean) > MAX_OFFSET:
        raise ConfigError(
            f"bad offset {text[:MAX_INPUT_CHARS]!r}: a whole number from 0 to {MAX_OFFSET}"
        )
    return int(clean)


_DIGITS = re.compile(r"^\d{1,16}$")


def parse_time(text: str) -> int:
    """A time a user typed, as ms since the epoch: ms, or ISO 8601 (UTC unless it says)."""
    clean = text.strip()
    if _DIGITS.match(clean):
        return int(clean)
    try:
        when = datetime.fromisoformat(clean)
    except ValueError:
        raise ConfigError(
            f"bad time {text[:MAX_INPUT_CHARS]!r}: ms since the epoch or ISO 8601 "
            "(2026-01-31T12:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0, int(when.timestamp() * 1000))


def page_size(text: str | None) -> int:
    """Records a page shows: as asked (a whole number from 1), at most :data:`MAX_PAGE`."""
    if text is None or text.strip() == "":
        return DEFAULT_PAGE
    clean = text.strip()
    if not clean.isascii() or not clean.isdigit() or len(clean) > 20 or int(clean) < 1:
        raise ConfigError(
            f"bad limit {text[:MAX_INPUT_CHARS]!r}: a whole number from 1 "
            f"(a page shows at most {MAX_PAGE})"
        )
    n = int(clean)
    # guard: console-caps-page-size
    n = min(max(n, 1), MAX_PAGE)
    return n


def show_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms"


def _size(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def show_disk(disk: tuple[int | None, int | None, int | None] | None) -> str:
    """A store's disk for the stores page: ``12.0 GiB free of 50.0 GiB (76% used); db
    1.2 GiB``, or ``unknown`` (no answer: a store that predates STATUS)."""
    if disk is None:
        return "unknown"
    free, total, db = disk
    parts = []
    if free is not None and total:
        used = min(100.0, max(0.0, 100 * (total - free) / total))  # a store's own numbers
        parts.append(f"{_size(free)} free of {_size(total)} ({used:.0f}% used)")
    if db is not None:
        parts.append(f"db {_size(db)}")
    return "; ".join(parts) or "unknown"
