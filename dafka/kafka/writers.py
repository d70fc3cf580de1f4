"""Writing numbered partitions: one Dafka :class:`~dafka.producer.Producer` per partition led.

A partition's producer signs with the partition's key (:mod:`.partition_keys`) and keeps its
state in its own directory under the listener's. Before it opens, the directory is given
the key (``node.key``) and its offset journals are raised to what the stores hold of the
partition (one past the newest offset any store that answered holds): a listener taking
over a partition another one wrote, or coming back to one it wrote before another took it
over, numbers after every record stored, and a restarted one recovers what it reserved
beyond that as any restarted producer does (``dafka/producer/_recovery.py``).

Records a Kafka client produced to one partition are sent in the order their requests
came: one lock per partition around ``send_many``; the acknowledgement is waited for
outside it, so requests pipeline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    BufferFullError,
    ClosedError,
    ConfigError,
    DafkaError,
    KafkaRequestError,
    RecordTooLargeError,
    TopicDeletedError,
)
from ..producer import ACKED_JOURNAL, Producer
from ..storage.state_dir import StateDir
from .model import Code, KafkaRecord
from .partition_keys import install_key, partition_dir, partition_identity

log = logging.getLogger(__name__)

__all__ = ["MAX_RECORDS", "Writers", "check_records"]

MAX_RECORDS = 1_000_000
"""Records one produce of one partition may carry."""
FULL_RETRY = 0.01
"""Seconds between two tries of a ``send_many`` refused because the producer's buffer of
unacknowledged records is full (until the request's timeout)."""


def check_records(records: Sequence[KafkaRecord]) -> None:
    """What Dafka cannot carry, refused before anything is sent (``INVALID_RECORD``,
    ``INVALID_REQUEST``); the producer's own checks (header bounds, sizes) come after."""
    if not records:
        raise KafkaRequestError(Code.INVALID_REQUEST, "a produce without records")
    # guard: kafka-produce-records-bound
    if len(records) > MAX_RECORDS:
        raise KafkaRequestError(
            Code.RECORD_LIST_TOO_LARGE, f"{len(records)} records; at most {MAX_RECORDS}"
        )
    for r in records:
        # guard: kafka-null-value-needs-key
        if r.value is None and r.key is None:
            raise KafkaRequestError(
                Code.INVALID_RECORD,
                "a record with a null value and no key: Dafka's null value is a tombstone "
                "of its key, and this record has none",
            )


@dataclass(slots=True)
class _Writer:
    producer: Producer
    lock: threading.Lock = field(default_factory=threading.Lock)


class Writers:
    """The producers of the partitions this listener writes, opened on first use.

    ``known_next(topic, partition ID)``: one past the newest offset the stores hold of the
    partition (0: none), asked before a producer opens. ``on_acked(topic, index)`` is
    called after records were acknowledged (long polls wake on it)."""

    def __init__(
        self,
        *,
        towers: str | Iterable[str] | None,
        state_dir: Path,
        secret: bytes,
        known_next: Callable[[str, str], int],
        on_acked: Callable[[str, int], None] = lambda topic, index: None,
        producer_options: dict[str, Any] | None = None,
    ) -> None:
        self._towers = towers
        self._state_dir = Path(state_dir)
        self._secret = secret
        self._known_next = known_next
        self._on_acked = on_acked
        self._options: dict[str, Any] = {"on_full": "raise", "max_unacked_bytes": 64 << 20}
        self._options.update(producer_options or {})
        self._writers: dict[tuple[str, int], _Writer] = {}
        self._opening: dict[tuple[str, int], threading.Lock] = {}
        self._lock = threading.Lock()
        self._closed = False

    def partition_id(self, topic: str, index: int) -> str:
        return partition_identity(self._secret, topic, index).node_id

    def _seed(self, directory: Path, topic: str, next_offset: int) -> None:
        """Raise the directory's journals to ``next_offset`` (nothing below it is numbered
        again; nothing below it is declared a gap)."""
        state = StateDir(directory)
        try:
            state.next_run()  # a journal begun here must have a run beside it
            for name in (None, ACKED_JOURNAL):
                journal = state.offset_journal() if name is None else state.offset_journal(name)
                journal.reserve(topic, next_offset)
        finally:
            state.close()

    def _open(self, topic: str, index: int) -> _Writer:
        identity = partition_identity(self._secret, topic, index)
        directory = partition_dir(self._state_dir, topic, index)
        try:
            install_key(directory, identity)
            next_offset = self._known_next(topic, identity.node_id)
            # guard: kafka-takeover-numbers-after-stored
            if next_offset > 0:
                self._seed(directory, topic, next_offset)
            producer = Producer(topic, towers=self._towers, state_dir=directory, **self._options)
        except ConfigError as exc:
            log.error("kafka.partition_open_failed topic=%s index=%d error=%s", topic, index, exc)
            raise KafkaRequestError(Code.KAFKA_STORAGE_ERROR, str(exc)) from None
        if producer.node_id != identity.node_id:  # never: the key file is the one written
            producer.close(timeout=0)
            raise KafkaRequestError(Code.UNKNOWN_SERVER_ERROR, "a partition opened another key")
        log.info(
            "kafka.partition_opened topic=%s index=%d partition=%s next=%d",
            topic,
            index,
            identity.node_id,
            next_offset,
        )
        return _Writer(producer)

    def writer(self, topic: str, index: int) -> _Writer:
        key = (topic, index)
        with self._lock:
            if self._closed:
                raise KafkaRequestError(Code.NOT_LEADER_OR_FOLLOWER, "the listener is closing")
            found = self._writers.get(key)
            if found is not None:
                return found
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:  # one opening per partition; other partitions open meanwhile
            with self._lock:
                found = self._writers.get(key)
            if found is not None:
                return found
            made = self._open(topic, index)
            with self._lock:
                self._opening.pop(key, None)
                if self._closed:
                    made.producer.close(timeout=0)
                    raise KafkaRequestError(Code.NOT_LEADER_OR_FOLLOWER, "the listener is closing")
                self._writers[key] = made
            return made

    def produce(
        self, topic: str, index: int, records: Sequence[KafkaRecord], timeout: float
    ) -> int:
        """Send ``records`` in order; the first offset once ``min_acks`` stores acknowledged."""
        check_records(records)
        deadline = time.monotonic() + max(0.0, timeout)
        writer = self.writer(topic, index)
        values = [r.value for r in records]
        keys = [r.key for r in records]
        headers = [list(r.headers) if r.headers else None for r in records]
        stamps = [r.timestamp if r.timestamp >= 0 else None for r in records]
        with writer.lock:  # requests to one partition keep their order
            while True:
                try:
                    future = writer.producer.send_many(
                        values, keys, headers=headers, timestamps=stamps
                    )
                    break
                except BufferFullError:
                    if time.monotonic() >= deadline:
                        raise KafkaRequestError(
                            Code.REQUEST_TIMED_OUT,
                            f"{topic}/{index}: the partition's unacknowledged records are at "
                            "their bound; is a store running?",
                        ) from None
                    time.sleep(FULL_RETRY)
                except RecordTooLargeError as exc:
                    raise KafkaRequestError(Code.MESSAGE_TOO_LARGE, str(exc)) from None
                except ClosedError as exc:
                    raise KafkaRequestError(Code.NOT_LEADER_OR_FOLLOWER, str(exc)) from None
                # guard: kafka-produce-refusals-in-kafka-terms
                except (ValueError, TypeError) as exc:  # headers, keys, times Dafka refuses
                    raise KafkaRequestError(Code.INVALID_RECORD, str(exc)[:512]) from None
        try:
            offsets = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            raise KafkaRequestError(
                Code.REQUEST_TIMED_OUT,
                f"{topic}/{index}: not acknowledged by the topic's min_acks stores in time",
            ) from None
        except ClosedError as exc:
            raise KafkaRequestError(Code.NOT_LEADER_OR_FOLLOWER, str(exc)) from None
        except TopicDeletedError as exc:
            raise KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, str(exc)) from None
        except DafkaError as exc:
            raise KafkaRequestError(Code.NOT_ENOUGH_REPLICAS, str(exc)[:512]) from None
        self._on_acked(topic, index)
        return offsets.start

    def opened(self) -> list[tuple[str, int]]:
        with self._lock:
            return list(self._writers)

    def close_partition(self, topic: str, index: int, timeout: float = 5.0) -> None:
        """Stop writing a partition (its lease moved, its topic was deleted): flush what
        was sent for up to ``timeout`` s, then close its producer."""
        with self._lock:
            writer = self._writers.pop((topic, index), None)
        if writer is not None:
            with writer.lock:
                writer.producer.close(timeout=timeout)
            log.info("kafka.partition_closed topic=%s index=%d", topic, index)

    def close(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._closed = True
            writers, self._writers = list(self._writers.items()), {}
        for (topic, index), writer in writers:
            with writer.lock:
                writer.producer.close(timeout=timeout)
            log.info("kafka.partition_closed topic=%s index=%d", topic, index)
