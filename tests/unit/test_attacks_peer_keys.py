"""Claimed CURVE keys (issue 32, point 4): no beacon binds an endpoint to a key for longer
than one failed handshake, a key whose handshake completes stays, and a flood of claims
costs a bounded number of keys, reconnections and log lines. Pure cores, fake time."""

from __future__ import annotations

import logging

import pytest

from dafka.core import peer_keys as peer_keys_mod
from dafka.core.discovery import Discovery
from dafka.core.peer_keys import Handshake, PeerKeys
from dafka.wire.beacon import TowerBeacon

ME = "A" * 32
STORE = "B" * 32
EVIL = "E" * 32
EP = "tcp://127.0.0.1:40000"
GOOD = b"\x01" * 32
BAD = b"\x02" * 32


def beacon(key: bytes | None, node_id: str = STORE, endpoint: str = EP) -> TowerBeacon:
    return TowerBeacon(node_id, endpoint, key)


def shake(d: Discovery, now: float, *events: Handshake) -> tuple[list[str], dict[str, bytes]]:
    """Feed ``events`` for EP; what the node was told to connect, with which keys."""
    connect: list[str] = []
    keys: dict[str, bytes] = {}
    for event in events:
        actions = d.on_handshake(EP, event, now)
        assert actions.disconnect == actions.connect  # a move is a disconnect then a connect
        connect += actions.connect
        keys.update(actions.keys)
    return connect, keys


def test_an_attackers_claim_gives_way_after_one_failed_handshake() -> None:
    d = Discovery(ME, curve=True)
    first = d.on_beacon(beacon(BAD, EVIL), 0.0)
    assert first.connect == [EP] and first.keys == {EP: BAD}  # only the attacker spoke yet
    # the store is down: refused at TCP, nothing is learnt of the key
    assert shake(d, 0.5, Handshake.DISCONNECTED) == ([], {})
    assert d.on_beacon(beacon(GOOD), 1.0).connect == []  # kept, tried when BAD fails
    assert d.keys.keys(EP) == [BAD, GOOD]
    # the store is up: BAD's handshake fails, once, and the connection moves to GOOD
    moved = shake(d, 1.1, Handshake.CONNECTED, Handshake.FAILED, Handshake.DISCONNECTED)
    assert moved == ([EP], {EP: GOOD})
    assert shake(d, 1.2, Handshake.CONNECTED, Handshake.SUCCEEDED) == ([], {})
    # the attacker goes on claiming: the working connection never moves
    for i in range(100):
        d.on_beacon(beacon(BAD, EVIL), 2.0 + i / 10)
        d.on_beacon(beacon(GOOD), 2.0 + i / 10)
        assert d.tick(2.0 + i / 10).connect == []
    assert d.keys.key(EP) == GOOD
    # the store restarts (same key): libzmq reconnects under GOOD, and it stays
    assert shake(d, 13.0, Handshake.DISCONNECTED, Handshake.CONNECTED) == ([], {})
    assert shake(d, 13.1, Handshake.SUCCEEDED) == ([], {})
    assert d.keys.key(EP) == GOOD


def test_a_late_event_of_the_old_connection_is_not_counted_against_the_new_key() -> None:
    d = Discovery(ME, curve=True)
    d.on_beacon(beacon(BAD, EVIL), 0.0)
    d.on_beacon(beacon(GOOD), 0.0)
    assert shake(d, 0.1, Handshake.CONNECTED, Handshake.FAILED)[1] == {EP: GOOD}
    # the old connection's DISCONNECTED, and a second failure event, come after the move
    assert shake(d, 0.1, Handshake.DISCONNECTED, Handshake.FAILED) == ([], {})
    assert d.keys.key(EP) == GOOD


def test_a_peer_back_under_a_new_key_is_reconnected_under_it() -> None:
    d = Discovery(ME, curve=True)
    d.on_beacon(beacon(GOOD), 0.0)
    shake(d, 0.1, Handshake.CONNECTED, Handshake.SUCCEEDED)
    new = b"\x03" * 32
    d.on_beacon(beacon(new, "C" * 32), 1.0)  # the store restarted with another node.key
    assert shake(d, 1.1, Handshake.DISCONNECTED) == ([], {})
    assert shake(d, 1.2, Handshake.CONNECTED, Handshake.FAILED)[1] == {EP: new}


def test_a_lone_failing_key_is_kept_and_the_next_claim_is_tried_at_the_next_failure() -> None:
    d = Discovery(ME, curve=True)
    d.on_beacon(beacon(BAD, EVIL), 0.0)
    for i in range(5):  # libzmq retries under BAD: nothing else to try
        assert shake(d, 0.1 * i, Handshake.CONNECTED, Handshake.FAILED) == ([], {})
    d.on_beacon(beacon(GOOD), 1.0)
    assert shake(d, 1.1, Handshake.CONNECTED, Handshake.FAILED)[1] == {EP: GOOD}


