"""Signed READ replies decoded straight into Arrow equal the per-record decoding."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dafka.errors import WireError  # noqa: E402
from dafka.query import protocol as qp  # noqa: E402
from dafka.query.client import verified_batches  # noqa: E402
from dafka.security.identity import Identity  # noqa: E402
from dafka.spark.arrow_columns import signed_reply_columns  # noqa: E402
from dafka.wire.signed_batch import seal_gap, seal_records  # noqa: E402
from dafka.wire.signed_checks import encode_topic  # noqa: E402

IDENTITY = Identity.generate()
TOPIC = "t"

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


def _reply(batches: list, first: int = 0, stamp: int = 1_700_000_000_000) -> qp.ReadReply:
    packed = []
    offset = first
    for b in batches:
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


def _slow(reply: qp.ReadReply, lo: int, hi: int) -> list[tuple]:
    rows = []
    for first, stamp, recs in verified_batches(reply):
        for i, (k, v) in enumerate(recs):
            if lo <= first + i < hi:
                rows.append((k, v, first + i, stamp))
    return rows


@settings(max_examples=150, deadline=None)
@given(batches_st, st.integers(0, 3), st.data())
def test_columns_equal_the_records_of_every_batch(batches, first, data) -> None:
    reply = _reply(batches, first)
    end = reply.next_offset
    lo = data.draw(st.integers(first, end))
    hi = data.draw(st.integers(lo, end + 2))
    expected = _slow(reply, lo, hi)
    columns = signed_reply_columns(reply, lo, hi)
    if not expected:
        assert columns is None
        return
    assert columns is not None
    keys, values, topics, partitions, offsets, stamps = (c.to_pylist() for c in columns)
    assert list(zip(keys, values, offsets, strict=True)) == [(k, v, o) for k, v, o, _ in expected]
    assert set(topics) == {TOPIC} and set(partitions) == {IDENTITY.node_id}
    assert [int(s.timestamp() * 1000) for s in stamps] == [s for *_, s in expected]


def test_format_1_and_format_3_batches_read_alike() -> None:
    records = [(b"k", b"value"), (None, b"v2")]
    reply = _reply([(records, 1), (records, 3)])
    assert [blob[0] for *_, blob in reply.batches()] == [1, 3]
    columns = signed_reply_columns(reply, 0, 4)
    assert columns is not None
    assert columns[0].to_pylist() == [b"k", None] * 2
    assert columns[1].to_pylist() == [b"value", b"v2"] * 2
    assert columns[4].to_pylist() == [0, 1, 2, 3]


def test_a_tampered_blob_is_refused() -> None:
    reply = _reply([[(b"k", b"value")]])
    data = bytearray(reply.data)
    data[-70] ^= 1  # inside the value or the key: the signature no longer verifies
    bad = qp.ReadReply(
        1,
        TOPIC,
        IDENTITY.node_id,
        0,
        1,
        reply.first,
        reply.lasts,
        reply.ends,
        bytes(data),
        "signed",
    )
    with pytest.raises(WireError):
        signed_reply_columns(bad, 0, 1)


def test_a_store_that_misplaces_a_batch_is_refused() -> None:
    reply = _reply([[(None, b"a"), (None, b"b")]], first=5)
    _, lasts, ends, data = qp.pack_batches([(6, 7, next(reply.batches())[2])])
    moved = qp.ReadReply(1, TOPIC, IDENTITY.node_id, 0, 8, 6, lasts, ends, data, "signed")
    with pytest.raises(WireError, match="holds offsets 5..6"):
        signed_reply_columns(moved, 6, 8)
