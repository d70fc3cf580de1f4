"""Attacks on the metadata through the Raft port of a default tower (issue 32, point 1).

``dafka-local`` started as ``make run`` starts it (no flag but its ports and places) and
a default one-tower ``dafka-tower`` speak NULL on their Raft port. Before, anyone who could
reach it (another user of the host, another host) could play an unconfigured leader at
term+1: one InstallSnapshot chunk holding a metadata snapshot of the attacker's making
was restored wholesale (the attacker's admin key, the attacker's membership), and the real
admin's ``dafka topics create`` was refused from then on, after a restart too. An
AppendEntries at term+1 moved the term and rewrote the log the same way, and a
ConfigUpdate could add the attacker as a voter.

Now a peer over NULL has no other peers: it refuses every peer RPC and every ConfigUpdate
(:class:`dafka.raft.peer._guard.PeerGuard`). The tower's term and log do not move, and the admin's
commands work, before and after a restart. A group of several towers does not start
without keys (CURVE, now its default when ``--raft-peers`` gives keys) or the explicit
compatibility flag ``--raft-insecure-null``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from dafka.errors import ConfigError, DafkaError
from dafka.metadata.state import MetadataStateMachine, command
from dafka.raft.client import RaftClient
from dafka.raft.codec import (
    ZERO_REQID,
    ClusterConfig,
    Entry,
    EntryType,
    Peer,
    SnapshotMeta,
    encode_uint32,
    pack_snapshot,
    unpack_snapshot,
)
from dafka.raft.codec import _wire as w
from tests.admin import ATTACKER, tower_args
from tests.e2e.test_cli import assert_one_line_error
from tests.procs import Proc, py
from tower.metadata import PORTS_PER_TOWER, free_port_block

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CLUSTER = b"dafka"
EVIL = "evil"


class Target:
    """A default tower on fixed ports (so that a restart keeps its address)."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.root = root
        self.port = free_port_block("127.0.0.1")
        self.address = f"127.0.0.1:{self.port}"
        self.raft_url = f"tcp://127.0.0.1:{self.port + 2}"
        self.proc: Proc | None = None

    def start(self) -> Target:
        if self.kind == "local":  # as `make run`, with this test's ports and places
            args = py(
                "dafka.cli.local",
                "--tower-bind",
                self.address,
                "--data-dir",
                str(self.root / "store"),
                "--tower-data-dir",
                str(self.root / "tower"),
            )
            self.proc = Proc(args)
            self.proc.wait_line(r"Dafka is running", timeout=30)
        else:
            args = py(
                "tower",
                "--bind",
                self.address,
                "--data-dir",
                str(self.root / "tower"),
                *tower_args(),
            )
            self.proc = Proc(args)
            self.proc.wait_line(r"tower on tcp://", timeout=30)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            assert self.proc.terminate(timeout=15) == 0, self.proc.stderr
            self.proc = None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def dafka(self, *args: str) -> Proc:
        proc = Proc(py("dafka.cli.admin", *args, "--tower", self.address))
        proc.wait(30)
        return proc


