"""The settings of topics and of the cluster in the metadata: defaults and validation.

Pure rules, shared by the state machine (:mod:`.state`, which checks every command with
them), its snapshots (:mod:`.snapshot`) and the clients that check before they send
(:func:`check_settings`). Each ``check_*`` returns the validated values or raises a
:class:`~dafka.errors.ConfigError` naming the first bad one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .signing import check_public_key

__all__ = [
    "CLUSTER_DEFAULTS",
    "CLUSTER_SETTINGS",
    "CURVE_CLIENTS",
    "MAX_ADMINS",
    "MAX_CLIENTS",
    "MAX_MIN_ACKS",
    "TOPIC_DEFAULTS",
    "admin_list",
    "check_cluster_settings",
    "check_settings",
    "node_id",
    "topic_settings",
]

MAX_ADMINS = 16
TOPIC_DEFAULTS: dict[str, Any] = {
    "retention_ms": None,
    "retention_bytes": None,
    "min_acks": 1,
    "profile": "signed",
    "max_record_bytes": None,
    "producers": None,
    "consumers": None,
}
CLUSTER_DEFAULTS: dict[str, Any] = {"auto_create": True}
CLUSTER_SETTINGS = ("auto_create", "curve", "curve_clients", "clients")
"""Besides ``auto_create``, unset until an admin sets them (readers use the defaults):
``curve`` (false): nodes refuse to run without CURVE; ``curve_clients`` (``open``): any CURVE
key may connect to a node, or ``metadata``: only keys the metadata names
(``dafka.security.curve_policy``); ``clients`` (none): node IDs admitted besides those (e.g. the
readers and writers of topics without ACLs)."""
CURVE_CLIENTS = ("open", "metadata")
MAX_CLIENTS = 10_000

MAX_MIN_ACKS = 16
_NODE_ID = re.compile(r"^[0-9A-F]{32}$")


def node_id(value: object, what: str) -> str:
    text = str(value).strip().upper() if isinstance(value, str) else ""
    if not _NODE_ID.match(text):
        raise ConfigError(f"bad {what} {value!r}: expected a node ID (32 hex characters)")
    return text


def admin_list(value: object) -> list[str]:
    if not isinstance(value, list | tuple) or not 1 <= len(value) <= MAX_ADMINS:
        raise ConfigError(f"admins: a list of 1 to {MAX_ADMINS} public keys")
    return sorted({check_public_key(k) for k in value})


def _optional_positive(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"bad {name} {value!r}: a positive integer, or none to keep forever")
    return value


def check_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Validated topic settings (a subset of :data:`TOPIC_DEFAULTS`); ConfigError names the
    first bad one."""
    if not isinstance(settings, Mapping):
        raise ConfigError("topic settings must be a map")
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if name not in TOPIC_DEFAULTS:
            known = ", ".join(TOPIC_DEFAULTS)
            raise ConfigError(f"unknown topic setting {name!r} (known: {known})")
        if name in ("retention_ms", "retention_bytes"):
            out[name] = _optional_positive(name, value)
        elif name == "min_acks":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"bad min_acks {value!r}: an integer from 1 to {MAX_MIN_ACKS}")
            if not 1 <= value <= MAX_MIN_ACKS:
                raise ConfigError(f"bad min_acks {value}: must be from 1 to {MAX_MIN_ACKS}")
            out[name] = value
        elif name == "profile":
            if value not in ("signed", "rfc46"):
                raise ConfigError(f"bad profile {value!r}: signed or rfc46")
            out[name] = value
        elif name == "max_record_bytes":
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 30
            ):
                raise ConfigError(
                    f"bad max_record_bytes {value!r}: an integer from 1 to 2**30, or none "
                    "(the wire profile's limit)"
                )
            out[name] = value
        elif name in ("producers", "consumers"):
            if value is None:
                out[name] = None
            elif isinstance(value, list | tuple):
                out[name] = sorted({node_id(v, name[:-1]) for v in value})
            else:
                raise ConfigError(f"bad {name} {value!r}: a list of node IDs, or none (open)")
    merged = {**TOPIC_DEFAULTS, **out}
    if merged["profile"] == "rfc46" and merged["min_acks"] > 1:
        raise ConfigError("min_acks > 1 needs the signed profile (rfc46 ACKs are anonymous)")
    return out


def check_cluster_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(settings, Mapping):
        raise ConfigError("cluster settings must be a map")
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if name in ("auto_create", "curve"):
            if not isinstance(value, bool):
                raise ConfigError(f"bad {name} {value!r}: true or false")
            out[name] = value
        elif name == "curve_clients":
            if value not in CURVE_CLIENTS:
                raise ConfigError(f"bad curve_clients {value!r}: {' or '.join(CURVE_CLIENTS)}")
            out[name] = value
        elif name == "clients":
            if value is None:
                out[name] = None
            elif isinstance(value, list | tuple) and len(value) <= MAX_CLIENTS:
                out[name] = sorted({node_id(v, "client") for v in value})
            else:
                raise ConfigError(f"bad clients {value!r}: up to {MAX_CLIENTS} node IDs, or none")
        else:
            known = ", ".join(CLUSTER_SETTINGS)
            raise ConfigError(f"unknown cluster setting {name!r} (known: {known})")
    return out


def topic_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every setting of a topic: its own over the defaults."""
    return {**TOPIC_DEFAULTS, **(settings or {})}
