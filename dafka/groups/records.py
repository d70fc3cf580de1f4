"""The records of a group topic (``__group.NAME``), as JSON values (pure).

A member publishes them with its own producer, so a record in partition P was
signed by P's key: P *is* the member's ID, and no member can speak for another.

* :class:`Heartbeat` (``"hb"``): alive; the topics it subscribes to, the
  partitions it reads now (``held``) and those it knows of (``parts``, so every
  member assigns over the same set; ``null`` when unchanged since its previous
  heartbeat). The first one is the join.
* :class:`Commit` (``"commit"``): next offset per partition, with the epoch of
  the committer's ownership (see :mod:`dafka.groups.view`).
* :class:`Leave` (``"leave"``): gone; its partitions are free at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import ConfigError, WireError
from ..ids import GROUP_TOPIC_PREFIX, check_topic, check_topic_name, is_node_id
from .assign import PartitionKey

__all__ = ["Commit", "GroupRecord", "Heartbeat", "Leave", "decode", "encode", "group_topic"]

VERSION = 1
PREFIX = GROUP_TOPIC_PREFIX
MAX_KEYS = 100_000  # partitions named in one record
MAX_METADATA = 4096  # characters of one commit entry's metadata


def group_topic(group: str) -> str:
    """The topic that holds ``group``'s membership and offsets."""
    if not isinstance(group, str) or not group:
        raise ConfigError("a group name must be a non-empty string")
    return check_topic_name(PREFIX + group)


@dataclass(frozen=True)
class Heartbeat:
    topics: tuple[str, ...]
    held: frozenset[PartitionKey]
    parts: frozenset[PartitionKey] | None  # None: as in this member's previous heartbeat
    client: str = ""


@dataclass(frozen=True)
class Commit:
    offsets: tuple[tuple[str, str, int, int], ...]  # topic, partition, next offset, epoch
    metadata: tuple[str | None, ...] | None = None
    """Per entry of ``offsets``, a Kafka client's commit metadata string (``"meta"``, only
    when some entry has one; readers that predate it ignore the key)."""


@dataclass(frozen=True)
class Leave:
    pass


GroupRecord = Heartbeat | Commit | Leave


def _keys(keys: frozenset[PartitionKey]) -> list[list[str]]:
    return [[t, p] for t, p in sorted(keys)]


def encode(record: GroupRecord) -> bytes:
    if isinstance(record, Heartbeat):
        body: dict = {
            "t": "hb",
            "topics": sorted(record.topics),
            "held": _keys(record.held),
            "parts": None if record.parts is None else _keys(record.parts),
            "client": record.client,
        }
    elif isinstance(record, Commit):
        body = {"t": "commit", "offsets": [list(o) for o in record.offsets]}
        if record.metadata is not None and any(m is not None for m in record.metadata):
            body["meta"] = list(record.metadata)
    else:
        body = {"t": "leave"}
    body["v"] = VERSION
    return json.dumps(body, separators=(",", ":")).encode()


def _key(item: object) -> PartitionKey:
    if (
        not isinstance(item, list)
        or len(item) != 2
        or not isinstance(item[0], str)
        or not isinstance(item[1], str)
        or not is_node_id(item[1])
    ):
        raise WireError(f"bad partition {item!r}")
    check_topic(item[0])
    return item[0], item[1]


def _key_list(body: dict, name: str) -> frozenset[PartitionKey]:
    items = body.get(name)
    if not isinstance(items, list) or len(items) > MAX_KEYS:
        raise WireError(f"bad {name}")
    return frozenset(_key(i) for i in items)


def _offset(item: object) -> tuple[str, str, int, int]:
    if not isinstance(item, list) or len(item) != 4:
        raise WireError(f"bad commit entry {item!r}")
    topic, partition = _key(item[:2])
    offset, epoch = item[2], item[3]
    for n in (offset, epoch):
        if type(n) is not int or n < 0 or n >= 1 << 64:
            raise WireError(f"bad commit entry {item!r}")
    return topic, partition, offset, epoch


def decode(value: bytes) -> GroupRecord:
    """The record in ``value``; :class:`WireError` for anything else."""
    try:
        return _decode(value)
    except ConfigError as exc:  # a bad topic name
        raise WireError(str(exc)) from exc


def _decode(value: bytes) -> GroupRecord:
    try:
        body = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"group record is not JSON: {exc}") from exc
    if not isinstance(body, dict) or body.get("v") != VERSION:
        raise WireError("group record of an unknown version")
    kind = body.get("t")
    if kind == "hb":
        topics = body.get("topics")
        client = body.get("client", "")
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise WireError("bad topics")
        if not isinstance(client, str):
            raise WireError("bad client")
        for t in topics:
            check_topic(t)
        parts = None if body.get("parts") is None else _key_list(body, "parts")
        return Heartbeat(tuple(sorted(set(topics))), _key_list(body, "held"), parts, client)
    if kind == "commit":
        offsets = body.get("offsets")
        if not isinstance(offsets, list) or len(offsets) > MAX_KEYS:
            raise WireError("bad offsets")
        entries = tuple(_offset(o) for o in offsets)
        meta = body.get("meta")
        if meta is None:
            return Commit(entries)
        # guard: group-commit-metadata-bounded
        if (
            not isinstance(meta, list)
            or len(meta) != len(entries)
            or not all(m is None or (isinstance(m, str) and len(m) <= MAX_METADATA) for m in meta)
        ):
            raise WireError("bad commit metadata")
        return Commit(entries, tuple(meta))
    if kind == "leave":
        return Leave()
    raise WireError(f"unknown group record type {kind!r}")
