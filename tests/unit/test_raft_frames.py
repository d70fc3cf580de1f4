"""ØMQ RAFT frame primitives: the spec's examples byte for byte, round trips, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import WireError
from dafka.raft.codec import (
    CHECKPOINT_DATA,
    MAX_TERM,
    MAX_UINT32,
    ClusterConfig,
    Entry,
    EntryType,
    Peer,
    RaftWireError,
    decode_bool,
    decode_config,
    decode_entry,
    decode_json,
    decode_json_index,
    decode_uint,
    decode_uint32,
    encode_bool,
    encode_config,
    encode_json,
    encode_json_index,
    encode_reqid,
    encode_uint,
    encode_uint32,
)
from dafka.raft.codec._frames import (
    MAX_UINT,
    decode_json_leader,
    decode_nuint,
    decode_peers,
    decode_reqid,
    decode_string,
    encode_entry,
    encode_nuint,
    encode_peers,
    encode_string,
)

# -- strategies shared with test_raft_wire / test_raft_storage -------------------------------

uints = st.integers(0, MAX_UINT)
terms = st.integers(0, MAX_TERM)
reqids = st.binary(min_size=12, max_size=12)
texts = st.text(max_size=20)
peers = st.builds(Peer, texts, texts)
peer_lists = st.lists(peers, max_size=5).map(tuple)
configs = st.builds(
    ClusterConfig,
    peer_lists,
    st.none() | peer_lists,
    st.lists(peers, max_size=3).map(tuple),
)


@st.composite
def entry_runs(draw, first: int | None = None, max_size: int = 6) -> tuple[Entry, ...]:
    """Consecutive entries starting at ``first`` (drawn if None)."""
    start = draw(st.integers(1, 2**40)) if first is None else first
    count = draw(st.integers(0, max_size))
    return tuple(
        Entry(
            start + i,
            draw(terms),
            draw(st.sampled_from(EntryType)),
            draw(reqids),
            draw(st.binary(max_size=40)),
        )
        for i in range(count)
    )


# -- golden vectors from the spec -------------------------------------------------------------


def test_string_foo() -> None:
    assert encode_string("foo") == bytes([0x66, 0x6F, 0x6F])
    assert decode_string(b"foo") == "foo"


@pytest.mark.parametrize(
    ("value", "frame"),
    [
        (255, bytes([0xFF])),
        (256, bytes([0x00, 0x01])),
        (9007199254740991, bytes([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F])),
        (0, b"\x00"),
        (MAX_UINT, b"\xff" * 8),
    ],
)
def test_uint_vectors(value: int, frame: bytes) -> None:
    assert encode_uint(value) == frame
    assert decode_uint(frame) == value


def test_bool_vectors() -> None:
    assert encode_bool(False) == b""
    assert encode_bool(True) == bytes([0x01])
    assert decode_bool(b"") is False
    assert decode_bool(b"\x01") is True
    assert decode_bool(b"\x00\x01") is False  # only the first byte counts
    assert decode_bool(b"\x02\x00") is True


def test_json_vectors() -> None:
    assert encode_json(None) == bytes([0xC0])
    assert encode_json([42, "foo", False]) == bytes([0x93, 0x2A, 0xA3, 0x66, 0x6F, 0x6F, 0xC2])
    assert decode_json(bytes([0x93, 0x2A, 0xA3, 0x66, 0x6F, 0x6F, 0xC2])) == [42, "foo", False]
    assert decode_json(b"\xc0") is None


@pytest.mark.parametrize(
    "index",
    [0, 1, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0xFFFFFFFF, 1 << 32, MAX_UINT, 123_456],
)
def test_json_index_is_the_same_bytes_as_encode_json(index: int) -> None:
    """The answer to a RequestUpdate carries its LOG INDEX through encode_json_index (no
    msgpack Packer): the bytes must be MessagePack's, at every width boundary."""
    assert encode_json_index(index) == encode_json(index)
    assert decode_json_index(encode_json_index(index)) == index


@given(st.integers(min_value=0, max_value=MAX_UINT))
def test_json_index_matches_encode_json_everywhere(index: int) -> None:
    assert encode_json_index(index) == encode_json(index)


@pytest.mark.parametrize("index", [-1, MAX_UINT + 1])
def test_json_index_out_of_range_is_refused(index: int) -> None:
    with pytest.raises(RaftWireError):
        encode_json_index(index)