@pytest.fixture(params=["local", "tower"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    t = Target(request.param, tmp_path)
    yield t
    t.kill()


def _log_info(sock: zmq.Socket, rid: int) -> w.RequestLogInfoResponse:
    """RequestLogInfo on the attacker's own connection: answered after everything it sent
    before was handled (a peer handles one connection's messages in order)."""
    sock.send_multipart(w.RequestLogInfo(rid, CLUSTER).encode())
    while sock.poll(15_000):
        answer = sock.recv_multipart()
        if len(answer) == 10 and answer[0] == encode_uint32(rid):
            return w.RequestLogInfoResponse.decode(answer)
    raise AssertionError("no RequestLogInfo answer within 15 s")


def _forged_snapshot(index: int, term: int) -> bytes:
    """A metadata snapshot of the attacker's making: its key the only admin, its peer the
    only member."""
    sm = MetadataStateMachine(cluster="dafka")
    assert sm.apply_data(command("admins.init", admins=[ATTACKER.public_key.hex()])) is None
    evil = ClusterConfig((Peer(EVIL, "tcp://127.0.0.1:1"),))
    return pack_snapshot(SnapshotMeta(index, term, evil), sm.snapshot())


def _attack(url: str) -> tuple[w.RequestLogInfoResponse, w.RequestLogInfoResponse]:
    """An unconfigured leader at term+1: InstallSnapshot (one chunk), AppendEntries, a
    vote and a leader transfer. The tower's log info before and after."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(url)
    try:
        before = _log_info(sock, 1)
        term, last = before.term + 1, before.last_index + 50
        chunk = _forged_snapshot(last, term)
        admins = command("admins.init", admins=[ATTACKER.public_key.hex()])
        entry = Entry(last + 1, term, EntryType.STATE, ZERO_REQID, admins)
        for message in (
            w.InstallSnapshot(11, CLUSTER, EVIL, term, last, term, 0, len(chunk), chunk),
            w.AppendEntries(12, CLUSTER, EVIL, term, last, term, last + 1, (entry,)),
            w.AppendEntries(13, CLUSTER, EVIL, term + 1, 0, 0, 0),
            w.RequestVote(14, CLUSTER, EVIL, term + 2, last + 1, term),
            w.TimeoutNow(15, CLUSTER, EVIL, term + 2),
        ):
            sock.send_multipart(message.encode())
        return before, _log_info(sock, 2)
    finally:
        sock.close(0)
        ctx.term()


def _unmoved(info: w.RequestLogInfoResponse) -> tuple[object, ...]:
    return (info.term, info.is_leader, info.first_index, info.last_index, info.snapshot_size)


def test_an_unconfigured_leader_cannot_take_the_metadata(target: Target) -> None:
    target.start()
    assert target.dafka("topics", "create", "before").p.returncode == 0
    before, after = _attack(target.raft_url)
    assert before.is_leader
    assert _unmoved(after) == _unmoved(before)  # no term, no log, no snapshot of theirs
    made = target.dafka("topics", "create", "after-the-attack")
    assert made.p.returncode == 0, made.stderr
    target.stop()
    target.start()
    made = target.dafka("topics", "create", "after-a-restart")
    assert made.p.returncode == 0, made.stderr
    listed = target.dafka("topics", "list")
    assert listed.p.returncode == 0, listed.stderr
    names = bytes(listed.stdout).decode()
    assert all(n in names for n in ("before", "after-the-attack", "after-a-restart"))
    # the restarted tower (a new election: its own term + 1) refuses it again
    before, after = _attack(target.raft_url)
    assert before.is_leader and _unmoved(after) == _unmoved(before)


def test_a_config_update_from_anyone_is_refused_over_null(target: Target) -> None:
    target.start()
    with RaftClient([target.raft_url], "dafka", timeout=10) as client:
        current = list(client.peer_config(target.raft_url, timeout=10).peers or ())
        with pytest.raises(ConfigError, match="PermissionError|membership changes need"):
            client.config_update([*current, Peer(EVIL, "tcp://127.0.0.1:1")], timeout=10)
        assert list(client.peer_config(target.raft_url, timeout=10).peers or ()) == current
    made = target.dafka("topics", "create", "after-the-attack")
    assert made.p.returncode == 0, made.stderr


def _port_blocks(n: int) -> list[int]:
    """``n`` port blocks for towers, none overlapping another (free_port_block alone may
    give the same block twice: a CI run got t2 and t3 on one port)."""
    ports: list[int] = []
    for _ in range(100):
        if len(ports) == n:
            break
        p = free_port_block("127.0.0.1")
        if all(abs(p - q) >= PORTS_PER_TOWER for q in ports):
            ports.append(p)
    assert len(ports) == n, "no distinct port blocks"
    return ports


def _keyless_group_tower(tmp_path: Path, *args: str) -> Proc:
    """t1 of a group of two towers given without keys, with ``args``."""
    ports = _port_blocks(2)
    peers = ",".join(f"t{i + 1}=127.0.0.1:{p}" for i, p in enumerate(ports))
    return Proc(
        py(
            "tower",
            "--bind",
            f"127.0.0.1:{ports[0]}",
            "--raft-peers",
            peers,
            "--data-dir",
            str(tmp_path / "t1"),
            *args,
        )
    )


def test_a_group_of_towers_without_keys_does_not_start(tmp_path: Path) -> None:
    proc = _keyless_group_tower(tmp_path)
    assert_one_line_error(proc, 2, "ID=HOST:PORT@PUBHEX")
    assert "--raft-insecure-null" in proc.stderr


def test_the_compatibility_flag_says_what_it_gives_up(tmp_path: Path) -> None:
    proc = _keyless_group_tower(tmp_path, "--raft-insecure-null", *tower_args())
    try:
        proc.wait_line(r"--raft-insecure-null: .*anyone who can reach the Raft port")
        proc.wait_line(r"tower on tcp://")
    finally:
        proc.kill()


def test_the_forged_snapshot_is_one_a_tower_would_restore() -> None:
    """The test's own check: the attack above is refused by the guard, not for a
    malformed chunk."""
    meta, data = unpack_snapshot(_forged_snapshot(60, 3))
    sm = MetadataStateMachine(cluster="dafka")
    try:
        sm.restore(data)
    except DafkaError as exc:  # a restore that re-verifies signatures refuses it: also fine
        pytest.skip(f"the forged snapshot is refused by its content too: {exc}")
    assert meta.config.peers == (Peer(EVIL, "tcp://127.0.0.1:1"),)


def test_a_keyed_group_of_towers_serves_the_admin_and_refuses_null_peers(tmp_path: Path) -> None:
    """docs/metadata.md's group, on 127.0.0.1: keys made ahead with ``dafka-keys create``,
    given in --raft-peers (CURVE by default then), the admin's key as first admin. The admin
    creates a topic through the keyed towers; a forged AppendEntries over NULL gets nothing
    through (the CURVE handshake refuses it) and the group's term does not move."""
    ports = _port_blocks(3)
    keys = []
    for i in range(3):
        made = Proc(py("dafka.cli.keys", "create", "-s", str(tmp_path / f"t{i + 1}"), "--json"))
        assert made.wait() == 0, made.stderr
        keys.append(json.loads(bytes(made.stdout))["public_key"])
    spec = ",".join(f"t{i + 1}=127.0.0.1:{p}@{keys[i]}" for i, p in enumerate(ports))
    towers = [
        Proc(
            py(
                "tower",
                "--bind",
                f"127.0.0.1:{p}",
                "--data-dir",
                str(tmp_path / f"t{i + 1}"),
                "--raft-peers",
                spec,
                *tower_args(),
            )
        )
        for i, p in enumerate(ports)
    ]
    try:
        for tower in towers:
            tower.wait_line(r"tower on tcp://", timeout=30)
        keyed = ",".join(f"127.0.0.1:{p}@{keys[i]}" for i, p in enumerate(ports))
        made = Proc(py("dafka.cli.admin", "topics", "create", "events", "--tower", keyed))
        assert made.wait(60) == 0, made.stderr
        with RaftClient(
            [f"tcp://127.0.0.1:{p + 2}" for p in ports], "dafka", timeout=10
        ) as null_client:
            with pytest.raises(DafkaError):  # a NULL client is not let in at all
                null_client.log_info(f"tcp://127.0.0.1:{ports[0] + 2}", timeout=2)
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://127.0.0.1:{ports[0] + 2}")
        try:
            sock.send_multipart(w.AppendEntries(1, CLUSTER, "t2", 1 << 20, 0, 0, 0).encode())
            assert not sock.poll(1000)  # no answer: the handshake never completed
        finally:
            sock.close(0)
            ctx.term()
        listed = Proc(py("dafka.cli.admin", "topics", "list", "--tower", keyed))
        assert listed.wait(60) == 0 and "events" in bytes(listed.stdout).decode(), listed.stderr
        status = Proc(py("dafka.cli.admin", "cluster", "status", "--tower", keyed, "--json"))
        assert status.wait(60) == 0, status.stderr
        peers = json.loads(bytes(status.stdout).decode())["peers"]
        terms = [peer["term"] for peer in peers]
        assert len(terms) == 3 and max(terms) < 1 << 20, peers  # the forged term is nowhere
    finally:
        for tower in towers:
            tower.kill()
