"""Discovery beacons and the tower welcome (dafka-wire-reference.md §2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import WireError
from dafka.wire import beacon
from dafka.wire.beacon import NodeBeacon, TowerBeacon
from tests.strategies import (
    frame_lists,
    golden_frames,
    hosts,
    node_beacons,
    node_ids,
    ports,
    tower_beacons,
)

P = "3F2504E04F8911D39A0C0305E82C3301"
PB = P.encode()

BAD_IDS = [
    b"",
    P.lower().encode(),  # the reference writes upper case
    PB[:31],
    PB + b"0",
    b"3F2504E0-4F89-11D3-9A0C-0305E82C3301",  # dashes
    PB[:31] + b"G",
    PB + b"\n",
    bytes.fromhex(P),  # 16 raw octets instead of hex text
    "É".encode() + PB[2:],
]

BAD_PORTS = [
    b"",
    b"0",
    b"65536",
    b"99999",
    b"-1",
    b"+80",
    b" 80",
    b"80 ",
    b"8o",
    b"0x50",
    b"80.0",
    b"1" * 5000,  # int() of a huge digit string must not escape as ValueError
    "٣".encode(),  # a non-ASCII digit
]

BAD_ENDPOINTS = [
    b"",
    b"127.0.0.1:49153",
    b"udp://127.0.0.1:49153",
    b"tcp://127.0.0.1",
    b"tcp://127.0.0.1:",
    b"tcp://:49153",
    b"tcp://127.0.0.1:0",
    b"tcp://127.0.0.1:65536",
    b"tcp://127.0.0.1:http",
    b"tcp://127.0.0.1:" + b"9" * 5000,
    "tcp://hôst:80".encode(),
]


# ------------------------------------------------------------------ golden vectors


def test_node_beacon_golden() -> None:
    msg = NodeBeacon(P, "127.0.0.1", 49153)
    frames = golden_frames("node_beacon")
    assert msg.encode() == frames == [b"B", PB, b"127.0.0.1", b"49153"]
    assert beacon.decode_node_beacon(frames) == msg


def test_tower_beacon_golden() -> None:
    msg = TowerBeacon(P, "tcp://127.0.0.1:49153")
    frames = golden_frames("tower_beacon")
    assert msg.encode() == frames == [b"B", PB, b"tcp://127.0.0.1:49153"]
    assert beacon.decode_tower_beacon(frames) == msg


def test_welcome_and_beacon_frames() -> None:
    assert golden_frames("welcome") == [beacon.WELCOME] == [b"W"]
    assert beacon.BEACON == b"B"


def test_node_beacon_with_empty_host() -> None:
    frames = [b"B", PB, b"", b"49153"]
    assert beacon.decode_node_beacon(frames) == NodeBeacon(P, "", 49153)
    assert NodeBeacon(P, "", 49153).encode() == frames


# --------------------------------------------------------------------- round trips


@given(node_beacons())
def test_node_beacon_round_trip(msg: NodeBeacon) -> None:
    frames = msg.encode()
    assert len(frames) == 4
    assert beacon.decode_node_beacon(frames) == msg


@given(tower_beacons())
def test_tower_beacon_round_trip(msg: TowerBeacon) -> None:
    frames = msg.encode()
    assert len(frames) == 3
    assert beacon.decode_tower_beacon(frames) == msg


# ---------------------------------------------------------------------- rejections


@pytest.mark.parametrize("port", BAD_PORTS, ids=lambda p: repr(p[:12]))
def test_node_beacon_bad_port_rejected(port: bytes) -> None:
    with pytest.raises(WireError):
        beacon.decode_node_beacon([b"B", PB, b"127.0.0.1", port])


@pytest.mark.parametrize("node_id", BAD_IDS, ids=repr)
def test_bad_node_id_rejected(node_id: bytes) -> None:
    with pytest.raises(WireError):
        beacon.decode_node_beacon([b"B", node_id, b"127.0.0.1", b"49153"])
    with pytest.raises(WireError):
        beacon.decode_tower_beacon([b"B", node_id, b"tcp://127.0.0.1:49153"])


@pytest.mark.parametrize("endpoint", BAD_ENDPOINTS, ids=lambda e: repr(e[:24]))
def test_tower_beacon_bad_endpoint_rejected(endpoint: bytes) -> None:
    with pytest.raises(WireError):
        beacon.decode_tower_beacon([b"B", PB, endpoint])


def test_non_ascii_host_rejected() -> None:
    with pytest.raises(WireError):
        beacon.decode_node_beacon([b"B", PB, "hôst".encode(), b"49153"])


@pytest.mark.parametrize(
    "frames",
    [
        [],
        [b"B"],
        [b"B", PB, b"tcp://127.0.0.1:49153"],  # a tower beacon is not a node beacon
        [b"B", PB, b"127.0.0.1", b"49153", b"extra"],
        [b"W", PB, b"127.0.0.1", b"49153"],
        [b"b", PB, b"127.0.0.1", b"49153"],
        [b"BB", PB, b"127.0.0.1", b"49153"],
    ],
    ids=repr,
)
def test_node_beacon_bad_shape_rejected(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        beacon.decode_node_beacon(frames)


@pytest.mark.parametrize(
    "frames",
    [
        [],
        [b"W"],  # the welcome is not a beacon
        [b"B", PB],
        [b"B", PB, b"127.0.0.1", b"49153"],  # a node beacon is not a tower beacon
        [b"X", PB, b"tcp://127.0.0.1:49153"],
    ],
    ids=repr,
)
def test_tower_beacon_bad_shape_rejected(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        beacon.decode_tower_beacon(frames)


@pytest.mark.parametrize(
    "msg",
    [
        NodeBeacon(P, "127.0.0.1", 0),
        NodeBeacon(P, "127.0.0.1", 65536),
        NodeBeacon(P, "127.0.0.1", -1),
        NodeBeacon(P, "127.0.0.1", True),  # type: ignore[arg-type]
        NodeBeacon(P, "hôst", 80),
        NodeBeacon(P.lower(), "127.0.0.1", 80),
        NodeBeacon("node-1", "127.0.0.1", 80),
    ],
    ids=repr,
)
def test_node_beacon_encode_rejects_what_decode_would(msg: NodeBeacon) -> None:
    with pytest.raises(WireError):
        msg.encode()


@pytest.mark.parametrize(
    "msg",
    [
        TowerBeacon(P, "127.0.0.1:80"),
        TowerBeacon(P, "tcp://127.0.0.1:0"),
        TowerBeacon(P, "tcp://hôst:80"),
        TowerBeacon("node-1", "tcp://127.0.0.1:80"),
    ],
    ids=repr,
)
def test_tower_beacon_encode_rejects_what_decode_would(msg: TowerBeacon) -> None:
    with pytest.raises(WireError):
        msg.encode()


@given(frame_lists(max_frames=5, max_size=40))
def test_random_frames_raise_only_wire_error(frames: list[bytes]) -> None:
    for decode in (beacon.decode_node_beacon, beacon.decode_tower_beacon):
        try:
            decode(frames)
        except WireError:
            pass


@given(st.binary(max_size=40), st.binary(max_size=40), st.binary(max_size=12))
def test_random_fields_raise_only_wire_error(node_id: bytes, host: bytes, port: bytes) -> None:
    try:
        beacon.decode_node_beacon([b"B", node_id, host, port])
    except WireError:
        pass
    try:
        beacon.decode_tower_beacon([b"B", node_id, b"tcp://" + host + b":" + port])
    except WireError:
        pass


# ---------------------------------------------------------------------- endpoint_for


def test_endpoint_for_empty_host_uses_peer_address() -> None:
    node = NodeBeacon(P, "", 49153)
    assert beacon.endpoint_for(node, "10.1.2.3") == "tcp://10.1.2.3:49153"


def test_endpoint_for_keeps_loopback_peer() -> None:
    """Unlike the reference, 127.0.0.1 is not swapped for an interface address."""
    node = NodeBeacon(P, "", 49153)
    assert beacon.endpoint_for(node, "127.0.0.1") == "tcp://127.0.0.1:49153"


def test_endpoint_for_explicit_host_wins_over_peer() -> None:
    node = NodeBeacon(P, "192.168.7.9", 5000)
    assert beacon.endpoint_for(node, "10.1.2.3") == "tcp://192.168.7.9:5000"
    assert beacon.endpoint_for(node, None) == "tcp://192.168.7.9:5000"


def test_endpoint_for_without_any_address_falls_back_to_loopback() -> None:
    node = NodeBeacon(P, "", 5000)
    assert beacon.endpoint_for(node, None) == "tcp://127.0.0.1:5000"
    assert beacon.endpoint_for(node, "") == "tcp://127.0.0.1:5000"


def test_endpoint_for_brackets_ipv6() -> None:
    assert beacon.endpoint_for(NodeBeacon(P, "", 80), "::1") == "tcp://[::1]:80"
    assert beacon.endpoint_for(NodeBeacon(P, "fe80::1", 80), None) == "tcp://[fe80::1]:80"
    assert beacon.endpoint_for(NodeBeacon(P, "[::1]", 80), None) == "tcp://[::1]:80"


@given(node_beacons(), st.one_of(st.none(), hosts()))
def test_endpoint_for_gives_a_relayable_tower_beacon(node: NodeBeacon, peer: str | None) -> None:
    """What a tower builds from any node beacon encodes and decodes again."""
    node = beacon.decode_node_beacon(node.encode())
    tower = TowerBeacon(node.node_id, beacon.endpoint_for(node, peer))
    assert beacon.decode_tower_beacon(tower.encode()) == tower
    assert tower.endpoint.endswith(f":{node.port}")
    expected_host = node.host or peer or "127.0.0.1"
    assert expected_host.strip("[]") in tower.endpoint


@given(node_ids(), ports())
def test_endpoint_for_port_is_decimal(node_id: str, port: int) -> None:
    assert beacon.endpoint_for(NodeBeacon(node_id, "h", port), None) == f"tcp://h:{port}"
