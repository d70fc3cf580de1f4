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
