"""The Spark source's options as Spark's Kafka source means them, or one clear error; and the
pure cores behind them: minPartitions, minOffsetsPerTrigger, the timestamp search and the
shared store-health view (no Spark, no sockets, no clocks)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import ConfigError
from dafka.query.locator import StoreHealth
from dafka.spark.offsets import (
    Heads,
    Span,
    delay_batch,
    first_at_or_after,
    split_spans,
    unheld,
)
from dafka.spark.options import ReadOptions

A = "A" * 32
B = "B" * 32


def parse(batch: bool = True, **options: str) -> ReadOptions:
    return ReadOptions.parse({"subscribe": "t", **options}, batch=batch)


def refused(match: str, batch: bool = True, **options: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ReadOptions.parse(
            options if "assign" in options else {"subscribe": "t", **options}, batch=batch
        )


def test_unknown_and_misspelled_options_are_refused_naming_them() -> None:
    refused(r"unknown option startingOffset .*did you mean startingOffsets\?", startingOffset="0")
    refused(r"unknown option maxOfsetsPerTrigger .*maxOffsetsPerTrigger", maxOfsetsPerTrigger="1")
    refused(r"unknown option flavour for reading", flavour="x")
    refused(
        r"kafka.bootstrap.servers is a Kafka client setting.*option tower",
        **{"kafka.bootstrap.servers": "h:9092"},
    )
    refused(r"groupIdPrefix is not supported", groupIdPrefix="g")
    refused(r"topic is a sink option", topic="t")
    # Spark's options ignore case: so do these
    assert parse(STARTINGOFFSETS="earliest", failondataloss="false").fail_on_data_loss is False


def test_subscribe_pattern_and_assign_are_exclusive_and_assign_names_partitions() -> None:
    o = ReadOptions.parse({"assign": json.dumps({"t": [A.lower()], "u": [B]})}, batch=True)
    assert o.assign == (("t", A), ("u", B)) and o.topics == ("t", "u")
    assert o.wants("t", A) and not o.wants("t", B) and o.wants("u", B)
    with pytest.raises(ConfigError, match="exactly one of"):
        ReadOptions.parse({"assign": json.dumps({"t": [A]}), "subscribe": "t"}, batch=True)
    for bad in ('{"t": "x"}', "[]", '{"t": ["0"]}', "nope"):
        with pytest.raises(ConfigError, match="assign"):
            ReadOptions.parse({"assign": bad}, batch=True)


def test_offsets_json_partitions_must_be_partition_ids_and_ending_minus_two_is_refused() -> None:
    refused(r"'0' is not a Dafka partition", startingOffsets='{"t": {"0": 5}}')
    refused(
        r"-2 \(earliest\).*not allowed as an ending offset",
        endingOffsets=json.dumps({"t": {A: -2}}),
    )
    refused(r"-1 \(latest\).*batch", startingOffsets=json.dumps({"t": {A: -1}}))
    assert parse(False, startingOffsets=json.dumps({"t": {A: -1}})).starting


def test_timestamp_options() -> None:
    o = parse(startingTimestamp="1700000000000", endingTimestamp="1700000001000")
    assert (o.starting_timestamp, o.ending_timestamp) == (1_700_000_000_000, 1_700_000_001_000)
    assert o.uses_timestamps and not parse().uses_timestamps
    o = parse(startingOffsetsByTimestamp=json.dumps({"t": {A: 5}}))
    assert o.starting_by_timestamp == ((("t", A), 5),)
    assert parse(startingOffsetsByTimestampStrategy="LATEST").timestamp_strategy == "latest"
    refused("milliseconds since the epoch", startingTimestamp="yesterday")
    refused("milliseconds since the epoch", endingTimestamp="-5")
    refused("startingOffsetsByTimestamp must be JSON", startingOffsetsByTimestamp='{"t": 5}')
    refused("error or latest", startingOffsetsByTimestampStrategy="earliest")
    refused("batch queries only", batch=False, endingTimestamp="5")


def test_trigger_sizes_partitions_and_headers() -> None:
    o = parse(False, minOffsetsPerTrigger="50", maxTriggerDelay="2s", minPartitions="8")
    assert (o.min_offsets_per_trigger, o.max_trigger_delay, o.min_partitions) == (50, 2.0, 8)
    assert parse(False).max_trigger_delay == 900.0  # Spark's 15m
    assert parse(False, maxTriggerDelay="1500").max_trigger_delay == 1.5  # bare: milliseconds
    refused("duration", batch=False, maxTriggerDelay="soon")
    refused("streaming only", minOffsetsPerTrigger="5")
    refused("positive integer", minPartitions="0")
    assert parse(includeHeaders="true").include_headers is True  # issue 36: headers exist
    assert parse(includeHeaders="false").include_headers is False
    assert parse().include_headers is False  # as Spark's Kafka source: off by default
    refused("includeHeaders must be true or false", includeHeaders="maybe")


def test_sink_compression_is_a_codec() -> None:
    from dafka.spark.options import WriteOptions

    def write(**options: str) -> WriteOptions:
        return WriteOptions.parse({"tower": "127.0.0.1:5556", "topic": "t", **options})

    assert write().compression is None  # the topic's setting
    assert write(compression="ZSTD").compression == "zstd"
    assert write(compression="lz4").compression == "lz4"
    assert write(**{"kafka.compression.type": "none"}).compression == "none"
    with pytest.raises(ConfigError, match="none, zstd or lz4"):
        write(compression="gzip")


def test_split_spans_reaches_min_partitions() -> None:
    spans = [Span("t", A, 0, 100), Span("t", B, 10, 20)]
    assert split_spans(spans, None) == spans
    assert split_spans(spans, 2) == spans
    cut = split_spans(spans, 8)
    assert len(cut) >= 8
    for tp in (A, B):
        mine = [(s.start, s.end) for s in cut if s.partition == tp]
        assert all(b > a for a, b in mine)
        assert all(mine[i][1] == mine[i + 1][0] for i in range(len(mine) - 1))
    assert [(s.start, s.end) for s in split_spans([Span("t", A, 0, 3)], 10)] == [
        (0, 1),
        (1, 2),
        (2, 3),
    ]


@given(st.lists(st.integers(1, 500), min_size=1, max_size=6), st.integers(1, 50))
def test_split_spans_properties(lengths: list[int], want: int) -> None:
    spans = [Span("t", f"{i:032X}", 0, n) for i, n in enumerate(lengths)]
    cut = split_spans(spans, want)
    assert len(cut) >= min(want, sum(lengths))
    for span in spans:
        mine = [s for s in cut if s.partition == span.partition]
        assert mine[0].start == 0 and mine[-1].end == span.end
        assert all(
            a.end == b.start and a.end > a.start for a, b in zip(mine, mine[1:], strict=False)
        )


def test_delay_batch_waits_for_min_rows_up_to_max_delay() -> None:
    start, end = {("t", A): 10}, {("t", A): 30, ("t", B): 5}
    assert not delay_batch(start, end, None, 0.0, 1.0, 60.0)
    assert delay_batch(start, end, 26, 0.0, 1.0, 60.0)  # 25 new < 26, 1 s < 60 s
    assert not delay_batch(start, end, 25, 0.0, 1.0, 60.0)
    assert not delay_batch(start, end, 26, 0.0, 61.0, 60.0)  # waited long enough


def _partition(stamps: list[tuple[int, int, int]]):
    """batch_at over batches ``(first, last, stamp)``, counting calls."""
    calls = []

    def batch_at(offset: int) -> tuple[int, int, int]:
        calls.append(offset)
        return next(b for b in stamps if b[0] <= offset <= b[1])

    return batch_at, calls


def test_first_at_or_after_finds_the_first_batch_that_new() -> None:
    batches = [(i * 10, i * 10 + 9, 1000 + i * 100) for i in range(100)]  # 0..999
    batch_at, calls = _partition(batches)
    assert first_at_or_after(batch_at, 0, 999, 1000) == 0
    assert first_at_or_after(batch_at, 0, 999, 1050) == 10
    assert first_at_or_after(batch_at, 0, 999, 1100) == 10
    assert first_at_or_after(batch_at, 0, 999, 20_000) is None  # every record is older
    assert first_at_or_after(batch_at, 500, 999, 0) == 500  # from the tail
    assert len(calls) < 4 * 12


@given(st.lists(st.integers(1, 5), min_size=1, max_size=40), st.integers(0, 200))
def test_first_at_or_after_properties(sizes: list[int], target: int) -> None:
    batches, first = [], 0
    for i, n in enumerate(sizes):
        batches.append((first, first + n - 1, i * 5))
        first += n
    batch_at, _ = _partition(batches)
    expect = next((b[0] for b in batches if b[2] >= target), None)
    assert first_at_or_after(batch_at, 0, first - 1, target) == expect


def test_unheld_names_partitions_no_store_holds() -> None:
    heads = {("t", A): Heads(0, 9)}
    assert unheld("earliest", heads) == []
    assert unheld(json.dumps({"t": {A: 3, B: 4}}), heads) == [("t", B)]


def test_store_health_orders_suspects_last_until_they_answer_or_expire() -> None:
    now = [0.0]
    health = StoreHealth(expiry=10.0, clock=lambda: now[0])
    eps = ["tcp://a:1", "tcp://b:1", "tcp://c:1"]
    assert health.order(eps) == eps
    health.failed("tcp://b:1")
    now[0] = 1.0
    health.failed("tcp://a:1")
    assert health.order(eps) == ["tcp://c:1", "tcp://b:1", "tcp://a:1"]
    health.ok("tcp://a:1")
    assert health.order(eps) == ["tcp://a:1", "tcp://c:1", "tcp://b:1"]
    now[0] = 12.0  # b's failure expired: it is asked in its place again
    assert health.order(eps) == eps
