"""ØMQ RAFT RPC codec: exact frames, round trips for every message, fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.raft.codec import (
    MAX_UINT32,
    AppendEntries,
    AppendEntriesResponse,
    ClientDispatch,
    ConfigUpdate,
    ConfigUpdateResponse,
    ConfigUpdateStatus,
    EntriesStatus,
    Entry,
    EntryType,
    InstallSnapshot,
    InstallSnapshotResponse,
    InvalidConfigUpdate,
    MessageIdCounter,
    MsgType,
    Peer,
    RaftWireError,
    RequestBroadcastStateUrl,
    RequestBroadcastStateUrlResponse,
    RequestConfig,
    RequestConfigResponse,
    RequestEntries,
    RequestEntriesResponse,
    RequestLogInfo,
    RequestLogInfoResponse,
    RequestUpdate,
    RequestUpdateResponse,
    RequestVote,
    RequestVoteResponse,
    StateBroadcast,
    TimeoutNow,
    TimeoutNowResponse,
    UpdateStatus,
    decode_response,
    decode_router_request,
    encode_json,
)
from dafka.raft.codec import _clientrpc as clientrpc
from dafka.raft.codec import _frames as frames
from dafka.raft.codec import _peerrpc as peerrpc
from dafka.raft.codec import _wire as wire
from dafka.raft.codec._bounds import MAX_INDEX
from dafka.raft.codec._frames import encode_entry
from dafka.raft.codec._wire import (
    ClientDispatchResponse,
    decode_request,
    decode_state_broadcast,
    split_envelope,
)

from .test_raft_frames import (
    STATE_ENTRY_FRAME,
    entry_runs,
    peer_lists,
    reqids,
    terms,
    texts,
    uints,
)

CLUSTER = b"secret"
REQID = bytes.fromhex("5956dc8826f27e10dcccab20")
clusters = st.binary(max_size=16)
uint32s = st.integers(0, MAX_UINT32)
leaders = st.none() | texts
small = st.integers(0, 2**40)
indexes = st.integers(0, MAX_INDEX)
# peers a ConfigUpdate may name: printable ids, tcp://HOST:PORT urls (dafka.raft.codec._bounds)
valid_peers = st.builds(
    Peer,
    # drawn printable, not filtered (a filter on any text starved Hypothesis' health check)
    st.text(
        st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"))
        | st.just(" "),
        min_size=1,
        max_size=20,
    ).filter(str.isprintable),
    st.builds(
        "tcp://{}:{}".format,
        st.from_regex(r"[a-z0-9]{1,10}", fullmatch=True),
        st.integers(1, 65535),
    ),
)
valid_peer_lists = st.lists(valid_peers, max_size=5).map(tuple)

# -- strategies per message -------------------------------------------------------------------

request_votes = st.builds(
    RequestVote, uints, clusters, texts, terms, indexes, terms, st.booleans(), st.booleans()
)
vote_responses = st.builds(RequestVoteResponse, uints, terms, st.booleans())


@st.composite
def append_entries(draw) -> AppendEntries:
    prev = draw(small)
    return AppendEntries(
        draw(uints),
        draw(clusters),
        draw(texts),
        draw(terms),
        prev,
        draw(terms),
        draw(indexes),
        draw(entry_runs(first=prev + 1)),
    )


@st.composite
def append_responses(draw) -> AppendEntriesResponse:
    next_index = draw(st.none() | indexes.filter(lambda i: i > 0))
    return AppendEntriesResponse(draw(uints), draw(terms), draw(st.booleans()), next_index)


install_snapshots = st.builds(
    InstallSnapshot,
    uints,
    clusters,
    texts,
    terms,
    indexes,
    terms,
    indexes,
    indexes,
    st.binary(max_size=64),
)
install_responses = st.builds(InstallSnapshotResponse, uints, terms, st.none() | indexes)
timeout_nows = st.builds(TimeoutNow, uints, clusters, texts, terms)
timeout_now_responses = st.builds(TimeoutNowResponse, uints, terms)
request_configs = st.builds(RequestConfig, uint32s, clusters)
config_responses = st.builds(
    RequestConfigResponse, uint32s, st.booleans(), leaders, st.none() | peer_lists
)
request_updates = st.builds(RequestUpdate, reqids, clusters, st.binary(max_size=64))


@st.composite
def update_responses(draw) -> RequestUpdateResponse:
    status = draw(st.sampled_from(UpdateStatus))
    reqid = draw(reqids)
    if status is UpdateStatus.COMMITTED:
        return RequestUpdateResponse(reqid, status, index=draw(uints))
    if status is UpdateStatus.NOT_LEADER:
        return RequestUpdateResponse(reqid, status, leader=draw(leaders))
    return RequestUpdateResponse(reqid, status)


config_updates = st.builds(ConfigUpdate, reqids, clusters, valid_peer_lists, valid_peer_lists)


@st.composite
def config_update_responses(draw) -> ConfigUpdateResponse:
    status = draw(st.sampled_from(ConfigUpdateStatus))
    reqid = draw(reqids)
    if status is ConfigUpdateStatus.NOT_LEADER:
        return ConfigUpdateResponse(reqid, status, leader=draw(leaders))
    if status is ConfigUpdateStatus.ACCEPTED:
        return ConfigUpdateResponse(reqid, status, index=draw(st.none() | uints))
    if status is ConfigUpdateStatus.ARGUMENT_ERROR and draw(st.booleans()):
        return ConfigUpdateResponse(
            reqid, status, error_name=draw(texts), error_message=draw(texts)
        )
    return ConfigUpdateResponse(reqid, status)


@st.composite
def request_entries(draw) -> RequestEntries:
    return RequestEntries(
        draw(uint32s),
        draw(clusters),
        draw(indexes),
        draw(st.none() | uints),
        draw(st.none() | indexes),
    )


@st.composite
def entries_responses(draw) -> RequestEntriesResponse:
    request_id = draw(uint32s)
    status = draw(st.sampled_from(EntriesStatus))
    if status is EntriesStatus.NOT_LEADER:
        return RequestEntriesResponse.not_leader(request_id, draw(leaders))
    if status is EntriesStatus.SNAPSHOT:
        return RequestEntriesResponse.snapshot_chunk(
            request_id, draw(uints), draw(uints), draw(uints), draw(uints), draw(st.binary())
        )
    prev = draw(small)
    run = draw(entry_runs(first=prev + 1))
    return RequestEntriesResponse.batch(
        request_id, prev + len(run), run, status is EntriesStatus.LAST
    )


log_infos = st.builds(RequestLogInfo, uint32s, clusters)
log_info_responses = st.builds(
    RequestLogInfoResponse,
    uint32s,
    st.booleans(),
    leaders,
    uints,
    uints,
    uints,
    uints,
    uints,
    uints,
    uints,
)
broadcast_urls = st.builds(RequestBroadcastStateUrl, uint32s, clusters)
broadcast_url_responses = st.builds(RequestBroadcastStateUrlResponse, uint32s, st.none() | texts)
dispatches = st.builds(
    ClientDispatch,
    st.binary(min_size=1, max_size=12),
    st.binary(min_size=2, max_size=4),
    clusters,
    st.lists(st.binary(max_size=8), max_size=4).map(tuple),
)
dispatch_responses = st.builds(
    ClientDispatchResponse, st.binary(max_size=12), st.lists(st.binary(max_size=8)).map(tuple)
)


@st.composite
def broadcasts(draw) -> StateBroadcast:
    prev = draw(small)
    run = draw(entry_runs(first=prev + 1))
    return StateBroadcast(draw(clusters), draw(uints), prev + len(run), run)


REQUESTS = [
    request_votes,
    append_entries(),
    install_snapshots,
    timeout_nows,
    request_configs,
    request_updates,
    config_updates,
    request_entries(),
    log_infos,
    broadcast_urls,
    dispatches,
]
RESPONSES = [
    (MsgType.REQUEST_VOTE, vote_responses),
    (MsgType.APPEND_ENTRIES, append_responses()),
    (MsgType.INSTALL_SNAPSHOT, install_responses),
    (MsgType.TIMEOUT_NOW, timeout_now_responses),
    (MsgType.REQUEST_CONFIG, config_responses),
    (MsgType.REQUEST_UPDATE, update_responses()),
    (MsgType.CONFIG_UPDATE, config_update_responses()),
    (MsgType.REQUEST_ENTRIES, entries_responses()),
    (MsgType.REQUEST_LOG_INFO, log_info_responses),
    (MsgType.REQUEST_BROADCAST_STATE_URL, broadcast_url_responses),
    (b"my-type", dispatch_responses),
]
any_request = st.one_of(REQUESTS)
any_response = st.one_of([st.tuples(st.just(kind), strategy) for kind, strategy in RESPONSES])

# -- the module split -------------------------------------------------------------------------


# Every name of dafka.raft.codec._wire that dafka/, tower/, tests/, benchmarks/ and examples/ used
# before the codec was split into frames, peerrpc and clientrpc.
WIRE_NAMES = """
    AppendEntries AppendEntriesResponse ClientDispatch ClientDispatchResponse ConfigUpdate
    ConfigUpdateResponse ConfigUpdateStatus EntriesStatus FLAG_PRE_VOTE FLAG_TRANSFER
    InstallSnapshot InstallSnapshotResponse InvalidConfigUpdate MESSAGE_ID_MODULUS
    MessageIdCounter MsgType PEER_TYPES RaftWireError Request RequestBroadcastStateUrl
    RequestBroadcastStateUrlResponse RequestConfig RequestConfigResponse RequestEntries
    RequestEntriesResponse RequestLogInfo RequestLogInfoResponse RequestUpdate
    RequestUpdateResponse RequestVote RequestVoteResponse Response RouterRequest
    StateBroadcast TimeoutNow TimeoutNowResponse UpdateStatus decode_request decode_response
    decode_router_request decode_state_broadcast split_envelope
