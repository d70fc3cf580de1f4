"""The rfc46 codec: byte-exact against golden vectors, and robust against bad input.

Golden vectors live in ``tests/data/wire/*.hex``. RECORD, HEAD, FETCH, ACK and
GET-HEADS are the sniffed examples of dafka-wire-reference.md §3; the others are
derived by hand from its field tables (each file's header says which).
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from dafka.errors import WireError
from dafka.wire import rfc46
from dafka.wire.rfc46 import (
    Ack,
    Command,
    ConsumerHello,
    DirectHead,
    DirectRecord,
    Fetch,
    GetHeads,
    Head,
    Record,
    StoreHello,
)
from tests.strategies import (
    MESSAGE_STRATEGIES,
    MESSAGE_TYPES,
    U32_MAX,
    U64_MAX,
    WIRE_DATA_DIR,
    contents,
    frame_lists,
    golden_frames,
    node_ids,
    offsets,
    rfc46_messages,
    topics,
)

P = "3F2504E04F8911D39A0C0305E82C3301"  # producer = partition
C = "6BA7B8109DAD11D180B400C04FD430C8"  # consumer
S = "6BA7B8119DAD11D180B400C04FD430C8"  # store

GOLDEN: dict[str, rfc46.Message] = {
    "record": Record("hello", P, 0, b"py record 0"),
    "head": Head("hello", P, 1),
    "fetch": Fetch(P, C, "hello", 0, 100_000),
    "ack": Ack(P, "hello", 1),
    "get_heads": GetHeads("hello", C),
    "direct_record": DirectRecord(C, "hello", P, 1, b"py record 1"),
    "direct_head": DirectHead(C, "hello", P, 1),
    "consumer_hello": ConsumerHello(S, C, ("hello", "hello2")),
    "consumer_hello_empty": ConsumerHello(S, C, ()),
    "store_hello": StoreHello(C, S),
}
SNIFFED = {"record", "head", "fetch", "ack", "get_heads"}
BEACON_VECTORS = {"node_beacon", "tower_beacon", "welcome"}  # tested in test_wire_beacon.py

KNOWN_IDS = {c.value[0] for c in Command}
TWO_FRAME = (Record, DirectRecord)


def _nul(frame0: bytes) -> int:
    return frame0.index(b"\0", 1)


# ------------------------------------------------------------------ golden vectors


def test_every_vector_file_is_checked() -> None:
    # signed_*.hex belong to the signed profile (checked in test_wire_signed.py)
    on_disk = {p.stem for p in WIRE_DATA_DIR.glob("*.hex") if not p.stem.startswith("signed_")}
    assert on_disk == set(GOLDEN) | BEACON_VECTORS


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_encode_is_byte_exact(name: str) -> None:
    assert rfc46.encode(GOLDEN[name]) == golden_frames(name)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_decode(name: str) -> None:
    assert rfc46.decode(golden_frames(name)) == GOLDEN[name]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_header_names_source(name: str) -> None:
    header = (WIRE_DATA_DIR / f"{name}.hex").read_text(encoding="utf-8")
    assert "# Source:" in header
    assert "dafka-wire-reference.md" in header
    assert ("SNIFFED" in header) == (name in SNIFFED)
    assert ("DERIVED" in header) == (name not in SNIFFED)


def test_sniffed_layout_spelled_out() -> None:
    """The spec's examples once more, as Python literals (independent of the files)."""
    pid, cid = P.encode(), C.encode()
    zero, one = bytes(8), (1).to_bytes(8, "big")
    assert rfc46.encode(GOLDEN["record"]) == [
        b"Mhello\x00\x01" + b"\x20" + pid + b"\x05hello" + zero,
        b"py record 0",
    ]
    assert rfc46.encode(GOLDEN["head"]) == [b"Hhello\x00\x01\x20" + pid + b"\x05hello" + one]
    assert rfc46.encode(GOLDEN["fetch"]) == [
        b"F" + pid + b"\x00\x01\x20" + cid + b"\x05hello" + zero + bytes.fromhex("000186a0")
    ]
    # ACK: no address field; the subject length follows the version at once.
    assert rfc46.encode(GOLDEN["ack"]) == [b"K" + pid + b"\x00\x01\x05hello" + one]
    assert rfc46.encode(GOLDEN["get_heads"]) == [b"Ghello\x00\x01\x20" + cid]


