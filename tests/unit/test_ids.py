"""Node ids and topic names (dafka.ids)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import ConfigError, InvalidTopic
from dafka.ids import MAX_TOPIC_BYTES, check_topic, is_node_id, new_node_id
from tests.strategies import node_ids, topics

# ------------------------------------------------------------------------- topics


@pytest.mark.parametrize(
    ("topic", "problem"),
    [
        ("", "empty"),
        ("a\0b", "NUL"),
        ("\0", "NUL"),
        ("x" * 256, "256 bytes.*255"),
        ("é" * 128, "256 bytes.*255"),  # 128 characters, 256 UTF-8 bytes
        ("日" * 86, "258 bytes.*255"),
        ("bad\ud800", "UTF-8"),  # lone surrogate
    ],
    ids=lambda v: repr(v)[:20],
)
def test_check_topic_rejects_and_names_the_problem(topic: str, problem: str) -> None:
    with pytest.raises(InvalidTopic, match=problem):
        check_topic(topic)


@pytest.mark.parametrize("topic", [b"hello", None, 42], ids=repr)
def test_check_topic_rejects_non_strings(topic: object) -> None:
    with pytest.raises(InvalidTopic, match="string"):
        check_topic(topic)  # type: ignore[arg-type]


def test_invalid_topic_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        check_topic("")
    with pytest.raises(ValueError):
        check_topic("")


@pytest.mark.parametrize(
    "topic",
    [
        "hello",
        "h",
        "x" * 255,
        "é" * 127 + "x",  # 255 bytes, non-ASCII
        "日本語のトピック",
        "emoji-🚀",
        "with space/and.dots-_",
        "\x01\x7f",
    ],
    ids=lambda v: repr(v)[:20],
)
def test_check_topic_accepts(topic: str) -> None:
    assert check_topic(topic) is topic


def test_limit_is_255_bytes() -> None:
    assert MAX_TOPIC_BYTES == 255


@given(topics())
def test_check_topic_accepts_every_generated_topic(topic: str) -> None:
    assert check_topic(topic) == topic


@given(st.text(max_size=300))
def test_check_topic_agrees_with_the_rules(topic: str) -> None:
    raw = topic.encode("utf-8", "surrogatepass")
    valid = (
        0 < len(raw) <= 255
        and "\0" not in topic
        and not any(0xD800 <= ord(c) <= 0xDFFF for c in topic)
    )
    if valid:
        assert check_topic(topic) == topic
    else:
        with pytest.raises(InvalidTopic):
            check_topic(topic)


# ----------------------------------------------------------------------- node ids


def test_new_node_id_format() -> None:
    node_id = new_node_id()
    assert len(node_id) == 32
    assert node_id == node_id.upper()
    assert set(node_id) <= set("0123456789ABCDEF")
    assert is_node_id(node_id)


def test_new_node_ids_are_unique() -> None:
    assert len({new_node_id() for _ in range(1000)}) == 1000


@given(node_ids())
def test_is_node_id_accepts_generated(node_id: str) -> None:
    assert is_node_id(node_id)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "3f2504e04f8911d39a0c0305e82c3301",
        "3F2504E04F8911D39A0C0305E82C330",
        "3F2504E04F8911D39A0C0305E82C33011",
        "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
        "3F2504E04F8911D39A0C0305E82C330G",
        "3F2504E04F8911D39A0C0305E82C3301\n",
        " 3F2504E04F8911D39A0C0305E82C3301",
        "３F2504E04F8911D39A0C0305E82C3301",  # full-width digit
    ],
    ids=repr,
)
def test_is_node_id_rejects(text: str) -> None:
    assert not is_node_id(text)
