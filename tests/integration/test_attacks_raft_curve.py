"""Issue 10, point 2 (and point 3 on the Raft ports): Raft peers authenticate each other.

Real ``dafka-raft peer`` processes on 127.0.0.1, attacked through their ROUTER:

* over NULL with ``--raft-insecure-null`` (the compatibility flag; a default NULL peer has
  no peers and refuses every peer RPC: ``test_attacks_raft_peers.py``), an AppendEntries at
  term+1 from a "leader" nobody configured injects a committed entry: what the flag gives up;
* with ``--raft-curve`` the same AppendEntries, sent over CURVE with a key of the
  attacker's own, claiming a configured peer's ID or an unknown one, is dropped and
  counted before the core sees it: term and log do not move; a NULL connection does not
  get through the handshake at all;
* a ConfigUpdate from a client key that is neither a peer's nor an admin's is refused,
  and an admin's naming a peer with no configured key too;
* a 3-peer CURVE cluster elects a leader and commits updates; a peer started with a
  key other than the one the others have for its ID is not let in.

Commands go through :func:`tests.attack_mutants.mutated` (``tests.procs.Proc`` wraps each).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import zmq

from dafka.config import TowerAddress
from dafka.errors import ConfigError, DafkaTimeout
from dafka.metadata.client import RAFT_PORT_OFFSET, MetadataClient
from dafka.metadata.follower import MetadataView
from dafka.raft.client import RaftClient
from dafka.raft.codec import (
    Entry,
    EntryType,
    Peer,
    ReqIdGenerator,
    encode_uint,
    encode_uint32,
)
from dafka.raft.codec._frames import encode_entry
from dafka.raft.peer import ClientCurve, curve_public_key
from dafka.security import identity as ident
from tests.integration.test_attacks_raft import _free_url, _log_info
from tests.procs import Proc, py, wait_until
from tower.metadata import tower_server_keys

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CLUSTER = "atk"


class Keys:
    """Key files made up front, so that every peer list can carry every public key."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ids: dict[str, ident.Identity] = {}

    def __call__(self, name: str) -> ident.Identity:
        if name not in self.ids:
            self.ids[name] = ident.create_file(self.root / f"{name}.key")
        return self.ids[name]

    def file(self, name: str) -> str:
        self(name)
        return str(self.root / f"{name}.key")

    def hex(self, name: str) -> str:
        return self(name).public_key.hex()

    def z85(self, name: str) -> bytes:
        return curve_public_key(self(name).public_key)


def _start(peer_id: str, url: str, data_dir: Path, *extra: str) -> Proc:
    proc = Proc(
        py(
            "dafka.cli.raft",
            "peer",
            "--id",
            peer_id,
            "--bind",
            url,
            "--data-dir",
            str(data_dir),
            "--cluster",
            CLUSTER,
            *extra,
        )
    )
    proc.wait_line(rf"raft peer {peer_id} on ")
    return proc


@pytest.fixture
def procs():
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.kill()


@pytest.fixture
def dealer():
    """DEALERs to a peer: NULL, or CURVE with a fresh key of their own."""
    ctx = zmq.Context()
    socks: list[zmq.Socket] = []

    def connect(url: str, server_key: bytes | None = None) -> zmq.Socket:
        sock = ctx.socket(zmq.DEALER)
        socks.append(sock)
        sock.setsockopt(zmq.LINGER, 0)
        if server_key is not None:
            sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
            sock.curve_serverkey = server_key
        sock.connect(url)
        return sock

    yield connect
    for sock in socks:
        sock.close(0)
    ctx.term()


def _forged_append(claimed: str, term: int, last: int) -> list[bytes]:
    """An AppendEntries from ``claimed`` at ``term`` + 1: one entry after ``last``,
    committed at once."""
    entry = Entry(last + 1, term + 1, EntryType.STATE, ReqIdGenerator()(), b"injected")
    return [
        encode_uint(1),
        b"+",
        CLUSTER.encode(),
        claimed.encode(),
        encode_uint(term + 1),
        encode_uint(last),
        encode_uint(term),
        encode_uint(last + 1),
        encode_entry(entry),
    ]


