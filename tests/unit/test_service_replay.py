"""The tower's replay of service beacons (``tower/service_replay.py``), without sockets."""

from __future__ import annotations

import logging
import time

import pytest
import zmq

from dafka.errors import WireError
from dafka.query import locator as locator_mod
from dafka.query.locator import StoreLocator
from dafka.wire import beacon as wbeacon
from tower.relay import relay_beacon
from tower.service_replay import ServiceReplay

TOWER = "F" * 32
ENDPOINT = "tcp://127.0.0.1:40001"


def _store(i: int, port: int = 41000) -> tuple[wbeacon.ServiceBeacon, list[bytes]]:
    beacon = wbeacon.ServiceBeacon(f"{i:032X}", f"tcp://127.0.0.1:{port + i}", "store")
    return beacon, beacon.encode()


def _decoded(out: list[list[bytes]]) -> list[wbeacon.ServiceBeacon]:
    return [wbeacon.decode_service_beacon(frames) for frames in out]


def _replay(**kw: float) -> ServiceReplay:
    return ServiceReplay(TOWER, ENDPOINT, 100.0, warm_after=1.5, **kw)  # type: ignore[arg-type]


def test_a_warm_tower_replays_every_kept_beacon_then_its_end_beacon() -> None:
    r = _replay()
    for i in range(3):
        r.heard(*_store(i), now=100.5)
    assert r.due(101.6) == []  # nobody asked
    r.subscribed()
    got = _decoded(r.due(101.6))
    assert [b.node_id for b in got[:3]] == [f"{i:032X}" for i in range(3)]
    assert got[3] == wbeacon.ServiceBeacon(TOWER, ENDPOINT, wbeacon.REPLAYED)
    assert len(got) == 4
    assert r.due(101.8) == []  # one replay per subscription


def test_a_tower_that_has_not_listened_long_enough_sends_no_end_beacon() -> None:
    r = _replay()
    r.heard(*_store(1), now=100.2)
    r.subscribed()
    got = _decoded(r.due(100.3))
    assert [b.service for b in got] == ["store"]  # a locator then waits its full time


def test_the_latest_beacon_of_a_node_is_kept_and_stale_ones_are_not_replayed() -> None:
    r = _replay()
    r.heard(*_store(1, port=41000), now=100.0)
    r.heard(*_store(1, port=42000), now=101.0)  # moved
    r.heard(*_store(2), now=100.0)  # then silent: dead
    r.subscribed()
    got = _decoded(r.due(103.0))
    stores = [b for b in got if b.service == "store"]
    assert [(b.node_id, b.endpoint) for b in stores] == [(f"{1:032X}", "tcp://127.0.0.1:42001")]
    assert len(r) == 1


def test_replays_are_rate_limited_and_a_subscription_in_between_is_answered_after() -> None:
    r = _replay(min_interval=0.1)
    r.heard(*_store(1), now=100.0)
    r.subscribed()
    assert len(r.due(102.0)) == 2
    r.subscribed()
    assert r.deadline() == pytest.approx(102.1)
    assert r.due(102.05) == []
    assert len(r.due(102.1)) == 2
    assert r.replays == 2


def test_kept_beacons_are_bounded_and_a_full_cache_makes_room_as_beacons_expire() -> None:
    r = _replay(max_entries=4, expiry=4.0)
    for i in range(10):
        r.heard(*_store(i), now=100.0)
    assert len(r) == 4
    assert r.not_kept == 6
    r.heard(*_store(99), now=105.0)  # the first four are stale by now
    assert len(r) == 1
    r.subscribed()
    assert [b.node_id for b in _decoded(r.due(105.0)) if b.service == "store"] == [f"{99:032X}"]


def test_a_full_cache_is_scanned_at_most_once_per_interval() -> None:
    r = _replay(max_entries=2, expiry=4.0, min_interval=0.1)
    r.heard(*_store(1), now=100.0)
    r.heard(*_store(2), now=100.0)
    scans = 0
    real = r._expire

    def counting(now: float) -> None:
        nonlocal scans
        scans += 1
        real(now)

    r._expire = counting  # type: ignore[method-assign]
    for i in range(1000):
        r.heard(*_store(10 + i), now=100.2 + i * 1e-5)  # a flood of new nodes in 10 ms
    assert scans == 1


def test_a_node_cannot_send_the_end_beacon_through_a_tower() -> None:
    forged = wbeacon.ServiceBeacon("A" * 32, "tcp://127.0.0.1:40000", wbeacon.REPLAYED).encode()
    with pytest.raises(WireError):
        relay_beacon(forged, None)


def test_an_endpoint_a_beacon_cannot_carry_means_no_end_beacon() -> None:
    r = ServiceReplay(TOWER, "ipc:///tmp/x", 0.0, warm_after=0.0)
    r.subscribed()
    assert r.due(1.0) == []


def test_a_locator_remembers_a_bounded_number_of_stores_and_logs_few_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = zmq.Context.instance()
    fake_tower = ctx.socket(zmq.XPUB)  # a tower relaying 5,000 fake stores
    fake_tower.setsockopt(zmq.LINGER, 0)
    port = fake_tower.bind_to_random_port("tcp://127.0.0.1", min_port=20001, max_port=60000)
    caplog.set_level(logging.INFO, logger="dafka.query.locator")
    try:
        with StoreLocator(f"127.0.0.1:{port - 1}", wait=30.0) as locator:
            locator.stores(wait=0.0)  # connects and subscribes
            assert fake_tower.poll(5000)
            assert fake_tower.recv() == b"\x01" + wbeacon.SERVICE
            for i in range(5000):
                fake_tower.send_multipart(_store(i, port=20000)[1])
            fake_tower.send_multipart(
                wbeacon.ServiceBeacon(TOWER, ENDPOINT, wbeacon.REPLAYED).encode()
            )
            started = time.monotonic()
            stores = locator.stores()
            assert time.monotonic() - started < 10  # the end beacon came: not 30 s
    finally:
        fake_tower.close(0)
    assert len(stores) == locator_mod.MAX_KEYS
    lines = [r for r in caplog.records if "locator.store" in r.getMessage()]
    assert len(lines) <= locator_mod.LOGGED_STORES
