"""The producer's linger (``linger_ms``): records wait for others to share their batch,
up to the linger, a full batch, or a flush; the IO handler's deadline wakes the loop."""

from __future__ import annotations

import dataclasses

import pytest

from dafka.api.producer import Producer
from dafka.api.producer_io import _ProducerHandler
from dafka.api.producer_linger import Linger
from dafka.config import ProducerConfig
from dafka.core.effects import Publish
from dafka.core.producer import ProducerCore
from dafka.errors import ConfigError
from dafka.futures import RecordFuture
from dafka.io.profiles import SignedProfile
from dafka.security.identity import Identity


def test_without_a_linger_whatever_is_queued_goes_at_once() -> None:
    linger = Linger(0.0, 100)
    assert linger.ready(1, 10.0)
    assert linger.deadline() is None


def test_a_record_waits_out_the_linger_from_when_it_was_first_seen() -> None:
    linger = Linger(0.005, 100)
    assert not linger.ready(1, 10.0)
    assert linger.deadline() == pytest.approx(10.005)
    assert not linger.ready(3, 10.004)  # more arrived: the oldest still sets the clock
    assert linger.deadline() == pytest.approx(10.005)
    assert linger.ready(3, 10.005)
    assert linger.deadline() is None  # the next record starts a linger of its own
    assert not linger.ready(1, 10.006)
    assert linger.deadline() == pytest.approx(10.011)


def test_a_full_batch_ends_the_linger() -> None:
    linger = Linger(1.0, 4)
    assert not linger.ready(3, 0.0)
    assert linger.ready(4, 0.001)
    assert linger.deadline() is None


def test_hurry_ends_one_linger_then_lingering_resumes() -> None:
    linger = Linger(1.0, 100)
    assert not linger.ready(1, 0.0)
    linger.hurry()
    assert linger.ready(1, 0.001)
    assert not linger.ready(1, 0.002)  # hurry was for what was queued then


def test_idle_drops_the_deadline() -> None:
    linger = Linger(1.0, 100)
    linger.ready(1, 0.0)
    linger.idle()
    assert linger.deadline() is None


class _Stub:
    _journal = None
    _acked_journal = None
    _wal = None

    def __init__(self, linger_ms: float) -> None:
        self.config = ProducerConfig(linger_ms=linger_ms)


def _handler(linger_ms: float) -> _ProducerHandler:
    identity = Identity.generate()
    core = ProducerCore(identity.node_id, profile=SignedProfile(identity))
    return _ProducerHandler(_Stub(linger_ms), core)  # type: ignore[arg-type]


def _batches(effects: object) -> list[tuple[int, int]]:
    return [(e.msg.offset, e.msg.count) for e in effects if isinstance(e, Publish)]  # type: ignore[attr-defined]


def test_records_sent_within_the_linger_share_one_signed_batch() -> None:
    handler = _handler(linger_ms=2.0)
    futures = [RecordFuture() for _ in range(5)]
    for k, fut in enumerate(futures[:3]):
        handler.queue.append(("t", b"r%d" % k, None, fut))
        assert handler.on_commands(100.0 + k * 0.0005) == []
    deadline = handler.command_deadline()
    assert deadline == pytest.approx(100.002)
    for k, fut in enumerate(futures[3:]):
        handler.queue.append(("t", b"s%d" % k, None, fut))
    assert handler.on_commands(deadline - 0.0001) == []
    assert _batches(handler.on_commands(deadline)) == [(0, 5)]
    assert handler.command_deadline() is None
    assert not handler.queue


def test_without_a_linger_each_wake_up_publishes_its_own_batch() -> None:
    handler = _handler(linger_ms=0.0)
    out = []
    for k in range(3):
        handler.queue.append(("t", b"r%d" % k, None, RecordFuture()))
        out += _batches(handler.on_commands(100.0 + k * 0.0005))
    assert out == [(0, 1), (1, 1), (2, 1)]


def test_an_empty_queue_has_no_deadline() -> None:
    handler = _handler(linger_ms=5.0)
    handler.queue.append(("t", b"x", None, RecordFuture()))
    handler.on_commands(1.0)
    handler.queue.clear()  # failed on stop, say
    assert handler.on_commands(1.001) == []
    assert handler.command_deadline() is None


@pytest.mark.parametrize("linger_ms", [-1.0, 60_001.0])
def test_a_linger_out_of_range_is_refused(linger_ms: float) -> None:
    with pytest.raises(ConfigError, match="linger_ms must be between 0 and 60,000"):
        dataclasses.replace(ProducerConfig(), linger_ms=linger_ms).validate()


def test_a_durable_producer_refuses_a_linger(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="does not apply to a durable producer"):
        Producer("t", towers="127.0.0.1:1", state_dir=str(tmp_path), durable=True, linger_ms=1)