def test_failing_keys_take_turns_and_the_one_with_fewest_failures_goes_first() -> None:
    keys = PeerKeys()
    others = [bytes([k]) * 32 for k in (5, 6, 7)]
    assert keys.claim(EP, others[0], 0.0) == others[0]
    for k in others[1:]:
        assert keys.claim(EP, k, 0.0) is None
    tried = [others[0]]
    for _ in range(6):
        keys.on_handshake(EP, Handshake.CONNECTED, 0.0)
        moved = keys.on_handshake(EP, Handshake.FAILED, 0.0)
        assert moved is not None
        tried.append(moved)
    assert tried == others + others + others[:1]


def test_a_claim_no_longer_heard_gives_way_unless_its_connection_works() -> None:
    d = Discovery(ME, curve=True, timeout=4.0)
    d.on_beacon(beacon(BAD, EVIL), 0.0)  # the attacker stops after one beacon
    for t in range(1, 6):
        d.on_beacon(beacon(GOOD), float(t))
        actions = d.tick(float(t))
        if t < 4:
            assert actions.connect == []
    assert d.keys.key(EP) == GOOD  # moved when BAD had not been heard for 4 s
    shake(d, 6.0, Handshake.CONNECTED, Handshake.SUCCEEDED)
    # a working connection's key stays even if its beacons pause (the endpoint lives on)
    for t in range(7, 20):
        d.on_beacon(beacon(b"\x09" * 32, "D" * 32), float(t))
        assert d.tick(float(t)).connect == []
    assert d.keys.key(EP) == GOOD


def test_an_endpoint_first_beaconed_without_a_key_is_joined_when_a_key_comes() -> None:
    d = Discovery(ME, curve=True)
    first = d.on_beacon(beacon(None), 0.0)
    assert first.connect == [] and first.send_beacon
    assert d.on_beacon(beacon(GOOD), 0.5).keys == {EP: GOOD}


def test_null_discovery_connects_without_keys() -> None:
    d = Discovery(ME)
    actions = d.on_beacon(beacon(GOOD), 0.0)
    assert actions.connect == [EP] and actions.keys == {}
    assert d.on_handshake(EP, Handshake.FAILED, 0.1).connect == []


def test_an_expired_endpoint_forgets_its_keys() -> None:
    d = Discovery(ME, curve=True, timeout=4.0, grace=0.5)
    d.on_beacon(beacon(BAD, EVIL), 0.0)
    assert d.tick(4.0).disconnect == []  # expired; disconnected after the grace
    assert d.tick(4.5).disconnect == [EP]
    assert d.keys.key(EP) is None and len(d.keys) == 0
    assert d.on_beacon(beacon(GOOD), 5.0).keys == {EP: GOOD}


def test_a_flood_of_claims_costs_bounded_keys_moves_and_log_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = Discovery(ME, curve=True)
    caplog.set_level(logging.INFO, logger="dafka.core.peer_keys")
    d.on_beacon(beacon(GOOD), 0.0)
    shake(d, 0.0, Handshake.CONNECTED, Handshake.SUCCEEDED)
    moves = 0
    for second in range(10):
        for i in range(1000):
            fake = (second * 1000 + i + 16).to_bytes(32, "big")
            moves += len(d.on_beacon(beacon(fake, EVIL), second + i / 1000).connect)
        d.on_beacon(beacon(GOOD), second + 0.5)
        moves += len(d.tick(second + 0.6).connect)
        assert len(d.keys.keys(EP)) <= peer_keys_mod.MAX_KEYS_PER_ENDPOINT
    assert moves == 0 and d.keys.key(EP) == GOOD  # a working connection never moves
    # the connection drops and every handshake fails: the moves are rate-limited
    d.on_handshake(EP, Handshake.DISCONNECTED, 10.0)
    for i in range(1000):
        moves += len(shake(d, 10.0 + i / 1000, Handshake.CONNECTED, Handshake.FAILED)[0])
    assert moves <= peer_keys_mod.SWITCH_BURST + peer_keys_mod.SWITCH_RATE * 1
    lines = [r for r in caplog.records if r.name == "dafka.core.peer_keys"]
    assert len(lines) <= 4  # one a period for failures, one for moves


def test_eviction_never_drops_the_key_in_use_nor_a_proven_one() -> None:
    keys = PeerKeys(max_keys=3)
    keys.claim(EP, GOOD, 0.0)
    keys.on_handshake(EP, Handshake.CONNECTED, 0.0)
    keys.on_handshake(EP, Handshake.SUCCEEDED, 0.0)
    for i in range(50):
        keys.claim(EP, (100 + i).to_bytes(32, "big"), 1.0 + i)
    claimed = keys.keys(EP)
    assert GOOD in claimed and len(claimed) == 3
    assert (149).to_bytes(32, "big") in claimed  # the newest claim found room