""".split()


def test_wire_reexports_its_parts() -> None:
    """``wire`` holds the dispatch, envelopes and StateBroadcast; the frame primitives, peer
    RPCs and client RPCs live beside it, and ``from dafka.raft import wire`` (or ``from
    dafka.raft.codec._wire import X``) still reaches each name it had, as the same object."""
    homes = {name: part for part in (frames, peerrpc, clientrpc) for name in part.__all__}
    assert set(WIRE_NAMES) <= set(wire.__all__)
    for name in wire.__all__:
        assert hasattr(wire, name), name
        if name in homes:
            assert getattr(wire, name) is getattr(homes[name], name), name
    assert set(peerrpc.__all__) | set(clientrpc.__all__) <= set(wire.__all__)
    assert wire.AppendEntriesResponse.__module__ == "dafka.raft.codec._peerrpc"
    assert wire.RequestEntries.__module__ == "dafka.raft.codec._clientrpc"
    assert wire.MsgType.__module__ == "dafka.raft.codec._frames"


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", REQUESTS, ids=lambda s: repr(s)[:40])
def test_request_round_trip(strategy: st.SearchStrategy) -> None:
    @given(strategy)
    def check(message) -> None:
        frames = message.encode()
        assert all(isinstance(frame, bytes) for frame in frames)
        assert decode_request(frames) == message

    check()


@pytest.mark.parametrize(("kind", "strategy"), RESPONSES, ids=[str(k) for k, _ in RESPONSES])
def test_response_round_trip(kind: MsgType | bytes, strategy: st.SearchStrategy) -> None:
    @given(strategy)
    def check(message) -> None:
        assert decode_response(kind, message.encode()) == message

    check()


@given(broadcasts())
def test_state_broadcast_round_trip(message: StateBroadcast) -> None:
    assert decode_state_broadcast(message.encode()) == message


# -- exact frames -----------------------------------------------------------------------------


def test_request_vote_frames() -> None:
    vote = RequestVote(1, CLUSTER, "p1", 256, 255, 3)
    assert vote.encode() == [b"\x01", b"\x3f", CLUSTER, b"p1", b"\x00\x01", b"\xff", b"\x03"]
    pre = RequestVote(2, CLUSTER, "p1", 5, 0, 0, pre_vote=True)
    assert pre.encode()[7:] == [b"\x01"]
    assert RequestVote(2, CLUSTER, "p1", 5, 0, 0, transfer=True).encode()[7:] == [b"\x02"]
    assert RequestVoteResponse(1, 256, True).encode() == [b"\x01", b"\x00\x01", b"\x01"]
    assert RequestVoteResponse(1, 0, False).encode() == [b"\x01", b"\x00", b""]


def test_append_entries_frames() -> None:
    entry = Entry(8, 42, EntryType.STATE, REQID, b"foo")
    message = AppendEntries(9, CLUSTER, "p1", 42, 7, 41, 6, (entry,))
    assert message.encode() == [
        b"\x09",
        b"\x2b",
        CLUSTER,
        b"p1",
        b"\x2a",
        b"\x07",
        b"\x29",
        b"\x06",
        STATE_ENTRY_FRAME,
    ]
    assert decode_request(message.encode()).entries[0].index == 8
    heartbeat = AppendEntries(10, CLUSTER, "p1", 42, 7, 41, 6)
    assert len(heartbeat.encode()) == 8
    # the reference server's form: frame 4 is where the follower's log may continue
    assert AppendEntriesResponse(9, 42, False, 3).encode() == [b"\x09", b"\x2a", b"", b"\x03"]
    assert AppendEntriesResponse(9, 42, True).encode() == [b"\x09", b"\x2a", b"\x01"]
    # the older Dafka form (conflict term 40, conflict index 5) still decodes
    old = decode_response(MsgType.APPEND_ENTRIES, [b"\x09", b"\x2a", b"", b"\x28", b"\x05"])
    assert old == AppendEntriesResponse(9, 42, False, 6, 40) and old.hint == 5


def test_install_snapshot_frames() -> None:
    message = InstallSnapshot(3, CLUSTER, "p1", 4, 100, 3, 0, 5, b"chunk")
    assert message.encode() == [
        b"\x03",
        b"\x24",
        CLUSTER,
        b"p1",
        b"\x04",
        b"\x64",
        b"\x03",
        b"\x00",
        b"\x05",
        b"chunk",
    ]
    assert message.is_last_chunk
    assert InstallSnapshotResponse(3, 4).encode() == [b"\x03", b"\x04"]
    assert InstallSnapshotResponse(3, 4, 65536).encode() == [b"\x03", b"\x04", b"\x00\x00\x01"]


def test_request_config_frames() -> None:
    assert RequestConfig(7, CLUSTER).encode() == [b"\x07", b"\x5e", CLUSTER]
    response = RequestConfigResponse(7, True, "p1", (Peer("p1", "tcp://h:1"),))
    assert response.encode() == [
        b"\x07",
        b"\x01",
        b"\xa2p1",
        encode_json([["p1", "tcp://h:1"]]),
    ]
    assert RequestConfigResponse(7, False, None).encode() == [b"\x07", b"", b"\xc0"]


def test_request_update_frames() -> None:
    assert RequestUpdate(REQID, CLUSTER, b"data").encode() == [REQID, b"\x3d", CLUSTER, b"data"]
    pending = RequestUpdateResponse(REQID, UpdateStatus.PENDING)
    assert pending.encode() == [REQID, b"\x01"]
    committed = RequestUpdateResponse(REQID, UpdateStatus.COMMITTED, index=300)
    assert committed.encode() == [REQID, b"\x01", b"\xcd\x01\x2c"]
    not_leader = RequestUpdateResponse(REQID, UpdateStatus.NOT_LEADER, leader=None)
    assert not_leader.encode() == [REQID, b"", b"\xc0"]
    expired = RequestUpdateResponse(REQID, UpdateStatus.EXPIRED)
    assert expired.encode() == [REQID, b""]
    for message in (pending, committed, not_leader, expired):
        assert decode_response(MsgType.REQUEST_UPDATE, message.encode()) == message
    with pytest.raises(RaftWireError):
        RequestUpdateResponse(REQID, UpdateStatus.COMMITTED).encode()
    with pytest.raises(RaftWireError):
        RequestUpdate(b"short", CLUSTER, b"").encode()


def test_config_update_frames() -> None:
    message = ConfigUpdate(REQID, CLUSTER, (Peer("a", "u1"),))
    assert message.encode() == [REQID, b"\x26", CLUSTER, encode_json([["a", "u1"]])]
    with_learner = ConfigUpdate(REQID, CLUSTER, (Peer("a", "u1"),), (Peer("l", "u2"),))
    assert with_learner.encode()[3] == encode_json(
        {"new": [["a", "u1"]], "learners": [["l", "u2"]]}
    )
    error = ConfigUpdateResponse(
        REQID, ConfigUpdateStatus.ARGUMENT_ERROR, error_name="TypeError", error_message="m"
    )
    assert error.encode() == [REQID, b"\x02", encode_json({"name": "TypeError", "message": "m"})]
    assert ConfigUpdateResponse(REQID, ConfigUpdateStatus.BUSY).encode() == [REQID, b"\x03"]
    assert ConfigUpdateResponse(REQID, ConfigUpdateStatus.EXPIRED).encode() == [REQID, b"\x04"]
    assert ConfigUpdateResponse(REQID, ConfigUpdateStatus.NOT_LEADER).encode() == [
        REQID,
        b"\x00",
        b"\xc0",
    ]
    done = ConfigUpdateResponse(REQID, ConfigUpdateStatus.ACCEPTED, index=9)
    assert done.encode() == [REQID, b"\x01", b"\x09"]


@pytest.mark.parametrize(
    "value", [[["a"]], "peers", {"old": [], "new": []}, {"new": [], "x": 1}, [[1, 2]]]
)
def test_malformed_config_update_is_answerable(value: object) -> None:
    frames = [REQID, b"\x26", CLUSTER, encode_json(value)]
    message = decode_request(frames)
    assert isinstance(message, InvalidConfigUpdate)
    assert message.error_name == "TypeError"
    assert message.error_message
    assert message.encode() == frames


def test_config_update_not_msgpack() -> None:
    message = decode_request([REQID, b"\x26", CLUSTER, b"\xc1"])
    assert isinstance(message, InvalidConfigUpdate)
    assert message.error_name == "SyntaxError"


def test_config_update_response_errors() -> None:
    with pytest.raises(RaftWireError):
        decode_response(MsgType.CONFIG_UPDATE, [REQID, b"\x05"])
    with pytest.raises(RaftWireError):
        decode_response(MsgType.CONFIG_UPDATE, [REQID, b"\x03", b"\xc0"])
    with pytest.raises(RaftWireError):
        decode_response(MsgType.CONFIG_UPDATE, [REQID, b"\x02", encode_json(["x"])])
    # an absent leader frame on status 0 is accepted
    decoded = decode_response(MsgType.CONFIG_UPDATE, [REQID, b"\x00"])
    assert decoded == ConfigUpdateResponse(REQID, ConfigUpdateStatus.NOT_LEADER)


# -- RequestEntries streaming -----------------------------------------------------------------


def test_request_entries_request_frames() -> None:
    assert RequestEntries(5, CLUSTER, 10).encode() == [b"\x05", b"\x3c", CLUSTER, b"\x0a"]
    assert RequestEntries(5, CLUSTER, 10, 20).encode()[4:] == [b"\x14"]
    stop = RequestEntries(5, CLUSTER, 30, 0)
    assert stop.encode()[4:] == [b"\x00"]
    assert stop.is_stop
    assert not RequestEntries(5, CLUSTER, 30).is_stop
    # a snapshot follow-up without a count sends an empty (null) count frame
    follow_up = RequestEntries(5, CLUSTER, 0, None, 4096)
    assert follow_up.encode()[4:] == [b"", b"\x00\x10"]
    assert decode_request(follow_up.encode()) == follow_up
    # an empty count frame without offset decodes as "up to the commit index"
    assert decode_request([b"\x05", b"\x3c", CLUSTER, b"\x0a", b""]) == RequestEntries(
        5, CLUSTER, 10
    )


def test_request_entries_response_frames() -> None:
    entry = Entry(11, 42, EntryType.STATE, REQID, b"foo")
    more = RequestEntriesResponse.batch(5, 11, [entry], last=False)
    assert more.encode() == [b"\x05", b"\x02", b"\xc0", b"\x0b", STATE_ENTRY_FRAME]
    assert more.prev_index == 10
    last_empty = RequestEntriesResponse.batch(5, 10, [], last=True)
    assert last_empty.encode() == [b"\x05", b"\x01", b"\xc0", b"\x0a"]
    chunk = RequestEntriesResponse.snapshot_chunk(5, 100, 7, 0, 3, b"abc")
    assert chunk.encode() == [b"\x05", b"\x03", encode_json([0, 3, 7]), b"\x64", b"abc"]
    assert chunk.is_last_chunk
    not_leader = RequestEntriesResponse.not_leader(5, "p2")
    assert not_leader.encode() == [b"\x05", b"\x00", b"\xa2p2"]
    # frame 3 of statuses 1 and 2 is ignored whatever it holds
    odd = decode_response(MsgType.REQUEST_ENTRIES, [b"\x05", b"\x02", b"\xc1junk", b"\x0b"])
    assert odd == RequestEntriesResponse.batch(5, 11, [], last=False)


@pytest.mark.parametrize(
    "frames",
    [
        [b"\x05", b"\x04", b"\xc0", b"\x01"],  # unknown status
        [b"\x05", b"\x02", b"\xc0"],  # no last index
        [b"\x05", b"\x02", b"\xc0", b"\x00", STATE_ENTRY_FRAME],  # entry would be index 0
        [b"\x05", b"\x03", encode_json([0, 3]), b"\x64", b"abc"],  # bad position
        [b"\x05", b"\x03", encode_json([0, 3, 1]), b"\x64"],  # no chunk
        [b"\x05", b"\x00", b"\xc0", b"\x01"],  # not-leader with extra frame
        [b"\x05", b"\x00", encode_json(3)],  # leader id not a string
    ],
)
def test_request_entries_response_errors(frames: list[bytes]) -> None:
    with pytest.raises(RaftWireError):
        decode_response(MsgType.REQUEST_ENTRIES, frames)


def test_log_info_and_broadcast_frames() -> None:
    info = RequestLogInfoResponse(1, True, "p1", 2, 3, 4, 5, 6, 7, 8)
    assert info.encode() == [b"\x01", b"\x01", b"\xa2p1", *(bytes([n]) for n in range(2, 9))]
    assert RequestLogInfo(1, CLUSTER).encode() == [b"\x01", b"\x25", CLUSTER]
    assert RequestBroadcastStateUrl(1, CLUSTER).encode() == [b"\x01", b"\x2a", CLUSTER]
    url = RequestBroadcastStateUrlResponse(1, "tcp://127.0.0.1:9")
    assert url.encode() == [b"\x01", b"tcp://127.0.0.1:9"]
    assert RequestBroadcastStateUrlResponse(1).encode() == [b"\x01"]


def test_state_broadcast_frames() -> None:
    entry = Entry(11, 42, EntryType.STATE, REQID, b"foo")
    message = StateBroadcast(CLUSTER, 42, 11, (entry,))
    assert message.encode() == [CLUSTER, b"\x2a", b"\x0b", STATE_ENTRY_FRAME]
    assert decode_state_broadcast(message.encode()) == message
    assert StateBroadcast(CLUSTER, 42, 11).encode() == [CLUSTER, b"\x2a", b"\x0b"]
    with pytest.raises(RaftWireError):
        decode_state_broadcast([CLUSTER, b"\x2a", b"\x00", STATE_ENTRY_FRAME])


def test_client_dispatch() -> None:
    message = decode_request([REQID, b"kv", CLUSTER, b"a", b"b"])
    assert message == ClientDispatch(REQID, b"kv", CLUSTER, (b"a", b"b"))
    assert decode_response(b"kv", [REQID, b"ok"]) == ClientDispatchResponse(REQID, (b"ok",))
    with pytest.raises(RaftWireError):
        ClientDispatch(REQID, b"k", CLUSTER).encode()


@pytest.mark.parametrize(
    "frames",
    [
        [],
        [b"\x01"],
        [b"\x01", b"!"],  # reserved single-byte type
        [b"\x01", b""],
        [b"\x01", b"kv"],  # dispatch without cluster frame
        [b"", b"kv", CLUSTER],  # dispatch with an empty request id
        [b"", b"?", CLUSTER, b"p", b"\x01", b"\x01", b"\x01"],  # empty msg id
        [b"\x01", b"?", CLUSTER, b"\xff", b"\x01", b"\x01", b"\x01"],  # bad UTF-8 id
        [b"\x01", b"?", CLUSTER, b"p", b"\x01", b"\x01", b"\x01", b"\x01", b"x"],  # extra
        [b"\x01" * 5, b"^", CLUSTER],  # uint32 too long
        [b"\x01", b"=", CLUSTER, b"data"],  # reqid too short
        [b"\x01", b"+", CLUSTER, b"p", b"\x01", b"\x01", b"\x01", b"\x01", b"\x00" * 19],
    ],
)
def test_bad_requests(frames: list[bytes]) -> None:
    with pytest.raises(RaftWireError):
        decode_request(frames)


def test_non_bytes_frames_are_wire_errors() -> None:
    with pytest.raises(RaftWireError):
        decode_request([b"\x01", b"^", 5])  # type: ignore[list-item]
    assert decode_request([bytearray(b"\x01"), memoryview(b"^"), b"c"]) == RequestConfig(1, b"c")


# -- ROUTER envelopes -------------------------------------------------------------------------


def test_split_envelope_dealer() -> None:
    body = RequestConfig(7, CLUSTER).encode()
    envelope, rest = split_envelope([b"\x00peer", *body])
    assert envelope == (b"\x00peer",)
    assert rest == body


def test_split_envelope_req_delimiter_and_hops() -> None:
    body = RequestConfig(7, CLUSTER).encode()
    envelope, rest = split_envelope([b"id", b"", *body])
    assert envelope == (b"id", b"")
    assert rest == body
    envelope, rest = split_envelope([b"proxy", b"id", *body], hops=2)
    assert envelope == (b"proxy", b"id")
    assert rest == body
    for bad in ([b"id"], [b"id", b""], []):
        with pytest.raises(RaftWireError):
            split_envelope(bad)


def test_router_reply_echoes_the_raw_id_frame() -> None:
    # a client may send a non-minimal uint32; the reply must echo it byte for byte
    request = decode_router_request([b"peer", b"\x07\x00\x00\x00", b"^", CLUSTER])
    assert request.message == RequestConfig(7, CLUSTER)
    reply = request.reply(RequestConfigResponse(7, False, None))
    assert reply == [b"peer", b"\x07\x00\x00\x00", b"", b"\xc0"]


# -- message ids ------------------------------------------------------------------------------


def test_message_id_counter_wraps_at_2_24() -> None:
    counter = MessageIdCounter()
    assert [counter.next() for _ in range(3)] == [1, 2, 3]
    counter = MessageIdCounter(start=16777214)
    assert [counter() for _ in range(4)] == [16777214, 16777215, 0, 1]


# -- fuzzing ----------------------------------------------------------------------------------

frame_lists = st.lists(st.binary(max_size=24), max_size=12)
type_frames = st.sampled_from([t.value for t in MsgType] + [b"kv", b"!", b""])


@st.composite
def typed_frame_lists(draw) -> list[bytes]:
    frames = draw(frame_lists)
    frames[1:1] = [draw(type_frames)]
    if draw(st.booleans()):
        frames[0:0] = [draw(st.binary(min_size=1, max_size=12))]
    return frames


@st.composite
def mutated_requests(draw) -> list[bytes]:
    frames = draw(any_request).encode()
    action = draw(st.sampled_from(["drop", "insert", "replace", "truncate"]))
    at = draw(st.integers(0, len(frames)))
    junk = draw(st.binary(max_size=24))
    if action == "drop" and at < len(frames):
        del frames[at]
    elif action == "insert":
        frames.insert(at, junk)
    elif action == "replace" and at < len(frames):
        frames[at] = junk
    elif action == "truncate":
        frames = frames[:at]
    return frames


@given(frame_lists | typed_frame_lists() | mutated_requests())
def test_decode_request_raises_only_wire_errors(frames: list[bytes]) -> None:
    try:
        decode_request(frames)
    except RaftWireError:
        pass
    try:
        decode_router_request(frames)
    except RaftWireError:
        pass
    try:
        decode_state_broadcast(frames)
    except RaftWireError:
        pass


@given(st.sampled_from([k for k, _ in RESPONSES]), frame_lists)
def test_decode_response_raises_only_wire_errors(
    kind: MsgType | bytes, frames: list[bytes]
) -> None:
    try:
        decode_response(kind, frames)
    except RaftWireError:
        pass


@given(any_response, st.data())
def test_mutated_responses_raise_only_wire_errors(pair, data) -> None:
    kind, message = pair
    frames = message.encode()
    at = data.draw(st.integers(0, max(0, len(frames) - 1)))
    if frames:
        frames[at] = data.draw(st.binary(max_size=24))
    frames = frames[: data.draw(st.integers(0, len(frames) + 1))]
    try:
        decode_response(kind, frames)
    except RaftWireError:
        pass


@given(any_request)
def test_every_truncation_decodes_or_raises(message) -> None:
    frames = message.encode()
    for cut in range(len(frames)):
        try:
            decode_request(frames[:cut])
        except RaftWireError:
            pass


def test_entry_frames_are_checked_in_append_entries() -> None:
    frames = AppendEntries(1, CLUSTER, "p", 1, 0, 0, 0).encode()
    good = encode_entry(Entry(1, 1, EntryType.CONFIG, REQID, b"\x90"))
    assert decode_request([*frames, good]).entries[0].type is EntryType.CONFIG
    with pytest.raises(RaftWireError):
        decode_request([*frames, good[:19]])
