"""The Kafka listener keeps each tower's key (issue 38's deploy guide, its Kafka section):
``str(TowerAddress)`` drops it, and a listener that located stores through towers named
without their keys spoke NULL to a CURVE cluster's towers and never found a store."""

from __future__ import annotations

from pathlib import Path

from dafka.config import parse_towers
from dafka.kafka.dafka_backend import DafkaBackend
from dafka.kafka.model import Broker
from dafka.security.identity import Identity


def test_the_listener_names_its_towers_with_their_keys(tmp_path: Path) -> None:
    keys = [Identity.generate().public_key.hex() for _ in range(2)]
    towers = f"127.0.0.1:5556@{keys[0]},127.0.0.2:5556@{keys[1]}"
    backend = DafkaBackend(
        towers=towers, me=Broker(1, "127.0.0.1", 9092), state_dir=tmp_path, metadata=False
    )
    try:
        assert parse_towers(backend._towers) == parse_towers(towers)
        assert all(t.key is not None for t in parse_towers(backend._towers))
    finally:
        backend.close()
