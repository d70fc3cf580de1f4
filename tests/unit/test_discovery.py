"""Discovery table: connect on first beacon, expire after the timeout, beacon on news."""

import pytest

from dafka.core.discovery import ANSWER_INTERVAL, Discovery
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


def test_peer_expires_after_timeout_without_beacons_and_is_disconnected_after_the_grace() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0, grace=10.0)
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=0.0)
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=3.0)
    assert d.tick(6.9).disconnect == [] and d.peers == ["tcp://127.0.0.1:7000"]
    assert d.tick(7.0).disconnect == []  # expired, its connection kept for the grace
    assert d.peers == [] and d.expired == 1
    assert d.tick(16.9).disconnect == []
    assert d.tick(17.0).disconnect == ["tcp://127.0.0.1:7000"]
    # a peer that comes back after the grace is new: connected again
    assert d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=18.0).connect


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
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=1.0)  # new: answered, beat kept
    assert d.next_deadline() == 5.0  # the peer expires then
    d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=3.0)
    assert d.next_deadline() <= 7.0  # never later than the refreshed expiry
    assert d.tick(5.0).disconnect == []
    assert d.next_deadline() == 7.0  # exact after a tick
    assert d.tick(7.0).disconnect == []  # expired: the grace (10 s) runs
    assert d.next_deadline() == 10.0  # the next beacon
    d.tick(10.0)
    assert d.next_deadline() == 17.0  # the end of the grace
    assert d.tick(17.0).disconnect == ["tcp://127.0.0.1:7000"]
    assert d.next_deadline() == 20.0


# ------------------------------------------- liveness without the tower (issue 39)

EP7 = "tcp://127.0.0.1:7000"


def test_what_a_peer_sends_on_the_data_connection_keeps_it_alive_while_the_tower_is_silent() -> (
    None
):
    d = Discovery(ME, interval=1.0, timeout=4.0)
    d.on_beacon(TowerBeacon(PEER, EP7), now=0.0)
    for t in range(1, 30):  # the tower is silent from 0 s; the peer speaks every second
        assert d.on_heard(EP7, float(t))
        actions = d.tick(float(t))
        assert actions.disconnect == [] and actions.connect == []
    assert d.peers == [EP7] and d.expired == 0
    assert d.tick(33.0).disconnect == [] and d.peers == []  # then its own silence expires it
    assert d.expired == 1


def test_a_frame_from_an_unknown_endpoint_admits_nothing() -> None:
    d = Discovery(ME)
    assert not d.on_heard(EP7, 0.0)
    assert d.peers == []


def test_a_late_loop_expires_nothing_it_did_not_read_yet() -> None:
    """The loop sleeps 6 s past the 4 s expiry while the peer's frames queue up: the tick
    that comes first after the drain keeps the peer; and while input is still pending
    (a bounded drain stopped), no expiry is judged until another timeout has passed."""
    d = Discovery(ME, interval=1.0, timeout=4.0)
    d.on_beacon(TowerBeacon(PEER, EP7), now=0.0)
    late = 6.0  # the loop's next turn; the peer's frames sent at 1..6 s wait in the socket
    assert d.expiry_due(late)
    assert d.tick(late, pending=True).disconnect == []  # the drain has not reached them
    assert d.peers == [EP7]
    for _ in range(6):  # the next turn drains them, all read at the turn's time
        d.on_heard(EP7, late + 0.01)
    assert d.tick(late + 0.01).disconnect == [] and d.peers == [EP7] and d.expired == 0
    # pending input defers an expiry for one more timeout at most
    assert d.tick(late + 0.01 + 4.0 + 3.9, pending=True).disconnect == [] and d.peers == [EP7]
    d.tick(late + 0.01 + 8.0, pending=True)
    assert d.peers == [] and d.expired == 1


def test_the_same_late_turn_without_the_drain_would_expire_the_peer() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0)
    d.on_beacon(TowerBeacon(PEER, EP7), now=0.0)
    d.tick(6.0)
    assert d.peers == []


def test_new_peers_are_answered_with_one_beacon_per_answer_interval() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0, new_peer_burst=1000)
    d.tick(0.0)
    answers = [
        d.on_beacon(TowerBeacon(f"{i:032X}", f"tcp://127.0.0.1:{8000 + i}"), now=0.5).send_beacon
        for i in range(100)
    ]
    assert answers.count(True) == 1 and len(d.peers) == 100
    later = d.on_beacon(TowerBeacon("C" * 32, "tcp://127.0.0.1:7999"), now=0.6)
    assert not later.send_beacon  # within the interval: answered at its end, not now
    assert d.next_deadline() == pytest.approx(0.5 + ANSWER_INTERVAL)
    assert d.tick(0.5 + ANSWER_INTERVAL).send_beacon
    last = d.on_beacon(TowerBeacon("D" * 32, "tcp://127.0.0.1:7998"), now=1.2)
    assert last.send_beacon  # an interval after the last answer: at once


