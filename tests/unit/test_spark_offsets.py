"""The Spark source's options and offset arithmetic (no Spark needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import ConfigError
from dafka.spark.offsets import (
    Heads,
    Span,
    available,
    cap_offsets,
    from_nested,
    merge_heads,
    plan_spans,
    rate_limit,
    resolve_offsets,
    to_nested,
)
from dafka.spark.options import ReadOptions, WriteOptions

A = "A" * 32
B = "B" * 32
C = "C" * 32
HEADS = {("t", A): Heads(0, 99), ("t", B): Heads(10, 19)}


def test_read_options_defaults_and_checks() -> None:
    o = ReadOptions.parse({"subscribe": "b, a,a", "tower": "127.0.0.1:7000"}, batch=False)
    assert o.topics == ("a", "b") and o.starting == "latest" and o.fail_on_data_loss
    assert ReadOptions.parse({"subscribe": "a"}, batch=True).starting == "earliest"
    p = ReadOptions.parse({"SubscribePattern": "ev.*", "FAILONDATALOSS": "false"}, batch=True)
    assert p.wants("events") and not p.wants("xevents") and not p.fail_on_data_loss
    for bad in (
        {},
        {"subscribe": "a", "subscribePattern": "a"},
        {"subscribePattern": "("},
        {"subscribe": "a", "maxOffsetsPerTrigger": "0"},
        {"subscribe": "a", "startingOffsets": "soon"},
        {"subscribe": "a", "startingOffsets": '{"t": {"p": "x"}}'},
        {"subscribe": "a", "failOnDataLoss": "maybe"},
        {"subscribe": "a", "tower": "nowhere"},
        {"subscribe": "a", "profile": "xml"},
    ):
        with pytest.raises(ConfigError):
            ReadOptions.parse(bad, batch=False)
    with pytest.raises(ConfigError):
        ReadOptions.parse({"subscribe": "a", "startingOffsets": "latest"}, batch=True)
    with pytest.raises(ConfigError):
        ReadOptions.parse({"subscribe": "a", "endingOffsets": "latest"}, batch=False)


def test_write_options() -> None:
    w = WriteOptions.parse({"topic": "out"})
    assert (w.topic, w.profile, w.towers) == ("out", None, "127.0.0.1:5556")  # Producer's default
    assert WriteOptions.parse({"profile": "RFC46"}).profile == "rfc46"
    with pytest.raises(ConfigError):
        WriteOptions.parse({"profile": "auto"})


def test_nested_offsets_round_trip_with_sorted_keys() -> None:
    flat = {("b", B): 3, ("a", B): 1, ("a", A): 2}
    nested = to_nested(flat)
    assert json.dumps(nested) == json.dumps({"a": {A: 2, B: 1}, "b": {B: 3}})
    assert from_nested(nested) == flat
    with pytest.raises(ConfigError):
        from_nested({"a": {A: -3}})
    with pytest.raises(ConfigError):
        from_nested([1])


def test_resolve_offsets() -> None:
    assert resolve_offsets("earliest", HEADS) == {("t", A): 0, ("t", B): 10}
    assert resolve_offsets("latest", HEADS) == {("t", A): 100, ("t", B): 20}
    spec = json.dumps({"t": {A: 5, C: 7}})
    assert resolve_offsets(spec, HEADS, default="earliest") == {
        ("t", A): 5,
        ("t", B): 10,
        ("t", C): 7,
    }
    spec = json.dumps({"t": {A: -1, B: -2}})
    assert resolve_offsets(spec, HEADS) == {("t", A): 100, ("t", B): 10}


def test_available_never_goes_back_and_adds_new_partitions() -> None:
    start = {("t", A): 100, ("t", C): 4}
    assert available(start, HEADS) == {("t", A): 100, ("t", B): 20, ("t", C): 4}


def test_cap_offsets_for_available_now() -> None:
    end = {("t", A): 100, ("t", B): 20, ("t", C): 9}
    target = {("t", A): 50, ("t", B): 20}
    start = {("t", A): 10}
    # C appeared after the target was taken: not read; B is new: read from 0
    assert cap_offsets(end, target, start) == {("t", A): 50, ("t", B): 20}


def test_rate_limit_is_proportional_and_exact() -> None:
    start = {("t", A): 0, ("t", B): 10}
    end = {("t", A): 100, ("t", B): 20, ("t", C): 10}
    limited = rate_limit(start, end, 60)
    taken = sum(limited[tp] - start.get(tp, 0) for tp in limited)
    assert taken == 60
    assert all(start.get(tp, 0) <= limited[tp] <= end[tp] for tp in limited)
    assert rate_limit(start, end, 1000) == end


@given(
    st.dictionaries(
        st.sampled_from([A, B, C]),
        st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
        min_size=1,
    ),
    st.integers(1, 3000),
)
def test_rate_limit_properties(parts: dict[str, tuple[int, int]], limit: int) -> None:
    start = {("t", p): s for p, (s, _) in parts.items()}
    end = {("t", p): s + n for p, (s, n) in parts.items()}
    limited = rate_limit(start, end, limit)
    backlog = sum(n for _, n in parts.values())
    taken = sum(limited[tp] - start[tp] for tp in start)
    assert taken == min(limit, backlog)
    assert all(start[tp] <= limited[tp] <= end[tp] for tp in start)
    assert set(limited) == set(start)


def test_plan_spans_caps_each_range() -> None:
    spans = plan_spans({("t", A): 10}, {("t", A): 35, ("t", B): 5}, 10)
    assert spans == [
        Span("t", A, 10, 20),
        Span("t", A, 20, 30),
        Span("t", A, 30, 35),
        Span("t", B, 0, 5),
    ]
    assert plan_spans({("t", A): 5}, {("t", A): 5}, 10) == []


def test_merge_heads_prefers_the_store_that_holds_most() -> None:
    merged = merge_heads(
        [
            ("tcp://s1:1", [("t", A, 0, 50)]),
            ("tcp://s2:1", [("t", A, 20, 90), ("t", B, 0, 3)]),
        ]
    )
    assert merged[("t", A)] == Heads(0, 90, (("tcp://s2:1", 20, 90), ("tcp://s1:1", 0, 50)))
    assert merged[("t", B)].holders == (("tcp://s2:1", 0, 3),)
