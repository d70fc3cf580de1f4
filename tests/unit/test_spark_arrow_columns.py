"""Signed READ replies decoded straight into Arrow equal the per-record decoding, for every
subset of the columns, with every batch verified exactly once, whatever the columns."""

from __future__ import annotations

from collections.abc import Collection
from itertools import combinations

import pytest

pa = pytest.importorskip("pyarrow")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dafka.errors import WireError  # noqa: E402
from dafka.query import protocol as qp  # noqa: E402
from dafka.query.client import opened_batches  # noqa: E402
from dafka.security.identity import Identity  # noqa: E402
from dafka.spark import arrow_columns  # noqa: E402
from dafka.spark.arrow import _batch, reply_batches  # noqa: E402
from dafka.spark.arrow_columns import (  # noqa: E402
    SIGNED_COLUMNS,
    TYPES,
    signed_reply_chunks,
)
from dafka.spark.options import ReadOptions  # noqa: E402
from dafka.wire.signed_batch import seal_gap, seal_records  # noqa: E402
from dafka.wire.signed_checks import encode_topic  # noqa: E402
from dafka.wire.signed_rich import Codec, RichRecord, compact_rich, seal_rich  # noqa: E402

IDENTITY = Identity.generate()
TOPIC = "t"
STAMP = 1_700_000_000_000


def signed_reply_columns(
    reply: qp.ReadReply, lo: int, hi: int, names: Collection[str] = SIGNED_COLUMNS
) -> dict[str, pa.Array] | None:
    """The chunks of a reply as one set of columns (concatenated), ``None`` for none."""
    chunks = list(signed_reply_chunks(reply, lo, hi, names))
    if not chunks:
        return None
    if len(chunks) == 1:
        return chunks[0]
    return {name: pa.concat_arrays([c[name] for c in chunks]) for name in chunks[0]}


keys_st = st.one_of(st.none(), st.binary(max_size=8))
records_st = st.lists(st.tuples(keys_st, st.binary(max_size=12)), min_size=1, max_size=20)
# each batch: all keys, no keys, or mixed, in batch format 1 or 3 (a store holds both
# after an upgrade); or a gap statement (an int: its width)
batches_st = st.lists(
    st.one_of(
        st.tuples(
            st.one_of(
                records_st,
                records_st.map(lambda rs: [(None, v) for _, v in rs]),
                records_st.map(lambda rs: [(k or b"", v) for k, v in rs]),
            ),
            st.sampled_from([1, 3]),
        ),
        st.integers(1, 5),
    ),
    min_size=1,
    max_size=5,
)
headers_st = st.lists(
    st.tuples(
        st.sampled_from(["traceparent", "a", "é"]), st.one_of(st.none(), st.binary(max_size=6))
    ),
    max_size=3,
).map(tuple)
rich_records_st = st.lists(
    st.builds(
        RichRecord,
        keys_st,
        st.one_of(st.none(), st.binary(max_size=12)),  # None: a tombstone
        st.integers(0, 2**41),
        headers_st,
    ),
    min_size=1,
    max_size=12,
)
# a format-5 batch: ("rich", records, codec, positions a store compacted away)
rich_st = st.tuples(
    st.just("rich"),
    rich_records_st,
    st.sampled_from(list(Codec)),
    st.sets(st.integers(0, 11), max_size=4),
)
mixed_st = st.lists(st.one_of(batches_st.map(lambda bs: bs[0]), rich_st), min_size=1, max_size=5)
names_st = st.lists(st.sampled_from(SIGNED_COLUMNS), min_size=1, unique=True)
SUBSETS = [c for k in range(1, len(SIGNED_COLUMNS) + 1) for c in combinations(SIGNED_COLUMNS, k)]


def _reply(batches: list, first: int = 0, stamp: int = STAMP) -> qp.ReadReply:
    packed = []
    offset = first
    for b in batches:
        if isinstance(b, tuple) and b[0] == "rich":
            _, recs, codec, drop = b
            blob = seal_rich(IDENTITY, encode_topic(TOPIC), offset, recs, stamp, codec)
            # a store drops only records with a key (compaction keeps every keyless one)
            dropped = [offset + i for i in drop if i < len(recs) and recs[i].key is not None]
            if dropped:
                records_at = 2 + blob[1] + 36
                blob = compact_rich(blob, records_at, offset, len(recs), dropped)
            packed.append((offset, offset + len(recs) - 1, blob))
            offset += len(recs)
            continue
        if isinstance(b, int):
            blob = seal_gap(IDENTITY, TOPIC, offset, b, stamp)
            packed.append((offset, offset + b - 1, blob))
            offset += b
            continue
        b, fmt = b if isinstance(b, tuple) else (b, 3)  # (records, batch format)
        blob = seal_records(
            IDENTITY,
            encode_topic(TOPIC),
            offset,
            [k for k, _ in b],
            [v for _, v in b],
            stamp,
            fmt=fmt,
        )
        packed.append((offset, offset + len(b) - 1, blob))
        offset += len(b)
    f, lasts, ends, data = qp.pack_batches(packed)
    return qp.ReadReply(1, TOPIC, IDENTITY.node_id, 0, offset, f, lasts, ends, data, "signed")


