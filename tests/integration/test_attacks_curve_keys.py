"""CURVE client keys from the metadata, with real processes on 127.0.0.1
(docs/security.md "Who may connect", "Turning it on"):

* ``curve_clients = metadata``: a node admits only the keys the metadata names; a
  consumer with another key reads nothing of an open topic, and the set follows the
  metadata live;
* nodes follow the metadata of towers whose Raft ports run CURVE;
* the cluster setting ``curve``: a NULL node refuses to start;
* ``dafka query read`` over CURVE: the key a read ACL names reads, another is refused;
* the tower's beacon relay follows the same policy: in ``metadata`` mode a key the
  metadata does not name gets no beacon.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from dafka.metadata import MetadataClient
from dafka.security import identity
from dafka.security.curve_keys import CurveConfig, make_client
from tests.admin import tower_args
from tests.integration.test_attacks_curve import (
    LINES,
    CurveTower,
    Store,
    consume,
    keys,
    produce,
)
from tests.procs import Proc, Tower, py, wait_until


class RaftCurveTower(CurveTower):
    """``--curve --raft-curve`` (the same as ``--curve`` now; both given so that the old
    code, where ``--curve`` left the Raft ports NULL, runs the same towers)."""

    def __init__(self) -> None:
        super().__init__("--raft-curve")


@pytest.fixture
def rtower() -> Iterator[RaftCurveTower]:
    tower = RaftCurveTower()
    yield tower
    tower.proc.kill()


def test_a_node_follows_the_metadata_of_towers_with_curve_raft_ports(
    rtower: RaftCurveTower, tmp_path: Path
) -> None:
    with MetadataClient(rtower.address) as admin:  # @KEY: the admin client speaks CURVE too
        admin.create_topic("watched", {"retention_ms": 60_000})
    store = Store(tmp_path / "store", rtower.address, "--curve", "--log-level", "info")
    try:
        store.proc.wait_line(r"metadata\.online", timeout=20)
    finally:
        store.kill()


def test_a_null_node_follows_the_metadata_of_towers_with_only_raft_curve(tmp_path: Path) -> None:
    tower = Proc(py("tower", "--bind", "127.0.0.1:0", "--raft-curve", *tower_args()))
    try:
        key = tower.wait_line(r"tower Raft CURVE key ([0-9a-f]{64})").group(1)
        plain = "127.0.0.1:" + tower.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)").group(1)
        store = Store(tmp_path / "store", f"{plain}@{key}", "--log-level", "info")
        try:
            store.proc.wait_line(r"metadata\.online", timeout=20)
        finally:
            store.kill()
    finally:
        tower.kill()


def test_metadata_mode_admits_only_the_keys_the_metadata_names(
    rtower: RaftCurveTower, tmp_path: Path
) -> None:
    k = keys(tmp_path, "store", "producer", "friend")
    friend = identity.load(k["friend"][0])
    with MetadataClient(rtower.address) as admin:
        admin.trust_store(k["store"][1])
        admin.create_topic("open", {"producers": [identity.load(k["producer"][0]).node_id]})
        admin.set_cluster({"curve_clients": "metadata", "clients": [friend.node_id]})
    store = Store(k["store"][0], rtower.address, "--curve")
    try:
        produce(rtower.address, "open", "--state-dir", str(k["producer"][0]))
        named = consume(
            rtower.address, "open", "--curve", "--key-dir", str(k["friend"][0]), "--timeout", "30"
        )
        assert named.wait(60) == 0, named.stderr
        assert bytes(named.stdout) == LINES
        # a key the metadata does not name: every node refuses it at the handshake, the
        # tower's relay too (so it hears of no store either)
        stranger = consume(rtower.address, "open", "--curve", "--wait", "4")
        assert stranger.wait(30) == 1, stranger.stderr
        assert bytes(stranger.stdout) == b""
        assert "no tower answered" in stranger.stderr
        assert "does the cluster admit this node's key" in stranger.stderr
        refused = query_read(rtower.address, "open", tmp_path / "stranger", "--timeout", "3")
        assert refused.wait(30) == 1, refused.stderr
        assert bytes(refused.stdout) == b""
        assert one_line(refused.stderr, "does not admit this client's key")  # the relay's gate
        # live: once the metadata stops naming the friend, its key is refused too
        with MetadataClient(rtower.address) as admin:
            admin.set_cluster({"clients": None})
        again = consume(
            rtower.address, "open", "--curve", "--key-dir", str(k["friend"][0]), "--wait", "4"
        )
        assert again.wait(30) == 1, again.stderr
        assert bytes(again.stdout) == b""
    finally:
        store.kill()


def test_a_null_node_refuses_to_run_in_a_cluster_that_requires_curve(tmp_path: Path) -> None:
    tower = Tower()
    try:
        with MetadataClient(tower.address) as admin:
            admin.set_cluster({"curve": True})
        p = Proc(py("dafka.cli.store", "--data-dir", str(tmp_path / "s"), "--tower", tower.address))
        assert p.wait(30) != 0, p.stderr
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "requires CURVE" in lines[0], p.stderr
    finally:
        tower.stop()


def _relay_listener(ctx: zmq.Context, tower: RaftCurveTower, who: identity.Identity) -> zmq.Socket:
    """A SUB on the tower's relay, over CURVE as ``who``, subscribed to every beacon."""
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    make_client(sub, CurveConfig(True), who, bytes.fromhex(tower.key))
    port = int(tower.plain.rsplit(":", 1)[1]) + 1  # the relay's XPUB: beacon port + 1
    sub.connect(f"tcp://127.0.0.1:{port}")
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    return sub