def test_command_ids_are_the_reference_ones() -> None:
    assert {c.name: c.value for c in Command} == {
        "RECORD": b"M",
        "DIRECT_RECORD": b"D",
        "FETCH": b"F",
        "ACK": b"K",
        "HEAD": b"H",
        "DIRECT_HEAD": b"E",
        "GET_HEADS": b"G",
        "CONSUMER_HELLO": b"W",
        "STORE_HELLO": b"L",
    }


def test_split_header() -> None:
    frame0 = golden_frames("fetch")[0]
    assert rfc46.split_header(frame0) == (b"F", P, 1 + 32 + 2)


# ------------------------------------------------------------------- round trips


@pytest.mark.parametrize("cls", MESSAGE_TYPES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_round_trip_every_type(cls: type, data: st.DataObject) -> None:
    msg = data.draw(MESSAGE_STRATEGIES[cls]())
    frames = rfc46.encode(msg)
    assert len(frames) == (2 if cls in TWO_FRAME else 1)
    assert rfc46.decode(frames) == msg


@pytest.mark.parametrize("cls", MESSAGE_TYPES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_round_trip_wide_fields(cls: type, data: st.DataObject) -> None:
    """Any text the fields can carry (NUL in string fields, empty, non-ASCII) survives."""
    msg = data.draw(MESSAGE_STRATEGIES[cls](wide=True))
    assert rfc46.decode(rfc46.encode(msg)) == msg


@given(rfc46_messages())
def test_decode_accepts_buffer_frames(msg: rfc46.Message) -> None:
    frames = [bytearray(f) for f in rfc46.encode(msg)]
    assert rfc46.decode(frames) == msg
    assert rfc46.decode([memoryview(bytes(f)) for f in frames]) == msg


@given(topics(), node_ids(), offsets(), contents())
def test_encode_record_fast_path_matches_encode(
    topic: str, partition: str, offset: int, content: bytes
) -> None:
    fast = rfc46.encode_record(topic.encode(), partition.encode(), offset, content)
    assert fast == rfc46.encode(Record(topic, partition, offset, content))


@given(topics(), node_ids(), offsets(), st.lists(contents(), max_size=5))
def test_record_heads_match_encode_record_per_offset(
    topic: str, partition: str, offset: int, values: list[bytes]
) -> None:
    assume(offset + len(values) <= U64_MAX + 1)
    t, p = topic.encode(), partition.encode()
    heads = rfc46.record_heads(t, p, offset, len(values))
    fast = [[head, v] for head, v in zip(heads, values, strict=True)]
    assert fast == [rfc46.encode_record(t, p, offset + i, v) for i, v in enumerate(values)]
    assert fast == [
        rfc46.encode(Record(topic, partition, offset + i, v)) for i, v in enumerate(values)
    ]
    assert rfc46.record_heads(t, p, offset, len(values)) == [frames[0] for frames in fast]


def test_empty_content_and_edge_numbers() -> None:
    for msg in (
        Record("t", P, U64_MAX, b""),
        DirectRecord(C, "t", P, 0, b""),
        Fetch(P, C, "t", U64_MAX, U32_MAX),
        Fetch(P, C, "t", 0, 0),
    ):
        assert rfc46.decode(rfc46.encode(msg)) == msg


def test_255_byte_fields_are_carried() -> None:
    topic = "é" * 127 + "x"  # 255 UTF-8 bytes
    msg = Record(topic, "p" * 255, 7, b"v")
    assert rfc46.decode(rfc46.encode(msg)) == msg


# ------------------------------------------------------------- encode rejections


@pytest.mark.parametrize(
    "msg",
    [
        Record("x" * 256, P, 0, b""),  # topic over 255 bytes
        Record("t", "é" * 128, 0, b""),  # address over 255 bytes
        Ack(P, "y" * 256, 0),
        Record("a\0b", P, 0, b""),  # NUL in the frame-0 topic
        DirectRecord("a\0b", "t", P, 0, b""),
        Record("t", P, -1, b""),
        Record("t", P, 2**64, b""),
        Head("t", P, -5),
        Fetch(P, C, "t", 0, -1),
        Fetch(P, C, "t", 0, 2**32),
        Fetch(P, C, "t", 2**64, 0),
        Ack(P, "t\ud800", 0),  # lone surrogate: not UTF-8
        ConsumerHello(S, C, ("ok", "\udc80")),
        StoreHello("\ud800", S),
    ],
    ids=repr,
)
def test_encode_rejects_what_the_wire_cannot_carry(msg: rfc46.Message) -> None:
    with pytest.raises(WireError):
        rfc46.encode(msg)


def test_encode_rejects_non_messages() -> None:
    with pytest.raises(TypeError):
        rfc46.encode("not a message")  # type: ignore[arg-type]


# ------------------------------------------------------------- decode rejections


def _cuts(frames: list[bytes]) -> list[list[bytes]]:
    return [[frames[0][:i], *frames[1:]] for i in range(len(frames[0]))]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_every_truncation_of_golden_frame0_is_rejected(name: str) -> None:
    for frames in _cuts(golden_frames(name)):
        with pytest.raises(WireError):
            rfc46.decode(frames)


@given(rfc46_messages(wide=True))
def test_every_truncation_of_frame0_is_rejected(msg: rfc46.Message) -> None:
    for frames in _cuts(rfc46.encode(msg)):
        with pytest.raises(WireError):
            rfc46.decode(frames)


@pytest.mark.parametrize("version", [0x00, 0x02, 0x30, 0xFF])
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_wrong_version_rejected(name: str, version: int) -> None:
    frames = golden_frames(name)
    frame0 = bytearray(frames[0])
    frame0[_nul(frames[0]) + 1] = version
    with pytest.raises(WireError, match="version"):
        rfc46.decode([bytes(frame0), *frames[1:]])


@given(rfc46_messages(), st.integers(0, 255).filter(lambda v: v != 1))
def test_any_other_version_rejected(msg: rfc46.Message, version: int) -> None:
    frames = rfc46.encode(msg)
    frame0 = bytearray(frames[0])
    frame0[_nul(frames[0]) + 1] = version
    with pytest.raises(WireError):
        rfc46.decode([bytes(frame0), *frames[1:]])


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_unknown_command_rejected(name: str) -> None:
    frame0 = golden_frames(name)[0]
    unknown = [b for b in range(256) if b not in KNOWN_IDS]
    assert len(unknown) == 256 - 9
    for cmd in unknown:
        with pytest.raises(WireError, match="unknown command"):
            rfc46.decode([bytes((cmd,)) + frame0[1:]])


def test_lower_case_ids_are_unknown() -> None:
    """The generated .bnf shows lower case; the code sends upper case only."""
    frames = golden_frames("record")
    with pytest.raises(WireError):
        rfc46.decode([b"m" + frames[0][1:], frames[1]])


@pytest.mark.parametrize("name", ["record", "direct_record"])
def test_record_needs_exactly_one_content_frame(name: str) -> None:
    frame0, content = golden_frames(name)
    with pytest.raises(WireError):
        rfc46.decode([frame0])
    with pytest.raises(WireError):
        rfc46.decode([frame0, content, b"extra"])
    with pytest.raises(WireError):
        rfc46.decode([frame0, content, b""])


@pytest.mark.parametrize("name", sorted(set(GOLDEN) - {"record", "direct_record"}))
def test_single_frame_commands_reject_extra_frames(name: str) -> None:
    with pytest.raises(WireError):
        rfc46.decode([*golden_frames(name), b"extra"])


@pytest.mark.parametrize("frames", [[], [b""], [b"M"], [b"Mhello"], [b"Mhello\0"]], ids=repr)
def test_degenerate_input_rejected(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        rfc46.decode(frames)


def test_record_and_head_subject_must_equal_frame0_topic() -> None:
    """Stricter than the reference (which never checks): a mismatch is rejected."""
    body = b"\x20" + P.encode() + b"\x06hello2" + bytes(8)
    with pytest.raises(WireError, match="subject"):
        rfc46.decode([b"Mhello\0\x01" + body, b"x"])
    with pytest.raises(WireError, match="subject"):
        rfc46.decode([b"Hhello\0\x01" + body])


@pytest.mark.parametrize(
    "frame0",
    [
        b"M\xff\xfe\0\x01\x00\x02\xff\xfe" + bytes(8),  # topic not UTF-8
        b"Gt\0\x01\x02\xc3\x28",  # address not UTF-8
        b"WS\0\x01\x01C" + b"\0\0\0\x01" + b"\0\0\0\x01\xff",  # strings entry not UTF-8
    ],
    ids=repr,
)
def test_non_utf8_text_rejected(frame0: bytes) -> None:
    frames = [frame0, b""] if frame0[:1] == b"M" else [frame0]
    with pytest.raises(WireError):
        rfc46.decode(frames)


def test_huge_strings_count_rejected_fast() -> None:
    frame0 = b"W" + S.encode() + b"\0\x01\x20" + C.encode() + b"\xff\xff\xff\xff"
    with pytest.raises(WireError):
        rfc46.decode([frame0])


def test_strings_entry_longer_than_frame_rejected() -> None:
    frame0 = b"WS\0\x01\x01C\0\0\0\x01" + struct.pack(">I", 1000) + b"short"
    with pytest.raises(WireError):
        rfc46.decode([frame0])


# ----------------------------------------------------------------- trailing bytes


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_trailing_bytes_in_frame0_ignored(name: str) -> None:
    frames = golden_frames(name)
    for junk in (b"\0", b"\x01", b"trailing junk", bytes(300)):
        assert rfc46.decode([frames[0] + junk, *frames[1:]]) == GOLDEN[name]


@given(rfc46_messages(), st.binary(min_size=1, max_size=64))
def test_trailing_bytes_ignored_for_any_message(msg: rfc46.Message, junk: bytes) -> None:
    frames = rfc46.encode(msg)
    assert rfc46.decode([frames[0] + junk, *frames[1:]]) == msg


# ------------------------------------------------------------------------ garbage


def _decode_or_wire_error(frames: list[bytes]) -> None:
    try:
        msg = rfc46.decode(frames)
    except WireError:
        return
    assert isinstance(msg, MESSAGE_TYPES)


@given(frame_lists())
def test_random_frames_raise_only_wire_error(frames: list[bytes]) -> None:
    _decode_or_wire_error(frames)


@given(
    st.sampled_from(sorted(KNOWN_IDS)),
    st.binary(max_size=40),
    st.binary(max_size=80),
    st.lists(st.binary(max_size=16), max_size=2),
)
def test_random_fields_after_a_valid_header_raise_only_wire_error(
    cmd: int, slot: bytes, body: bytes, extra: list[bytes]
) -> None:
    """Garbage that gets past the header, so every field parser is exercised."""
    _decode_or_wire_error([bytes((cmd,)) + slot.replace(b"\0", b"") + b"\0\x01" + body, *extra])


@given(rfc46_messages(wide=True), st.data())
def test_mutated_messages_raise_only_wire_error(msg: rfc46.Message, data: st.DataObject) -> None:
    frames = rfc46.encode(msg)
    frame0 = bytearray(frames[0])
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        pos = data.draw(st.integers(0, len(frame0)))
        if op == "insert":
            frame0.insert(pos, data.draw(st.integers(0, 255)))
        elif pos < len(frame0):
            if op == "flip":
                frame0[pos] = data.draw(st.integers(0, 255))
            else:
                del frame0[pos]
    _decode_or_wire_error([bytes(frame0), *frames[1:]])


# ------------------------------------------------------------------ subscriptions


TOPIC_ADDRESSED = {
    Command.RECORD: lambda topic: Record(topic, P, 0, b"x"),
    Command.HEAD: lambda topic: Head(topic, P, 0),
    Command.GET_HEADS: lambda topic: GetHeads(topic, C),
}

NODE_ADDRESSED = {
    Command.DIRECT_RECORD: lambda node: DirectRecord(node, "t", P, 0, b"x"),
    Command.DIRECT_HEAD: lambda node: DirectHead(node, "t", P, 0),
    Command.FETCH: lambda node: Fetch(node, C, "t", 0, 1),
    Command.ACK: lambda node: Ack(node, "t", 0),
    Command.CONSUMER_HELLO: lambda node: ConsumerHello(node, C, ()),
    Command.STORE_HELLO: lambda node: StoreHello(node, S),
}

_TYPE_OF = {
    Command.RECORD: Record,
    Command.DIRECT_RECORD: DirectRecord,
    Command.FETCH: Fetch,
    Command.ACK: Ack,
    Command.HEAD: Head,
    Command.DIRECT_HEAD: DirectHead,
    Command.GET_HEADS: GetHeads,
    Command.CONSUMER_HELLO: ConsumerHello,
    Command.STORE_HELLO: StoreHello,
}


def _frame0(msg: rfc46.Message) -> bytes:
    return rfc46.encode(msg)[0]


def test_topic_prefix_bytes() -> None:
    assert rfc46.topic_prefix(Command.RECORD, "hello") == b"Mhello\0"
    assert rfc46.topic_prefix(Command.HEAD, "hello") == b"Hhello\0"
    assert rfc46.topic_prefix(Command.GET_HEADS, "hello") == b"Ghello\0"


@pytest.mark.parametrize("cmd", list(TOPIC_ADDRESSED), ids=lambda c: c.name)
def test_topic_prefix_is_exact_where_reference_prefix_is_not(cmd: Command) -> None:
    """ZMQ SUB filtering is ``frame0.startswith(prefix)``."""
    make = TOPIC_ADDRESSED[cmd]
    hello, hello2 = _frame0(make("hello")), _frame0(make("hello2"))
    ours = rfc46.topic_prefix(cmd, "hello")
    assert hello.startswith(ours)
    assert not hello2.startswith(ours)
    # The reference subscribes without the NUL, and so also gets "hello2".
    reference = cmd.value + b"hello"
    assert hello.startswith(reference) and hello2.startswith(reference)


@pytest.mark.parametrize("cmd", list(TOPIC_ADDRESSED), ids=lambda c: c.name)
@given(a=topics(), b=topics())
def test_topic_prefix_matches_only_its_own_topic(cmd: Command, a: str, b: str) -> None:
    frame0 = _frame0(TOPIC_ADDRESSED[cmd](b))
    assert frame0.startswith(rfc46.topic_prefix(cmd, a)) == (a == b)
    assert frame0.startswith(rfc46.topic_prefix(cmd, b))


@pytest.mark.parametrize("cmd", list(TOPIC_ADDRESSED), ids=lambda c: c.name)
@given(base=topics(max_bytes=200), suffix=st.text(min_size=1, max_size=10))
def test_topic_prefix_excludes_extensions(cmd: Command, base: str, suffix: str) -> None:
    longer = base + suffix.replace("\0", "")
    assume(longer != base)
    frame0 = _frame0(TOPIC_ADDRESSED[cmd](longer))
    assert not frame0.startswith(rfc46.topic_prefix(cmd, base))


def test_direct_prefix_has_no_nul() -> None:
    prefix = rfc46.direct_prefix(Command.DIRECT_RECORD, C)
    assert prefix == b"D" + C.encode()
    assert len(prefix) == 33
    assert b"\0" not in prefix


@pytest.mark.parametrize("cmd", list(NODE_ADDRESSED), ids=lambda c: c.name)
@given(mine=node_ids(), other=node_ids())
def test_direct_prefix_selects_by_node_id(cmd: Command, mine: str, other: str) -> None:
    prefix = rfc46.direct_prefix(cmd, mine)
    assert b"\0" not in prefix
    assert _frame0(NODE_ADDRESSED[cmd](mine)).startswith(prefix)
    assert _frame0(NODE_ADDRESSED[cmd](other)).startswith(prefix) == (mine == other)


@given(rfc46_messages())
def test_bare_command_subscription_gets_every_message_of_that_type(msg: rfc46.Message) -> None:
    """Stores subscribe to bare ``M``, ``H``, ``F``, ``G``."""
    frame0 = _frame0(msg)
    for cmd in Command:
        assert frame0.startswith(cmd.value) == (type(msg) is _TYPE_OF[cmd])


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (b"\x01L" + C.encode(), rfc46.Subscription(True, b"L", C.encode())),
        (b"\x00L" + C.encode(), rfc46.Subscription(False, b"L", C.encode())),
        (b"\x01Mhello\0", rfc46.Subscription(True, b"M", b"hello\0")),
        (b"\x01F", rfc46.Subscription(True, b"F", b"")),
        (b"", None),
        (b"\x01", None),  # a subscription to "" (everything)
        (b"\x00", None),
        (b"\x02Mhello", None),
        (b"Mhello", None),
    ],
    ids=repr,
)
def test_parse_subscription(frame: bytes, expected: rfc46.Subscription | None) -> None:
    assert rfc46.parse_subscription(frame) == expected


@given(mine=node_ids())
def test_parse_subscription_recovers_node_id(mine: str) -> None:
    """A store seeing ``\\x01 L <consumer>`` can address STORE-HELLO to ``rest``."""
    sub = rfc46.parse_subscription(b"\x01" + rfc46.direct_prefix(Command.STORE_HELLO, mine))
    assert sub == rfc46.Subscription(True, b"L", mine.encode())
    reply = _frame0(StoreHello(sub.rest.decode(), S))
    assert reply.startswith(rfc46.direct_prefix(Command.STORE_HELLO, mine))


@given(st.binary(max_size=64))
def test_parse_subscription_never_raises(frame: bytes) -> None:
    sub = rfc46.parse_subscription(frame)
    if sub is not None:
        assert (b"\x01" if sub.subscribe else b"\x00") + sub.cmd + sub.rest == frame