STATE_ENTRY_FRAME = bytes(
    [0x59, 0x56, 0xDC, 0x88, 0x26, 0xF2, 0x7E, 0x10, 0xDC, 0xCC, 0xAB, 0x20]
    + [0x00]
    + [0x2A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
    + [0x66, 0x6F, 0x6F]
)
CHECKPOINT_ENTRY_FRAME = bytes([0x00] * 12 + [0x02] + [0x2B] + [0x00] * 6 + [0xC0])


def test_state_entry_vector() -> None:
    entry = Entry(7, 42, EntryType.STATE, bytes.fromhex("5956dc8826f27e10dcccab20"), b"foo")
    assert encode_entry(entry) == STATE_ENTRY_FRAME
    assert decode_entry(STATE_ENTRY_FRAME, 7) == entry


def test_checkpoint_entry_vector() -> None:
    entry = Entry(1, 43, EntryType.CHECKPOINT, bytes(12), CHECKPOINT_DATA)
    assert CHECKPOINT_DATA == b"\xc0"
    assert encode_entry(entry) == CHECKPOINT_ENTRY_FRAME
    assert decode_entry(CHECKPOINT_ENTRY_FRAME, 1) == entry


# -- integers ---------------------------------------------------------------------------------


def test_uint_errors() -> None:
    with pytest.raises(RaftWireError):
        decode_uint(b"")
    with pytest.raises(RaftWireError):
        decode_uint(b"\x01" * 9)
    for bad in (-1, MAX_UINT + 1, True, 1.0):
        with pytest.raises(RaftWireError):
            encode_uint(bad)  # type: ignore[arg-type]
    assert decode_uint(b"\x05\x00\x00") == 5  # non-minimal input is accepted


def test_nuint() -> None:
    assert encode_nuint(None) == b""
    assert decode_nuint(b"") is None
    assert encode_nuint(0) == b"\x00"
    assert decode_nuint(b"\x00") == 0
    with pytest.raises(RaftWireError):
        decode_nuint(b"\x00" * 9)


def test_uint32() -> None:
    assert encode_uint32(MAX_UINT32) == b"\xff" * 4
    with pytest.raises(RaftWireError):
        encode_uint32(MAX_UINT32 + 1)
    with pytest.raises(RaftWireError):
        decode_uint32(b"\x01" * 5)
    with pytest.raises(RaftWireError):
        decode_uint32(b"")


@given(uints)
def test_uint_round_trip_minimal(value: int) -> None:
    frame = encode_uint(value)
    assert 1 <= len(frame) <= 8
    assert len(frame) == 1 or frame[-1] != 0
    assert decode_uint(frame) == value
    assert decode_nuint(encode_nuint(value)) == value


@given(st.integers(0, MAX_UINT32))
def test_uint32_round_trip(value: int) -> None:
    assert decode_uint32(encode_uint32(value)) == value


@given(st.booleans())
def test_bool_round_trip(value: bool) -> None:
    assert decode_bool(encode_bool(value)) is value


@given(st.binary(max_size=12))
def test_any_frame_decodes_or_raises_wire_error(frame: bytes) -> None:
    for decode in (decode_uint, decode_nuint, decode_uint32, decode_json, decode_reqid):
        try:
            decode(frame)
        except RaftWireError:
            pass
    decode_bool(frame)


# -- strings, reqids, json --------------------------------------------------------------------


def test_string_errors() -> None:
    with pytest.raises(RaftWireError):
        decode_string(b"\xff")
    with pytest.raises(RaftWireError):
        encode_string("\udc80")


def test_reqid() -> None:
    reqid = bytes(range(12))
    assert encode_reqid(reqid) == reqid
    assert decode_reqid(reqid) == reqid
    for bad in (b"", bytes(11), bytes(13)):
        with pytest.raises(RaftWireError):
            decode_reqid(bad)
        with pytest.raises(RaftWireError):
            encode_reqid(bad)


@pytest.mark.parametrize(
    "frame",
    [b"", b"\xc1", b"\x93\x2a", b"\xc0\xc0", b"\x81\x91\x01\x02", b"\xa2\xff\xfe"],
    ids=["empty", "never-used", "truncated", "extra-data", "unhashable-key", "bad-utf8"],
)
def test_json_errors(frame: bytes) -> None:
    with pytest.raises(RaftWireError):
        decode_json(frame)


def test_json_unencodable() -> None:
    with pytest.raises(RaftWireError):
        encode_json(object())


def test_json_leader_and_index() -> None:
    assert decode_json_leader(encode_json("p1")) == "p1"
    assert decode_json_leader(b"\xc0") is None
    with pytest.raises(RaftWireError):
        decode_json_leader(encode_json(5))
    assert decode_json_index(encode_json(12345)) == 12345
    assert decode_json_index(encode_json(2.0**40)) == 2**40  # JavaScript peers send float64
    for bad in (-1, 1.5, "3", True, None, float("nan")):
        with pytest.raises(RaftWireError):
            decode_json_index(encode_json(bad))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)


