"""The one place that builds and parses storage keys.

Layout (DESIGN §5)::

    batch key      = topic (UTF-8) 0x00 partition (16 raw bytes) last_offset (u64 big-endian)
    partition key  = topic (UTF-8) 0x00 partition (16 raw bytes)
    topic prefix   = topic (UTF-8) 0x00

Why this shape:

* Topics never contain NUL (checked here, and at the wire edge), so the NUL
  ends the topic and no topic's keys are a prefix of another's: ``hello`` and
  ``hello2`` occupy disjoint key ranges, and byte order of keys equals the
  order of ``(topic bytes, partition, offset)``.
* Partitions are node IDs (32 upper-case hex characters); storing their 16 raw
  bytes gives fixed-width keys. Only the canonical upper-case form is
  accepted, so two spellings of one ID can never alias one key range while
  being different partitions on the wire.
* Batches are keyed by their *last* offset, so a cursor ``set_range`` on
  ``batch_key(topic, partition, n)`` lands on the batch that holds ``n``.
"""

from __future__ import annotations

import struct
from functools import lru_cache

from ..errors import ConfigError
from ..ids import check_topic, is_node_id

__all__ = [
    "MAX_OFFSET",
    "PARTITION_BYTES",
    "batch_key",
    "decode_batch_key",
    "decode_partition_key",
    "offset_bytes",
    "partition_prefix",
    "topic_prefix",
]

PARTITION_BYTES = 16
MAX_OFFSET = (1 << 64) - 1

_U64 = struct.Struct(">Q")


@lru_cache(maxsize=4096)
def topic_prefix(topic: str) -> bytes:
    """Prefix of every key of ``topic`` (and of nothing else): ``topic 0x00``.

    Raises :class:`~dafka.errors.InvalidTopic` for a topic the wire cannot carry.
    """
    return check_topic(topic).encode() + b"\0"


@lru_cache(maxsize=65536)
def partition_prefix(topic: str, partition: str) -> bytes:
    """Prefix of every batch key of one partition; also the key in the ``heads`` DB.

    Cached because the store builds one key per record on its hot path and the
    set of live partitions is small.
    """
    if not is_node_id(partition):
        raise ConfigError(
            f"partition {partition!r} is not a node ID (32 upper-case hex characters)"
        )
    return topic_prefix(topic) + bytes.fromhex(partition)


def offset_bytes(offset: int) -> bytes:
    """An offset as the 8 big-endian bytes that end a batch key."""
    if not 0 <= offset <= MAX_OFFSET:
        raise ConfigError(f"offset {offset} is outside 0..2**64-1")
    return _U64.pack(offset)


def batch_key(topic: str, partition: str, last_offset: int) -> bytes:
    """Key of the batch of ``(topic, partition)`` whose last offset is ``last_offset``."""
    return partition_prefix(topic, partition) + offset_bytes(last_offset)


def decode_partition_key(key: bytes) -> tuple[str, str]:
    """``(topic, partition)`` from a partition key (or the front of a batch key).

    Raises :class:`~dafka.errors.ConfigError` (a ``ValueError``) if ``key`` is not one.
    """
    nul = key.find(b"\0")
    if nul <= 0 or len(key) < nul + 1 + PARTITION_BYTES:
        raise ConfigError(f"not a partition key: {key!r}")
    try:
        topic = key[:nul].decode()
    except UnicodeDecodeError as exc:
        raise ConfigError(f"key topic is not UTF-8: {key!r}") from exc
    partition = key[nul + 1 : nul + 1 + PARTITION_BYTES].hex().upper()
    return topic, partition


def decode_batch_key(key: bytes) -> tuple[str, str, int]:
    """``(topic, partition, last_offset)`` from a batch key."""
    topic, partition = decode_partition_key(key)
    if len(key) != len(topic.encode()) + 1 + PARTITION_BYTES + 8:
        raise ConfigError(f"not a batch key: {key!r}")
    (offset,) = _U64.unpack_from(key, len(key) - 8)
    return topic, partition, offset
