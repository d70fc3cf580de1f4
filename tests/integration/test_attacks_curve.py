"""CURVE on the data plane (``--curve``): records flow, and what has no allowed key
reads nothing (docs/security.md "Transport (CURVE)"). Real processes on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from dafka.query import protocol as qp
from dafka.security import identity
from dafka.security.curve_keys import CurveConfig, make_client
from tests.admin import tower_args
from tests.procs import Proc, py

LINES = b"".join(f"secret {i}\n".encode() for i in range(1, 51))


class CurveTower:
    def __init__(self, *extra: str) -> None:
        self.proc = Proc(py("tower", "--bind", "127.0.0.1:0", "--curve", *extra, *tower_args()))
        m = self.proc.wait_line(r"tower CURVE key ([0-9a-f]{64})")
        self.key = m.group(1)
        m = self.proc.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)")
        self.plain = f"127.0.0.1:{m.group(1)}"
        self.address = f"{self.plain}@{self.key}"


@pytest.fixture
def ctower() -> Iterator[CurveTower]:
    tower = CurveTower()
    yield tower
    tower.proc.kill()


class Store:
    def __init__(self, data_dir: Path, towers: str, *args: str) -> None:
        self.proc = Proc(
            py("dafka.cli.store", "--data-dir", str(data_dir), "--tower", towers, *args)
        )
        m = self.proc.wait_line(r"store ([0-9A-F]{32}) on (tcp://\S+) query (tcp://[^\s,]+)")
        self.query_endpoint = m.group(3)

    def kill(self) -> None:
        self.proc.kill()


def keys(tmp_path: Path, *names: str) -> dict[str, tuple[Path, str]]:
    out = {}
    for name in names:
        made = identity.create(tmp_path / name)
        out[name] = (tmp_path / name, made.public_key.hex())
    return out


def produce(towers: str, topic: str, *extra: str) -> None:
    p = Proc(
        py("dafka.cli.producer", topic, "--tower", towers, "--curve", *extra),
        stdin=LINES,
    )
    assert p.wait(60) == 0, p.stderr
    assert "50 records acknowledged" in p.stderr


def consume(towers: str, topic: str, *extra: str) -> Proc:
    return Proc(
        py("dafka.cli.consumer", topic, "--tower", towers, "--from-beginning", "-e", *extra)
    )


def test_records_flow_end_to_end_over_curve(ctower: CurveTower, tmp_path: Path) -> None:
    store = Store(tmp_path / "store", ctower.address, "--curve")
    try:
        produce(ctower.address, "sealed")
        c = consume(ctower.address, "sealed", "--curve", "--timeout", "30")
        assert c.wait(60) == 0, c.stderr
        assert bytes(c.stdout) == LINES
        # a plain (NULL) consumer cannot even join: the tower refuses the handshake
        plain = consume(ctower.plain, "sealed", "--wait", "3")
        assert plain.wait(30) == 1, plain.stderr
        assert bytes(plain.stdout) == b""
        assert "no tower answered" in plain.stderr
    finally:
        store.kill()


def test_a_consumer_with_an_unknown_key_reads_nothing(ctower: CurveTower, tmp_path: Path) -> None:
    k = keys(tmp_path, "store", "producer", "reader")
    allow = ",".join(pub for _, pub in k.values())
    store = Store(k["store"][0], ctower.address, "--curve", "--curve-allow", allow)
    try:
        produce(ctower.address, "acl", "--curve-allow", allow, "--state-dir", str(k["producer"][0]))
        reader = consume(
            ctower.address, "acl", "--curve", "--key-dir", str(k["reader"][0]), "--timeout", "30"
        )
        assert reader.wait(60) == 0, reader.stderr
        assert bytes(reader.stdout) == LINES
        stranger = consume(ctower.address, "acl", "--curve", "--wait", "4")
        assert stranger.wait(30) == 1, stranger.stderr
        assert bytes(stranger.stdout) == b""
        assert "no store answered" in stranger.stderr
    finally:
        store.kill()


def _heads(endpoint: str, store_key: bytes, me: identity.Identity | None) -> bool:
    """True if the store's query endpoint answers a HEADS request within 3 s."""
    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        if me is not None:
            make_client(sock, CurveConfig(True), me, store_key)
        sock.connect(endpoint)
        sock.send_multipart(qp.encode_request(qp.HeadsRequest(7)))
        answered = bool(sock.poll(3000))
        sock.close(0)
        return answered
    finally:
        ctx.term()


def test_the_query_endpoint_refuses_clients_without_an_allowed_key(
    ctower: CurveTower, tmp_path: Path
) -> None:
    k = keys(tmp_path, "store", "reader")
    allow = ",".join(pub for _, pub in k.values())
    store = Store(k["store"][0], ctower.address, "--curve", "--curve-allow", allow)
    try:
        store_key = bytes.fromhex(k["store"][1])
        assert _heads(store.query_endpoint, store_key, identity.load(k["reader"][0]))
        assert not _heads(store.query_endpoint, store_key, identity.Identity.generate())
        assert not _heads(store.query_endpoint, store_key, None)  # NULL
    finally:
        store.kill()
