"""The changes the console makes, as the ``dafka`` command makes them: what a form says.

A change is made by :class:`~dafka.metadata.client.MetadataClient` (create, alter and
delete a topic; trust and revoke a store) or, for a group's offsets, by
:func:`dafka.groups.reset_admin.reset_offsets` (a signed ``reset_offsets`` setting of the
group topic, :mod:`dafka.groups.resets`), signed with the admin key the console was
started with (``--admin-key``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..groups.resets import MAX_RESET_ENTRIES
from ..ids import check_topic, is_node_id
from ..metadata.settings import MAX_MIN_ACKS

__all__ = ["ADMIN_REFUSAL", "plan_rows", "topic_form"]

ADMIN_REFUSAL = "read-only console: it was started without --admin-key, so it signs no change"

_MS = {"": 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_BYTES = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_AMOUNT = re.compile(r"^\s*(\d{1,15})\s*([a-zA-Z]{0,2})\s*$")
_AMOUNTS = {"retention_ms": _MS, "retention_bytes": _BYTES, "max_record_bytes": _BYTES}


def _amount(name: str, text: str, units: Mapping[str, int]) -> int | None:
    if text.strip().lower() in ("none", "forever", "off"):
        return None
    m = _AMOUNT.match(text)
    if not m or m.group(2).lower() not in units:
        raise ConfigError(
            f"bad {name} {text[:40]!r}: a number with an optional unit "
            f"({', '.join(u for u in units if u)}) or none"
        )
    return int(m.group(1)) * units[m.group(2).lower()]


def topic_form(form: Mapping[str, str]) -> dict[str, Any]:
    """A topic's settings from a form (the fields left empty are left out): ``min_acks``,
    ``retention_ms`` (``7d``), ``retention_bytes`` / ``max_record_bytes`` (``1G``), ``none``
    for unlimited; ``cleanup_policy``. The metadata client checks them further."""
    out: dict[str, Any] = {}
    acks = form.get("min_acks", "").strip()
    if acks:
        if not (acks.isascii() and acks.isdigit() and len(acks) <= 3) or not (
            1 <= int(acks) <= MAX_MIN_ACKS
        ):
            raise ConfigError(
                f"bad min_acks {acks[:40]!r}: a whole number from 1 to {MAX_MIN_ACKS}"
            )
        out["min_acks"] = int(acks)
    for name, units in _AMOUNTS.items():
        text = form.get(name, "").strip()
        if text:
            out[name] = _amount(name, text, units)
    policy = form.get("cleanup_policy", "").strip()
    if policy:
        if policy not in ("delete", "compact", "compact,delete"):
            raise ConfigError(f"bad cleanup_policy {policy[:40]!r}: delete, compact or both")
        out["cleanup_policy"] = policy
    return out


def plan_rows(text: str | None) -> dict[tuple[str, str], int]:
    """The offsets of the reset plan a page showed (its execute form's ``plan``): JSON
    ``[[topic, partition, offset], ...]``, each checked (the form is the browser's to
    change: it names nothing the plan could not)."""
    try:
        rows = json.loads(text or "")
    except ValueError:
        raise ConfigError("bad reset plan: not JSON; plan the reset again") from None
    if not isinstance(rows, list) or not rows or len(rows) > MAX_RESET_ENTRIES:
        raise ConfigError(f"bad reset plan: 1 to {MAX_RESET_ENTRIES} partitions")
    out: dict[tuple[str, str], int] = {}
    for row in rows:
        if not isinstance(row, list) or len(row) != 3:
            raise ConfigError("bad reset plan: a row is [topic, partition, offset]")
        topic, partition, offset = row
        if (
            not isinstance(topic, str)
            or not isinstance(partition, str)
            or not is_node_id(partition)
            or type(offset) is not int
            or not 0 <= offset < 1 << 63
        ):
            raise ConfigError(f"bad reset plan row {str(row)[:80]}")
        out[(check_topic(topic), partition)] = offset
    return out