def _solo(keys: Keys, procs: list[Proc], tmp_path: Path, *extra: str) -> tuple[str, Proc]:
    """p1 alone, CURVE on, p2's key configured (p2 never runs), ``admin`` an admin key."""
    url = _free_url()
    proc = _start(
        "p1",
        url,
        tmp_path / "p1",
        "--raft-curve",
        "--key-file",
        keys.file("p1"),
        "--peer-key",
        f"p2={keys.hex('p2')}",
        "--admin-key",
        keys.hex("admin"),
        *extra,
    )
    procs.append(proc)
    return url, proc


def _client(keys: Keys, url: str, who: str | None = None) -> RaftClient:
    server_keys = {url: keys.z85("p1")}
    curve = (
        ClientCurve.ephemeral(server_keys)
        if who is None
        else ClientCurve.for_identity(keys(who), server_keys)
    )
    return RaftClient([url], CLUSTER, timeout=10, curve=curve)


# -- the attack as it works under the compatibility flag --------------------------------------


def test_without_curve_an_unknown_leader_injects_a_committed_entry(tmp_path, procs, dealer):
    url = _free_url()
    procs.append(_start("p1", url, tmp_path / "p1", "--raft-insecure-null"))
    with RaftClient([url], CLUSTER, timeout=10) as client:
        client.update(b"before", timeout=10)
    sock = dealer(url)
    term, last = _log_info(sock)
    sock.send_multipart(_forged_append("ghost", term, last))
    assert _log_info(sock) == (term + 1, last + 1)  # the ghost's entry is in p1's log


# -- with CURVE -------------------------------------------------------------------------------


@pytest.mark.parametrize("claimed", ["p2", "ghost"])
def test_with_curve_a_forged_append_entries_injects_nothing(tmp_path, procs, dealer, claimed):
    keys = Keys(tmp_path)
    url, proc = _solo(keys, procs, tmp_path)
    with _client(keys, url) as client:
        first = client.update(b"before", timeout=10)
    sock = dealer(url, keys.z85("p1"))  # admitted as a client: reads are open
    term, last = _log_info(sock)
    assert last >= first
    sock.send_multipart(_forged_append(claimed, term, last))
    assert _log_info(sock) == (term, last)  # handled after the forgery, which moved nothing
    proc.wait_line(rf"raft\.peer\.refused id=p1 kind=peer-key .*claimed='{claimed}'")
    with _client(keys, url) as client:
        assert client.update(b"after", timeout=10) == last + 1


def test_with_curve_a_null_connection_gets_nothing_through(tmp_path, procs, dealer):
    keys = Keys(tmp_path)
    url, _ = _solo(keys, procs, tmp_path)
    null = dealer(url)
    null.send_multipart([encode_uint32(7), b"%", CLUSTER.encode()])
    null.send_multipart(_forged_append("p2", 1, 1))
    with _client(keys, url) as client:
        index = client.update(b"legit", timeout=10)
        info = client.log_info(url, timeout=10)
    assert info.last_index == index
    assert not null.poll(300)  # no answer: the handshake never completed


def test_with_curve_a_config_update_needs_a_peer_or_admin_key(tmp_path, procs):
    keys = Keys(tmp_path)
    url, _ = _solo(keys, procs, tmp_path)
    ghost = Peer("ghost", _free_url())
    with _client(keys, url) as anyone:
        with pytest.raises(ConfigError, match="needs a peer or admin CURVE key"):
            anyone.config_update([Peer("p1", url), ghost], timeout=10)
        with pytest.raises(ConfigError, match="needs a peer or admin CURVE key"):
            anyone.config_update([Peer("p1", url)], timeout=10)
    with _client(keys, url, who="admin") as admin:
        with pytest.raises(ConfigError, match="no CURVE key configured for peer.*ghost"):
            admin.config_update([Peer("p1", url), ghost], timeout=10)
        assert admin.config_update([Peer("p1", url)], timeout=10) > 0
        peers = admin.peer_config(url, timeout=10).peers or ()
        assert [p.id for p in peers] == ["p1"]
        assert admin.update(b"still leading", timeout=10) > 0


