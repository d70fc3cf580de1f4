"""The exactly-once Spark sink's pure pieces: identities, batch records, replay decisions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from dafka.errors import ConfigError
from dafka.spark.options import WriteOptions
from dafka.spark.sink_state import (
    SECRET_BYTES,
    BatchRecord,
    PlanKind,
    decide,
    load_or_create_secret,
    read_record,
    remainder,
    sink_root,
    task_identity,
    write_record,
)

SECRET = bytes(range(SECRET_BYTES))


def test_a_task_identity_is_stable_per_partition_and_distinct_across_them() -> None:
    assert task_identity(SECRET, 0) == task_identity(SECRET, 0)
    ids = {task_identity(SECRET, p).node_id for p in range(64)}
    assert len(ids) == 64


def test_another_query_secret_gives_other_identities() -> None:
    other = bytes(reversed(SECRET))
    assert task_identity(SECRET, 3) != task_identity(other, 3)


def test_a_bad_secret_or_partition_is_refused() -> None:
    with pytest.raises(ConfigError):
        task_identity(b"short", 0)
    with pytest.raises(ConfigError):
        task_identity(SECRET, -1)


def test_the_secret_is_made_once_and_kept(tmp_path: Path) -> None:
    first = load_or_create_secret(tmp_path / "sink")
    assert len(first) == SECRET_BYTES
    assert load_or_create_secret(tmp_path / "sink") == first
    assert (tmp_path / "sink" / "secret").stat().st_mode & 0o777 == 0o600


def test_a_damaged_secret_is_refused_never_replaced(tmp_path: Path) -> None:
    load_or_create_secret(tmp_path)
    (tmp_path / "secret").write_text("not hex\n")
    with pytest.raises(ConfigError, match="damaged"):
        load_or_create_secret(tmp_path)
    assert (tmp_path / "secret").read_text() == "not hex\n"


def test_a_batch_record_round_trips_and_damage_is_refused(tmp_path: Path) -> None:
    assert read_record(tmp_path) is None
    write_record(tmp_path, BatchRecord(7, {"b": 3, "a": 10}, done=False))
    assert read_record(tmp_path) == BatchRecord(7, {"a": 10, "b": 3}, False)
    (tmp_path / "batch.json").write_bytes(b'{"batch": 7, "starts": {"a": -1}, "done": true}')
    with pytest.raises(ConfigError, match="damaged"):
        read_record(tmp_path)


RESERVED = {"out": 120, "other": 5}


def test_a_first_batch_begins_where_the_producer_stands() -> None:
    plan = decide(None, 0, RESERVED)
    assert plan.kind is PlanKind.NEW and plan.starts == RESERVED


def test_the_next_batch_after_a_complete_one_is_new() -> None:
    plan = decide(BatchRecord(4, {"out": 100}, done=True), 5, RESERVED)
    assert plan.kind is PlanKind.NEW and plan.starts == RESERVED


def test_a_replayed_complete_batch_is_skipped() -> None:
    plan = decide(BatchRecord(5, {"out": 100}, done=True), 5, RESERVED)
    assert plan.kind is PlanKind.SKIP


def test_a_replayed_unfinished_batch_resumes_from_where_it_began() -> None:
    plan = decide(BatchRecord(5, {"out": 100}, done=False), 5, RESERVED)
    assert plan.kind is PlanKind.RESUME and plan.starts == {"out": 100}


def test_a_record_from_a_later_batch_belongs_to_another_checkpoint() -> None:
    with pytest.raises(ConfigError, match="another checkpoint"):
        decide(BatchRecord(9, {}, done=True), 5, RESERVED)


def test_the_remainder_drops_stored_rows_as_a_multiset_in_any_order() -> None:
    rows = [("t", None, b"a"), ("t", None, b"b"), ("t", None, b"a"), ("u", b"k", b"a")]
    stored = Counter([("t", None, b"a"), ("u", b"k", b"a")])
    assert list(remainder(rows, stored)) == [("t", None, b"b"), ("t", None, b"a")]
    assert list(remainder(rows, Counter())) == rows


def test_write_options_parse_the_guarantee_and_the_state_dir() -> None:
    opts = WriteOptions.parse(
        {"deliveryguarantee": "ATLEASTONCE", "checkpointLocation": "/c", "sinkStateDir": "/s"}
    )
    assert (opts.guarantee, opts.checkpoint, opts.state_dir) == ("atLeastOnce", "/c", "/s")
    assert WriteOptions.parse({}).guarantee is None
    with pytest.raises(ConfigError, match="deliveryGuarantee"):
        WriteOptions.parse({"deliveryGuarantee": "maybe"})


def test_the_sink_state_lives_in_a_local_checkpoint_or_the_given_directory(tmp_path: Path) -> None:
    assert sink_root(WriteOptions.parse({"checkpointLocation": "/c/q1"})) == Path(
        "/c/q1/dafka-sink"
    )
    assert sink_root(WriteOptions.parse({"checkpointLocation": "file:///c/q1"})) == Path(
        "/c/q1/dafka-sink"
    )
    given = WriteOptions.parse({"checkpointLocation": "hdfs://nn/c", "sinkStateDir": "/s"})
    assert sink_root(given) == Path("/s")
    for options, message in (
        ({}, "checkpointLocation option, or sinkStateDir"),
        ({"checkpointLocation": "hdfs://nn/c"}, "not one: give sinkStateDir"),
        ({"checkpointLocation": "rel/ckpt"}, "absolute checkpointLocation"),
    ):
        with pytest.raises(ConfigError, match=message):
            sink_root(WriteOptions.parse(options))
