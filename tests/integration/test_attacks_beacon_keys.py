"""A beacon claiming another node's endpoint with the attacker's key (issue 32, point 4).

Under ``--curve`` a node connects to a peer endpoint as a CURVE client of the key a beacon
claimed for it. An attacker beaconing ``B | its ID | 127.0.0.1 | <the store's port> | its
key`` while a producer starts, or while the store is down, made the producer connect
under the attacker's key, once and for good: 0 of 40 records acknowledged, still 0 after
the attacker stopped. Now every claimed key is kept and a key whose handshake fails gives
way to the next (``dafka.core.peer_keys``, docs/security.md "Beacons and CURVE keys").
Real tower, store and producers on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import zmq

from dafka.config import parse_towers
from dafka.core.peer_keys import Handshake
from dafka.io.handshakes import HandshakeMonitor
from dafka.security import identity
from dafka.security.curve_keys import (
    CurveConfig,
    make_client,
    make_server,
    start_authenticator,
)
from dafka.wire.beacon import NodeBeacon
from tests.integration.test_attacks_curve import CurveTower, ctower  # noqa: F401  (fixture)
from tests.procs import Proc, free_port, py, wait_until

RECORDS = 40
LINES = b"".join(f"claimed {i}\n".encode() for i in range(1, RECORDS + 1))


class Claimer:
    """The attacker: beacons the store's endpoint under its own key, 10 times a second,
    through the tower (a CURVE client of it, as any node is)."""

    def __init__(self, tower: CurveTower, port: int, key_dir: Path) -> None:
        self.me = identity.create(key_dir)
        (address,) = parse_towers(tower.address)
        self.frames = NodeBeacon(self.me.node_id, "127.0.0.1", port, self.me.public_key).encode()
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.PUB)
        self._sock.setsockopt(zmq.LINGER, 0)
        assert address.key is not None
        make_client(self._sock, CurveConfig(True), self.me, address.key)
        self._sock.connect(address.sub)
        self._stop = threading.Event()
        self.sent = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self._sock.send_multipart(self.frames)
            self.sent += 1

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(5)
        self._sock.close(0)
        self._ctx.term()


def _store(data_dir: Path, tower: CurveTower, port: int) -> Proc:
    proc = Proc(
        py(
            "dafka.cli.store",
            *("--data-dir", str(data_dir), "--tower", tower.address),
            *("--port", str(port), "--curve"),
        )
    )
    proc.wait_line(rf"store [0-9A-F]{{32}} on tcp://127\.0\.0\.1:{port} ", timeout=30)
    return proc


def _producer(tower: CurveTower, topic: str) -> Proc:
    return Proc(
        py("dafka.cli.producer", topic, "--tower", tower.address, "--curve", "--timeout", "60"),
        stdin=LINES,
    )


def _acknowledged(producer: Proc) -> None:
    assert producer.wait(90) == 0, producer.stderr
    assert f"{RECORDS} records acknowledged" in producer.stderr, producer.stderr


def test_a_claim_on_the_stores_endpoint_never_cuts_a_producer_off(
    ctower: CurveTower,  # noqa: F811
    tmp_path: Path,
) -> None:
    port = free_port(set())
    attacker = Claimer(ctower, port, tmp_path / "attacker")
    store: Proc | None = None
    try:
        # the producer starts while the store is down and only the attacker claims its
        # endpoint: it connects under the attacker's key; the store comes up 3 s later
        first = _producer(ctower, "claimed")
        time.sleep(3)
        assert attacker.sent > 10
        store = _store(tmp_path / "store", ctower, port)
        _acknowledged(first)

        # the store goes down; the attacker goes on claiming its endpoint; a producer
        # starting now hears only the attacker, and the store comes back 3 s later
        store.kill()
        second = _producer(ctower, "claimed")
        time.sleep(3)
        store = _store(tmp_path / "store", ctower, port)
        _acknowledged(second)

        # afterwards too: the attacker stops, and producers still get every record through
        attacker.stop()
        _acknowledged(_producer(ctower, "claimed"))
    finally:
        attacker.stop()
        if store is not None:
            store.kill()


def test_the_monitor_reports_a_failed_and_a_completed_handshake_by_endpoint(
    tmp_path: Path,
) -> None:
    server, client, stranger = (identity.create(tmp_path / n) for n in ("s", "c", "x"))
    ctx = zmq.Context()
    xpub = ctx.socket(zmq.XPUB)
    sub = ctx.socket(zmq.SUB)
    for s in (xpub, sub):
        s.setsockopt(zmq.LINGER, 0)
    make_server(xpub, CurveConfig(True), server)
    auth = start_authenticator(ctx, CurveConfig(True))
    endpoint = f"tcp://127.0.0.1:{xpub.bind_to_random_port('tcp://127.0.0.1')}"
    monitor = HandshakeMonitor(sub)
    seen: list[tuple[str, Handshake]] = []

    def heard(event: Handshake) -> bool:
        if monitor.sock.poll(50):
            seen.extend(monitor.read())
        return (endpoint, event) in seen

    try:
        make_client(sub, CurveConfig(True), client, stranger.public_key)  # the wrong key
        sub.connect(endpoint)
        wait_until(lambda: heard(Handshake.FAILED), 10, 0, "a failed handshake")
        assert (endpoint, Handshake.CONNECTED) in seen
        assert (endpoint, Handshake.SUCCEEDED) not in seen
        sub.disconnect(endpoint)
        make_client(sub, CurveConfig(True), client, server.public_key)
        sub.connect(endpoint)
        wait_until(lambda: heard(Handshake.SUCCEEDED), 10, 0, "a completed handshake")
    finally:
        monitor.close()
        sub.close(0)
        xpub.close(0)
        if auth is not None:
            auth.stop()
        ctx.term()
