"""Discovery table: connect on first beacon, expire after the timeout, beacon on news."""

from dafka.core.discovery import Discovery
from dafka.wire.beacon import TowerBeacon

ME = "A" * 32
PEER = "B" * 32


def test_new_peer_is_connected_once_and_triggers_a_beacon() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0)
    first = d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=0.0)
    assert first.connect == ["tcp://127.0.0.1:7000"]
    assert first.send_beacon
    again = d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=0.5)
    assert again.connect == [] and not again.send_beacon


def test_own_beacon_is_ignored() -> None:
    d = Discovery(ME)
    actions = d.on_beacon(TowerBeacon(ME, "tcp://127.0.0.1:7000"), now=0.0)
    assert actions.connect == [] and d.peers == []


def test_peer_expires_after_timeout_without_beacons() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0)
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=0.0)
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=3.0)
    assert d.tick(6.9).disconnect == []
    assert d.tick(7.0).disconnect == ["tcp://127.0.0.1:7000"]
    assert d.peers == []
    # a peer that comes back is connected again
    assert d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=8.0).connect


def test_beacon_every_interval() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0)
    assert d.tick(0.0).send_beacon
    assert not d.tick(0.5).send_beacon
    assert d.tick(1.0).send_beacon
    assert d.next_deadline() == 2.0


def test_welcome_beacons_at_once() -> None:
    d = Discovery(ME)
    assert not d.welcomed
    assert d.on_welcome(0.2).send_beacon
    assert d.welcomed


def test_next_deadline_is_the_sooner_of_the_next_beacon_and_a_peer_expiry() -> None:
    d = Discovery(ME, interval=10.0, timeout=4.0)
    assert d.tick(0.0).send_beacon
    assert d.next_deadline() == 10.0
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=1.0)  # new: beacon at 11
    assert d.next_deadline() == 5.0  # the peer expires then
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=3.0)
    assert d.next_deadline() <= 7.0  # never later than the refreshed expiry
    assert d.tick(5.0).disconnect == []
    assert d.next_deadline() == 7.0  # exact after a tick
    assert d.tick(7.0).disconnect == ["tcp://127.0.0.1:7000"]
    assert d.next_deadline() == 11.0
