"""A listener SIGKILLed under load while a second one runs: the partitions it led move to
the other (their lease), the clients follow the new leader, and nothing acknowledged is
lost."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.integration.kafka import clients as kc
from tests.integration.kafka.conftest import KafkaFront, create_topic
from tests.procs import Proc, py, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(90),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # kafka-python, aiokafka
]

PARTITIONS = 4


def test_listener_killed_under_load_clients_follow_nothing_acked_lost(kafka: KafkaFront) -> None:
    import confluent_kafka
    from confluent_kafka import TopicPartition

    kafka.need_cluster()
    second = kafka.add_listener()  # leases of 4 s (the fixture's): a takeover within ~5 s
    first = kafka.listeners[0]
    create_topic(kafka.bootstrap, "failover", PARTITIONS)
    acked: dict[int, int] = {}  # record index -> partition
    failed: list[str] = []

    def done(err: object, msg: confluent_kafka.Message) -> None:
        if err is None:
            acked[kc.index_of(msg.key())] = msg.partition()
        elif len(failed) < 20:
            failed.append(str(err))

    p = confluent_kafka.Producer(
        {"bootstrap.servers": kafka.bootstrap, "acks": "all", "linger.ms": 5,
         "message.timeout.ms": 30000, "topic.metadata.refresh.interval.ms": 1000}
    )  # fmt: skip
    i = 0

    def send_for(seconds: float) -> None:
        nonlocal i
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                p.produce(
                    "failover",
                    kc.value_of(i),
                    kc.key_of(i),
                    headers=kc.headers_of(i),
                    on_delivery=done,
                )
                i += 1
            except BufferError:
                pass
            p.poll(0.001)

    def every_partition_acks() -> bool:
        send_for(0.2)
        return set(acked.values()) == set(range(PARTITIONS))

    # the listeners take the new topic's partition leases, then clients learn the leaders
    wait_until(every_partition_acks, 30, interval=0, what="acks from every partition")
    killed_at = i
    first.proc.p.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    send_for(3)

    def all_partitions_move_on() -> bool:
        send_for(0.2)
        return {acked.get(j) for j in range(killed_at, i)} >= set(range(PARTITIONS))

    wait_until(
        all_partitions_move_on, 40, interval=0, what="acks from every partition after the kill"
    )
    assert p.flush(40) == 0
    assert not failed or all("timed out" in f.lower() for f in failed), failed
    # read back through the survivor alone: every acknowledged record is there
    c = confluent_kafka.Consumer(
        {"bootstrap.servers": second.address, "group.id": "fo-check", "enable.auto.commit": False}
    )
    try:
        c.assign([TopicPartition("failover", q, 0) for q in range(PARTITIONS)])
        seen: set[int] = set()
        deadline = time.monotonic() + 30
        while not set(acked) <= seen and time.monotonic() < deadline:
            for m in c.consume(5000, 0.2):
                if m.error() is None:
                    assert m.value() == kc.value_of(kc.index_of(m.key()))
                    seen.add(kc.index_of(m.key()))
        lost = sorted(set(acked) - seen)
        assert not lost, f"{len(lost)} acknowledged records lost, first {lost[:5]}"
    finally:
        c.close()


def test_a_listener_with_another_partition_secret_refuses_to_start(
    kafka: KafkaFront, tmp_path: Path
) -> None:
    """Its partition keys would not be the cluster's: one line, a non-zero exit, no lease."""
    import os

    from dafka.metadata.signing import ADMIN_KEY_ENV

    towers = kafka.need_cluster()
    other = Proc(
        py(
            "dafka.cli.kafka", "--tower", towers, "--admin-key", os.environ[ADMIN_KEY_ENV],
            "--port", "0", "--state-dir", str(tmp_path / "stray"),
            "--partition-secret", str(tmp_path / "another.secret"),
        )
    )  # fmt: skip
    assert other.wait(30) != 0
    assert "is not the cluster's" in other.stderr and "--partition-secret" in other.stderr
