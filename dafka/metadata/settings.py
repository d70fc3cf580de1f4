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
from ..groups.resets import SETTING as RESET_SETTING
from ..groups.resets import check_reset_offsets
from .signing import check_public_key

__all__ = [
    "CLEANUP_POLICIES",
    "CLUSTER_DEFAULTS",
    "CLUSTER_SETTINGS",
    "COMPRESSIONS",
    "CURVE_CLIENTS",
    "MAX_ADMINS",
    "MAX_CLIENTS",
    "MAX_LISTENERS",
    "MAX_MIN_ACKS",
    "MAX_PARTITIONS",
    "TOPIC_DEFAULTS",
    "admin_list",
    "check_cluster_settings",
    "check_growth",
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
    "compression": None,
    "cleanup_policy": "delete",
    "delete_retention_ms": 86_400_000,
    "max_future_ms": 3_600_000,
    "partitions": None,
}
MAX_PARTITIONS = 1024
"""``partitions``: the Kafka-written partitions of the topic (``None``: not numbered, no
Kafka producer may write it). It only grows (:func:`check_growth`), as in Kafka."""
COMPRESSIONS = ("none", "zstd", "lz4")
"""``compression``: what producers of the topic compress batches with, unless told
otherwise (``None``: none)."""
CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
"""``cleanup_policy``: ``delete`` (retention by age and size), ``compact`` (keep at least
the newest record of every key; tombstones for ``delete_retention_ms``) or both."""
MAX_FUTURE_MS_BOUND = 7 * 86_400_000
"""``max_future_ms``: how far past a batch's arrival at a store its records' own times may
count for retention (at most a week)."""
CLUSTER_DEFAULTS: dict[str, Any] = {"auto_create": True}
CLUSTER_SETTINGS = ("auto_create", "curve", "curve_clients", "clients", "listeners", "kafka_secret")
"""Besides ``auto_create``, unset until an admin sets them (readers use the defaults):
``curve`` (false): nodes refuse to run without CURVE; ``curve_clients`` (``open``): any CURVE
key may connect to a node, or ``metadata``: only keys the metadata names
(``dafka.security.curve_policy``); ``clients`` (none): node IDs admitted besides those (e.g. the
readers and writers of topics without ACLs); ``listeners`` (none): the Ed25519 public keys (hex)
of the ``dafka-kafka`` listeners, which may sign the lease commands and nothing else
(:mod:`.leases`); ``kafka_secret`` (none): the fingerprint (a node ID) of the partition secret
the listeners share, so that a listener with another secret takes no partition
(:func:`dafka.kafka.partition_keys.secret_fingerprint`)."""
CURVE_CLIENTS = ("open", "metadata")
MAX_CLIENTS = 10_000
MAX_LISTENERS = 64

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
        if name == RESET_SETTING:  # a group topic's only (the state checks the topic)
            out[name] = check_reset_offsets(value)
            continue
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
        elif name == "compression":
            if value is not None and value not in COMPRESSIONS:
                raise ConfigError(f"bad compression {value!r}: one of {', '.join(COMPRESSIONS)}")
            out[name] = value
        elif name == "cleanup_policy":
            policy = value.replace(" ", "") if isinstance(value, str) else value
            if policy == "delete,compact":
                policy = "compact,delete"
            if policy not in CLEANUP_POLICIES:
                raise ConfigError(
                    f"bad cleanup_policy {value!r}: one of {', '.join(CLEANUP_POLICIES)}"
                )
            out[name] = policy
        elif name == "delete_retention_ms":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"bad delete_retention_ms {value!r}: an integer >= 0")
            out[name] = value
        elif name == "max_future_ms":
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 0 <= value <= MAX_FUTURE_MS_BOUND
            ):
                raise ConfigError(
                    f"bad max_future_ms {value!r}: an integer from 0 to {MAX_FUTURE_MS_BOUND}"
                )
            out[name] = value
        elif name == "partitions":
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_PARTITIONS
            ):
                raise ConfigError(
                    f"bad partitions {value!r}: an integer from 1 to {MAX_PARTITIONS}, or none "
                    "(not numbered)"
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
    if merged["profile"] == "rfc46" and merged["cleanup_policy"] != "delete":
        raise ConfigError("a compacted topic needs the signed profile (rfc46 has no keys)")
    if merged["profile"] == "rfc46" and merged["compression"] not in (None, "none"):
        raise ConfigError("compression needs the signed profile (rfc46 batches are the C wire)")
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
        elif name == "kafka_secret":
            out[name] = None if value is None else node_id(value, "kafka_secret fingerprint")
        elif name == "listeners":
            if value is None:
                out[name] = None
            elif isinstance(value, list | tuple) and len(value) <= MAX_LISTENERS:
                out[name] = sorted({check_public_key(k) for k in value})
            else:
                raise ConfigError(
                    f"bad listeners {value!r}: up to {MAX_LISTENERS} public keys, or none"
                )
        else:
            known = ", ".join(CLUSTER_SETTINGS)
            raise ConfigError(f"unknown cluster setting {name!r} (known: {known})")
    return out


def check_growth(topic: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """ConfigError if ``new`` settings of ``topic`` have fewer ``partitions`` than ``old``
    (or none where it had some): Kafka refuses to shrink a topic, since a key's partition
    would change under its readers and the dropped partitions' records would vanish."""
    before, after = old.get("partitions"), new.get("partitions")
    # guard: metadata-partitions-only-grow
    if before is not None and (after is None or after < before):
        raise ConfigError(
            f"topic {topic!r} has {before} partitions: partitions can only grow "
            f"(as in Kafka, which refuses to shrink a topic), not to {after}"
        )


def topic_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every setting of a topic: its own over the defaults."""
    return {**TOPIC_DEFAULTS, **(settings or {})}
