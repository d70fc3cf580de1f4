"""What a Kafka client controls, sent to the backend over a real tower and store: header
keys Dafka cannot carry, fetch sizes and waits at their int32 extremes, offsets below the
log start, partition indexes and topic names Dafka refuses. Each is answered with the
Kafka error a client understands, and nothing of it is written."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from dafka.errors import KafkaRequestError
from dafka.kafka.dafka_backend import DafkaBackend
from dafka.kafka.model import Broker, Code, KafkaRecord
from tests.admin import ADMIN
from tests.procs import StoreProc, Tower

pytestmark = pytest.mark.integration

DEADLINE = 20.0


@pytest.fixture(scope="module")
def listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DafkaBackend]:
    """One tower, store and listener for the module: every test leaves them as it found
    them but for records it wrote, and asks where the partition ends first."""
    tmp = tmp_path_factory.mktemp("kafka-attacks")
    tower = Tower()
    store = StoreProc(tmp / "store", tower.address)
    b = DafkaBackend(
        towers=tower.address,
        me=Broker(1, "127.0.0.1", 9092),
        state_dir=tmp / "listener",
        partitions={"kt": 1, "big": 1},
        admin_key=ADMIN,
        max_fetch_bytes=4096,
        max_wait=0.3,
        poll_interval=0.05,
    )
    try:
        yield b
    finally:
        b.close()
        store.kill()
        tower.stop()


def code_of(call, *args) -> int:
    with pytest.raises(KafkaRequestError) as refused:
        call(*args)
    return refused.value.code


@pytest.mark.parametrize(
    "headers",
    [
        (("k" * 2000, b"v"),),  # over MAX_HEADER_KEY_BYTES
        (("\udc80", b"v"),),  # not UTF-8: a lone surrogate
        tuple((f"h{i}", None) for i in range(300)),  # over MAX_HEADERS
    ],
    ids=["long-key", "surrogate", "too-many"],
)
def test_headers_dafka_cannot_carry_are_invalid_records(
    listener: DafkaBackend, headers: tuple
) -> None:
    bad = [KafkaRecord(0, 1, b"k", b"ok"), KafkaRecord(0, 1, b"k", b"v", headers)]
    end = listener.produce("kt", 0, bad[:1], DEADLINE) + 1
    assert code_of(listener.produce, "kt", 0, bad, DEADLINE) == Code.INVALID_RECORD
    # nothing of the refused request was written: the next record follows the last one
    assert listener.produce("kt", 0, bad[:1], DEADLINE) == end


def test_a_fetch_of_two_gib_answers_within_the_listeners_bound(listener: DafkaBackend) -> None:
    for i in range(3):  # three batches of about 3 KiB
        assert listener.produce("big", 0, [KafkaRecord(0, 1, None, bytes(3000))], DEADLINE) == i
    got = listener.fetch("big", 0, 0, 2**31 - 1, 0.0)
    assert got.high_watermark == 3
    assert [r.offset for r in got.records] == [0]  # one batch: the next would pass 4 KiB
    assert [r.offset for r in listener.fetch("big", 0, 0, -5, 0.0).records] == [0]


def test_a_fetch_waiting_for_ever_is_cut_to_the_listeners_longest_wait(
    listener: DafkaBackend,
) -> None:
    answers: list[object] = []
    end = listener.list_offset("kt", 0, -1)[0]
    t = threading.Thread(
        target=lambda: answers.append(listener.fetch("kt", 0, end, 1 << 20, 2.0**31)),
        daemon=True,
    )
    start = time.monotonic()
    t.start()
    t.join(timeout=10)
    assert answers and answers[0].records == ()  # type: ignore[attr-defined]
    assert time.monotonic() - start < 8


@pytest.mark.parametrize(
    "offset",
    [-1, -(2**63), None, 2**63 - 1],
    ids=["minus-one", "int64-min", "past-end", "int64-max"],
)
def test_offsets_outside_the_log_are_out_of_range(
    listener: DafkaBackend, offset: int | None
) -> None:
    end = listener.produce("kt", 0, [KafkaRecord(0, 1, None, b"v")], DEADLINE) + 1
    if offset is None:
        offset = end + 5
    assert code_of(listener.fetch, "kt", 0, offset, 1024, 0.0) == Code.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize("index", [-1, 1, 2**31 - 1], ids=["minus-one", "one-past", "int32-max"])
def test_partitions_a_topic_does_not_have_are_unknown(listener: DafkaBackend, index: int) -> None:
    record = [KafkaRecord(0, 1, None, b"v")]
    assert code_of(listener.produce, "kt", index, record, 1.0) == Code.UNKNOWN_TOPIC_OR_PARTITION
    assert code_of(listener.fetch, "kt", index, 0, 1024, 0.0) == Code.UNKNOWN_TOPIC_OR_PARTITION
    assert code_of(listener.list_offset, "kt", index, -1) == Code.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("topic", ["a\0b", "x" * 300, "\udc80"], ids=["nul", "long", "surrogate"])
def test_topic_names_dafka_refuses_are_unknown_topics(listener: DafkaBackend, topic: str) -> None:
    record = [KafkaRecord(0, 1, None, b"v")]
    assert code_of(listener.fetch, topic, 0, 0, 1024, 0.0) == Code.UNKNOWN_TOPIC_OR_PARTITION
    assert code_of(listener.produce, topic, 0, record, 1.0) == Code.UNKNOWN_TOPIC_OR_PARTITION
    assert listener.topics([topic]) == []


@pytest.mark.parametrize(
    "topic",
    ["bad\nname", "tab\there", "__group.mine", "a\0b", "x" * 300],
    ids=["newline", "tab", "group", "nul", "long"],
)
def test_topics_dafka_refuses_are_not_created(listener: DafkaBackend, topic: str) -> None:
    assert code_of(listener.create_topic, topic, 1, {}, False) == Code.INVALID_TOPIC_EXCEPTION
    assert code_of(listener.describe_configs, topic) == Code.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("count", [0, -7, 10**9])
def test_partition_counts_out_of_bounds_are_refused(listener: DafkaBackend, count: int) -> None:
    assert code_of(listener.create_topic, "counted", count, {}, False) == Code.INVALID_PARTITIONS


def test_a_groups_commit_topic_is_not_deleted_through_kafka(listener: DafkaBackend) -> None:
    """DeleteTopics from an anonymous Kafka client, on a listener that holds the admin key,
    never erases a group's committed offsets (``__group.NAME``), as CreateTopics never
    makes one."""
    from dafka.metadata.client import MetadataClient

    client = MetadataClient(listener._towers, admin=ADMIN)
    try:
        if "__group.victim" not in client.config()["topics"]:
            client.create_topic("__group.victim", {})
        assert code_of(listener.delete_topic, "__group.victim") == Code.TOPIC_AUTHORIZATION_FAILED
        assert "__group.victim" in client.config()["topics"]
    finally:
        client.close()