def _cluster(keys: Keys, tmp_path: Path, procs: list[Proc], impostor: bool = False):
    """p1, p2, p3 with CURVE, each listing the others with their keys. The impostor p3
    runs with another key than the one p1 and p2 have for p3."""
    urls = {name: _free_url() for name in ("p1", "p2", "p3")}
    for name, url in urls.items():
        others = [f"{n}={u}@{keys.hex(n)}" for n, u in urls.items() if n != name]
        key_file = keys.file("evil" if impostor and name == "p3" else name)
        extra = ("--raft-curve", "--key-file", key_file, "--peer", ",".join(others))
        procs.append(_start(name, url, tmp_path / name, *extra))
    return urls


def test_a_three_peer_curve_cluster_elects_and_commits(tmp_path, procs):
    keys = Keys(tmp_path)
    urls = _cluster(keys, tmp_path, procs)
    server_keys = {urls[n]: keys.z85(n) for n in urls}
    curve = ClientCurve.ephemeral(server_keys)
    with RaftClient(list(urls.values()), CLUSTER, timeout=15, curve=curve) as client:
        indexes = [client.update(f"u{k}".encode(), timeout=15) for k in range(5)]
        assert indexes == sorted(indexes) and len(set(indexes)) == 5
        leader = client.request_config(10).leader
        assert leader in urls
        for url in urls.values():  # every peer applies them
            wait_until(
                lambda u=url: client.log_info(u, timeout=5).last_applied >= indexes[-1],
                timeout=15,
            )


def test_a_peer_with_the_right_id_but_another_key_is_refused(tmp_path, procs):
    keys = Keys(tmp_path)
    urls = _cluster(keys, tmp_path, procs, impostor=True)
    impostor = procs[2]
    server_keys = {urls["p1"]: keys.z85("p1"), urls["p2"]: keys.z85("p2")}
    curve = ClientCurve.ephemeral(server_keys)
    with RaftClient([urls["p1"], urls["p2"]], CLUSTER, timeout=15, curve=curve) as client:
        assert client.update(b"p1 and p2 commit", timeout=15) > 0
        leader = client.request_config(10).leader
        assert leader in ("p1", "p2")
        # p3's RPCs (votes while it campaigns) are dropped by p1 and p2, and counted
        wait_until(lambda: any("kind=peer-key" in p.stderr for p in procs[:2]), timeout=20)
        assert any("claimed='p3'" in p.stderr for p in procs[:2])
        assert client.request_config(10).leader == leader  # the impostor disrupted nothing
    assert impostor.p.poll() is None


# -- the towers' metadata peer ----------------------------------------------------------------


def test_a_curve_tower_serves_curve_clients_only(tmp_path, procs):
    tower = Proc(
        py("tower", "--bind", "127.0.0.1:0", "--data-dir", str(tmp_path / "t"), "--raft-curve")
    )
    procs.append(tower)
    key = bytes.fromhex(tower.wait_line(r"tower Raft CURVE key ([0-9a-f]{64})").group(1))
    m = tower.wait_line(r"metadata peer (\S+) on (tcp://\S+):(\d+) \(cluster (\S+)\)")
    peer_id, raft_url, cluster = m.group(1), f"{m.group(2)}:{m.group(3)}", m.group(4)
    beacon = TowerAddress("127.0.0.1", int(m.group(3)) - RAFT_PORT_OFFSET)
    assert key == ident.load(tmp_path / "t").public_key  # the tower's node key
    server_keys = tower_server_keys([(peer_id, beacon)], {peer_id: curve_public_key(key)})
    with MetadataClient(
        raft_urls=[raft_url], cluster=cluster, curve=ClientCurve.ephemeral(server_keys)
    ) as client:
        assert client.config()["admins"]  # the tower's admin bootstrap went through CURVE
    view = MetadataView([str(beacon)], cluster=cluster, curve=ClientCurve.ephemeral(server_keys))
    try:
        assert view.start(wait=15)
    finally:
        view.stop()
    with RaftClient([raft_url], cluster, timeout=1) as null:
        with pytest.raises(DafkaTimeout):
            null.request_config(1)
    assert tower.p.poll() is None