def _slow(reply: qp.ReadReply, lo: int, hi: int) -> list[dict]:
    """The rows of offsets lo..hi-1, decoded record by record."""
    rows = []
    for opened in opened_batches(reply):
        recs = opened.records
        for i, offset in enumerate(recs.offsets):
            if lo <= offset < hi:
                rows.append(
                    {
                        "key": recs.keys[i],
                        "value": recs.values[i],
                        "topic": TOPIC,
                        "partition": IDENTITY.node_id,
                        "offset": offset,
                        "timestamp": recs.timestamps[i],
                        "timestampType": 0,
                        "headers": [{"key": k, "value": v} for k, v in recs.headers[i]],
                    }
                )
    return rows


def _plain(name: str, values: list) -> list:
    if name == "timestamp":  # datetimes (UTC) -> ms
        return [round(v.timestamp() * 1000) for v in values]
    return values


@settings(max_examples=300, deadline=None)
@given(mixed_st, st.integers(0, 3), names_st, st.integers(1, 30), st.data())
def test_chunks_equal_the_records_of_every_batch(batches, first, names, chunk_rows, data) -> None:
    reply = _reply(batches, first)
    end = reply.next_offset
    lo = data.draw(st.integers(first, end))
    hi = data.draw(st.integers(lo, end + 2))
    expected = _slow(reply, lo, hi)
    chunks = list(signed_reply_chunks(reply, lo, hi, names, chunk_rows=chunk_rows))
    assert bool(chunks) == bool(expected)
    got: dict[str, list] = {name: [] for name in names}
    for chunk in chunks:
        assert list(chunk) == names  # only the named columns, in the order asked
        sizes = {len(column) for column in chunk.values()}
        assert len(sizes) == 1 and sizes != {0}
        for name, column in chunk.items():
            assert column.type == TYPES[name]
            column.validate(full=True)
            got[name] += _plain(name, column.to_pylist())
    assert got == {name: [row[name] for row in expected] for name in names}


@settings(max_examples=100, deadline=None)
@given(mixed_st, names_st)
def test_one_set_of_columns_is_the_chunks_concatenated(batches, names) -> None:
    reply = _reply(batches)
    columns = signed_reply_columns(reply, 0, reply.next_offset, names)
    chunks = list(signed_reply_chunks(reply, 0, reply.next_offset, names, chunk_rows=3))
    if not chunks:
        assert columns is None
        return
    assert columns is not None and list(columns) == names
    for name in names:
        assert columns[name].to_pylist() == sum((c[name].to_pylist() for c in chunks), [])


def test_a_big_batch_is_a_chunk_over_its_blob_not_a_copy() -> None:
    values = [bytes([i % 251]) * 100 for i in range(5000)]
    records = [(None, v) for v in values]
    reply = _reply([records, records[:10], records[:10], records])
    before = pa.total_allocated_bytes()
    chunks = list(signed_reply_chunks(reply, 0, reply.next_offset, ["value"], chunk_rows=4096))
    allocated = pa.total_allocated_bytes() - before
    # the two big batches alone; the two small ones gathered into one
    assert [len(c["value"]) for c in chunks] == [5000, 20, 5000]
    assert chunks[0]["value"].to_pylist() == values
    assert chunks[2]["value"].to_pylist() == values
    # offsets (4 bytes a row) and the 20 small values copied, not 1,000,000 value bytes
    assert allocated < 100_000, allocated


@pytest.mark.parametrize("names", SUBSETS, ids="-".join)
def test_every_batch_is_verified_exactly_once_whatever_the_columns(names, monkeypatch) -> None:
    verified: list[bytes] = []
    real = arrow_columns.verify_batch

    def counting(blob, **kwargs):
        verified.append(blob)
        return real(blob, **kwargs)

    monkeypatch.setattr(arrow_columns, "verify_batch", counting)
    records = [(b"k", b"value"), (None, b"v2")] * 3
    reply = _reply([(records, 3), 2, (records, 1), (records[:1], 3)])
    blobs = [blob for *_, blob in reply.batches()]
    chunks = list(signed_reply_chunks(reply, 1, 10, names, chunk_rows=2))
    assert sorted(verified) == sorted(blobs)  # each once, the gap's too, rows asked or not
    assert sum(len(next(iter(c.values()))) for c in chunks) == 7


