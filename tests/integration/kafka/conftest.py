"""The Kafka front door under real clients: what the tests run against.

One fixture, :func:`kafka`, decides it. By default a real cluster: a tower, a store and
``dafka-kafka`` listeners as separate processes on ephemeral ports. With
``DAFKA_KAFKA_TESTS=memory`` it is one ``dafka-kafka --memory`` listener (no cluster: the
tests that need Dafka itself, native records or a second listener, skip and say so).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dafka.metadata.signing import ADMIN_KEY_ENV
from tests.integration.kafka.listener import Listener as Started
from tests.integration.kafka.listener import start_listener
from tests.procs import Proc, StoreProc, Tower, py, wait_until

BACKEND = os.environ.get("DAFKA_KAFKA_TESTS", "cluster")


@dataclass
class KafkaFront:
    """Where Kafka clients connect (``bootstrap``), and the Dafka behind it (``towers``:
    None for the in-memory backend)."""

    towers: str | None
    state: Path
    listeners: list[Started] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return ",".join(x.address for x in self.listeners if x.proc.p.poll() is None)

    def add_listener(self) -> Started:
        if self.towers is None:
            pytest.skip("a second listener needs a real cluster (DAFKA_KAFKA_TESTS=memory)")
        x = start_listener(
            self.state / f"kafka-{len(self.listeners)}",
            "--tower",
            self.towers,
            "--admin-key",
            os.environ[ADMIN_KEY_ENV],  # the tests' admin key (tests/admin.py), for CreateTopics
            "--partition-secret",
            str(self.state / "kafka-partitions.secret"),  # shared, as the listeners' docs say
            "--lease-seconds",
            "4",  # a killed listener's partitions move within ~5 s, not ~12
        )
        self.listeners.append(x)
        return x

    def need_cluster(self) -> str:
        """The towers' address; skips the test under the in-memory backend."""
        if self.towers is None:
            pytest.skip("native Dafka records need a real cluster (DAFKA_KAFKA_TESTS=memory)")
        return self.towers


@pytest.fixture
def kafka(tmp_path: Path) -> Iterator[KafkaFront]:
    """The one fixture that decides what the Kafka tests run against."""
    tower: Tower | None = None
    store: StoreProc | None = None
    front: KafkaFront | None = None
    try:
        if BACKEND == "memory":
            front = KafkaFront(None, tmp_path, [start_listener(tmp_path / "kafka-0", "--memory")])
        else:
            tower = Tower()
            store = StoreProc(tmp_path / "store", tower.address)
            front = KafkaFront(tower.address, tmp_path)
            front.add_listener()
        yield front
    finally:
        for x in reversed(front.listeners if front is not None else []):
            x.proc.kill()
        if store is not None:
            store.kill()
        if tower is not None:
            tower.stop()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """``name`` with ``partitions`` numbered partitions, through Kafka's CreateTopics
    (confluent-kafka's AdminClient), waiting until Metadata shows all of them with a leader
    (a listener took each one's lease)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions)], request_timeout=15)
    futures[name].result(timeout=20)

    def shown() -> bool:
        md = admin.list_topics(name, timeout=5)
        t = md.topics.get(name)
        return (
            t is not None
            and t.error is None
            and len(t.partitions) >= partitions
            and all(p.leader >= 0 for p in t.partitions.values())  # leases taken
        )

    wait_until(shown, 20, interval=0.1, what=f"topic {name} with {partitions} partitions")


class Listener:
    """A ``dafka-kafka --memory`` listener on an ephemeral port (the listener's own tests)."""

    def __init__(self, *args: str) -> None:
        self.proc = Proc(py("dafka.cli.kafka", "--memory", "--port", "0", *args))
        m = self.proc.wait_line(r"% kafka listening on ([0-9.]+):(\d+)")
        self.host = m.group(1)
        self.port = int(m.group(2))
        self.bootstrap = f"{self.host}:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener("--log-level", "info")
    try:
        yield server
    finally:
        server.stop()
