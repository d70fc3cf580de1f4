"""Consumer groups with real processes: members are ``dafka-consumer -G`` processes;
producers run in the test process. Short session timeouts keep the tests quick."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable, Iterator

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
        # a member's commit producer trusts any store as its consumer does, and does not
        # warn about it as if the user had made a producer without trusted stores
        assert not [line for line in a.stderr_lines if "WARNING" in line], a.stderr_lines
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
            # callbacks run in a poll: a runs its on_revoke when it polls next
            wait_until(
                lambda: (
                    a.poll_batch(100, timeout=0.1) is not None
                    and any(e[:2] == ("a", "revoke") for e in events)
                ),
                10,
                what="a's on_revoke in a poll",
            )
            revoked = [e[2] for e in events if e[:2] == ("a", "revoke")]
            assert revoked == [frozenset(b.assignment())]
            # b starts its partitions at a's commits: it reads nothing old
            assert b.poll_batch(100, timeout=1.0) == []
            assert b.committed() == dict.fromkeys(parts, 5)
        finally:
            b.close()  # leaves: a takes b's partitions back well before the session timeout
        wait_until(lambda: set(a.assignment()) == parts, 10, what="a to take them back")
        wait_until(
            lambda: (
                a.poll_batch(100, timeout=0.1) is not None and ("a", "assign", revoked[0]) in events
            ),
            10,
            what="a's on_assign in a poll",
        )
    finally:
        a.close()


class _Seen:
    """What a member's caller saw, in order: its callbacks and the records its polls returned,
    and the threads the callbacks ran on."""

    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset]] = []
        self.threads: set[int] = set()
        self.in_event_loop: list[bool] = []

    def callback(self, kind: str) -> Callable[[list], None]:
        def run(keys: list) -> None:
            self.threads.add(threading.get_ident())
            try:
                asyncio.get_running_loop()
                self.in_event_loop.append(True)
            except RuntimeError:
                self.in_event_loop.append(False)
            self.events.append((kind, frozenset(keys)))

        return run

    def records(self, got: list) -> None:
        self.events.extend(("record", frozenset({(r.topic, r.partition)})) for r in got)

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)

    def check_order(self) -> None:
        """Every record falls between its partition's on_assign and on_revoke."""
        held: set = set()
        for kind, keys in self.events:
            if kind == "assign":
                assert not keys & held, f"assigned again without a revoke: {keys & held}"
                held |= keys
            elif kind == "revoke":
                assert keys <= held, f"revoked what was not assigned: {keys - held}"
                held -= keys
            else:
                assert keys <= held, f"a record of {keys} outside its assignment"


def _group_kw(tower: Tower, group: str) -> dict:
    return {
        "towers": tower.address,
        "group": group,
        "offset_reset": "earliest",
        "session_timeout": 30.0,  # a leave must not wait for it
        "heartbeat_interval": 0.5,
        "auto_commit_interval": 0.3,
    }


def test_rebalance_callbacks_run_in_the_callers_poll_before_the_records_they_precede(
    tower: Tower, producers: list[Producer]
) -> None:
    """on_assign / on_revoke run on the thread that polls (not the member's), and a poll
    returns a partition's records only between its on_assign and its on_revoke, through a
    split (b joins: a's on_revoke) and a take-back (b leaves: a's on_assign)."""
    from dafka import Consumer

    send(producers, 0, 5)
    seen = _Seen()
    kw = _group_kw(tower, "order")
    a = Consumer("t", on_assign=seen.callback("assign"), on_revoke=seen.callback("revoke"), **kw)
    n = [5]

    def pump(until: Callable[[], bool]) -> bool:
        for p in producers:  # records of every partition keep coming while it rebalances
            p.send(f"{p.partition[:4]}-{n[0]}")
        n[0] += 1
        seen.records(a.poll_batch(1000, timeout=0.05))
        return until()

    try:
        wait_until(lambda: pump(lambda: seen.count("record") >= 20), 30, what="a's first reads")
        b = Consumer("t", **kw)
        try:
            wait_until(lambda: pump(lambda: seen.count("revoke") >= 1), 30, what="a's revoke")
            gone = next(keys for kind, keys in seen.events if kind == "revoke")
            wait_until(lambda: pump(lambda: set(b.assignment()) == gone), 30, what="b's take")
            for _ in range(10):  # polls after the revoke: nothing of b's partitions
                pump(lambda: True)
        finally:
            b.close()
        wait_until(
            lambda: pump(lambda: seen.count("assign") >= 2), 30, what="a's take-back on_assign"
        )
        back = len(seen.events)
        wait_until(
            lambda: pump(lambda: any(k == "record" and ks <= gone for k, ks in seen.events[back:])),
            30,
            what="records of the partitions taken back",
        )
    finally:
        a.close()
    assert seen.threads == {threading.get_ident()}  # the caller's thread, never the member's
    seen.check_order()


def test_async_consumer_runs_rebalance_callbacks_on_the_event_loop(
    tower: Tower, producers: list[Producer]
) -> None:
    from dafka import AsyncConsumer

    send(producers, 0, 5)
    seen = _Seen()
    kw = _group_kw(tower, "aio")

    async def main() -> int:
        async with AsyncConsumer(
            "t", on_assign=seen.callback("assign"), on_revoke=seen.callback("revoke"), **kw
        ) as c:
            deadline = time.monotonic() + 30
            while seen.count("record") < 20 and time.monotonic() < deadline:
                seen.records(await c.poll_batch(100, timeout=0.2))
            return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert seen.count("assign") >= 1 and seen.count("record") >= 20
    assert seen.threads == {loop_thread} and all(seen.in_event_loop)
    seen.check_order()


def test_a_member_with_a_fixed_port_starts_and_commits(
    tower: Tower, producers: list[Producer]
) -> None:
    """``NodeConfig(port=...)``: the consumer binds that port; its member's producer and
    reader of the group topic take ports of their own (both took the same port before,
    and the member failed with 'already in use')."""
    from dafka import Consumer
    from dafka.config import NodeConfig, parse_towers
    from tests.procs import free_port

    send(producers, 0, 5)
    node = NodeConfig(towers=parse_towers(tower.address), port=free_port(set()))
    with Consumer(
        "t",
        towers=tower.address,
        node=node,
        group="fixed",
        offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval=0.5,
    ) as c:
        parts = {("t", p.partition) for p in producers}
        wait_until(lambda: set(c.assignment()) == parts, 30, what="the member to hold all")
        got: list = []
        wait_until(
            lambda: got.extend(c.poll_batch(100, timeout=0.1)) or len(got) >= 20, 30, what="reads"
        )
        assert c.commit() == dict.fromkeys(parts, 5)