def _tampered(reply: qp.ReadReply, at: int) -> qp.ReadReply:
    data = bytearray(reply.data)
    data[at] ^= 1
    return qp.ReadReply(
        1,
        TOPIC,
        IDENTITY.node_id,
        0,
        reply.head,
        reply.first,
        reply.lasts,
        reply.ends,
        bytes(data),
        "signed",
    )


@pytest.mark.parametrize("names", SUBSETS, ids="-".join)
def test_a_tampered_blob_is_refused_whatever_the_columns(names) -> None:
    reply = _reply([[(b"k", b"value")]])
    bad = _tampered(reply, len(reply.data) - 70)  # in the key or value: the signature fails
    with pytest.raises(WireError):
        list(signed_reply_chunks(bad, 0, 1, names))


def test_no_row_of_a_reply_is_given_before_all_its_batches_verify() -> None:
    records = [(None, b"v%d" % i) for i in range(10)]
    reply = _reply([records, records])
    bad = _tampered(reply, len(reply.data) - 70)  # the second batch
    chunks = signed_reply_chunks(bad, 0, 20, ["value"], chunk_rows=1)
    with pytest.raises(WireError):
        next(chunks)
    with pytest.raises(WireError):
        reply_batches(bad, 0, 20, pa.schema([("value", pa.binary())]), _opts(), "tcp://x")


def test_format_1_and_format_3_batches_read_alike() -> None:
    records = [(b"k", b"value"), (None, b"v2")]
    reply = _reply([(records, 1), (records, 3)])
    assert [blob[0] for *_, blob in reply.batches()] == [1, 3]
    columns = signed_reply_columns(reply, 0, 4)
    assert columns is not None
    assert columns["key"].to_pylist() == [b"k", None] * 2
    assert columns["value"].to_pylist() == [b"value", b"v2"] * 2
    assert columns["offset"].to_pylist() == [0, 1, 2, 3]


def test_a_store_that_misplaces_a_batch_is_refused() -> None:
    reply = _reply([[(None, b"a"), (None, b"b")]], first=5)
    _, lasts, ends, data = qp.pack_batches([(6, 7, next(reply.batches())[2])])
    moved = qp.ReadReply(1, TOPIC, IDENTITY.node_id, 0, 8, 6, lasts, ends, data, "signed")
    with pytest.raises(WireError, match="holds offsets 5..6"):
        signed_reply_columns(moved, 6, 8)


def test_an_unknown_column_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="no such column: nope"):
        list(signed_reply_chunks(_reply([[(None, b"a")]]), 0, 1, ["value", "nope"]))


def _opts() -> ReadOptions:
    return ReadOptions.parse({"stores": "tcp://127.0.0.1:1", "subscribe": TOPIC}, batch=True)


def _schema(names) -> pa.Schema:
    return pa.schema([(name, TYPES[name]) for name in names])


@pytest.mark.parametrize("names", [("value",), ("offset", "key"), SIGNED_COLUMNS], ids="-".join)
def test_reply_batches_have_the_schema_asked_for(names) -> None:
    records = [(b"k%d" % i, b"v%d" % i) for i in range(6)]
    reply = _reply([records, 1, records])
    schema = _schema(names)
    batches = reply_batches(reply, 2, 13, schema, _opts(), "tcp://x")
    assert batches and all(b.schema.equals(schema) for b in batches)
    rows = pa.Table.from_batches(batches).to_pylist()
    expected = _slow(reply, 2, 13)
    assert [{n: _plain(n, [r[n]])[0] for n in names} for r in rows] == [
        {n: e[n] for n in names} for e in expected
    ]


@pytest.mark.parametrize("names", SUBSETS[:: max(1, len(SUBSETS) // 20)], ids="-".join)
def test_rfc46_replies_build_the_columns_asked_for(names) -> None:
    values = [b"a", b"", b"ccc", b"dd"]
    packed = [(10 + i, 10 + i, v) for i, v in enumerate(values)]
    f, lasts, ends, data = qp.pack_batches(packed)
    reply = qp.ReadReply(1, TOPIC, "P", 10, 13, f, lasts, ends, data, "rfc46")
    schema = _schema(names)
    (batch,) = reply_batches(reply, 11, 13, schema, _opts(), "tcp://x")
    assert batch.schema.equals(schema)
    expected = {
        "key": [None, None],
        "value": [b"", b"ccc"],
        "topic": [TOPIC] * 2,
        "partition": ["P"] * 2,
        "offset": [11, 12],
        "timestamp": [None, None],
        "timestampType": [None, None],
        "headers": [[], []],
    }
    assert batch.to_pydict() == {n: expected[n] for n in names}


def test_batch_casts_a_column_of_another_type() -> None:
    schema = pa.schema([("offset", pa.int64())])
    batch = _batch({"offset": pa.array([1, 2], pa.int32()), "value": None}, schema)
    assert batch.schema.equals(schema) and batch.column(0).to_pylist() == [1, 2]
