"""Real Kafka clients against ``dafka-kafka --memory``: kcat, confluent-kafka, kafka-python
and aiokafka produce and consume a few thousand records with keys, headers, timestamps and
every codec, list metadata, and create and delete topics through the admin APIs."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest

from tests.integration.kafka.conftest import Listener

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # kafka-python, aiokafka
]

N = 3000
KCAT = "/usr/bin/kcat"
BASE_TS = 1_700_000_000_000


def kcat(
    *args: str, stdin: bytes | None = None, timeout: float = 15
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([KCAT, *args], input=stdin, capture_output=True, timeout=timeout)


def expected(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]], int]:
    return (
        f"k{i % 17}".encode(),
        f"value-{i}".encode() * 3,
        [("h", str(i).encode()), ("h", b"x")],
        BASE_TS + i,
    )


def test_kcat_lists_produces_and_consumes(listener: Listener) -> None:
    b = listener.bootstrap
    lines = b"".join(f"k{i}:v{i}\n".encode() for i in range(200))
    r = kcat(
        "-b", b, "-P", "-t", "kc", "-K:", "-H", "a=1", "-H", "b=2", "-z", "snappy", stdin=lines
    )
    assert r.returncode == 0, r.stderr.decode()
    meta = kcat("-b", b, "-L", "-t", "kc")
    assert b'topic "kc" with 1 partitions' in meta.stdout, meta.stdout
    assert f"broker 0 at {b}".encode() in meta.stdout
    out = kcat("-b", b, "-C", "-t", "kc", "-o", "beginning", "-e", "-f", "%k=%s|%o|%h\n")
    assert out.returncode == 0, out.stderr.decode()
    got = out.stdout.decode().splitlines()
    assert got[:2] == ["k0=v0|0|a=1,b=2", "k1=v1|1|a=1,b=2"]
    assert len(got) == 200
    tail = kcat("-b", b, "-C", "-t", "kc", "-o", "-5", "-e", "-f", "%s\n")
    assert tail.stdout.decode().split() == [f"v{i}" for i in range(195, 200)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka_idempotent_round_trip(listener: Listener, codec: str) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    topic = f"ck-{codec}"
    p = Producer(
        {
            "bootstrap.servers": listener.bootstrap,
            "enable.idempotence": True,
            "compression.type": codec,
            "linger.ms": 5,
        }
    )
    errors: list[object] = []
    for i in range(N):
        key, value, headers, ts = expected(i)
        p.produce(
            topic,
            value,
            key,
            timestamp=ts,
            headers=headers,
            on_delivery=lambda e, m: e and errors.append(e),
        )
    assert p.flush(20) == 0
    assert not errors
    c = Consumer(
        {"bootstrap.servers": listener.bootstrap, "group.id": "g", "enable.auto.commit": False}
    )
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < N and time.monotonic() < deadline:
        for m in c.consume(500, 1.0):
            assert m.error() is None, m.error()
            got.append(m)
    c.close()
    assert len(got) == N
    for i, m in enumerate(got):
        key, value, headers, ts = expected(i)
        assert (m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]) == (
            i,
            key,
            value,
            headers,
            ts,
        )


def test_kafka_python_round_trip_and_admin(listener: Listener) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=listener.bootstrap)
    admin.create_topics([NewTopic("kp", num_partitions=3, replication_factor=1)])
    assert "kp" in admin.list_topics()
    p = KafkaProducer(bootstrap_servers=listener.bootstrap, compression_type="gzip")
    for i in range(N):
        key, value, headers, ts = expected(i)
        p.send("kp", value, key, headers=headers, partition=i % 3, timestamp_ms=ts)
    p.flush(20)
    p.close()
    c = KafkaConsumer(bootstrap_servers=listener.bootstrap, enable_auto_commit=False)
    c.assign([TopicPartition("kp", n) for n in range(3)])
    c.seek_to_beginning()
    got = []
    deadline = time.monotonic() + 20
    while len(got) < N and time.monotonic() < deadline:
        for batch in c.poll(1000).values():
            got.extend(batch)
    c.close()
    assert len(got) == N
    values = sorted(int(m.value[6 : m.value.index(b"v", 1)]) for m in got)
    assert values == list(range(N))
    one = next(m for m in got if m.value.startswith(b"value-7v"))
    assert (one.key, list(one.headers), one.timestamp) == (
        b"k7",
        [("h", b"7"), ("h", b"x")],
        BASE_TS + 7,
    )
    admin.delete_topics(["kp"])
    deadline = time.monotonic() + 10
    while "kp" in admin.list_topics() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "kp" not in admin.list_topics()
    admin.close()


def test_aiokafka_round_trip(listener: Listener) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def run() -> list[object]:
        p = AIOKafkaProducer(
            bootstrap_servers=listener.bootstrap, compression_type="lz4", enable_idempotence=True
        )
        await p.start()
        try:
            for i in range(N):
                key, value, headers, ts = expected(i)
                await p.send("ak", value, key, headers=headers, timestamp_ms=ts)
            await p.flush()
        finally:
            await p.stop()
        c = AIOKafkaConsumer(
            bootstrap_servers=listener.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await c.start()
        got: list[object] = []
        try:
            c.assign([TopicPartition("ak", 0)])
            await c.seek_to_beginning()
            deadline = time.monotonic() + 20
            while len(got) < N and time.monotonic() < deadline:
                for batch in (await c.getmany(timeout_ms=1000)).values():
                    got.extend(batch)
        finally:
            await c.stop()
        return got

    got = asyncio.run(run())
    assert len(got) == N
    for i, m in enumerate(got):
        key, value, headers, ts = expected(i)
        assert (m.offset, m.key, m.value, list(m.headers), m.timestamp) == (
            i,
            key,
            value,
            headers,
            ts,
        )  # type: ignore[attr-defined]


def test_confluent_admin_creates_describes_and_deletes(listener: Listener) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    a = AdminClient({"bootstrap.servers": listener.bootstrap})
    futures = a.create_topics([NewTopic("adm", num_partitions=4, config={"retention.ms": "1000"})])
    futures["adm"].result(10)
    meta = a.list_topics(timeout=10)
    assert len(meta.topics["adm"].partitions) == 4
    again = a.create_topics([NewTopic("adm", num_partitions=4)])
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS|already exists"):
        again["adm"].result(10)
    configs = a.describe_configs([ConfigResource("topic", "adm")])
    described = next(iter(configs.values())).result(10)
    assert described["retention.ms"].value == "1000"
    a.delete_topics(["adm"])["adm"].result(10)
    assert "adm" not in a.list_topics(timeout=10).topics
