"""Peers outlive a silent tower (issue 39, point 2).

The tower is the data plane's heartbeat no more: paused with SIGSTOP for 6 s, past the
4 s expiry, while a producer, a store (a process) and a consumer run, it made every
node drop every peer and reconnect on its return. Now each peer is kept alive by what it
sends on its data connection (records, ACKs, heads, and its heartbeat): no peer expires,
records keep flowing and are acknowledged during the pause, and nothing reconnects after
it. About 12 s.
"""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.request
from pathlib import Path

import pytest

from dafka import Consumer, Producer
from tests.procs import StoreProc, Tower, wait_until

pytestmark = pytest.mark.integration

PAUSE = 6.0  # past the default beacon_timeout (4 s)


def _counter(url: str, name: str) -> float:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m is not None, f"{name} not in the store's metrics"
    return float(m.group(1))


def test_a_tower_paused_past_the_expiry_drops_no_peer_and_stops_no_record(
    tower: Tower, tmp_path: Path
) -> None:
    store = StoreProc(tmp_path / "s", tower.address, "--metrics-port", "0")
    url = store.proc.wait_line(r"metrics on (http://\S+)").group(1)
    if not url.endswith("/metrics"):
        url = url.rstrip("/") + "/metrics"
    p = Producer("paused", towers=tower.address)
    c = Consumer("paused", towers=tower.address, offset_reset="earliest")
    got: list[bytes] = []
    sent = 0
    try:
        assert p.send(b"warm").result(30) == 0
        wait_until(
            lambda: got.extend(r.value for r in c.poll_batch(1000, timeout=0.1)) or got,
            30,
            what="the first record at the consumer",
        )
        ploop, cloop = p._loop, c._loop  # type: ignore[attr-defined]
        wait_until(
            lambda: len(ploop.discovery.peers) == 2 and len(cloop.discovery.peers) == 2,
            15,
            what="the producer and the consumer knowing both their peers",
        )
        peers_before = (list(ploop.discovery.peers), list(cloop.discovery.peers))
        assert _counter(url, "dafka_peers") == 2
        expired_before = _counter(url, "dafka_peers_expired_total")

        os.kill(tower.proc.p.pid, signal.SIGSTOP)
        try:
            paused_at = time.monotonic()
            acked_during = 0
            while time.monotonic() < paused_at + PAUSE:
                futures = [p.send(f"during {sent + i}".encode()) for i in range(10)]
                sent += 10
                p.flush(timeout=PAUSE)  # acknowledged by the store with the tower away
                acked_during += sum(1 for f in futures if f.exception(0) is None)
                got.extend(r.value for r in c.poll_batch(1000, timeout=0.2))
            store_peers_paused = _counter(url, "dafka_peers")
        finally:
            os.kill(tower.proc.p.pid, signal.SIGCONT)
        assert acked_during == sent
        assert store_peers_paused == 2, "the store dropped a peer while the tower was away"
        during = [v for v in got if v.startswith(b"during ")]
        assert len(during) > 0, "no record reached the consumer during the pause"

        # after the tower's return: everything arrives, nothing expired, nothing reconnects
        wait_until(
            lambda: (
                got.extend(r.value for r in c.poll_batch(1000, timeout=0.1))
                or len([v for v in got if v.startswith(b"during ")]) >= sent
            ),
            15,
            what="every record sent during the pause at the consumer",
        )
        time.sleep(1.5)  # a beacon interval and more after the tower's return
        assert ploop.discovery.expired == 0 and cloop.discovery.expired == 0
        assert ploop.discovery.returned == 0 and cloop.discovery.returned == 0
        assert (list(ploop.discovery.peers), list(cloop.discovery.peers)) == peers_before
        assert _counter(url, "dafka_peers_expired_total") == expired_before == 0
        assert _counter(url, "dafka_heartbeats_received_total") > 0
    finally:
        c.close()
        p.close(timeout=5)
        store.kill()
