"""Service beacons (``Q``): a store's query endpoint, relayed by towers to locators."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import WireError
from dafka.wire import beacon
from dafka.wire.beacon import ServiceBeacon, decode_service_beacon
from tests.strategies import frame_lists, node_ids, ports

P = "3F2504E04F8911D39A0C0305E82C3301"


def test_golden_frames() -> None:
    frames = ServiceBeacon(P, "tcp://127.0.0.1:40123", "store").encode()
    assert frames == [b"Q", P.encode(), b"tcp://127.0.0.1:40123", b"store"]
    assert decode_service_beacon(frames) == ServiceBeacon(P, "tcp://127.0.0.1:40123", "store")


@given(
    node_ids(),
    st.sampled_from(["127.0.0.1", "10.1.2.3", "[::1]", "store-1.example"]),
    ports(),
    st.from_regex(r"[a-z][a-z0-9_-]{0,31}", fullmatch=True),
)
def test_round_trip(node_id: str, host: str, port: int, service: str) -> None:
    b = ServiceBeacon(node_id, f"tcp://{host}:{port}", service)
    assert decode_service_beacon(b.encode()) == b


@pytest.mark.parametrize(
    "frames",
    [
        [b"Q", P.encode(), b"tcp://127.0.0.1:1"],  # 3 frames
        [b"Q", P.encode(), b"tcp://127.0.0.1:1", b"store", b""],  # 5 frames
        [b"B", P.encode(), b"tcp://127.0.0.1:1", b"store"],  # a node beacon's command
        [b"Q", P.lower().encode(), b"tcp://127.0.0.1:1", b"store"],
        [b"Q", P.encode(), b"127.0.0.1:1", b"store"],  # no scheme
        [b"Q", P.encode(), b"tcp://127.0.0.1:0", b"store"],
        [b"Q", P.encode(), b"tcp://127.0.0.1:1", b""],
        [b"Q", P.encode(), b"tcp://127.0.0.1:1", b"Store"],
        [b"Q", P.encode(), b"tcp://127.0.0.1:1", b"s" * 33],
        [b"Q", P.encode(), b"tcp://127.0.0.1:1", "störe".encode()],
        [b"Q", P.encode(), "tcp://hôst:1".encode(), b"store"],
    ],
)
def test_bad_service_beacons_are_refused(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        decode_service_beacon(frames)


@pytest.mark.parametrize(
    "bad",
    [
        ServiceBeacon("nope", "tcp://127.0.0.1:1", "store"),
        ServiceBeacon(P, "udp://127.0.0.1:1", "store"),
        ServiceBeacon(P, "tcp://127.0.0.1:1", "9store"),
    ],
)
def test_encode_refuses_what_decode_would(bad: ServiceBeacon) -> None:
    with pytest.raises(WireError):
        bad.encode()


@given(frame_lists())
def test_garbage_raises_only_wire_error(frames: list[bytes]) -> None:
    try:
        decode_service_beacon(frames)
    except WireError:
        pass


def test_service_prefix_differs_from_what_nodes_subscribe_to() -> None:
    # nodes subscribe to W and B only, so a tower's XPUB never sends them Q beacons
    assert beacon.SERVICE not in (beacon.WELCOME, beacon.BEACON)
    assert not beacon.SERVICE.startswith((beacon.WELCOME, beacon.BEACON))
