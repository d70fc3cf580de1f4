"""Fake beacons (issue 10, point 6): malformed hosts and ports are refused by the codec
(towers before relaying, nodes before connecting), and thousands of fake endpoints
cost every node a bounded number of connections, without pushing out a live peer."""

from __future__ import annotations

import logging

import pytest
import zmq

from dafka.core import discovery as discovery_mod
from dafka.core.discovery import Discovery
from dafka.errors import WireError
from dafka.io.node_beacons import TowerLink
from dafka.io.request_senders import PeerSenders
from dafka.security.curve_keys import CurveConfig
from dafka.wire import beacon
from dafka.wire.beacon import TowerBeacon
from tower.relay import relay_beacon

ME = "A" * 32
REAL = "B" * 32
P = "3F2504E04F8911D39A0C0305E82C3301"


@pytest.mark.parametrize(
    "host",
    [
        b"127.0.0.1\x00evil",
        b"host\nname",
        b"a b",
        b"\x1b[31mred",
        b"*",
        b"-leading.dash",
        b"x" * 64 + b".com",  # a label over 63
        b"a." * 130,  # over 253
        b"[::1",
        b"[127.0.0.1]",
    ],
    ids=repr,
)
def test_beacons_with_a_bad_host_are_not_relayed(host: bytes) -> None:
    """Defence: ``check_node_host`` in ``decode_node_beacon`` (and the endpoint check when
    the tower encodes what it would relay)."""
    frames = [b"B", P.encode(), host, b"49153"]
    with pytest.raises(WireError):
        beacon.decode_node_beacon(frames)
    with pytest.raises(WireError):
        relay_beacon(frames, "127.0.0.1")


@pytest.mark.parametrize("port", [b"1", b"22", b"1023", b"0", b"65536"])
def test_beacons_with_a_privileged_or_bad_port_are_not_relayed(port: bytes) -> None:
    """Defence: beacons name ports 1024..65535 only."""
    with pytest.raises(WireError):
        relay_beacon([b"B", P.encode(), b"127.0.0.1", port], "127.0.0.1")


@pytest.mark.parametrize(
    "endpoint",
    [
        b"tcp://127.0.0.1\x00:49153",
        b"tcp://ho\x07st:49153",
        b"tcp://127.0.0.1:22",
        b"tcp://::1:49153",
        b"tcp://[zz]:49153",
    ],
    ids=repr,
)
def test_nodes_refuse_tower_beacons_naming_bad_endpoints(endpoint: bytes) -> None:
    """Defence: ``_check_endpoint`` checks the host too (a hostile tower)."""
    with pytest.raises(WireError):
        beacon.decode_tower_beacon([b"B", P.encode(), endpoint])


def test_good_hosts_still_pass() -> None:
    for host in ["", "127.0.0.1", "::1", "[::1]", "fe80::1", "store-1.example.org", "localhost"]:
        frames = [b"B", P.encode(), host.encode(), b"49153"]
        assert beacon.decode_node_beacon(frames).host == host
        relay_beacon(frames, "127.0.0.1")


def test_five_thousand_fake_endpoints_are_bounded_and_live_peers_stay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = Discovery(ME, interval=1.0, timeout=4.0)
    real = TowerBeacon(REAL, "tcp://127.0.0.1:40000")
    assert d.on_beacon(real, 0.0).connect
    caplog.set_level(logging.INFO, logger="dafka.core.discovery")
    connects = 0
    for second in range(10):
        now = float(second)
        for i in range(5000):
            fake = TowerBeacon(P, f"tcp://10.{i // 250}.{i % 250}.1:{20000 + i}")
            connects += len(d.on_beacon(fake, now).connect)
        d.on_beacon(real, now + 0.5)
        assert d.tick(now + 0.6).disconnect == []
        assert "tcp://127.0.0.1:40000" in d.peers
    assert len(d.peers) <= discovery_mod.MAX_PEERS
    # without the bounds: 5,000 connections at once
    assert connects <= discovery_mod.NEW_PEER_BURST + 10 * discovery_mod.NEW_PEER_RATE
    assert d.refused > 0
    refused_lines = [r for r in caplog.records if "discovery.peer.refused" in r.getMessage()]
    assert len(refused_lines) <= 3


class _Subscriptions:
    """A node's beacon XPUB as its loop sees it: ``queued`` subscription messages from a
    peer on a tower's address, and what the node sends."""

    def __init__(self, queued: int) -> None:
        self.queued = queued
        self.sent: list[list[bytes]] = []

    def recv(self, flags: int = 0) -> bytes:
        if not self.queued:
            raise zmq.Again()
        self.queued -= 1
        return b"\x01" + beacon.BEACON

    def send_multipart(self, frames: list[bytes]) -> None:
        self.sent.append(frames)


def _link(bpub: _Subscriptions, mine: list[list[bytes]]) -> TowerLink:
    """A node's TowerLink whose beacon XPUB is ``bpub`` (the method under test needs no
    other socket)."""
    return TowerLink(
        Discovery(ME),
        PeerSenders(False),
        bpub=bpub,  # type: ignore[arg-type]
        bsub=None,  # type: ignore[arg-type]
        sub=None,  # type: ignore[arg-type]
        me=beacon.decode_node_beacon(mine[0]),
        services=mine[1:],
        interest_beacons=False,
        scoped=False,
        interest=None,
        curve=CurveConfig(False),
        identity=None,
        malformed=lambda what, exc, now: None,
    )


def test_a_flood_of_tower_subscriptions_sends_our_beacon_at_most_once_per_interval() -> None:
    mine = [[beacon.BEACON, ME.encode(), b"127.0.0.1", b"40000"]]
    sock = _Subscriptions(queued=100_000)
    link = _link(sock, mine)
    for turn in range(100):  # 100 loop turns in 50 ms, each reading what it may
        link.on_tower_subscriptions(10.0 + turn * 0.0005)
    assert sock.sent == mine  # once, then not again within PROMPT_BEACON_INTERVAL
    assert sock.queued == 0  # read and dropped, 1,000 a turn at most
    later = _Subscriptions(1)
    link.bpub = later  # type: ignore[assignment]
    link.on_tower_subscriptions(10.2)
    assert later.sent == mine  # a later subscription is answered again
