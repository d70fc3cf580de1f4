"""A flood of one-shot fake beacons must not keep a real new peer out (red team, issue 32).

Each fake (a random node ID and port, sent once) took a new-peer token, so a real producer
that kept beaconing won one only by chance: with 2,000 fakes a second a store heard a new
producer after 12-17 s, once not within 20 s. An endpoint refused for want of a token is
remembered, and its next beacon draws from tokens that only endpoints heard twice reach.
"""

from __future__ import annotations

from dafka.core import discovery as discovery_mod
from dafka.core.discovery import Discovery
from dafka.wire.beacon import TowerBeacon

ME = "A" * 32
REAL = "B" * 32
FAKE = "3F2504E04F8911D39A0C0305E82C3301"
REAL_ENDPOINT = "tcp://127.0.0.1:40000"


def _fake(n: int) -> TowerBeacon:
    """The red team's fakes: a fresh node ID each, on one of only 100 ports (so endpoints
    repeat, as random ports in a range of 10,000 did at 2,000 a second)."""
    return TowerBeacon(f"{n:032X}", f"tcp://127.0.0.1:{20000 + n % 100}")


def _flood(d: Discovery, start: float, seconds: float, per_second: int, first: int) -> int:
    """Fakes from ``start`` for ``seconds``, and at its end as many as it takes to spend the
    token that may have come meanwhile (a flood takes it first, by numbers); returns the
    next fake's number."""
    n = first
    for k in range(int(seconds * per_second)):
        d.on_beacon(_fake(n), start + k / per_second)
        n += 1
    end = start + seconds
    while d.on_beacon(TowerBeacon(f"{n:032X}", f"tcp://127.0.0.2:{n % 60000 + 1}"), end).connect:
        n += 1  # an endpoint not known yet, so that it takes a token
    return n + 1


def test_a_real_peer_is_admitted_at_its_second_beacon_under_a_flood_of_fakes() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0)
    n = _flood(d, 0.0, 1.0, 3000, 0)  # the burst is long gone
    admitted_at = None
    for beat in range(6):  # the real producer beacons every second, the flood goes on
        now = 1.0 + beat
        if d.on_beacon(TowerBeacon(REAL, REAL_ENDPOINT), now).connect:
            admitted_at = now
            break
        n = _flood(d, now, 1.0, 3000, n)
    assert admitted_at == 2.0  # refused at its first beacon, admitted at its second
    assert REAL_ENDPOINT in d.peers


def test_fakes_heard_once_never_reach_the_tokens_of_endpoints_heard_again() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0)
    admitted = 0
    for k in range(20_000):  # 10 s of one-shot fakes at 2,000 a second
        admitted += len(d.on_beacon(TowerBeacon(FAKE, f"tcp://h{k}:1"), k / 2000).connect)
    # only the first half of the budget: its burst and rate over 10 s
    half_burst = discovery_mod.NEW_PEER_BURST / 2
    assert admitted <= half_burst + 10 * discovery_mod.NEW_PEER_RATE / 2 + 1
    assert len(d._heard) <= discovery_mod.MAX_HEARD


def test_remembered_endpoints_are_bounded_and_a_stale_one_starts_again() -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0, new_peer_rate=2.0, new_peer_burst=2.0)
    d.max_heard = 10
    for k in range(100):  # the first bucket's one token goes to the first
        d.on_beacon(TowerBeacon(FAKE, f"tcp://h{k}:1"), 0.0)
    assert len(d._heard) == 10
    assert not d.on_beacon(TowerBeacon(REAL, REAL_ENDPOINT), 0.0).connect
    # heard again only after more than the timeout (a fake took the refilled token first):
    # not "heard again", remembered anew
    d.on_beacon(TowerBeacon(FAKE, "tcp://late:1"), 5.0)
    assert not d.on_beacon(TowerBeacon(REAL, REAL_ENDPOINT), 5.0).connect
    # and heard again within the timeout: admitted from the second bucket
    assert d.on_beacon(TowerBeacon(REAL, REAL_ENDPOINT), 5.5).connect
