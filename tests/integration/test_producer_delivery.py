"""The Producer API is honest about records that fail or are never acknowledged."""

from __future__ import annotations

import logging
from types import MappingProxyType

import pytest

from dafka.errors import ClosedError, DeliveryError, RecordTooLargeError
from dafka.producer._facade import CloseResult, Producer, _SendPolicy
from dafka.wire.signed import (
    MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
    LimitExceeded,
    verify_batch,
)
from tests.procs import Tower, wait_until


def test_send_refuses_a_record_over_the_profile_limits_before_queueing(lonely: Producer) -> None:
    with pytest.raises(RecordTooLargeError, match="over the signed profile's limit") as info:
        lonely.send(b"v" * (MAX_VALUE_BYTES + 1))
    assert (info.value.size, info.value.limit) == (MAX_VALUE_BYTES + 1, MAX_VALUE_BYTES)
    with pytest.raises(RecordTooLargeError, match="key of"):
        lonely.send(b"v", key=b"k" * (MAX_KEY_BYTES + 1))
    with pytest.raises(RecordTooLargeError):
        lonely.send_many([b"ok", b"v" * (MAX_VALUE_BYTES + 1)])
    with pytest.raises(RecordTooLargeError):
        lonely.send_many([b"ok", b"ok"], keys=[None, b"k" * (MAX_KEY_BYTES + 1)])
    assert lonely.unacked == 0
    assert lonely.send(b"v" * MAX_VALUE_BYTES, key=b"k" * MAX_KEY_BYTES) is not None
    assert lonely.unacked == 1


def test_rfc46_limit_is_the_message_size_peers_accept(nowhere: str) -> None:
    p = Producer("r", towers=nowhere, metadata=False, profile="rfc46")
    try:
        with pytest.raises(RecordTooLargeError, match="rfc46"):
            p.send(b"v" * (16 * 1024 * 1024 + 1))
    finally:
        p.close(timeout=0)


def test_flush_raises_when_a_record_failed(lonely: Producer) -> None:
    lonely._max_value = 1 << 30  # let a record past send() to fail in the IO thread
    fut = lonely.send(b"v" * (MAX_VALUE_BYTES + 1))
    with pytest.raises(DeliveryError, match="1 record") as info:
        lonely.flush(timeout=10)
    assert info.value.failed == 1 and isinstance(info.value.first, LimitExceeded)
    assert isinstance(fut.exception(0), LimitExceeded)
    lonely.flush(timeout=1)  # counted once: nothing failed since that flush
    assert lonely.failed == 1


def test_close_accounts_for_records_never_acknowledged(
    lonely: Producer, caplog: pytest.LogCaptureFixture
) -> None:
    futures = [lonely.send(b"x"), lonely.send_many([b"y", b"z"])]
    with caplog.at_level(logging.WARNING, logger="dafka.producer._facade"):
        result = lonely.close(timeout=0.3)
    assert "producer.close.incomplete" in caplog.text and "unacknowledged=3" in caplog.text
    assert result == CloseResult(acknowledged=0, unacknowledged=3, failed=0)
    assert not result.complete
    for fut in futures:
        assert isinstance(fut.exception(5), ClosedError)
    assert lonely.close() == result
    with pytest.raises(ClosedError):
        lonely.send(b"late")


def test_valid_records_beside_a_failed_one_are_acknowledged(tower: Tower, start_store) -> None:
    start_store()
    with Producer("mixed", towers=tower.address, metadata=False) as p:
        before = p.send(b"before")
        p._max_value = 1 << 30
        bad = p.send(b"v" * (MAX_VALUE_BYTES + 1))
        after = p.send_many([b"after1", b"after2"])
        with pytest.raises(DeliveryError):
            p.flush(timeout=30)
        assert before.result(0) == 0 and after.result(0) == range(1, 3)
        assert isinstance(bad.exception(0), LimitExceeded)
        result = p.close()
    assert result == CloseResult(acknowledged=3, unacknowledged=0, failed=1)


def _published_values(p: Producer) -> list[bytes]:
    """The values of every batch ``p`` holds (published, never acknowledged here)."""
    wait_until(lambda: p._handler.records_sent == p.unacked, 10)
    values: list[bytes] = []
    for topic in p._core.topics():
        for blob in p._core._topics[topic].held:
            values.extend(verify_batch(blob).columns()[1])
    return values


def test_send_many_takes_bytes_like_and_text_and_refuses_the_rest(lonely: Producer) -> None:
    value = bytearray(b"mutable")
    lonely.send_many([b"a", "text", value, memoryview(b"view")])  # type: ignore[list-item]
    value[0] = ord("M")  # queued values are copies
    with pytest.raises(TypeError, match="not int"):
        lonely.send_many([b"ok", 5])  # type: ignore[list-item]

    class Bytes(bytes):
        pass

    with pytest.raises(TypeError, match="not Bytes"):
        lonely.send_many([b"ok", Bytes(b"sub")])
    lonely.send_many(v for v in (b"any", b"iterable"))  # type: ignore[arg-type]
    assert lonely.unacked == 6
    assert _published_values(lonely) == [b"a", b"text", b"mutable", b"view", b"any", b"iterable"]


def test_send_many_checks_each_record_against_a_topic_cap_not_their_sum(lonely: Producer) -> None:
    lonely._policy = _SendPolicy(MappingProxyType({"lonely": 10}), frozenset({"lonely"}))
    lonely.send_many([b"x" * 10, b"y" * 10, b"z"])  # 21 bytes, none over 10
    with pytest.raises(RecordTooLargeError, match="max_record_bytes") as info:
        lonely.send_many([b"x", b"y" * 11, b"z"])
    assert (info.value.size, info.value.limit) == (11, 10)
    assert lonely.unacked == 3
    assert _published_values(lonely) == [b"x" * 10, b"y" * 10, b"z"]
