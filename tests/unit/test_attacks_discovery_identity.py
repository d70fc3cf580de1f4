"""Who is behind an endpoint (issue 39's red team, finding 2).

A store restarted on the same fixed port with a new identity beacons the same endpoint under
a new node ID. Discovery was keyed by endpoint only: the new store *returned* as the old
peer (no new connection, so without CURVE the node kept attributing its frames to the old
ID, and it never got the node's beacon or subscriptions as a new peer). Now a new ID takes an
endpoint once the admitted ID's beacons stopped for ``timeout``, on a new connection. And the
attack this opens, a forged beacon naming a live peer's endpoint under another ID to have the
node reconnect it or attribute it to the forger, changes nothing while that peer beacons.
"""

from __future__ import annotations

from dafka.core.discovery import Discovery
from dafka.wire.beacon import TowerBeacon

ME, OLD, NEW, FORGER = "A" * 32, "B" * 32, "C" * 32, "D" * 32
EP = "tcp://127.0.0.1:7000"


def test_a_node_restarted_under_a_new_id_on_the_same_endpoint_is_a_new_peer() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0, grace=10.0)
    first = d.on_beacon(TowerBeacon(OLD, EP), 0.0)
    assert first.connect == [EP] and d.node_of(EP) == OLD
    for t in (1.0, 2.0, 3.0):
        d.on_beacon(TowerBeacon(OLD, EP), t)
    # the restart: the new identity beacons at once, while the old one's last is fresh
    early = d.on_beacon(TowerBeacon(NEW, EP), 3.5)
    assert (early.connect, early.disconnect, early.send_beacon) == ([], [], False)
    assert d.node_of(EP) == OLD and d.id_refused == 1
    # once the old ID has been silent for the timeout, the new one takes the endpoint
    d.tick(6.0)
    taken = d.on_beacon(TowerBeacon(NEW, EP), 7.5)
    assert taken.disconnect == [EP] and taken.connect == [EP] and taken.send_beacon
    assert d.node_of(EP) == NEW and d.replaced == 1 and d.peers == [EP]
    again = d.on_beacon(TowerBeacon(NEW, EP), 8.5)
    assert (again.connect, again.disconnect) == ([], [])


def test_a_new_id_on_an_endpoint_in_its_grace_is_new_not_a_return() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0, grace=10.0)
    d.on_beacon(TowerBeacon(OLD, EP), 0.0)
    d.tick(5.0)  # OLD expired: its connection kept for the grace
    assert d.peers == [] and d.expired == 1
    back = d.on_beacon(TowerBeacon(NEW, EP), 6.0)
    assert back.disconnect == [EP] and back.connect == [EP]
    assert d.returned == 0 and d.replaced == 1 and d.node_of(EP) == NEW
    # and the grace's end does not disconnect the new peer
    for t in range(7, 20):
        d.on_beacon(TowerBeacon(NEW, EP), float(t))
        assert d.tick(float(t) + 0.5).disconnect == []


def test_attack_a_forged_id_for_a_live_peers_endpoint_changes_nothing() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0, grace=10.0)
    d.on_beacon(TowerBeacon(OLD, EP), 0.0)
    for i in range(1, 60):
        now = i * 0.5
        if i % 2 == 0:
            d.on_beacon(TowerBeacon(OLD, EP), now)  # the real peer, every second
        forged = d.on_beacon(TowerBeacon(FORGER, EP), now + 0.01)
        assert (forged.connect, forged.disconnect, forged.send_beacon) == ([], [], False)
        d.tick(now + 0.02)
    assert d.node_of(EP) == OLD and d.replaced == 0 and d.id_refused == 59
    assert d.peers == [EP]


def test_a_peer_not_admitted_is_said_in_one_line_with_why(caplog) -> None:
    """Issue 39: 'say in one line when a peer cannot be admitted and why'. A full table
    (no records, ACKs or fetches with that peer) is told apart from the rate bound (the
    peer gets in at a later beacon), and both are counted for the metrics."""
    import logging

    d = Discovery(ME, max_peers=2, new_peer_rate=1000.0, new_peer_burst=1000.0)
    with caplog.at_level(logging.WARNING, logger="dafka.core.discovery"):
        for i in range(3):
            d.on_beacon(TowerBeacon(f"{i:032X}", f"tcp://127.0.0.1:{7000 + i}"), 0.0)
    assert (d.refused, d.refused_full) == (1, 1) and len(d.peers) == 2
    (line,) = [r.getMessage() for r in caplog.records]
    assert "max_peers=2" in line and "no records, ACKs or fetches" in line
    caplog.clear()
    slow = Discovery(ME, new_peer_rate=0.001, new_peer_burst=1.0)
    with caplog.at_level(logging.WARNING, logger="dafka.core.discovery"):
        for i in range(4):
            slow.on_beacon(TowerBeacon(f"{i:032X}", f"tcp://127.0.0.1:{7000 + i}"), 0.0)
    assert slow.refused == 3 and slow.refused_full == 0
    (line,) = [r.getMessage() for r in caplog.records]  # one line per 5 s, not one each
    assert "faster than" in line and "admitted at one of its next beacons" in line
