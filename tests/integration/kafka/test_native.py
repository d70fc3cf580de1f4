"""Native records read by Kafka clients and Kafka clients' records read natively, byte for
byte: keys, values, headers (order and repeats kept, a null value) and timestamps."""

from __future__ import annotations

import pytest

from dafka import Consumer, Producer
from tests.integration.kafka.conftest import KafkaFront, create_topic
from tests.procs import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # kafka-python, aiokafka
]

T0 = 1_700_000_000_123  # ms: a time no batch is sealed at, so it is the record's own


def sample(n: int) -> list[tuple[bytes, bytes | None, list[tuple[str, bytes | None]], int]]:
    """(key, value, headers, timestamp ms): binary bytes, an empty value, a tombstone,
    repeated and null header values."""
    out: list[tuple[bytes, bytes | None, list[tuple[str, bytes | None]], int]] = []
    for i in range(n):
        value: bytes | None = bytes(range(256))[i % 256 :] + b"%d" % i
        if i % 7 == 3:
            value = b""
        if i % 11 == 5:
            value = None
        headers = [("h", b"\x00\xff%d" % i), ("h", b"again"), ("null", None)][: 1 + i % 3]
        out.append((b"key-\x00%d" % i, value, headers, T0 + i * 10))
    return out


def test_native_records_read_by_a_kafka_consumer(kafka: KafkaFront) -> None:
    from confluent_kafka import TIMESTAMP_CREATE_TIME, TopicPartition
    from confluent_kafka import Consumer as KConsumer

    towers = kafka.need_cluster()
    want = sample(50)
    with Producer("native-out", towers=towers) as p:
        p.send_many(
            [v for _, v, _, _ in want],
            [k for k, _, _, _ in want],
            headers=[h for _, _, h, _ in want],
            timestamps=[t for _, _, _, t in want],
        )
        p.flush(30)
    c = KConsumer(
        {"bootstrap.servers": kafka.bootstrap, "group.id": "nat-read", "enable.auto.commit": False}
    )
    try:

        def numbered() -> list[int]:
            t = c.list_topics("native-out", timeout=5).topics.get("native-out")
            return [] if t is None or t.error is not None else sorted(t.partitions)

        [index] = wait_until(numbered, 20, what="the native partition numbered for Kafka")
        c.assign([TopicPartition("native-out", index, 0)])
        got = []
        deadline_polls = 100
        while len(got) < len(want) and deadline_polls:
            deadline_polls -= 1
            for m in c.consume(100, 0.2):
                assert m.error() is None, m.error()
                got.append(m)
        assert [m.offset() for m in got] == list(range(len(want)))
        for m, (k, v, h, ts) in zip(got, want, strict=True):
            assert (m.key(), m.value(), m.headers() or []) == (k, v, h)
            assert m.timestamp() == (TIMESTAMP_CREATE_TIME, ts)
    finally:
        c.close()


def test_native_partitions_are_read_only_to_kafka_producers(kafka: KafkaFront) -> None:
    import confluent_kafka

    towers = kafka.need_cluster()
    with Producer("native-ro", towers=towers) as p:
        p.send(b"x", b"k")
        p.flush(30)
    errors: list[object] = []
    kp = confluent_kafka.Producer(
        {"bootstrap.servers": kafka.bootstrap, "message.timeout.ms": 5000}
    )
    kp.produce("native-ro", b"y", b"k", partition=0, on_delivery=lambda e, _m: errors.append(e))
    kp.flush(10)
    assert errors and errors[0] is not None, "a Kafka client wrote a natively written partition"


def test_kafka_records_read_by_a_native_consumer(kafka: KafkaFront) -> None:
    import confluent_kafka

    towers = kafka.need_cluster()
    create_topic(kafka.bootstrap, "kafka-in", 1)
    want = sample(50)
    acked: list[object] = []
    kp = confluent_kafka.Producer(
        {"bootstrap.servers": kafka.bootstrap, "acks": "all", "linger.ms": 5}
    )
    for k, v, h, ts in want:
        kp.produce(
            "kafka-in",
            v,
            k,
            partition=0,
            headers=h,
            timestamp=ts,
            on_delivery=lambda e, _m: acked.append(e),
        )
    assert kp.flush(20) == 0
    assert acked == [None] * len(want)
    with Consumer("kafka-in", towers=towers, offset_reset="earliest") as c:
        got = []
        for _ in range(100):
            got.extend(c.poll_batch(1000, timeout=0.2))
            if len(got) >= len(want):
                break
    assert [r.offset for r in got] == list(range(len(want)))
    for r, (k, v, h, ts) in zip(got, want, strict=True):
        assert (r.key, r.value, list(r.headers)) == (k, v, h)
        assert r.timestamp is not None and round(r.timestamp * 1000) == ts
