"""The pure parts of the Kafka backend: partition keys and directories, the partition
secret, Kafka topic configs, watermarks and the records a produce may carry."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from blake3 import blake3

from dafka.errors import ConfigError, KafkaRequestError
from dafka.kafka import writers
from dafka.kafka.model import Code, KafkaRecord
from dafka.kafka.partition_keys import (
    install_key,
    load_or_create_secret,
    partition_dir,
    partition_identity,
    partition_seed,
)
from dafka.kafka.reads import Holding, watermarks
from dafka.kafka.topic_configs import MAX_CONFIGS, to_kafka, to_settings
from dafka.metadata.settings import TOPIC_DEFAULTS
from dafka.security.identity import Identity, node_id_for


def test_a_partition_seed_is_keyed_blake3_of_topic_and_index() -> None:
    secret = bytes(32)
    assert (
        partition_seed(secret, "t", 0).hex()
        == "5c5bd8a1bd9d11a4a903c1bff528411a44450121d711ae2bf5c6d2856cb25991"
    )
    data = b"dafka-kafka partition v1\0orders\0\x00\x00\x00\x05"
    assert (
        partition_seed(bytes(range(32)), "orders", 5) == blake3(data, key=bytes(range(32))).digest()
    )
    ident = partition_identity(bytes(range(32)), "orders", 5)
    assert ident.node_id == "428A919482E6832BA085D1D051536CCA"
    assert ident.node_id == node_id_for(ident.public_key)
    others = {
        partition_identity(bytes(range(32)), t, i).node_id
        for t in ("orders", "orders2")
        for i in range(3)
    }
    assert len(others) == 6
    assert partition_identity(bytes(32), "orders", 5).node_id != ident.node_id
    with pytest.raises(ValueError):
        partition_seed(bytes(31), "t", 0)
    with pytest.raises(ValueError):
        partition_seed(bytes(32), "t", -1)


@pytest.mark.parametrize(
    "topic",
    ["../../etc", "/abs/olute", "..", "a/b/../../..", "é\u2028x"],
    ids=["up-up", "absolute", "dotdot", "down-up", "unicode"],
)
def test_a_hostile_topic_name_never_names_a_directory_outside_the_state(
    tmp_path: Path, topic: str
) -> None:
    where = partition_dir(tmp_path, topic, 3)
    root = (tmp_path / "partitions").resolve()
    assert where.resolve().parent.parent == root
    assert where.name == "3"
    assert partition_dir(tmp_path, topic + "x", 3) != where


def test_the_key_is_installed_once_and_checked(tmp_path: Path) -> None:
    ident = partition_identity(bytes(32), "t", 0)
    install_key(tmp_path / "p", ident)
    install_key(tmp_path / "p", ident)  # the same key: fine
    assert (tmp_path / "p" / "node.key").stat().st_mode & 0o777 == 0o600
    with pytest.raises(ConfigError, match="secret changed"):
        install_key(tmp_path / "p", Identity.generate())


def test_the_secret_is_made_private_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "state" / "secret"
    made = load_or_create_secret(path)
    assert len(made) == 32 and path.stat().st_mode & 0o777 == 0o600
    assert load_or_create_secret(path) == made


def test_a_secret_others_may_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(os.urandom(32))
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_or_create_secret(path)


def test_a_secret_of_the_wrong_length_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"short")
    os.chmod(path, 0o600)
    with pytest.raises(ConfigError, match="exactly 32"):
        load_or_create_secret(path)


def test_kafka_configs_map_to_settings_and_back() -> None:
    settings = to_settings(
        {
            "retention.ms": "-1",
            "retention.bytes": "1000",
            "cleanup.policy": "compact",
            "compression.type": "zstd",
            "min.insync.replicas": "2",
            "max.message.bytes": "4096",
            "delete.retention.ms": "5",
            "ignored": None,
        }
    )
    assert settings == {
        "retention_ms": None,
        "retention_bytes": 1000,
        "cleanup_policy": "compact",
        "compression": "zstd",
        "min_acks": 2,
        "max_record_bytes": 4096,
        "delete_retention_ms": 5,
    }
    back = to_kafka({**TOPIC_DEFAULTS, **settings})
    assert back["retention.ms"] == "-1"
    assert back["retention.bytes"] == "1000"
    assert back["cleanup.policy"] == "compact"
    assert back["compression.type"] == "zstd"
    assert back["min.insync.replicas"] == "2"
    assert back["max.message.bytes"] == "4096"
    assert back["profile"] == "signed"
    assert to_kafka(TOPIC_DEFAULTS)["compression.type"] == "producer"
    assert to_settings({"compression.type": "producer"}) == {"compression": None}


@pytest.mark.parametrize(
    "configs",
    [
        {"segment.bytes": "1"},
        {"compression.type": "gzip"},
        {"compression.type": "snappy"},
        {"retention.ms": "soon"},
        {"min.insync.replicas": "99"},
        {"cleanup.policy": "everything"},
        {f"c{i}": "1" for i in range(MAX_CONFIGS + 1)},
    ],
)
def test_configs_dafka_cannot_keep_are_invalid(configs: dict) -> None:
    with pytest.raises(KafkaRequestError) as refused:
        to_settings(configs)
    assert refused.value.code == Code.INVALID_CONFIG


def test_too_many_configs_are_refused_before_any_is_read() -> None:
    configs = {"retention.ms": "1"} | {f"retention.ms{i}": None for i in range(MAX_CONFIGS)}
    with pytest.raises(KafkaRequestError, match="at most"):
        to_settings(configs)


def test_watermarks_count_min_acks_copies() -> None:
    hs = [Holding("A", "a", 0, 9), Holding("B", "b", 3, 5), Holding("C", "c", 2, 7)]
    assert watermarks(hs, 1) == (10, 0)
    assert watermarks(hs, 2) == (8, 0)
    assert watermarks(hs, 3) == (6, 0)
    assert watermarks(hs, 5) == (6, 0)  # fewer answered: all of them
    assert watermarks([], 1) == (0, 0)


def test_a_null_value_without_a_key_is_refused_in_kafka_terms() -> None:
    with pytest.raises(KafkaRequestError, match="null value and no key") as refused:
        writers.check_records([KafkaRecord(0, 0, None, None)])
    assert refused.value.code == Code.INVALID_RECORD
    writers.check_records([KafkaRecord(0, 0, b"k", None)])  # a tombstone


def test_a_produce_over_the_records_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writers, "MAX_RECORDS", 3)
    with pytest.raises(KafkaRequestError) as refused:
        writers.check_records([KafkaRecord(0, 0, None, b"v")] * 4)
    assert refused.value.code == Code.RECORD_LIST_TOO_LARGE
    with pytest.raises(KafkaRequestError) as empty:
        writers.check_records([])
    assert empty.value.code == Code.INVALID_REQUEST
