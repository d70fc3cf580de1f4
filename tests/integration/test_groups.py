"""Consumer groups with real processes: members are ``dafka-consumer -G`` processes;
producers run in the test process. Short session timeouts keep the tests quick."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from dafka import Producer
from dafka.groups.admin import describe
from tests.procs import Proc, Tower, py, wait_until

pytestmark = pytest.mark.integration

FAST = [
    "--session-timeout",
    "3",
    "--heartbeat-interval",
    "0.5",
    "--commit-interval",
    "0.3",
]


def member(tower: Tower, group: str, *args: str) -> Proc:
    p = Proc(
        py("dafka.cli.consumer", "--tower", tower.address, "-G", group, "--json", *FAST, *args, "t")
    )
    p.wait_line(r"% group \S+ member [0-9A-F]{32}")
    return p


def held(p: Proc) -> set[str]:
    """The partitions a member reads now, from its assigned / revoked lines."""
    out: set[str] = set()
    for line in p.stderr_lines:
        m = re.match(r"% group \S+ (assigned|revoked): (.*)", line)
        if m:
            keys = {k.split("/", 1)[1] for k in m.group(2).split(", ") if k}
            out = out | keys if m.group(1) == "assigned" else out - keys
    return out


def records(p: Proc) -> list[tuple[str, int]]:
    lines = bytes(p.stdout).decode().splitlines()
    return [(r["partition"], r["offset"]) for r in map(json.loads, lines) if r]


@pytest.fixture
def producers(tower: Tower, start_store) -> Iterator[list[Producer]]:
    start_store()
    ps = [Producer("t", towers=tower.address) for _ in range(4)]
    yield ps
    for p in ps:
        p.close(timeout=5)


def committed(tower: Tower, group: str, keys: set[str]) -> dict[str, int | None]:
    info = describe(tower.address, group, timeout=10)
    return {r.partition: r.committed for r in info.rows if r.partition in keys}


def send(ps: list[Producer], first: int, count: int) -> None:
    for p in ps:
        for i in range(first, first + count):
            p.send(f"{p.partition[:4]}-{i}")
        p.flush(timeout=20)


def test_two_members_share_the_partitions_then_one_dies_and_the_other_resumes(
    tower: Tower, producers: list[Producer]
) -> None:
    parts = {p.partition for p in producers}
    send(producers, 0, 10)
    a = member(tower, "g", "-o", "beginning")
    b = member(tower, "g", "-o", "beginning")
    try:
        # settled: every partition held by exactly one of them
        wait_until(
            lambda: held(a) | held(b) == parts and not held(a) & held(b) and held(a) and held(b),
            30,
            what="the two members to share the four partitions",
        )
        ha, hb = held(a), held(b)
        # everything below 10 read once, at least (a partition may move while read)
        wait_until(
            lambda: (
                {(pt, o) for pt, o in records(a) + records(b)}
                == {(pt, o) for pt in parts for o in range(10)}
            ),
            30,
            what="the first records",
        )
        send(producers, 10, 10)
        want = {(pt, o) for pt in parts for o in range(10, 20)}
        wait_until(lambda: want <= set(records(a) + records(b)), 30, what="the second records")
        # after settling, each partition read by its holder only, once
        new_a = [r for r in records(a) if r[1] >= 10]
        new_b = [r for r in records(b) if r[1] >= 10]
        assert {pt for pt, _ in new_a} == ha and {pt for pt, _ in new_b} == hb
        assert len(new_a) + len(new_b) == len(want)
        # b commits every 0.3 s: once its commits of 20 are stored, kill it
        wait_until(
            lambda: committed(tower, "g", hb) == dict.fromkeys(hb, 20),
            30,
            interval=0.3,
            what="b's commits",
        )
        a_before = len(records(a))
        b.kill()
        wait_until(lambda: held(a) == parts, 30, what="a to take b's partitions")
        send(producers, 20, 10)
        want_b = {(pt, o) for pt in hb for o in range(20, 30)}
        wait_until(lambda: want_b <= set(records(a)), 30, what="b's partitions read by a")
        a_of_b = sorted(r for r in records(a)[a_before:] if r[0] in hb)
        # resumed from b's committed offsets (20): nothing lost, nothing read twice
        assert a_of_b == sorted(want_b)
    finally:
        a.kill()
        b.kill()


def test_a_joining_member_takes_its_share_from_the_commits_and_a_restart_resumes(
    tower: Tower, producers: list[Producer], tmp_path
) -> None:
    parts = {p.partition for p in producers}
    send(producers, 0, 10)
    a = member(tower, "g", "-o", "beginning")
    b = b2 = None
    try:
        wait_until(lambda: held(a) == parts, 30, what="a alone to hold every partition")
        wait_until(lambda: len(records(a)) >= 40, 30, what="a to read the first records")
        state = str(tmp_path / "b-state")
        b = member(tower, "g", "-o", "beginning", "--state-dir", state)
        wait_until(
            lambda: held(a) | held(b) == parts and not held(a) & held(b) and held(b),
            30,
            what="a to give b its share",
        )
        assert re.search(r"% group g revoked: ", a.stderr)
        hb = held(b)
        send(producers, 10, 10)
        want = {(pt, o) for pt in parts for o in range(10, 20)}
        wait_until(lambda: want <= set(records(a) + records(b)), 30, what="the second records")
        # b started its partitions at a's commits (a revoked them after reading 0..9)
        assert sorted(records(b)) == sorted((pt, o) for pt in hb for o in range(10, 20))
        wait_until(
            lambda: committed(tower, "g", hb) == dict.fromkeys(hb, 20),
            30,
            interval=0.3,
            what="b's commits",
        )
        b_id = b.wait_line(r"member ([0-9A-F]{32})").group(1)
        b.kill()
        b2 = member(tower, "g", "--state-dir", state)  # -o stored
        assert b2.wait_line(r"member ([0-9A-F]{32})").group(1) == b_id
        # the same member (its key kept in --state-dir) takes its partitions back
        wait_until(lambda: held(b2) == hb, 10, what="b to take its partitions back")
        send(producers, 20, 5)
        want_b = sorted((pt, o) for pt in hb for o in range(20, 25))
        wait_until(lambda: set(want_b) <= set(records(b2)), 30, what="b's new records")
        assert sorted(records(b2)) == want_b
    finally:
        a.kill()
        for p in (b, b2):
            if p is not None:
                p.kill()


def test_the_api_commit_committed_callbacks_and_a_clean_leave(
    tower: Tower, producers: list[Producer]
) -> None:
    from dafka import Consumer

    parts = {("t", p.partition) for p in producers}
    send(producers, 0, 5)
    events: list[tuple[str, str, frozenset]] = []
    kw = {
        "towers": tower.address,
        "group": "api",
        "offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout": 30.0,  # a leave must not wait for it
        "heartbeat_interval": 0.5,
    }

    def member_of(name: str) -> Consumer:
        return Consumer(
            "t",
            on_assign=lambda keys: events.append((name, "assign", frozenset(keys))),
            on_revoke=lambda keys: events.append((name, "revoke", frozenset(keys))),
            **kw,  # type: ignore[arg-type]
        )

    a = member_of("a")
    try:
        wait_until(lambda: set(a.assignment()) == parts, 30, what="a to hold everything")
        got: list = []
        wait_until(
            lambda: got.extend(a.poll_batch(100, timeout=0.1)) or len(got) >= 20, 30, what="reads"
        )
        assert a.committed() == {}
        done = a.commit()
        assert done == dict.fromkeys(parts, 5) and a.committed() == done
        some = sorted(parts)[0]
        assert a.commit({some: 3}) == {some: 3}  # explicit offsets, even backwards
        assert a.committed()[some] == 3
        a.commit({some: 5})
        b = member_of("b")
        try:
            wait_until(
                lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2,
                30,
                what="the split",
            )
            assert not set(a.assignment()) & set(b.assignment())
            revoked = [e[2] for e in events if e[:2] == ("a", "revoke")]
            assert revoked == [frozenset(b.assignment())]
            # b starts its partitions at a's commits: it reads nothing old
            assert b.poll_batch(100, timeout=1.0) == []
            assert b.committed() == dict.fromkeys(parts, 5)
        finally:
            b.close()  # leaves: a takes b's partitions back well before the session timeout
        wait_until(lambda: set(a.assignment()) == parts, 10, what="a to take them back")
        assert ("a", "assign", revoked[0]) in events
    finally:
        a.close()