def _hears(sub: zmq.Socket, seconds: float) -> bool:
    """Whether anything (the welcome, a beacon) arrives within ``seconds``."""
    return bool(sub.poll(int(seconds * 1000)))


def test_the_relay_gives_beacons_only_to_keys_the_metadata_names(
    rtower: RaftCurveTower, tmp_path: Path
) -> None:
    k = keys(tmp_path, "store", "friend", "stranger")
    friend, stranger = identity.load(k["friend"][0]), identity.load(k["stranger"][0])
    ctx = zmq.Context()
    socks: list[zmq.Socket] = []
    store = Store(k["store"][0], rtower.address, "--curve")  # beacons for the relay to pass
    try:
        with MetadataClient(rtower.address) as admin:
            admin.trust_store(k["store"][1])
            admin.set_cluster({"curve_clients": "metadata", "clients": [friend.node_id]})
        # the setting reaches the relay's gate from the tower's own replica
        wait_until(
            lambda: _hears(_new(socks, ctx, rtower, friend), 2),
            30,
            what="the named key to hear the relay",
        )
        assert not _hears(_new(socks, ctx, rtower, stranger), 4)
        # and live: once named, the stranger hears it too (a new connection, a new handshake)
        with MetadataClient(rtower.address) as admin:
            admin.set_cluster({"clients": [friend.node_id, stranger.node_id]})
        wait_until(
            lambda: _hears(_new(socks, ctx, rtower, stranger), 2),
            30,
            what="the newly named key to hear the relay",
        )
    finally:
        for sock in socks:
            sock.close(0)
        ctx.term()
        store.kill()


def _new(
    socks: list[zmq.Socket], ctx: zmq.Context, tower: RaftCurveTower, who: identity.Identity
) -> zmq.Socket:
    sock = _relay_listener(ctx, tower, who)
    socks.append(sock)
    return sock


def query_read(towers: str, topic: str, key_dir: Path | None, *extra: str) -> Proc:
    """``dafka query read TOPIC`` as the key in ``key_dir`` (made if missing)."""
    args = ["query", "read", topic, "--tower", towers, *extra]
    if key_dir is not None:
        if not (key_dir / identity.KEY_FILE).exists():
            identity.create(key_dir)
        args += ["--key-file", str(key_dir / identity.KEY_FILE)]
    return Proc(py("dafka.cli.admin", *args))


def one_line(stderr: str, text: str) -> bool:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0]


def test_the_query_client_reads_an_acl_topic_over_curve_with_an_allowed_key(
    rtower: RaftCurveTower, tmp_path: Path
) -> None:
    k = keys(tmp_path, "store", "reader")
    reader = identity.load(k["reader"][0])
    with MetadataClient(rtower.address) as admin:
        admin.trust_store(k["store"][1])  # an ACL topic's records reach trusted stores only
        admin.create_topic("sealed", {"consumers": [reader.node_id]})
    store = Store(k["store"][0], rtower.address, "--curve")
    try:
        produce(rtower.address, "sealed")
        mine = query_read(rtower.address, "sealed", k["reader"][0])
        assert mine.wait(30) == 0, mine.stderr
        assert bytes(mine.stdout) == LINES
        stranger = query_read(rtower.address, "sealed", tmp_path / "stranger")
        assert stranger.wait(30) == 1, stranger.stderr
        assert bytes(stranger.stdout) == b""
        assert one_line(stranger.stderr, "may not read topic 'sealed'"), stranger.stderr
    finally:
        store.kill()


def test_dafka_cluster_set_takes_the_curve_settings(rtower: RaftCurveTower) -> None:
    friend = identity.Identity.generate()

    def dafka(*args: str) -> Proc:
        p = Proc(py("dafka.cli.admin", "cluster", *args, "--tower", rtower.address))
        p.wait(30)
        return p

    bad = dafka("set", "--curve-clients", "metadata", "--clients", "nope")
    assert bad.wait(1) == 2 and one_line(bad.stderr, "--clients: bad client 'nope'"), bad.stderr
    ok = dafka(
        "set", "--curve", "--curve-clients", "metadata", "--clients", friend.public_key.hex()
    )
    assert ok.wait(1) == 0, ok.stderr
    status = dafka("status")
    assert status.wait(1) == 0, status.stderr
    shown = bytes(status.stdout).decode()
    assert f"curve=true curve_clients=metadata clients={friend.node_id}" in shown, shown
