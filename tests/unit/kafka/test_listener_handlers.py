"""The request handlers (dafka.kafka.handlers) over the in-memory backend, with kio requests."""

from __future__ import annotations

import struct
from typing import Any

from crc32c import crc32c
from kio.schema.errors import ErrorCode

from dafka.kafka.batches import encode_batch
from dafka.kafka.frames import Request
from dafka.kafka.handlers import Handlers, Limits, ProducerIds, Sequences
from dafka.kafka.memory_backend import MemoryBackend
from dafka.kafka.model import Broker, KafkaRecord, PartitionInfo, TopicInfo
from dafka.kafka.server import RateLog, ServerLimits, admit, must_wait_for_reader
from tests.kafka_wire import build, ms

BROKER = Broker(1, "127.0.0.1", 9092)


def req(api_key: int, version: int, **values: Any) -> Request:
    return Request(api_key, version, 1, "t", build(api_key, version, **values), 100)


def handlers(limits: Limits = Limits()) -> tuple[Handlers, MemoryBackend]:
    backend = MemoryBackend(BROKER, auto_create_partitions=2, clock=lambda: 1000.0)
    return Handlers(backend, limits, clock=lambda: 1000.0), backend


def idempotent_batch(values: list[bytes], pid: int, epoch: int, seq: int) -> bytes:
    raw = bytearray(
        encode_batch([KafkaRecord(i, 5_000 + i, None, v) for i, v in enumerate(values)])
    )
    struct.pack_into(">qhi", raw, 43, pid, epoch, seq)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def produce(h: Handlers, topic: str, data: bytes, acks: int = -1, partition: int = 0) -> Any:
    from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData

    topics = (
        TopicProduceData(
            name=topic, partition_data=(PartitionProduceData(index=partition, records=data),)
        ),
    )
    return h.handle(req(0, 9, acks=acks, timeout=ms(1000), topic_data=topics))


def answer(resp: Any) -> tuple[ErrorCode, int]:
    part = resp.responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def test_metadata_auto_creates_and_names_leaders() -> None:
    h, backend = handlers()
    from kio.schema.metadata.v12.request import MetadataRequestTopic

    r = h.handle(
        req(
            3,
            12,
            topics=(MetadataRequestTopic(name="a", topic_id=None),),
            allow_auto_topic_creation=True,
        )
    )
    assert [b.node_id for b in r.brokers] == [1] and r.controller_id == 1
    (topic,) = r.topics
    assert topic.error_code == ErrorCode.none and [p.leader_id for p in topic.partitions] == [1, 1]
    r = h.handle(
        req(
            3,
            12,
            topics=(MetadataRequestTopic(name="b", topic_id=None),),
            allow_auto_topic_creation=False,
        )
    )
    assert r.topics[0].error_code == ErrorCode.unknown_topic_or_partition


def test_metadata_says_leader_not_available_for_a_partition_nobody_leads() -> None:
    h, backend = handlers()
    backend.topics = lambda names: (TopicInfo("x", (PartitionInfo(0, "ab" * 16, None, True),)),)  # type: ignore[method-assign]
    r = h.handle(req(3, 1, topics=None))
    part = r.topics[0].partitions[0]
    assert (part.error_code, part.leader_id) == (ErrorCode.leader_not_available, -1)


def test_a_retried_idempotent_batch_gets_its_first_offset_and_is_not_written_twice() -> None:
    h, backend = handlers()
    backend.create_topic("t", 1, {}, False)
    first = idempotent_batch([b"a", b"b"], pid=77, epoch=0, seq=0)
    second = idempotent_batch([b"c"], pid=77, epoch=0, seq=2)
    assert answer(produce(h, "t", first)) == (ErrorCode.none, 0)
    assert answer(produce(h, "t", second)) == (ErrorCode.none, 2)
    assert answer(produce(h, "t", first)) == (ErrorCode.none, 0)  # the retry
    assert backend.list_offset("t", 0, -1) == (3, -1)
    assert answer(produce(h, "t", idempotent_batch([b"d"], pid=78, epoch=0, seq=0))) == (
        ErrorCode.none,
        3,
    )


def test_acks_zero_gets_no_response_and_bad_acks_an_error() -> None:
    h, backend = handlers()
    backend.create_topic("t", 1, {}, False)
    data = encode_batch([KafkaRecord(0, 1, b"k", b"v")])
    assert produce(h, "t", data, acks=0) is None
    assert answer(produce(h, "t", data, acks=3))[0] == ErrorCode.invalid_required_acks
    assert answer(produce(h, "nope", data))[0] == ErrorCode.unknown_topic_or_partition
    assert answer(produce(h, "t", b"garbage" * 20))[0] == ErrorCode.corrupt_message


