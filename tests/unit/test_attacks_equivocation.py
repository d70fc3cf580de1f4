"""Equivocation shown to one consumer (issue 10, point 5): a producer signs batch X for
offsets and shows it to one consumer alone (DIRECT-RECORD), and batch Y for the same
offsets to everyone. The consumer detects the second, never delivers it, and reports
whether the first one was delivered already."""

from __future__ import annotations

import logging

import pytest

from dafka.consumer._core import ConsumerCore
from dafka.core.effects import Deliver
from tests.signing import CONSUMER, WIRE, P, blob, from_blob, record

X = [b"x0", b"x1", b"x2"]
Y = [b"y0", b"y1", b"y2"]


def consumer() -> ConsumerCore:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    return core


def values(effects: list) -> list[bytes]:
    return [r.value for e in effects if isinstance(e, Deliver) for r in e.records()]


def test_a_second_signed_batch_after_delivery_is_dropped_and_reported() -> None:
    core = consumer()
    x = from_blob(blob(0, 3, values=X), to=CONSUMER)  # to this consumer alone
    y = from_blob(blob(0, 3, values=Y))  # live, to everyone
    assert values(core.handle(x, 0.0)) == X
    assert values(core.handle(y, 0.1)) == []
    assert core.stats.equivocations == 1 and core.stats.duplicates == 0
    (report,) = core.equivocations
    assert (report.partition, report.first_offset, report.last_offset) == (P, 0, 2)
    assert (report.kept_first, report.kept_last, report.delivered) == (0, 2, True)
    # the same Y again is equivocation again (it is not what was taken); X again is a replay
    core.handle(y, 0.2)
    core.handle(x, 0.3)
    assert core.stats.equivocations == 2 and core.stats.duplicates == 1


def test_a_second_signed_batch_while_buffered_is_dropped_and_the_first_delivered() -> None:
    core = consumer()
    y = from_blob(blob(2, 3, values=Y))  # ahead of a gap: buffered
    x = from_blob(blob(2, 3, values=X), to=CONSUMER)
    core.handle(y, 0.0)
    assert values(core.handle(x, 0.1)) == []
    (report,) = core.equivocations
    assert report.delivered is False
    assert values(core.handle(record(0, 2), 0.2))[2:] == Y


def test_another_cut_of_delivered_offsets_is_reported_and_only_its_new_part_delivered() -> None:
    core = consumer()
    core.handle(record(0, 2), 0.0)
    longer = from_blob(blob(0, 4, values=[b"a", b"b", b"c", b"d"]))
    assert values(core.handle(longer, 0.1)) == [b"c", b"d"]
    assert core.stats.equivocations == 1 and core.equivocations[0].delivered is True


def test_forged_content_at_taken_offsets_is_a_forgery_not_equivocation() -> None:
    core = consumer()
    x = record(0, 3)
    core.handle(x, 0.0)
    bad = from_blob(x.content[:-70] + bytes(6) + x.content[-64:-1] + b"\x00")
    core.handle(bad, 0.1)
    assert core.stats.equivocations == 0 and core.stats.rejected == 1


def test_consumer_equivocation_log_is_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    core = consumer()
    core.handle(record(0, 1), 0.0)
    caplog.set_level(logging.WARNING, logger="dafka.consumer._core")
    for i in range(200):
        core.handle(from_blob(blob(0, 1, values=[b"v%d" % i])), 0.001 * i)
    assert core.stats.equivocations == 200
    assert len([r for r in caplog.records if "consumer.equivocation" in r.getMessage()]) == 1
    assert len(core.equivocations) == 100  # a bounded report
