"""The Producer API is honest about records that fail or are never acknowledged."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from dafka.api.producer import CloseResult, Producer
from dafka.errors import ClosedError, DeliveryError, RecordTooLargeError
from dafka.wire.signed import MAX_KEY_BYTES, MAX_VALUE_BYTES, LimitExceeded
from tests.procs import Tower


@pytest.fixture
def nowhere() -> str:
    """A tower address with nobody behind it: records are never acknowledged."""
    probe = Tower()
    address = probe.address
    probe.stop()
    return address


@pytest.fixture
def lonely(nowhere: str) -> Iterator[Producer]:
    p = Producer("lonely", towers=nowhere, metadata=False)
    yield p
    p.close(timeout=0)


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
    with caplog.at_level(logging.WARNING, logger="dafka.api.producer"):
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
