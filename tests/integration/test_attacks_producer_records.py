"""Attack tests of what ``send`` takes besides a key and a value (issue 36).

Who sends it: the application (or whoever feeds ``dafka-producer``'s ``-H``). What it may
change: the size of every batch the producer seals, stores keep and consumers open; on a
compacted topic, whether a record can ever be compacted away. So headers are bounded in
count, key length and bytes and typed at ``send`` (before anything is queued or counted),
a compacted topic refuses records without a key, and the rfc46 profile, whose C wire has
no room for any of it, refuses it rather than drop it."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from dafka.errors import ConfigError, ProfileError
from dafka.producer._facade import Producer, _SendPolicy
from dafka.wire.signed_checks import LimitExceeded
from dafka.wire.signed_rich import MAX_HEADER_BYTES, MAX_HEADER_KEY_BYTES, MAX_HEADERS


def test_too_many_headers_are_refused_at_send(lonely: Producer) -> None:
    lonely.send(b"v", headers=[("h", b"")] * MAX_HEADERS)  # at the bound: taken
    with pytest.raises(LimitExceeded, match=f"more than {MAX_HEADERS} headers"):
        lonely.send(b"v", headers=[("h", b"")] * (MAX_HEADERS + 1))
    with pytest.raises(LimitExceeded, match=f"more than {MAX_HEADERS} headers"):
        lonely.send_many([b"a", b"b"], headers=[None, [("h", None)] * (MAX_HEADERS + 1)])
    assert lonely.unacked == 1  # nothing of the refused sends was queued


def test_a_header_key_over_its_bound_is_refused_at_send(lonely: Producer) -> None:
    lonely.send(b"v", headers=[("k" * MAX_HEADER_KEY_BYTES, b"")])
    with pytest.raises(LimitExceeded, match=f"the limit is {MAX_HEADER_KEY_BYTES}"):
        lonely.send(b"v", headers=[("k" * (MAX_HEADER_KEY_BYTES + 1), b"")])
    with pytest.raises(LimitExceeded, match=f"the limit is {MAX_HEADER_KEY_BYTES}"):
        lonely.send(b"v", headers=[("é" * (MAX_HEADER_KEY_BYTES // 2 + 1), b"")])  # UTF-8 bytes
    assert lonely.unacked == 1


def test_headers_over_their_bytes_are_refused_at_send(lonely: Producer) -> None:
    big = b"x" * (MAX_HEADER_BYTES // 2)
    with pytest.raises(LimitExceeded, match=f"the limit is {MAX_HEADER_BYTES}") as info:
        lonely.send(b"v", headers=[("a", big), ("b", big)])
    assert isinstance(info.value, ValueError)
    with pytest.raises(LimitExceeded, match=f"the limit is {MAX_HEADER_BYTES}"):
        lonely.send_many([b"v"], headers=[{"a": big, "b": big}])
    assert lonely.unacked == 0


def test_a_header_key_that_is_not_text_is_refused_at_send(lonely: Producer) -> None:
    for key in (b"bytes", 7, None):
        with pytest.raises(TypeError, match="a header key is a str"):
            lonely.send(b"v", headers=[(key, b"x")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="a header value is bytes, str or None"):
        lonely.send(b"v", headers=[("k", 7)])  # type: ignore[list-item]
    assert lonely.unacked == 0


def test_rfc46_refuses_headers_timestamps_and_tombstones(nowhere: str) -> None:
    p = Producer("r", towers=nowhere, metadata=False, profile="rfc46")
    try:
        with pytest.raises(ProfileError, match="rfc46"):
            p.send(b"v", headers=[("h", b"1")])
        with pytest.raises(ProfileError, match="rfc46"):
            p.send(b"v", timestamp=5)
        with pytest.raises(ProfileError, match="rfc46"):
            p.send_many([b"v"], headers=[[("h", b"1")]])
        with pytest.raises(ProfileError, match="rfc46"):
            p.send_many([b"v"], timestamps=[5])
        assert p.unacked == 0
    finally:
        p.close(timeout=0)


def test_a_compacted_topic_refuses_records_without_a_key(lonely: Producer) -> None:
    lonely._policy = _SendPolicy(MappingProxyType({}), frozenset(), frozenset({"lonely"}))
    with pytest.raises(ConfigError, match="compacted"):
        lonely.send(b"no key")
    lonely.send(b"v", key=b"k")
    with pytest.raises(ConfigError, match="compacted"):  # the keyed send did not clear it
        lonely.send(b"no key")
    with pytest.raises(ConfigError, match="compacted"):
        lonely.send(b"no key", headers={"h": b"1"})
    with pytest.raises(ConfigError, match="compacted"):
        lonely.send_many([b"a", b"b"], keys=[b"k", None])
    with pytest.raises(ConfigError, match="compacted"):
        lonely.send_many([b"a"])
    with pytest.raises(ConfigError, match="compacted"):
        lonely.send_many([b"a"], timestamps=[1])
    lonely.send_many([b"a", None], keys=[b"k", b"k"])  # keyed, and a tombstone
    assert lonely.unacked == 3
    # another topic is not affected
    lonely.send(b"no key", topic="other")
    assert lonely.unacked == 4