def test_a_peer_back_within_the_grace_is_not_new() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0, grace=10.0, new_peer_burst=2, new_peer_rate=0.001)
    d.on_beacon(TowerBeacon(PEER, EP7), now=0.0)
    d.tick(4.0)  # expired (a tower away and a peer that said nothing)
    assert d.peers == []
    back = d.on_beacon(TowerBeacon(PEER, EP7), now=9.0)
    assert back.connect == [] and back.disconnect == [] and not back.send_beacon
    assert d.peers == [EP7] and d.returned == 1 and d.refused == 0  # no new-peer token spent
    d.tick(12.0)
    assert d.tick(14.0).disconnect == []  # the old grace does not cut it
    # heard on the data connection returns it just as well
    d.tick(20.0)
    assert d.peers == []
    assert d.on_heard(EP7, 21.0) and d.peers == [EP7] and d.returned == 2
    assert d.tick(30.0).disconnect == [] and d.peers == []  # silent again: expired at 30
    assert d.tick(39.9).disconnect == [] and d.tick(40.0).disconnect == [EP7]


def test_expired_peers_held_in_their_grace_count_against_max_peers() -> None:
    d = Discovery(ME, max_peers=1, timeout=4.0, grace=10.0)
    d.on_beacon(TowerBeacon(PEER, EP7), now=0.0)
    d.tick(4.0)
    assert d.on_beacon(TowerBeacon("C" * 32, "tcp://127.0.0.1:7001"), now=5.0).connect == []
    assert d.refused == 1


def test_a_node_catching_up_with_many_new_peers_answers_them_a_few_times_a_second() -> None:
    """300 peers start together (a cold start of a topic's nodes, or of a store's whole
    view) and beacon every second; the tower relays their beacons one by one, so they
    reach the node a loop turn apart (1 ms here). The bounds admit 100 at once, then 20 a
    second. Each admission in a turn of its own is answered with a beacon, which the tower
    relays to every node sharing a topic with this one (for a store: to every node): 300
    answers in the 7 s of the catch-up, not about one a second. What that costs a tower,
    simulated (``python -m benchmarks.discovery_sim``): a cold start of 1,000 nodes over 100
    topics takes in 27 times the steady beacons at its peak second and sends 20 times the
    copies (1.6 and 1.7 times on average over the 41 s until every node holds its peers);
    at 10,000 nodes over 100 topics (about 400 peers a node) it would be about 400 answers
    a node, each sent to about 400 nodes: 1.6 billion copies."""
    d = Discovery(ME, interval=1.0, timeout=4.0)
    sent = 0
    for second in range(20):
        if d.tick(float(second)).send_beacon:
            sent += 1
        for i in range(300):
            beacon = TowerBeacon(f"{i + 1:032X}", f"tcp://127.0.0.1:{8000 + i}")
            if d.on_beacon(beacon, second + 0.001 * (i + 1)).send_beacon:
                sent += 1
    assert len(d.peers) == 300
    assert sent <= 2 * 20  # its regular beacon, and about one answer, a second


def test_beacons_fall_on_the_beat_grid() -> None:
    """With a ``phase``, every beacon after the first is due on the next point of the grid
    ``phase + k * interval``, at most an interval after the last (a late loop, an answer to
    a new peer, a welcome): so every node heartbeats at the same moments (issue 39), and
    no gap is longer than without the grid (a timeout of 1.3 intervals expired live peers
    when gaps reached 1.5)."""
    d = Discovery(ME, interval=1.0, timeout=4.0, phase=0.3)
    assert d.tick(0.0).send_beacon
    assert d.next_beacon == pytest.approx(0.3)
    assert d.tick(0.35).send_beacon  # late by 50 ms: the next is still on the grid
    assert d.next_beacon == pytest.approx(1.3)
    assert d.on_welcome(1.25).send_beacon
    assert d.next_beacon == pytest.approx(1.3)  # one beacon more, the beat kept
    assert d.tick(1.3).send_beacon and d.next_beacon == pytest.approx(2.3)
    answered = d.on_beacon(TowerBeacon(PEER, "tcp://127.0.0.1:7000"), now=3.9)
    # a beat due (the loop late) is kept for the turn's tick, its beacon marked sent
    assert answered.send_beacon and d.next_beacon == pytest.approx(2.3)
    beat = d.tick(3.9)
    assert beat.send_beacon and beat.beaconed and d.next_beacon == pytest.approx(4.3)
    sent = 0
    for now in (4.31, 4.9, 5.3, 6.2999, 6.31, 7.8):
        if d.tick(now).send_beacon:
            sent += 1
            gap = d.next_beacon - now
            assert 0.0 < gap <= 1.0
            assert abs((d.next_beacon - 0.3) % 1.0 - 0.5) == pytest.approx(0.5)
    assert sent == 4  # at 4.31, 5.3, 6.31 and 7.8; 4.9 and 6.2999 are before the grid
    plain = Discovery(ME, interval=1.0, timeout=4.0)  # no phase: an interval after the last
    assert plain.tick(0.25).send_beacon and plain.next_beacon == 1.25
