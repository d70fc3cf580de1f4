import pytest

from dafka.errors import WireError
from tower.relay import relay_beacon

NODE = "0123456789ABCDEF0123456789ABCDEF"


def test_node_beacon_becomes_tower_beacon_with_explicit_host() -> None:
    out = relay_beacon([b"B", NODE.encode(), b"127.0.0.1", b"49153"], "10.1.2.3")
    assert out == [b"B", NODE.encode(), b"tcp://127.0.0.1:49153"]


def test_empty_host_uses_peer_address() -> None:
    out = relay_beacon([b"B", NODE.encode(), b"", b"49153"], "192.0.2.7")
    assert out == [b"B", NODE.encode(), b"tcp://192.0.2.7:49153"]


@pytest.mark.parametrize(
    "frames",
    [
        [b"B", NODE.encode(), b"127.0.0.1"],
        [b"X", NODE.encode(), b"127.0.0.1", b"1"],
        [b"B", b"not-an-id", b"127.0.0.1", b"1"],
        [b"B", NODE.encode(), b"127.0.0.1", b"http"],
        [b"B", NODE.encode(), b"127.0.0.1", b"70000"],
    ],
)
def test_bad_beacons_are_rejected(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        relay_beacon(frames, None)


def test_service_beacons_are_relayed_unchanged() -> None:
    frames = [b"Q", NODE.encode(), b"tcp://127.0.0.1:40123", b"store"]
    assert relay_beacon(frames, "10.9.9.9") == frames


@pytest.mark.parametrize(
    "frames",
    [
        [b"Q", NODE.encode(), b"tcp://127.0.0.1:40123"],
        [b"Q", NODE.encode(), b"127.0.0.1:40123", b"store"],
        [b"Q", b"bad", b"tcp://127.0.0.1:40123", b"store"],
    ],
)
def test_bad_service_beacons_are_not_relayed(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        relay_beacon(frames, None)
