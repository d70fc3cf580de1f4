"""Attacks on a consumer group through its topic: producers that are not members (or members
that lie) write commit and heartbeat records into ``__group.NAME``.

* With the group topic's producer ACL naming the members, neither the stores nor the
  members' readers take the others' records.
* Without any ACL (issue 32, point 5): a plain producer's commit at epoch 2^64-1 moved every
  later member to its offset; now a commit counts only from a member for what its own
  heartbeat held, with an epoch within reach of an honest successor.
* A fake member heartbeating that it holds the partitions stalled a new member for as long
  as it kept heartbeating; now one that never lets go stalls what the rule gives the others
  for the session timeout at most. (A writer the group does not admit is no member at all:
  ``tests/unit/test_attacks_groups_rules.py``; with consumer ACLs, which need CURVE to be
  served, that is the rule for a group of ACL'd topics.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dafka.config import NodeConfig, parse_towers
from dafka.consumer._facade import Consumer
from dafka.groups.admin import describe
from dafka.groups.assign import PartitionKey, assign
from dafka.groups.records import Commit, Heartbeat, Leave, encode
from dafka.metadata import MetadataClient
from dafka.producer._facade import Producer
from dafka.security import identity
from dafka.storage.state_dir import StateDir
from dafka.store._facade import Store
from tests.integration.test_attacks_curve import CurveTower, keys, produce
from tests.integration.test_attacks_curve import Store as StoreProc
from tests.procs import Proc, Tower, py, wait_until

pytestmark = pytest.mark.integration

TOP = (1 << 64) - 1


def _fill(tower: Tower, producers: int, records: int) -> list[Producer]:
    ps = [Producer("t", towers=tower.address) for _ in range(producers)]
    for p in ps:
        for i in range(records):
            p.send(f"{p.partition[:4]}-{i}")
        p.flush(timeout=30)
    return ps


def _read(c: Consumer, into: list, want: int) -> bool:
    into.extend(c.poll_batch(1000, timeout=0.1))
    return len(into) >= want


@contextmanager
def _fake_member(
    tower: Tower | CurveTower, group: str, claims: set[PartitionKey], curve: bool = False
) -> Iterator[str]:
    """A producer of the group topic that heartbeats every 0.3 s that it holds ``claims``."""
    node = NodeConfig(towers=parse_towers(tower.address), curve=True) if curve else None
    rogue = Producer("__group." + group, towers=tower.address, node=node)
    stop = threading.Event()
    topics = tuple(sorted({t for t, _ in claims}))
    beat = encode(Heartbeat(topics, frozenset(claims), frozenset(claims), "rogue"))

    def run() -> None:
        while not stop.is_set():
            rogue.send(beat)
            stop.wait(0.3)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield rogue.partition
    finally:
        stop.set()
        thread.join(5)
        rogue.close(timeout=2)


def test_a_non_member_cannot_commit_or_hold_partitions_for_a_group(tmp_path: Path) -> None:
    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True).start()
    member_dir = tmp_path / "member"
    with StateDir(member_dir) as state:
        member_id = state.identity().node_id
    member = rogue = None
    data: list[Producer] = []
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("__group.g", {"producers": [member_id]})
        data = _fill(tower, 1, 10)
        member = Consumer(
            "t",
            towers=tower.address,
            group="g",
            state_dir=member_dir,
            enable_auto_commit=False,
            metadata=True,
            session_timeout=3.0,
            heartbeat_interval=0.5,
        )
        assert member.member_id == member_id
        key = ("t", data[0].partition)
        wait_until(lambda: member.assignment() == [key], 20, what="the member to hold t")
        assert member.commit({key: 5}) == {key: 5}
        rogue = Producer("__group.g", towers=tower.address, metadata=True)
        rogue.send(encode(Heartbeat(("t",), frozenset({key}), frozenset({key}), "rogue")))
        rogue.send(encode(Commit((("t", key[1], 999, 2),))))
        reader = member._group.reader  # type: ignore[union-attr]
        wait_until(
            lambda: store.core.stats.unauthorized > 0 and reader._core.stats.unauthorized > 0,
            15,
            what="the store and the member's reader refusing the rogue's records",
        )
        assert member.committed() == {key: 5}
        info = describe(tower.address, "g", session_timeout=3.0)
        assert [s.member for s in info.members] == [member_id]
        assert {(r.topic, r.partition): r.committed for r in info.rows} == {key: 5}
    finally:
        if member is not None:
            member.close()
        if rogue is not None:
            rogue.close(timeout=0.5)  # its records are never acknowledged
        for p in data:
            p.close(timeout=2)
        store.stop()
        tower.stop()


def test_forged_commits_do_not_move_the_group(tower: Tower, start_store) -> None:
    """No ACL anywhere. A member commits 100 on two partitions and leaves; then a plain
    producer commits 250 at epoch 2^64-1 (the issue's record) and at epoch 2 (it never
    heartbeated), and another heartbeats that it holds the second partition, commits 250
    at epoch 2^64-1 and leaves. The next member starts both partitions at 100."""
    start_store()
    data = _fill(tower, 2, 400)
    ka, kb = sorted(("t", p.partition) for p in data)
    kw = {
        "towers": tower.address,
        "group": "g",
        "offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout": 3.0,
        "heartbeat_interval": 0.5,
    }
    rogues: list[Producer] = []
    try:
        a = Consumer("t", **kw)  # type: ignore[arg-type]
        try:
            wait_until(lambda: set(a.assignment()) == {ka, kb}, 30, what="a to hold both")
            assert a.commit({ka: 100, kb: 100}) == {ka: 100, kb: 100}
        finally:
            a.close()
        plain = Producer("__group.g", towers=tower.address)
        liar = Producer("__group.g", towers=tower.address)
        rogues += [plain, liar]
        plain.send(encode(Commit((("t", ka[1], 250, TOP),))))
        plain.send(encode(Commit((("t", ka[1], 250, 2),))))
        liar.send(encode(Heartbeat(("t",), frozenset({kb}), frozenset({kb}), "liar")))
        liar.send(encode(Commit((("t", kb[1], 250, TOP),))))
        liar.send(encode(Leave()))
        for r in rogues:
            r.flush(timeout=20)  # stored: every later reader replays them
        b = Consumer("t", **kw)  # type: ignore[arg-type]
        try:
            wait_until(lambda: set(b.assignment()) == {ka, kb}, 30, what="b to hold both")
            assert b.committed() == {ka: 100, kb: 100}
            got: list = []
            wait_until(lambda: _read(b, got, 600), 30, what="b to read from the commits")
            firsts = {p: min(r.offset for r in got if r.partition == p) for _, p in (ka, kb)}
            assert firsts == {ka[1]: 100, kb[1]: 100}
        finally:
            b.close()
        info = describe(tower.address, "g", session_timeout=3.0)
        assert {(r.topic, r.partition): r.committed for r in info.rows} == {ka: 100, kb: 100}
    finally:
        for p in data + rogues:
            p.close(timeout=2)


def test_a_member_that_never_lets_go_stalls_a_partition_for_the_session_timeout_only(
    tower: Tower, start_store
) -> None:
    """No ACL: the fake member is admitted, and keeps heartbeating that it holds all four
    partitions. A new member takes its share by the rule once the claim on it has stood for
    its session timeout (3 s), and reads it."""
    start_store()
    data = _fill(tower, 4, 5)
    keys = {("t", p.partition) for p in data}
    try:
        with _fake_member(tower, "g", keys) as rogue_id:
            with Consumer(
                "t",
                towers=tower.address,
                group="g",
                offset_reset="earliest",
                session_timeout=3.0,
                heartbeat_interval=0.5,
            ) as c:
                assert c.member_id is not None
                mine = assign({rogue_id: ["t"], c.member_id: ["t"]}, keys)[c.member_id]
                got: list = []
                want = 5 * len(mine)
                wait_until(lambda: _read(c, got, want), 30, what="the member's share")
                assert {("t", r.partition) for r in got} == mine
                assert set(c.assignment()) == mine
    finally:
        for p in data:
            p.close(timeout=2)


def test_a_fake_member_the_group_does_not_admit_does_not_stall_a_new_one(
    tmp_path: Path,
) -> None:
    """Over CURVE, the topic's read ACL names the member (its read key and its group key);
    a producer of the group topic heartbeats that it holds the topic's partition. It is not
    admitted (the ACL does not name it), so the member reads all 50 records at once, not
    after its session timeout (60 s here)."""
    tower = CurveTower()
    k = keys(tmp_path, "store", "producer", "reader")
    member_dir = tmp_path / "member"
    with StateDir(member_dir) as state:
        member_id = state.identity().node_id
    reader_id = identity.load(k["reader"][0]).node_id
    partition = identity.load(k["producer"][0]).node_id
    store = StoreProc(k["store"][0], tower.address, "--curve")
    member = None
    try:
        produce(tower.address, "sealed", "--state-dir", str(k["producer"][0]))
        with MetadataClient(tower.address) as admin:
            admin.trust_store(identity.load(k["store"][0]).node_id)  # it reads every topic
            admin.alter_topic("sealed", {"consumers": [reader_id, member_id]})
        with _fake_member(tower, "g", {("sealed", partition)}, curve=True):
            member = Proc(
                py(
                    "dafka.cli.consumer",
                    "sealed",
                    "--tower",
                    tower.address,
                    "--curve",
                    "--key-dir",
                    str(k["reader"][0]),
                    "-G",
                    "g",
                    "--state-dir",
                    str(member_dir),
                    "-o",
                    "beginning",
                    "--session-timeout",
                    "60",
                    "--heartbeat-interval",
                    "0.5",
                )
            )
            assert member.wait_line(r"member ([0-9A-F]{32})").group(1) == member_id
            wait_until(
                lambda: bytes(member.stdout).count(b"\n") >= 50,  # type: ignore[union-attr]
                30,
                what="the member to read the 50 records",
            )
    finally:
        if member is not None:
            member.kill()
        store.kill()
        tower.proc.kill()