def test_fetch_answers_records_and_out_of_range() -> None:
    from kio.schema.fetch.v12.request import FetchPartition, FetchTopic

    h, backend = handlers()
    backend.create_topic("t", 1, {}, False)
    produce(h, "t", encode_batch([KafkaRecord(i, 1, b"k", b"v%d" % i) for i in range(10)]))

    def fetch(offset: int) -> Any:
        part = FetchPartition(
            partition=0,
            current_leader_epoch=-1,
            fetch_offset=offset,
            last_fetched_epoch=-1,
            log_start_offset=-1,
            partition_max_bytes=1 << 20,
        )
        r = h.handle(
            req(
                1,
                12,
                max_wait=ms(0),
                min_bytes=1,
                max_bytes=1 << 20,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=(FetchTopic(topic="t", partitions=(part,)),),
                forgotten_topics_data=(),
                rack_id="",
            )
        )
        return r.responses[0].partitions[0]

    p = fetch(4)
    assert p.error_code == ErrorCode.none and p.high_watermark == 10 and p.records
    assert fetch(11).error_code == ErrorCode.offset_out_of_range
    assert fetch(10).records == b""


def test_list_offsets_create_delete_describe_and_producer_ids() -> None:
    from kio.schema.create_topics.v5.request import CreatableTopic, CreatableTopicConfig
    from kio.schema.describe_configs.v4.request import DescribeConfigsResource

    h, backend = handlers()
    topic = CreatableTopic(
        name="n",
        num_partitions=3,
        replication_factor=-1,
        assignments=(),
        configs=(CreatableTopicConfig(name="retention.ms", value="5"),),
    )
    r = h.handle(req(19, 5, topics=(topic,), timeout=ms(1000), validate_only=False))
    assert r.topics[0].error_code == ErrorCode.none and r.topics[0].num_partitions == 3
    r = h.handle(req(19, 5, topics=(topic,), timeout=ms(1000), validate_only=False))
    assert r.topics[0].error_code == ErrorCode.topic_already_exists
    r = h.handle(
        req(
            32,
            4,
            resources=(
                DescribeConfigsResource(
                    resource_type=2, resource_name="n", configuration_keys=None
                ),
            ),
            include_synonyms=False,
            include_documentation=False,
        )
    )
    assert {c.name: c.value for c in r.results[0].configs}["retention.ms"] == "5"
    r = h.handle(req(20, 4, topic_names=("n", "n2"), timeout=ms(1000)))
    assert [x.error_code for x in r.responses] == [
        ErrorCode.none,
        ErrorCode.unknown_topic_or_partition,
    ]
    a = h.handle(
        req(
            22,
            4,
            transactional_id=None,
            transaction_timeout=ms(1000),
            producer_id=-1,
            producer_epoch=-1,
        )
    )
    b = h.handle(
        req(
            22,
            4,
            transactional_id=None,
            transaction_timeout=ms(1000),
            producer_id=-1,
            producer_epoch=-1,
        )
    )
    assert b.producer_id > a.producer_id > 0 and a.producer_epoch == 0
    bump = h.handle(
        req(
            22,
            4,
            transactional_id=None,
            transaction_timeout=ms(1000),
            producer_id=a.producer_id,
            producer_epoch=0,
        )
    )
    assert (bump.producer_id, bump.producer_epoch) == (a.producer_id, 1)


def test_producer_ids_are_seeded_by_the_clock_so_a_restart_does_not_reuse_them() -> None:
    before = ProducerIds(lambda: 1000.0)
    taken = [before.take() for _ in range(100)]
    after = ProducerIds(lambda: 1001.0)
    assert after.take() > max(taken)


def test_a_request_naming_too_many_partitions_is_refused_before_the_backend() -> None:
    from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic

    h, backend = handlers(Limits(max_partitions=100))
    calls: list[object] = []
    backend.list_offset = lambda *a: calls.append(a) or (0, 0)  # type: ignore[method-assign,func-returns-value]
    parts = tuple(
        ListOffsetsPartition(partition_index=i, current_leader_epoch=-1, timestamp=-1)
        for i in range(200)
    )
    r = h.handle(
        req(
            2,
            7,
            replica_id=-1,
            isolation_level=0,
            topics=(ListOffsetsTopic(name="t", partitions=parts),),
        )
    )
    assert calls == []
    assert r.topics == ()  # INVALID_REQUEST has no top-level field here: an empty answer
    few = tuple(
        ListOffsetsPartition(partition_index=i, current_leader_epoch=-1, timestamp=-1)
        for i in range(50)
    )
    r = h.handle(
        req(
            2,
            7,
            replica_id=-1,
            isolation_level=0,
            topics=(ListOffsetsTopic(name="t", partitions=few),),
        )
    )
    assert len(calls) == 50


def test_the_sequence_memory_is_bounded() -> None:
    s = Sequences(max_keys=10)
    for pid in range(1000):
        s.add(pid, "t", 0, 0, 0, 1, pid)
    assert len(s) == 10
    assert s.find(999, "t", 0, 0, 0, 1) == 999 and s.find(0, "t", 0, 0, 0, 1) is None


def test_server_decisions() -> None:
    limits = ServerLimits(max_connections=2, max_unsent_bytes=100)
    assert admit(1, limits) and not admit(2, limits)
    per_host = ServerLimits(max_connections=10, max_connections_per_host=2)
    assert admit(5, per_host, 1) and not admit(5, per_host, 2)
    assert not must_wait_for_reader(100, limits) and must_wait_for_reader(101, limits)
    rl = RateLog(10.0)
    assert rl.allow(0.0) and not rl.allow(5.0) and not rl.allow(9.0) and rl.allow(10.0)
    assert rl.take_skipped() == 2
