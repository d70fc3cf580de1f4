"""The node's memo of decoded tower beacons (``dafka.wire.beacon.TowerBeaconMemo``).

Who sends what it reads: any node may beacon (the tower relays what its decoder accepts, and
a hostile or buggy tower may relay anything up to 4 frames of 4 KiB). What the memo may
change: nothing a node believes. The same frames must decode to the same beacon, other
frames as the decoder says, and what peers send must not grow it without bound.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import WireError
from dafka.wire import beacon
from dafka.wire.beacon import TowerBeacon, TowerBeaconMemo, decode_tower_beacon
from tests.strategies import frame_lists, tower_beacons

P = "3F2504E04F8911D39A0C0305E82C3301"


def _frames(endpoint: str = "tcp://127.0.0.1:50001", node_id: str = P) -> list[bytes]:
    return TowerBeacon(node_id, endpoint).encode()


def test_a_beacon_heard_again_is_decoded_once_to_the_same_beacon() -> None:
    memo = TowerBeaconMemo()
    first = memo.decode(_frames())
    again = memo.decode(_frames())
    assert again is first and first == decode_tower_beacon(_frames())
    assert len(memo) == 1


def test_a_node_that_moves_is_heard_at_its_new_endpoint() -> None:
    """Keyed by every frame, never by node ID: a stale endpoint would keep peers
    connecting where the node no longer is (and never where it is)."""
    memo = TowerBeaconMemo()
    assert memo.decode(_frames("tcp://127.0.0.1:50001")).endpoint == "tcp://127.0.0.1:50001"
    moved = memo.decode(_frames("tcp://127.0.0.2:50002"))
    assert moved.endpoint == "tcp://127.0.0.2:50002" and moved.node_id == P


def test_known_frames_under_a_prefix_no_tower_sends_are_refused() -> None:
    """The prefix is checked on every read, not only the first: what the decoder refuses
    stays refused though its other frames were heard before."""
    memo = TowerBeaconMemo()
    frames = _frames()
    memo.decode(frames)
    for prefix in (b"X", b"T", b"Tt", b"Q"):
        with pytest.raises(WireError):
            memo.decode([prefix, *frames[1:]])
    with pytest.raises(WireError):
        memo.decode([*frames, b"k" * 32, b"extra"])


def test_a_refused_beacon_is_never_remembered() -> None:
    memo = TowerBeaconMemo()
    bad = [beacon.BEACON, P.encode(), b"tcp://127.0.0.1:80"]  # a privileged port
    for _ in range(3):
        with pytest.raises(WireError):
            memo.decode(bad)
    assert len(memo) == 0


def test_a_flood_of_distinct_beacons_keeps_the_memo_bounded() -> None:
    memo = TowerBeaconMemo(max_beacons=64, max_bytes=1 << 20)
    for port in range(50000, 50000 + 1000):
        memo.decode(_frames(f"tcp://127.0.0.1:{port}"))
        assert len(memo) <= 64
    assert memo.decode(_frames("tcp://127.0.0.1:50999")).endpoint.endswith(":50999")


def test_the_memo_is_bounded_in_bytes_too() -> None:
    memo = TowerBeaconMemo(max_beacons=10_000, max_bytes=2_000)
    for port in range(50000, 50200):
        memo.decode(_frames(f"tcp://127.0.0.1:{port}"))
        assert memo._bytes <= 2_000
    assert 0 < len(memo) < 200


@given(tower_beacons())
def test_the_memo_decodes_what_the_decoder_does(tb: TowerBeacon) -> None:
    memo = TowerBeaconMemo()
    frames = tb.encode()
    assert memo.decode(frames) == tb == memo.decode(frames)


@given(frame_lists())
def test_the_memo_refuses_what_the_decoder_refuses(frames: list[bytes]) -> None:
    memo = TowerBeaconMemo()
    for _ in range(2):
        try:
            expected: TowerBeacon | WireError = decode_tower_beacon(frames)
        except WireError as exc:
            expected = exc
        try:
            got: TowerBeacon | WireError = memo.decode(frames)
        except WireError as exc:
            got = exc
        assert type(got) is type(expected)
        if isinstance(expected, TowerBeacon):
            assert got == expected


@given(st.integers(min_value=1024, max_value=65535))
def test_ports_heard_one_after_another_each_decode_to_their_own(port: int) -> None:
    memo = TowerBeaconMemo()
    memo.decode(_frames("tcp://127.0.0.1:50000"))
    assert memo.decode(_frames(f"tcp://127.0.0.1:{port}")).endpoint == f"tcp://127.0.0.1:{port}"