@given(json_values)
def test_json_round_trip(value: object) -> None:
    assert decode_json(encode_json(value)) == value


# -- peers and CONFIG data --------------------------------------------------------------------


def test_plain_config_is_a_peer_list() -> None:
    config = ClusterConfig((Peer("a", "tcp://127.0.0.1:1"), Peer("b", "tcp://127.0.0.1:2")))
    data = encode_config(config)
    assert decode_json(data) == [["a", "tcp://127.0.0.1:1"], ["b", "tcp://127.0.0.1:2"]]
    assert decode_config(data) == config
    assert encode_peers(config.peers) == data
    assert decode_peers(data) == config.peers


def test_joint_config_is_old_new_object() -> None:
    old = (Peer("a", "u1"),)
    new = (Peer("a", "u1"), Peer("b", "u2"))
    data = encode_config(ClusterConfig(new, old))
    assert decode_json(data) == {"old": [["a", "u1"]], "new": [["a", "u1"], ["b", "u2"]]}
    assert decode_config(data) == ClusterConfig(new, old)


def test_learners_ride_in_the_object_form() -> None:
    config = ClusterConfig((Peer("a", "u1"),), None, (Peer("l", "u9"),))
    assert decode_json(encode_config(config)) == {"new": [["a", "u1"]], "learners": [["l", "u9"]]}
    assert decode_config(encode_config(config)) == config
    joint = ClusterConfig((Peer("a", "u1"),), (Peer("b", "u2"),), (Peer("l", "u9"),))
    assert decode_config(encode_config(joint)) == joint


@pytest.mark.parametrize(
    "value",
    [
        "x",
        5,
        [["a"]],
        [["a", 1]],
        [["a", "u", "extra"]],
        {"old": []},
        {"new": [], "other": []},
        {"new": "x"},
        {"new": [], "learners": [1]},
    ],
)
def test_bad_config_data(value: object) -> None:
    with pytest.raises(RaftWireError):
        decode_config(encode_json(value))


@given(configs)
def test_config_round_trip(config: ClusterConfig) -> None:
    assert decode_config(encode_config(config)) == config


# -- entries ----------------------------------------------------------------------------------


@given(entry_runs(max_size=1).filter(bool))
def test_entry_round_trip(run: tuple[Entry, ...]) -> None:
    (entry,) = run
    assert decode_entry(encode_entry(entry), entry.index) == entry


def test_entry_errors() -> None:
    with pytest.raises(RaftWireError):
        decode_entry(bytes(19), 1)
    with pytest.raises(RaftWireError):
        decode_entry(bytes(12) + b"\x03" + bytes(7), 1)
    with pytest.raises(RaftWireError):
        encode_entry(Entry(1, MAX_TERM + 1, EntryType.STATE))
    with pytest.raises(RaftWireError):
        encode_entry(Entry(1, 1, EntryType.STATE, reqid=b"short"))
    for kind in (-1, 3, 256):  # not a type: refused, never encoded as another one
        with pytest.raises(RaftWireError):
            encode_entry(Entry(1, 1, kind))  # type: ignore[arg-type]


@given(entry_runs(max_size=1).filter(bool))
def test_the_type_byte_is_the_types_value(run: tuple[Entry, ...]) -> None:
    (entry,) = run
    assert encode_entry(entry)[12] == int(entry.type)


def test_raft_wire_error_is_a_wire_error() -> None:
    assert issubclass(RaftWireError, WireError)
    assert issubclass(RaftWireError, ValueError)
