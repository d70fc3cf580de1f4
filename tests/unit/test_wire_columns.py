"""Columns over a verified batch blob (dafka.wire.columns.Column): a lazy, read-only
sequence of the records' keys or values that equals the lists they stand for."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.wire import signed
from dafka.wire.columns import ABSENT, Column
from tests.signing import PRODUCER

keys_st = st.one_of(st.none(), st.binary(max_size=12))
records_st = st.one_of(
    st.lists(st.tuples(st.none(), st.binary(max_size=40)), min_size=1, max_size=30),
    st.lists(st.tuples(st.binary(max_size=12), st.binary(max_size=40)), min_size=1, max_size=30),
    st.lists(st.tuples(keys_st, st.binary(max_size=40)), min_size=1, max_size=30),
)
index_st = st.one_of(st.none(), st.integers(-35, 35))
slice_st = st.builds(
    slice, index_st, index_st, st.one_of(st.none(), st.sampled_from([-3, -1, 1, 2]))
)


def _columns(records: list[tuple[bytes | None, bytes]], fmt: int = 3):  # type: ignore[no-untyped-def]
    blob = signed.encode_batch(PRODUCER, "t", 7, records, 1, fmt=fmt)
    return blob, signed.verify_batch(blob).columns()


def _expected(records: list[tuple[bytes | None, bytes]]):  # type: ignore[no-untyped-def]
    keys = [k for k, _ in records]
    return (None if all(k is None for k in keys) else keys), [v for _, v in records]


@given(records_st, st.sampled_from(signed.BATCH_FORMATS))
def test_columns_are_the_lists_of_the_records(records, fmt) -> None:  # type: ignore[no-untyped-def]
    """Read every way a list is read: equality, list(), len, each index (negative too)."""
    blob, (keys, values) = _columns(records, fmt)
    want_keys, want_values = _expected(records)
    assert (keys, values) == (want_keys, want_values)
    assert signed.unchecked_columns(blob) == (want_keys, want_values)
    assert isinstance(values, Column) and list(values) == want_values
    n = len(records)
    assert len(values) == n
    for i in range(-n, n):
        assert values[i] == want_values[i]
        assert type(values[i]) is bytes
    if want_keys is None:
        assert keys is None
    else:
        assert isinstance(keys, Column) and list(keys) == want_keys and len(keys) == n
        assert [keys[i] for i in range(-n, n)] == want_keys + want_keys
    for column in (values, keys):
        if column is None:
            continue
        with pytest.raises(IndexError):
            column[n]
        with pytest.raises(IndexError):
            column[-n - 1]


@given(records_st)
def test_the_columnar_view_is_the_values_back_to_back(records) -> None:  # type: ignore[no-untyped-def]
    blob, (keys, values) = _columns(records)
    want_keys, want_values = _expected(records)
    assert bytes(values.buffer) == b"".join(want_values)
    assert values.buffer.obj is blob  # no copy
    assert values.nbytes == sum(map(len, want_values))
    assert values.lengths.format == "I" and values.lengths.readonly
    assert values.lengths.tolist() == [len(v) for v in want_values]
    if want_keys is not None:
        assert bytes(keys.buffer) == b"".join(k for k in want_keys if k is not None)
        assert keys.lengths.tolist() == [ABSENT if k is None else len(k) for k in want_keys]


@given(records_st, slice_st, slice_st, st.booleans())
def test_slices_are_the_lists_slices(records, cut, again, indexed_first) -> None:  # type: ignore[no-untyped-def]
    """Slices of a column (and slices of those), before and after an element was read
    by index (which keeps where each element starts)."""
    blob, (keys, values) = _columns(records)
    want_keys, want_values = _expected(records)
    for column, want in ((values, want_values), (keys, want_keys)):
        if column is None:
            continue
        if indexed_first:
            column[0]
        part = column[cut]
        assert isinstance(part, Column)
        assert part == want[cut] and list(part) == want[cut] and len(part) == len(want[cut])
        assert [part[i] for i in range(len(part))] == want[cut]
        assert part[again] == want[cut][again]
        if cut.step in (None, 1):
            assert part.buffer.obj is blob  # shares the blob
        assert bytes(part.buffer) == b"".join(x for x in want[cut] if x is not None)
        assert part.nbytes == len(part.buffer)


def test_a_consumer_cut_off_the_head_reads_the_rest() -> None:
    """What the consumer core does with a batch overlapping what it delivered."""
    records = [(None, b"v%d" % i) for i in range(1000)]
    _, (_, values) = _columns(records)
    assert values[998:] == [b"v998", b"v999"]
    assert values[1:][-1] == b"v999" and values[:-1][-1] == b"v998"
    assert values[500:501] == [b"v500"] and values[500:500] == []


def test_a_gap_statement_has_empty_columns() -> None:
    gap = signed.verify_batch(signed.seal_gap(PRODUCER, "t", 0, 3, 1))
    keys, values = gap.columns()
    assert keys is None and values == [] and len(values) == 0 and not values
    assert values.nbytes == 0 and list(values) == []


def test_equality_is_a_lists_and_nothing_else() -> None:
    _, (_, values) = _columns([(None, b"a"), (None, b"bc")])
    _, (keys, other) = _columns([(b"k", b"a"), (None, b"bc")])
    assert values == [b"a", b"bc"] == values and values == (b"a", b"bc")
    assert values == other and other == values  # the same elements in another blob
    _, (_, same_lengths) = _columns([(None, b"a"), (None, b"bd")])
    assert values != same_lengths and same_lengths != values
    assert values != [b"a", b"b"] and values != [b"a"] and values != [b"ab", b"c"]
    assert values != b"abc" and values != "ab" and values != {b"a", b"bc"}
    assert keys == [b"k", None] and keys != [b"k", b""] and keys != other
    assert Column(b"ab", array("I", [2]), 0, 2) != Column(b"ab", array("I", [1, 1]), 0, 2)
    with pytest.raises(TypeError):
        hash(values)
    assert repr(values) == "Column([b'a', b'bc'])"
    _, (_, many) = _columns([(None, b"x")] * 6)
    assert repr(many) == "Column([b'x', b'x', b'x', b'x'] + 2 more)"


def test_a_column_is_read_only() -> None:
    _, (_, values) = _columns([(None, b"a"), (None, b"bc")])
    with pytest.raises(TypeError):
        values[0] = b"z"  # type: ignore[index]
    with pytest.raises(TypeError):
        values.lengths[0] = 5
    with pytest.raises(TypeError):
        values.buffer[0] = 0
    with pytest.raises(AttributeError):
        values.extra = 1  # type: ignore[attr-defined]
    assert values == [b"a", b"bc"]


def test_columns_make_no_bytes_object_per_record_until_one_is_read() -> None:
    """The consumer's hot path: a batch's columns slice its blob a few times (its
    lengths), however many records it holds; each element read slices it once."""
    from dafka.wire import signed_batch

    sliced: list[slice] = []

    class Spy(bytes):
        def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
            if isinstance(index, slice):
                sliced.append(index)
            return bytes.__getitem__(self, index)

    records = [(b"k%d" % i, b"v%d" % i) for i in range(100)]
    blob = Spy(signed.encode_batch(PRODUCER, "t", 0, records, 1))
    keys, values = signed_batch._record_columns(blob, len(b"t"), len(records))
    assert len(sliced) <= 3 and len(values) == 100 and values.nbytes == 290
    made = len(sliced)
    assert values[3] == b"v3" and keys is not None and keys[3] == b"k3"
    assert values[-1:] == [b"v99"]  # a slice of the column: one element read
    assert len(sliced) == made + 3
