"""Attacks on the CURVE keys that beacons carry (docs/wire.md §6.1)."""

from __future__ import annotations

import pytest

from dafka.errors import WireError
from dafka.security.identity import Identity
from dafka.wire import beacon as wbeacon
from tower.relay import relay_beacon

VICTIM = Identity.from_seed(b"\x07" * 32)
MALLORY = Identity.from_seed(b"\x09" * 32)


def test_a_beacon_cannot_pair_a_node_id_with_another_key() -> None:
    # Mallory announces the victim's node ID with her own key: peers would then
    # accept her as the victim's CURVE server.
    forged = [wbeacon.BEACON, VICTIM.node_id.encode(), b"127.0.0.1", b"5000", MALLORY.public_key]
    with pytest.raises(WireError, match="does not own"):
        wbeacon.decode_node_beacon(forged)
    with pytest.raises(WireError, match="does not own"):
        relay_beacon(forged, None)
    relayed = [wbeacon.BEACON, VICTIM.node_id.encode(), b"tcp://127.0.0.1:5000"]
    with pytest.raises(WireError, match="does not own"):
        wbeacon.decode_tower_beacon([*relayed, MALLORY.public_key])
    with pytest.raises(WireError, match="does not own"):
        wbeacon.NodeBeacon(VICTIM.node_id, "127.0.0.1", 5000, MALLORY.public_key).encode()


def test_the_owner_key_is_relayed_as_a_fourth_frame() -> None:
    frames = wbeacon.NodeBeacon(VICTIM.node_id, "127.0.0.1", 5000, VICTIM.public_key).encode()
    assert len(frames) == 5
    out = relay_beacon(frames, None)
    assert out[3] == VICTIM.public_key
    tb = wbeacon.decode_tower_beacon(out)
    assert tb.public_key == VICTIM.public_key
    # without a key: the reference's 4 and 3 frames, unchanged
    plain = wbeacon.NodeBeacon(VICTIM.node_id, "127.0.0.1", 5000).encode()
    assert len(plain) == 4 and len(relay_beacon(plain, None)) == 3
