"""Storage keys: exact layout, round trips, and key order == (topic, partition, offset) order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import ConfigError, InvalidTopic
from dafka.storage import keys
from tests.strategies import node_ids, offsets, topics

P = "0123456789ABCDEF0123456789ABCDEF"


def test_batch_key_layout_is_topic_nul_raw_partition_u64_be() -> None:
    key = keys.batch_key("hello", P, 0x0102)
    assert key == (
        b"hello\x00" + bytes.fromhex("0123456789abcdef0123456789abcdef") + b"\0" * 6 + b"\x01\x02"
    )
    assert len(key) == 5 + 1 + 16 + 8


def test_prefixes_nest() -> None:
    key = keys.batch_key("hello", P, 7)
    assert keys.topic_prefix("hello") == b"hello\x00"
    assert keys.partition_prefix("hello", P) == b"hello\x00" + bytes.fromhex(P)
    assert key.startswith(keys.partition_prefix("hello", P))
    assert key.startswith(keys.topic_prefix("hello"))


def test_topic_prefix_does_not_cover_longer_topics() -> None:
    assert not keys.batch_key("hello2", P, 0).startswith(keys.topic_prefix("hello"))


def test_decode_round_trip() -> None:
    key = keys.batch_key("naïve/tópic", P, 2**64 - 1)
    assert keys.decode_batch_key(key) == ("naïve/tópic", P, 2**64 - 1)
    assert keys.decode_partition_key(keys.partition_prefix("t", P)) == ("t", P)


@pytest.mark.parametrize(
    "key",
    [
        b"",
        b"\x00" + bytes(24),
        b"t\x00short",
        b"t\x00" + bytes(16) + b"\x01",
        b"\xff\x00" + bytes(24),
    ],
)
def test_decode_rejects_non_keys(key: bytes) -> None:
    with pytest.raises(ConfigError):
        keys.decode_batch_key(key)


@pytest.mark.parametrize("topic", ["", "a\x00b", "x" * 256])
def test_bad_topics_are_refused(topic: str) -> None:
    with pytest.raises(InvalidTopic):
        keys.batch_key(topic, P, 0)


@pytest.mark.parametrize("partition", [P.lower(), P[:-1], P + "0", "G" * 32, ""])
def test_only_canonical_node_ids_are_partitions(partition: str) -> None:
    with pytest.raises(ConfigError):
        keys.partition_prefix("t", partition)


@pytest.mark.parametrize("offset", [-1, 2**64])
def test_offsets_must_fit_u64(offset: int) -> None:
    with pytest.raises(ConfigError):
        keys.batch_key("t", P, offset)


@given(topics(), node_ids(), offsets())
def test_decode_inverts_encode(topic: str, partition: str, offset: int) -> None:
    assert keys.decode_batch_key(keys.batch_key(topic, partition, offset)) == (
        topic,
        partition,
        offset,
    )


_triples = st.tuples(topics(), node_ids(), offsets())


@given(_triples, _triples)
def test_key_order_is_topic_partition_offset_order(
    a: tuple[str, str, int], b: tuple[str, str, int]
) -> None:
    def natural(t: tuple[str, str, int]) -> tuple[bytes, bytes, int]:
        return (t[0].encode(), bytes.fromhex(t[1]), t[2])

    ka, kb = keys.batch_key(*a), keys.batch_key(*b)
    assert (ka < kb) == (natural(a) < natural(b))
    assert (ka == kb) == (natural(a) == natural(b))


@given(st.lists(_triples, min_size=2, max_size=30))
def test_sorting_keys_sorts_triples(triples: list[tuple[str, str, int]]) -> None:
    by_key = sorted(triples, key=lambda t: keys.batch_key(*t))
    by_value = sorted(triples, key=lambda t: (t[0].encode(), bytes.fromhex(t[1]), t[2]))
    assert by_key == by_value


@given(topics(), topics(), node_ids(), offsets())
def test_a_topic_prefix_matches_only_its_own_keys(
    t1: str, t2: str, partition: str, offset: int
) -> None:
    key = keys.batch_key(t2, partition, offset)
    assert key.startswith(keys.topic_prefix(t1)) == (t1 == t2)
