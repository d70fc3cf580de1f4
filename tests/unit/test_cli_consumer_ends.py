"""``dafka-consumer``'s -o values, regex topics and ``e@`` stops (issue 34, points 4 and 10),
as pure functions; the consumer core's watermark for a start past the end."""

from __future__ import annotations

import re

import pytest

from dafka.cli.consumer_ends import (
    Offsets,
    StopAt,
    matching,
    parse_offset,
    parse_offsets,
    split_topics,
)
from dafka.consumer._core import ConsumerCore
from dafka.core.effects import ConsumedRecord
from dafka.errors import ConfigError
from tests.signing import CONSUMER, WIRE, P, direct_head

U64_MAX = (1 << 64) - 1


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("beginning", "earliest"),
        ("END", "latest"),
        ("0", 0),
        (str(U64_MAX), U64_MAX),
        ("-3", -3),
        ("s@1500", 1.5),
    ],
)
def test_kcat_offsets(text: str, start: object) -> None:
    assert parse_offset(text) == start


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        str(1 << 64),
        "-" + str(1 << 64),
        "-0",
        "1.5",
        "s@",
        "s@-1",
        "e@x",
        "٣",
        "s@" + "9" * 30,
    ],
)
def test_bad_offsets_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="offset"):
        parse_offsets([text])


def test_a_start_and_a_stop() -> None:
    assert parse_offsets([]) == Offsets("latest", None)
    assert parse_offsets(["s@1000", "e@2000"]) == Offsets(1.0, 2000)
    assert parse_offsets(["e@2000"]) == Offsets("latest", 2000)
    with pytest.raises(ConfigError):
        parse_offsets(["beginning", "end"])
    with pytest.raises(ConfigError):
        parse_offsets(["e@1", "e@2"])


def test_regex_topics_are_matched_and_internal_ones_only_when_asked() -> None:
    named, patterns = split_topics(["plain", "^t3", "^__group\\."])
    assert named == ["plain"]
    known = ["t3", "t30", "xt3", "__group.g", "__t3"]
    assert matching(patterns[:1], known) == ["t3", "t30"]
    assert matching(patterns[1:], known) == ["__group.g"]
    with pytest.raises(ConfigError, match="regex"):
        split_topics(["^(unclosed"])


def rec(partition: str, offset: int, ts_ms: int | None) -> ConsumedRecord:
    ts = None if ts_ms is None else ts_ms / 1000
    return ConsumedRecord("t", partition, offset, b"v", timestamp=ts)


def test_stop_at_drops_a_partitions_records_from_its_first_at_or_after_the_time() -> None:
    stop = StopAt(2000)
    kept, newly = stop.keep([rec("A", 0, 1000), rec("A", 1, 2000), rec("A", 2, 1500)])
    assert [r.offset for r in kept] == [0] and newly
    assert not stop.done([("t", "A"), ("t", "B")])  # B has not reached it
    kept, newly = stop.keep([rec("B", 0, None), rec("B", 1, 1999)])
    assert [r.offset for r in kept] == [0, 1] and not newly  # no time: never a stop
    kept, _ = stop.keep([rec("B", 2, 2500), rec("A", 3, 1000)])
    assert kept == [] and stop.done([("t", "A"), ("t", "B")])
    assert not StopAt(1).done([])


def test_a_start_past_the_end_is_not_its_high_watermark() -> None:
    """-o 100 on a partition of 3 records: before, the core reported (0, 100), and
    dafka-consumer -e exited 0 with nothing, as at the end."""
    c = ConsumerCore(CONSUMER, offset_reset=100, profile=WIRE)
    c.subscribe("t", 0.0)
    c.handle(direct_head(2, tail=0), 0.0)
    assert c.positions() == {("t", P): 100}
    assert c.watermarks() == {("t", P): (0, 3)}


def test_pattern_objects_are_compiled_once() -> None:
    _, patterns = split_topics(["^a.*"])
    assert isinstance(patterns[0], re.Pattern)
