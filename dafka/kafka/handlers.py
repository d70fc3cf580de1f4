"""Kafka requests answered over a :class:`~dafka.kafka.model.Backend`: one request in, one
response (a ``kio`` object at the client's version) out, or None for a Produce with acks 0.

:class:`Handlers.handle` may block (it calls the backend): the server runs it in its pool.
Every request is bounded before the backend sees it: at most ``max_partitions`` topics and
partitions in all (more: INVALID_REQUEST, answered without touching the backend).
ApiVersions is answered by :func:`dafka.kafka.frames.api_versions_response`; the group APIs
by the :class:`~dafka.kafka.model.GroupApi`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kio.index import load_response_schema

from ..errors import KafkaRequestError
from .batches import decode_produce, encode_batches
from .frames import API_VERSIONS, Request, element, error_response, make
from .model import Backend, Code, KafkaRecord, TopicInfo

__all__ = ["Handlers", "Limits", "ProducerIds", "Sequences", "count_items"]

log = logging.getLogger(__name__)

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID, DESCRIBE_CONFIGS = 19, 20, 22, 32
TOPIC_RESOURCE = 2
CLUSTER_ID = "dafka"
FETCH_ROUND = 0.1
"""Seconds a Fetch waits on its first partition before it looks at the others again."""
KEEP_SEQUENCES = 5
"""Batches remembered per (producer id, topic, partition): what a producer may have in
flight (Kafka's max.in.flight.requests.per.connection with idempotence)."""


@dataclass(frozen=True, slots=True)
class Limits:
    max_partitions: int = 10_000
    """Topics and partitions named by one request, in all."""
    max_records: int = 1_000_000
    """Records of one Produce request, in all."""
    max_fetch_bytes: int = 64 * 1024 * 1024
    """The most a Fetch response carries, whatever the client asks."""
    max_producer_keys: int = 100_000
    """(producer id, topic, partition) whose last batches are remembered."""
    max_uncompressed: int = 256 * 1024 * 1024
    """Bytes the batches of one Produce partition may inflate to."""


def count_items(api_key: int, body: Any) -> int:
    """How many topics and partitions a request names (a cheap walk of its lists)."""
    if api_key == PRODUCE:
        return sum(1 + len(t.partition_data) for t in body.topic_data)
    if api_key == FETCH:
        return sum(1 + len(t.partitions) for t in body.topics) + len(
            getattr(body, "forgotten_topics_data", ()) or ()
        )
    if api_key == LIST_OFFSETS:
        return sum(1 + len(t.partitions) for t in body.topics)
    if api_key == METADATA:
        return len(body.topics or ())
    if api_key == CREATE_TOPICS:
        return sum(1 + len(t.configs) + len(t.assignments) for t in body.topics)
    if api_key == DELETE_TOPICS:
        return len(body.topic_names)
    if api_key == DESCRIBE_CONFIGS:
        return sum(1 + len(r.configuration_keys or ()) for r in body.resources)
    return 0


class ProducerIds:
    """Producer ids for InitProducerId: int64, increasing, from a counter seeded by the
    time in microseconds, so a restarted listener does not hand out an id again (unless it
    handed out more than a million a second)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._next = int(clock() * 1_000_000)
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            self._next += 1
            return self._next


class Sequences:
    """The last batches of each idempotent producer per partition: (epoch, base sequence,
    record count) -> base offset, so that a batch sent again (its answer was lost) is
    answered with its first offset instead of being written twice. Bounded: the least
    recently used (producer, topic, partition) are forgotten beyond ``max_keys``."""

    def __init__(self, max_keys: int) -> None:
        self._max = max_keys
        self._map: OrderedDict[tuple[int, str, int], deque[tuple[int, int, int, int]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def find(self, pid: int, topic: str, part: int, epoch: int, seq: int, count: int) -> int | None:
        with self._lock:
            for e, s, n, offset in self._map.get((pid, topic, part), ()):
                if (e, s, n) == (epoch, seq, count):
                    return offset
            return None

    def add(
        self, pid: int, topic: str, part: int, epoch: int, seq: int, count: int, offset: int
    ) -> None:
        key = (pid, topic, part)
        with self._lock:
            held = self._map.get(key)
            if held is None:
                held = self._map[key] = deque(maxlen=KEEP_SEQUENCES)
            self._map.move_to_end(key)
            held.append((epoch, seq, count, offset))
            # guard: listener-sequences-bounded
            while len(self._map) > self._max:
                self._map.popitem(last=False)

    def __len__(self) -> int:
        return len(self._map)


def _decode_produce(
    data: bytes, max_records: int, max_uncompressed: int, now_ms: int
) -> list[tuple[int, int, int, list[KafkaRecord]]]:
    """(producer id, epoch, base sequence, records) of each batch of a Produce partition
    (a batch asking for log-append time gets ``now_ms``)."""
    out = []
    for b in decode_produce(data, max_records=max_records, max_uncompressed=max_uncompressed):
        records = list(b.records)
        if b.log_append_time:
            records = [replace(r, timestamp=now_ms) for r in records]
        out.append((b.producer_id, b.producer_epoch, b.base_sequence, records))
    return out


class Handlers:
    """The data and admin APIs over ``backend``."""

    def __init__(
        self, backend: Backend, limits: Limits = Limits(), clock: Callable[[], float] = time.time
    ) -> None:
        self.backend = backend
        self.limits = limits
        self.clock = clock
        self.producer_ids = ProducerIds(clock)
        self.sequences = Sequences(limits.max_producer_keys)

    def handle(self, req: Request) -> Any:
        """The response to ``req`` (None: none is sent, a Produce with acks 0)."""
        items = count_items(req.api_key, req.body)
        # guard: listener-request-items-bounded
        if items > self.limits.max_partitions:
            log.info(
                "api %d request naming %d topics and partitions refused (at most %d)",
                req.api_key,
                items,
                self.limits.max_partitions,
            )
            if req.api_key == PRODUCE and req.body.acks == 0:
                return None
            return error_response(req.api_key, req.api_version, Code.INVALID_REQUEST)
        method = self._methods.get(req.api_key)
        if method is None:  # not a data or admin API (the server routes the others)
            return error_response(req.api_key, req.api_version, Code.UNSUPPORTED_VERSION)
        return method(self, req)

    # --- Metadata ----------------------------------------------------------------------

    def metadata(self, req: Request) -> Any:
        cls = load_response_schema(METADATA, req.api_version)
        body = req.body
        wanted = None if body.topics is None else [t.name for t in body.topics]
        if req.api_version == 0 and wanted == []:
            wanted = None  # v0: an empty list is every topic
        auto = getattr(body, "allow_auto_topic_creation", True)
        infos = {t.name: t for t in self.backend.topics(wanted)}
        if wanted and auto:
            for name in wanted:
                if name and name not in infos:
                    self._auto_create(name)
            if any(name not in infos for name in wanted):
                infos = {t.name: t for t in self.backend.topics(wanted)}
        broker_cls = element(cls, "brokers")
        topic_cls = element(cls, "topics")
        part_cls = element(topic_cls, "partitions")
        brokers = tuple(
            make(broker_cls, node_id=b.node_id, host=b.host, port=b.port, rack=None)
            for b in self.backend.brokers()
        )
        topics = []
        for name in wanted if wanted is not None else list(infos):
            info = infos.get(name) if name is not None else None
            if info is None:
                topics.append(
                    make(topic_cls, error_code=Code.UNKNOWN_TOPIC_OR_PARTITION, name=name)
                )
                continue
            topics.append(
                make(
                    topic_cls,
                    name=name,
                    is_internal=info.internal,
                    partitions=self._parts(info, part_cls),
                )
            )
        return make(
            cls,
            brokers=brokers,
            cluster_id=CLUSTER_ID,
            controller_id=self.backend.controller(),
            topics=tuple(topics),
        )

    def _parts(self, info: TopicInfo, part_cls: type) -> tuple[Any, ...]:
        out = []
        for p in info.partitions:
            leader = -1 if p.leader is None else p.leader
            nodes = () if p.leader is None else (p.leader,)
            out.append(
                make(
                    part_cls,
                    error_code=Code.LEADER_NOT_AVAILABLE if p.leader is None else Code.NONE,
                    partition_index=p.index,
                    leader_id=leader,
                    leader_epoch=0,
                    replica_nodes=nodes,
                    isr_nodes=nodes,
                )
            )
        return tuple(out)

    def _auto_create(self, name: str) -> None:
        partitions = int(getattr(self.backend, "auto_create_partitions", 1))
        if partitions <= 0:
            return
        try:
            self.backend.create_topic(name, partitions, {}, False)
        except KafkaRequestError as exc:  # exists (a race), refused, bad name: answered unknown
            log.debug("auto-creating topic %r: %s", name[:60], exc)

    # --- Produce -----------------------------------------------------------------------

    def produce(self, req: Request) -> Any:
        body = req.body
        acks = int(body.acks)
        timeout = max(0.0, body.timeout.total_seconds())
        cls = load_response_schema(PRODUCE, req.api_version)
        topic_cls = element(cls, "responses")
        part_cls = element(topic_cls, "partition_responses")
        budget = [self.limits.max_records]
        topics = []
        for t in body.topic_data:
            parts = []
            for p in t.partition_data:
                if acks not in (0, 1, -1):
                    code, base = Code.INVALID_REQUIRED_ACKS, -1
                else:
                    code, base = self._produce_partition(
                        t.name, p.index, p.records, timeout, budget
                    )
                parts.append(
                    make(
                        part_cls,
                        index=p.index,
                        error_code=code,
                        base_offset=base,
                        log_append_time=None,
                        log_start_offset=-1,
                    )
                )
            topics.append(make(topic_cls, name=t.name, partition_responses=tuple(parts)))
        if acks == 0:
            return None
        return make(cls, responses=tuple(topics))

    def _produce_partition(
        self, topic: str, partition: int, data: bytes | None, timeout: float, budget: list[int]
    ) -> tuple[Code, int]:
        if not data:
            return Code.CORRUPT_MESSAGE, -1
        try:
            decoded = _decode_produce(
                bytes(data),
                max(0, budget[0]),
                self.limits.max_uncompressed,
                int(self.clock() * 1000),
            )
        except KafkaRequestError as exc:
            return Code(
                exc.code
            ) if exc.code in Code._value2member_map_ else Code.CORRUPT_MESSAGE, -1
        except (ValueError, IndexError) as exc:
            log.debug("produce to %r/%d: %s", topic[:60], partition, exc)
            return Code.CORRUPT_MESSAGE, -1
        first = -1
        for pid, epoch, seq, records in decoded:
            budget[0] -= len(records)  # the next partitions decode at most what is left
            if not records:
                continue
            known = (
                self.sequences.find(pid, topic, partition, epoch, seq, len(records))
                if pid >= 0
                else None
            )
            if known is not None:  # sent again: answered with where it went the first time
                base = known
            else:
                try:
                    base = self.backend.produce(topic, partition, records, timeout)
                except KafkaRequestError as exc:
                    return _code(exc), -1
                if pid >= 0:
                    self.sequences.add(pid, topic, partition, epoch, seq, len(records), base)
            if first < 0:
                first = base
        return Code.NONE, first

    # --- Fetch -------------------------------------------------------------------------

    def fetch(self, req: Request) -> Any:
        body = req.body
        cls = load_response_schema(FETCH, req.api_version)
        topic_cls = element(cls, "responses")
        part_cls = element(topic_cls, "partitions")
        max_wait = max(0.0, min(body.max_wait.total_seconds(), 30.0))
        min_bytes = max(0, int(body.min_bytes))
        limit = int(getattr(body, "max_bytes", self.limits.max_fetch_bytes))
        left = max(
            1, min(limit if limit > 0 else self.limits.max_fetch_bytes, self.limits.max_fetch_bytes)
        )
        wanted = [(t.topic, p) for t in body.topics for p in t.partitions]
        deadline = time.monotonic() + max_wait
        answers: dict[tuple[str, int], tuple[Code, Any, bytes | None]] = {}
        total = 0
        wait = 0.0
        while True:
            for topic, p in wanted:
                key = (topic, int(p.partition))
                if key in answers and answers[key][2]:
                    continue
                cap = max(1, min(int(p.partition_max_bytes), left))
                this_wait, wait = wait, 0.0  # the first partition still empty waits
                try:
                    result = self.backend.fetch(topic, key[1], int(p.fetch_offset), cap, this_wait)
                except KafkaRequestError as exc:
                    answers[key] = (_code(exc), None, None)
                    continue
                data = encode_batches(result.records) if result.records else None
                answers[key] = (Code.NONE, result, data)
                if data:
                    total += len(data)
                    left = max(0, left - len(data))
            remaining = deadline - time.monotonic()
            if total >= max(1, min_bytes) or remaining <= 0 or not wanted or left <= 0:
                break
            wait = min(FETCH_ROUND, remaining)
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                code, result, data = answers.get(
                    (t.topic, int(p.partition)), (Code.UNKNOWN_SERVER_ERROR, None, None)
                )
                hw = result.high_watermark if result is not None else -1
                parts.append(
                    make(
                        part_cls,
                        partition_index=p.partition,
                        error_code=code,
                        high_watermark=hw,
                        last_stable_offset=hw,
                        log_start_offset=result.log_start if result is not None else -1,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=data or b"",
                    )
                )
            topics.append(make(topic_cls, topic=t.topic, partitions=tuple(parts)))
        return make(cls, error_code=Code.NONE, session_id=0, responses=tuple(topics))

    # --- ListOffsets -------------------------------------------------------------------

    def list_offsets(self, req: Request) -> Any:
        cls = load_response_schema(LIST_OFFSETS, req.api_version)
        topic_cls = element(cls, "topics")
        part_cls = element(topic_cls, "partitions")
        topics = []
        for t in req.body.topics:
            parts = []
            for p in t.partitions:
                ts = int(p.timestamp)
                code, offset, found = Code.NONE, -1, -1
                if ts < -2:
                    code = Code.INVALID_REQUEST  # -3 (max timestamp) and later: not served
                else:
                    try:
                        offset, found = self.backend.list_offset(t.name, p.partition_index, ts)
                    except KafkaRequestError as exc:
                        code = _code(exc)
                parts.append(
                    make(
                        part_cls,
                        partition_index=p.partition_index,
                        error_code=code,
                        timestamp=found,
                        offset=offset,
                        leader_epoch=0,
                    )
                )
            topics.append(make(topic_cls, name=t.name, partitions=tuple(parts)))
        return make(cls, topics=tuple(topics))

    # --- topics ------------------------------------------------------------------------

    def create_topics(self, req: Request) -> Any:
        body = req.body
        cls = load_response_schema(CREATE_TOPICS, req.api_version)
        topic_cls = element(cls, "topics")
        names = [t.name for t in body.topics]
        out = []
        for t in body.topics:
            code, message = Code.NONE, None
            partitions = int(t.num_partitions)
            if partitions == -1:
                partitions = max(1, int(getattr(self.backend, "auto_create_partitions", 1)))
            if names.count(t.name) > 1:
                code, message = Code.INVALID_REQUEST, "topic named twice in one request"
            elif t.assignments:
                code, message = Code.INVALID_REQUEST, "manual replica assignments are not served"
            else:
                configs = {c.name: c.value for c in t.configs}
                try:
                    self.backend.create_topic(t.name, partitions, configs, bool(body.validate_only))
                except KafkaRequestError as exc:
                    code, message = _code(exc), str(exc)
            out.append(
                make(
                    topic_cls,
                    name=t.name,
                    error_code=code,
                    error_message=message,
                    num_partitions=partitions if code == Code.NONE else -1,
                    replication_factor=-1,
                )
            )
        return make(cls, topics=tuple(out))

    def delete_topics(self, req: Request) -> Any:
        cls = load_response_schema(DELETE_TOPICS, req.api_version)
        entry = element(cls, "responses")
        out = []
        for name in req.body.topic_names:
            code, message = Code.NONE, None
            try:
                self.backend.delete_topic(name)
            except KafkaRequestError as exc:
                code, message = _code(exc), str(exc)
            out.append(make(entry, name=name, error_code=code, error_message=message))
        return make(cls, responses=tuple(out))

    def describe_configs(self, req: Request) -> Any:
        cls = load_response_schema(DESCRIBE_CONFIGS, req.api_version)
        result_cls = element(cls, "results")
        config_cls = element(result_cls, "configs")
        out = []
        for r in req.body.resources:
            code, message, configs = Code.NONE, None, ()
            if int(r.resource_type) == TOPIC_RESOURCE:
                try:
                    held = self.backend.describe_configs(r.resource_name)
                except KafkaRequestError as exc:
                    code, message = _code(exc), str(exc)
                else:
                    keys = r.configuration_keys
                    configs = tuple(
                        make(
                            config_cls,
                            name=k,
                            value=v,
                            read_only=False,
                            config_source=5,
                            is_sensitive=False,
                        )
                        for k, v in sorted(held.items())
                        if keys is None or k in keys
                    )
            out.append(
                make(
                    result_cls,
                    error_code=code,
                    error_message=message,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                    configs=configs,
                )
            )
        return make(cls, results=tuple(out))

    # --- InitProducerId ----------------------------------------------------------------

    def init_producer_id(self, req: Request) -> Any:
        cls = load_response_schema(INIT_PRODUCER_ID, req.api_version)
        body = req.body
        if body.transactional_id is not None:
            return make(cls, error_code=Code.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
        pid = int(getattr(body, "producer_id", -1))
        epoch = int(getattr(body, "producer_epoch", -1))
        if pid >= 0 and 0 <= epoch < 32767:  # a producer bumping its epoch keeps its id
            return make(cls, producer_id=pid, producer_epoch=epoch + 1)
        return make(cls, producer_id=self.producer_ids.take(), producer_epoch=0)

    _methods: dict[int, Callable[[Handlers, Request], Any]] = {
        METADATA: metadata,
        PRODUCE: produce,
        FETCH: fetch,
        LIST_OFFSETS: list_offsets,
        CREATE_TOPICS: create_topics,
        DELETE_TOPICS: delete_topics,
        DESCRIBE_CONFIGS: describe_configs,
        INIT_PRODUCER_ID: init_producer_id,
    }


def _code(exc: KafkaRequestError) -> Code:
    try:
        return Code(exc.code)
    except ValueError:
        return Code.UNKNOWN_SERVER_ERROR


assert API_VERSIONS not in Handlers._methods
