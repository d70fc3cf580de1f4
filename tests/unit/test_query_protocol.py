"""The store query protocol codec (docs/query.md): round trips, bounds, garbage."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import WireError
from dafka.query import protocol as qp
from tests.strategies import frame_lists, node_ids, topics

P = "3F2504E04F8911D39A0C0305E82C3301"


def test_heads_request_golden() -> None:
    frames = qp.encode_request(qp.HeadsRequest(7, ("a", "b")))
    assert frames == [msgpack.packb([1, "heads", 7, ["a", "b"]])]
    assert qp.decode_request(frames) == qp.HeadsRequest(7, ("a", "b"))
    assert qp.decode_request(qp.encode_request(qp.HeadsRequest(8))) == qp.HeadsRequest(8, None)


def test_read_request_golden() -> None:
    req = qp.ReadRequest(9, "events", P, 42, 1000, 65536)
    frames = qp.encode_request(req)
    assert frames == [msgpack.packb([1, "read", 9, "events", P, 42, 1000, 65536])]
    assert qp.decode_request(frames) == req


@given(
    st.integers(0, 2**64 - 1),
    topics(),
    node_ids(),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
)
def test_read_request_round_trip(
    rid: int, topic: str, partition: str, offset: int, n: int, size: int
) -> None:
    req = qp.ReadRequest(rid, topic, partition, offset, n, size)
    assert qp.decode_request(qp.encode_request(req)) == req


@given(st.lists(st.tuples(st.integers(0, 2**40), st.binary(max_size=40)), max_size=30))
def test_read_reply_round_trip(items: list[tuple[int, bytes]]) -> None:
    # contiguous batches of varying widths
    batches = []
    offset = 5
    for width, blob in items:
        last = offset + (width % 4)
        batches.append((offset, last, blob))
        offset = last + 1
    first, lasts, ends, data = qp.pack_batches(batches)
    reply = qp.ReadReply(3, "t", P, 0, offset + 10, first, lasts, ends, data)
    decoded = qp.decode_reply(qp.encode_reply(reply))
    assert isinstance(decoded, qp.ReadReply)
    assert list(decoded.batches()) == batches
    assert decoded.count == len(batches)
    assert decoded.next_offset == (offset if batches else None)


def test_heads_and_error_replies_round_trip() -> None:
    heads = qp.HeadsReply(1, (qp.PartitionInfo("t", P, 3, 99),), truncated=True)
    assert qp.decode_reply(qp.encode_reply(heads)) == heads
    err = qp.ErrorReply(2, qp.ErrorCode.BELOW_TAIL, "gone", 50, 99)
    assert qp.decode_reply(qp.encode_reply(err)) == err


def test_pack_batches_refuses_holes() -> None:
    with pytest.raises(WireError):
        qp.pack_batches([(0, 0, b"a"), (2, 2, b"b")])


@pytest.mark.parametrize(
    "fields",
    [
        [2, "heads", 1, None],  # another version
        [1, "heads", -1, None],  # negative id
        [1, "heads", 1, ["a"] * (qp.MAX_HEADS_TOPICS + 1)],
        [1, "heads", 1, [""]],
        [1, "heads", 1, ["a\0b"]],
        [1, "heads", 1, "topic"],
        [1, "read", 1, "t", "not-a-partition", 0, 1, 1],
        [1, "read", 1, "t", P, -1, 1, 1],
        [1, "read", 1, "t", P, 0, True, 1],
        [1, "read", 1, "t", P, 0, 1],
        [1, "write", 1],
        [1, "status", 1, "extra"],
        [1, "status", -1],
        {"kind": "heads"},
        [1, "heads"],
    ],
)
def test_bad_requests_are_refused(fields: object) -> None:
    with pytest.raises(WireError):
        qp.decode_request([msgpack.packb(fields)])


def test_oversized_request_is_refused_before_decoding() -> None:
    with pytest.raises(WireError):
        qp.decode_request([b"\x91" + b"\xc0" * qp.MAX_REQUEST_BYTES])


def test_read_reply_with_inconsistent_positions_is_refused() -> None:
    first, lasts, ends, data = qp.pack_batches([(0, 0, b"abc"), (1, 1, b"de")])
    header = msgpack.packb(
        [1, "read", 1, "t", P, 0, 1, first, lasts, ends, "rfc46"], use_bin_type=True
    )
    assert isinstance(qp.decode_reply([header, data]), qp.ReadReply)
    with pytest.raises(WireError):
        qp.decode_reply([header, data + b"x"])  # data longer than the positions say
    with pytest.raises(WireError):
        qp.decode_reply([header])  # no data frame


@given(frame_lists())
def test_garbage_requests_raise_only_wire_error(frames: list[bytes]) -> None:
    try:
        qp.decode_request(frames)
    except WireError:
        pass


@given(frame_lists())
def test_garbage_replies_raise_only_wire_error(frames: list[bytes]) -> None:
    try:
        qp.decode_reply(frames)
    except WireError:
        pass


@given(
    st.recursive(
        st.none() | st.integers(-(2**63), 2**64 - 1) | st.text() | st.binary(),
        st.lists,
        max_leaves=12,
    )
)
def test_any_msgpack_request_raises_only_wire_error(value: object) -> None:
    try:
        qp.decode_request([msgpack.packb([1, "read", 1, value, value, value, value, value])])
    except WireError:
        pass


def test_request_id_of_a_bad_request() -> None:
    assert qp.request_id_of(msgpack.packb([1, "nope", 77])) == 77
    assert qp.request_id_of(b"\xff") is None


def test_status_round_trips_and_a_hostile_reply_is_refused() -> None:
    """STATUS (the console's disk column): a store's answer is peer input, each field a
    u64 or nil; anything else is a WireError, never a value the page shows."""
    req = qp.StatusRequest(9)
    assert qp.decode_request(qp.encode_request(req)) == req
    for reply in (qp.StatusReply(9, 1, 2, 3), qp.StatusReply(9, None, None, None)):
        assert qp.decode_reply(qp.encode_reply(reply)) == reply
    for fields in (
        [1, "status", 9, -1, 2, 3],
        [1, "status", 9, 1, "2", 3],
        [1, "status", 9, 1, 2, {"n": 1}],
        [1, "status", 9, 1, 2],
        [1, "status", 9, 1.5, 2, 3],
    ):
        with pytest.raises(WireError):
            qp.decode_reply([msgpack.packb(fields)])
