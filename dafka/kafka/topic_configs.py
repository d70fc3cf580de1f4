"""Kafka topic configs to Dafka topic settings and back (pure).

| Kafka config | Dafka setting |
|---|---|
| ``retention.ms``, ``retention.bytes`` (-1: unlimited) | ``retention_ms``, ``retention_bytes`` (None) |
| ``cleanup.policy`` | ``cleanup_policy`` |
| ``compression.type`` ``zstd``/``lz4``/``none``/``uncompressed``; ``producer`` | ``compression``; None |
| ``min.insync.replicas`` | ``min_acks`` |
| ``max.message.bytes`` | ``max_record_bytes`` |
| ``delete.retention.ms`` | ``delete_retention_ms`` |

Anything else, and ``gzip``/``snappy`` (Dafka compresses with zstd or lz4 only), is
:class:`~dafka.errors.KafkaRequestError` ``INVALID_CONFIG`` naming it. Values are checked
again by the metadata's own rules (:func:`dafka.metadata.settings.check_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, KafkaRequestError
from ..metadata.settings import check_settings
from ..wire.signed import MAX_VALUE_BYTES
from .model import Code

__all__ = ["MAX_CONFIGS", "to_kafka", "to_settings"]

MAX_CONFIGS = 256
"""Configs one CreateTopics entry may carry."""

_INTS = {
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "min.insync.replicas": "min_acks",
    "max.message.bytes": "max_record_bytes",
    "delete.retention.ms": "delete_retention_ms",
}
_UNLIMITED = ("retention_ms", "retention_bytes")
_CODECS = {"zstd": "zstd", "lz4": "lz4", "none": "none", "uncompressed": "none", "producer": None}


def _bad(message: str) -> KafkaRequestError:
    return KafkaRequestError(Code.INVALID_CONFIG, message)


def to_settings(configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Dafka topic settings for Kafka ``configs`` (a None value: not set)."""
    # guard: kafka-topic-configs-bound
    if len(configs) > MAX_CONFIGS:
        raise _bad(f"{len(configs)} configs; at most {MAX_CONFIGS}")
    out: dict[str, Any] = {}
    for name, value in configs.items():
        if value is None:
            continue
        if not isinstance(name, str) or not isinstance(value, str):
            raise _bad("config names and values are strings")
        if name in _INTS:
            setting = _INTS[name]
            try:
                number = int(value.strip())
            except ValueError:
                raise _bad(f"{name}={value[:64]!r} is not an integer") from None
            if number == -1 and setting in _UNLIMITED:
                out[setting] = None
            else:
                out[setting] = number
        elif name == "cleanup.policy":
            out["cleanup_policy"] = value
        elif name == "compression.type":
            if value not in _CODECS:
                raise _bad(
                    f"compression.type {value[:64]!r}: Dafka compresses with zstd or lz4 "
                    "(or none, or producer: the producer's choice)"
                )
            out["compression"] = _CODECS[value]
        else:
            raise _bad(
                f"unknown topic config {name[:128]!r} (known: {', '.join(sorted(_INTS))}, "
                "cleanup.policy, compression.type)"
            )
    try:
        return check_settings(out)
    except ConfigError as exc:
        raise _bad(str(exc)) from None


def to_kafka(settings: Mapping[str, Any]) -> dict[str, str | None]:
    """A topic's settings (defaults filled in) under Kafka's names where one exists, and
    Dafka's own names otherwise."""
    out: dict[str, str | None] = {}
    done = set()
    for kafka, setting in _INTS.items():
        value = settings.get(setting)
        done.add(setting)
        if value is None:
            if setting in _UNLIMITED:
                out[kafka] = "-1"
            elif setting == "max_record_bytes":
                out[kafka] = str(MAX_VALUE_BYTES)
            else:
                out[kafka] = None
        else:
            out[kafka] = str(value)
    out["cleanup.policy"] = str(settings.get("cleanup_policy") or "delete")
    compression = settings.get("compression")
    out["compression.type"] = "producer" if compression is None else str(compression)
    done.update(("cleanup_policy", "compression"))
    for name, value in settings.items():
        if name in done:
            continue
        if isinstance(value, list | tuple):
            out[name] = ",".join(str(v) for v in value)
        else:
            out[name] = None if value is None else str(value)
    return out
