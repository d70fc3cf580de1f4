"""A complete in-memory :class:`~dafka.kafka.model.Backend` (``dafka-kafka --memory``).

For trying Kafka clients without a Dafka cluster, and for the listener's tests: topics
with numbered partitions, records kept in lists, offsets from 0, committed offsets in a
dict. Nothing survives the process. Thread-safe (the listener calls it from its pool).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..errors import KafkaRequestError
from .model import Broker, Code, FetchResult, KafkaRecord, PartitionInfo, TopicInfo

__all__ = ["MemoryBackend"]

MAX_PARTITIONS = 1000
"""The most partitions a topic created here may have."""
MAX_TOPICS = 10_000
RECORD_OVERHEAD = 70
"""About what a record costs in a batch besides its key, value and headers."""
LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def check_topic_name(name: str) -> None:
    """Kafka's rule for a topic name: 1-249 of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not name or len(name) > 249 or name in (".", "..") or not set(name) <= LEGAL:
        raise KafkaRequestError(Code.INVALID_TOPIC_EXCEPTION, f"bad topic name {name[:60]!r}")


class MemoryBackend:
    """Topics and records in this process's memory; this listener leads every partition."""

    def __init__(
        self,
        broker: Broker,
        *,
        auto_create_partitions: int = 1,
        clock: object = time.time,
    ) -> None:
        self._broker = broker
        self._auto = auto_create_partitions
        self._clock = clock
        self._lock = threading.Condition()
        self._logs: dict[str, list[list[KafkaRecord]]] = {}
        self._configs: dict[str, dict[str, str | None]] = {}
        self._commits: dict[str, dict[tuple[str, int], tuple[int, str | None]]] = {}

    @property
    def auto_create_partitions(self) -> int:
        return self._auto

    def brokers(self) -> Sequence[Broker]:
        return (self._broker,)

    def controller(self) -> int:
        return self._broker.node_id

    def topics(self, names: Sequence[str] | None) -> Sequence[TopicInfo]:
        with self._lock:
            chosen = sorted(self._logs) if names is None else [n for n in names if n in self._logs]
            return tuple(self._info(n) for n in chosen)

    def _info(self, name: str) -> TopicInfo:
        parts = tuple(
            PartitionInfo(i, _partition_id(name, i), self._broker.node_id, True)
            for i in range(len(self._logs[name]))
        )
        return TopicInfo(name, parts)

    def _log(self, topic: str, partition: int) -> list[KafkaRecord]:
        logs = self._logs.get(topic)
        if logs is None or not 0 <= partition < len(logs):
            raise KafkaRequestError(
                Code.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {partition} of {topic!r}"
            )
        return logs[partition]

    def produce(
        self, topic: str, partition: int, records: Sequence[KafkaRecord], timeout: float
    ) -> int:
        with self._lock:
            log = self._log(topic, partition)
            base = len(log)
            now = int(self._clock() * 1000)  # type: ignore[operator]
            for i, r in enumerate(records):
                log.append(
                    replace(r, offset=base + i, timestamp=r.timestamp if r.timestamp >= 0 else now)
                )
            self._lock.notify_all()
            return base

    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_wait: float
    ) -> FetchResult:
        deadline = time.monotonic() + max(0.0, max_wait)
        with self._lock:
            log = self._log(topic, partition)
            if not 0 <= offset <= len(log):
                raise KafkaRequestError(
                    Code.OFFSET_OUT_OF_RANGE, f"offset {offset} outside 0..{len(log)}"
                )
            while offset == len(log):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
                log = self._log(topic, partition)  # a deleted topic: UNKNOWN_TOPIC
            out: list[KafkaRecord] = []
            size = 0
            for r in log[offset:]:
                cost = RECORD_OVERHEAD + len(r.key or b"") + len(r.value or b"")
                cost += sum(len(k) + len(v or b"") for k, v in r.headers)
                if out and size + cost > max_bytes:
                    break
                out.append(r)
                size += cost
            return FetchResult(high_watermark=len(log), log_start=0, records=tuple(out))

    def list_offset(self, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
        with self._lock:
            log = self._log(topic, partition)
            if timestamp == -1:
                return len(log), -1
            if timestamp == -2:
                return 0, -1
            for r in log:
                if r.timestamp >= timestamp:
                    return r.offset, r.timestamp
            return -1, -1

    def create_topic(
        self, name: str, partitions: int, configs: Mapping[str, str | None], validate_only: bool
    ) -> None:
        check_topic_name(name)
        if not 1 <= partitions <= MAX_PARTITIONS:
            raise KafkaRequestError(
                Code.INVALID_PARTITIONS, f"{partitions} partitions: give 1 to {MAX_PARTITIONS}"
            )
        with self._lock:
            if name in self._logs:
                raise KafkaRequestError(Code.TOPIC_ALREADY_EXISTS, f"topic {name!r} exists")
            if len(self._logs) >= MAX_TOPICS:
                raise KafkaRequestError(Code.POLICY_VIOLATION, f"over {MAX_TOPICS} topics")
            if validate_only:
                return
            self._logs[name] = [[] for _ in range(partitions)]
            self._configs[name] = dict(configs)

    def delete_topic(self, name: str) -> None:
        with self._lock:
            if name not in self._logs:
                raise KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
            del self._logs[name]
            del self._configs[name]
            self._lock.notify_all()

    def group_coordinator(self, group: str) -> Broker | None:
        return self._broker

    def describe_configs(self, topic: str) -> Mapping[str, str | None]:
        with self._lock:
            if topic not in self._configs:
                raise KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic!r}")
            return {"cleanup.policy": "delete", "retention.ms": "-1", **self._configs[topic]}

    def commit_offsets(
        self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str | None]]
    ) -> None:
        with self._lock:
            self._commits.setdefault(group, {}).update(offsets)

    def committed_offsets(
        self, group: str, partitions: Sequence[tuple[str, int]] | None
    ) -> Mapping[tuple[str, int], tuple[int, str | None]]:
        with self._lock:
            held = self._commits.get(group, {})
            if partitions is None:
                return dict(held)
            return {p: held[p] for p in partitions if p in held}


def _partition_id(topic: str, index: int) -> str:
    return hashlib.blake2b(f"{topic}/{index}".encode(), digest_size=16).hexdigest()
