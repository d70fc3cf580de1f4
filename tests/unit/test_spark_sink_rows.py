"""The sink's rows from Arrow batches (issue 36): headers, the record's own time (a timestamp
or bigint ms column), tombstones; what cannot be written is refused before anything is sent."""

from __future__ import annotations

import datetime as dt

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from dafka.errors import ConfigError  # noqa: E402
from dafka.spark.options import WriteOptions  # noqa: E402
from dafka.spark.sink import _rows  # noqa: E402
from dafka.spark.sink_state import remainder  # noqa: E402

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
OPTS = WriteOptions.parse({"tower": "127.0.0.1:5556", "topic": "t"})


def batch(**columns: pa.Array) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


def test_headers_times_and_tombstones() -> None:
    t0 = dt.datetime(2024, 5, 1, 12, 0, 0, 250999, tzinfo=dt.UTC)
    b = batch(
        key=pa.array([b"a", b"a", None]),
        value=pa.array([b"1", None, b"3"]),
        headers=pa.array(
            [[{"key": "tp", "value": b"x"}, {"key": "n", "value": None}], [], None], HEADERS
        ),
        timestamp=pa.array([t0, None, t0], pa.timestamp("us", tz="UTC")),
    )
    ms = 1_714_564_800_250  # truncated to the millisecond
    assert list(_rows(iter([b]), OPTS, True)) == [
        ("t", b"a", b"1", (("tp", b"x"), ("n", None)), ms),
        ("t", b"a", None, (), None),  # a tombstone at the seal time
        ("t", None, b"3", (), ms),
    ]
    millis = batch(value=pa.array([b"v"]), timestamp=pa.array([123], pa.int64()))
    assert list(_rows(iter([millis]), OPTS, True)) == [("t", None, b"v", (), 123)]


@pytest.mark.parametrize(
    ("columns", "why"),
    [
        ({"value": pa.array([None], pa.binary())}, "null value and no key"),
        (
            {
                "value": pa.array([b"v"]),
                "headers": pa.array([[{"key": None, "value": b"x"}]], HEADERS),
            },
            "null key",
        ),
    ],
)
def test_refused_before_sending(columns: dict, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        list(_rows(iter([batch(**columns)]), OPTS, True))


def test_rfc46_refuses_a_tombstone() -> None:
    b = batch(value=pa.array([None], pa.binary()))
    with pytest.raises(ConfigError, match="rfc46"):
        list(_rows(iter([b]), OPTS, False))


def test_a_replay_skips_stored_rows_by_content_and_headers_not_time() -> None:
    rows = [("t", b"k", b"v", (("h", b"1"),), 5), ("t", b"k", b"v", (), 5)]
    from collections import Counter

    stored = Counter([("t", b"k", b"v", (("h", b"1"),))])  # stored at another time
    assert list(remainder(rows, stored)) == [("t", b"k", b"v", (), 5)]
