"""``dafka groups reset`` with real processes (issue 38): an admin resets a group's offsets
and every reader honours it, a live member by seeking; a plan without --execute changes
nothing; a key that is not an admin's changes nothing and says so in one line."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from dafka import CommitFailedError, Consumer, Producer
from dafka.metadata.client import MetadataClient
from dafka.metadata.signing import create_admin_key
from tests.integration.test_groups import committed, member, records
from tests.procs import Tower, py, wait_until

pytestmark = pytest.mark.integration


def dafka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        py("dafka.cli.admin", *args), capture_output=True, text=True, timeout=60, check=False
    )


def test_an_admin_resets_a_live_group_and_its_member_reads_again_from_there(
    tower: Tower, start_store, tmp_path: Path
) -> None:
    start_store()
    with Producer("t", towers=tower.address) as p:
        for i in range(20):
            p.send(f"r{i}")
        p.flush(timeout=20)
        part = p.partition
    m = member(tower, "g", "--from-beginning")
    try:
        wait_until(lambda: len(records(m)) >= 20, timeout=30, what="the first 20 records")
        wait_until(lambda: committed(tower, "g", {part}) == {part: 20}, 30, what="a commit of 20")
        reset = ("groups", "reset", "g", "--tower", tower.address, "--to-offset", "5")

        plan = dafka(*reset)  # a plan only
        assert plan.returncode == 0, plan.stderr
        assert part in plan.stdout and "--execute" in plan.stderr
        assert committed(tower, "g", {part}) == {part: 20}

        stranger = tmp_path / "stranger.key"
        create_admin_key(stranger)
        refused = dafka(*reset, "--execute", "--admin-key", str(stranger))
        assert refused.returncode != 0
        lines = [ln for ln in refused.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "not an admin" in lines[0], refused.stderr
        assert committed(tower, "g", {part}) == {part: 20}

        done = dafka(*reset, "--execute")
        assert done.returncode == 0, done.stderr
        assert "1 live member(s) seek" in done.stderr
        # the live member seeks: offsets 5..19 delivered a second time, 0..4 not
        wait_until(lambda: len(records(m)) >= 35, timeout=30, what="the records again from 5")
        seen = Counter(o for _, o in records(m))
        assert all(seen[o] == 1 for o in range(5)) and all(seen[o] == 2 for o in range(5, 20))
        # and its commits go above the reset: the group is back at 20
        wait_until(lambda: committed(tower, "g", {part}) == {part: 20}, 30, what="a commit over it")
    finally:
        m.kill()

    # a stopped group: the next member starts where the admin said
    stopped = dafka("groups", "reset", "g", "--tower", tower.address, "--to-earliest", "--execute")
    assert stopped.returncode == 0, stopped.stderr
    assert committed(tower, "g", {part}) == {part: 0}
    again = member(tower, "g")
    try:
        wait_until(lambda: len(records(again)) >= 20, timeout=30, what="all 20 from 0")
        assert sorted(o for _, o in records(again))[:20] == list(range(20))
    finally:
        again.kill()


def test_a_commit_of_positions_read_before_a_reset_is_refused_until_the_next_poll(
    tower: Tower, start_store
) -> None:
    """The red team's first break: an application read records, an admin reset the group
    under it, and its explicit commit of the positions it had read was taken at the new
    epoch, undoing the reset that had been reported done. Now such a commit raises
    CommitFailedError and writes nothing; after a poll (records from the reset offset) the
    application commits as before."""
    start_store()
    with Producer("t", towers=tower.address) as p:
        for i in range(30):
            p.send(f"r{i}")
        p.flush(timeout=20)
        part = p.partition
    key = ("t", part)
    c = Consumer(
        "t", towers=tower.address, group="gx", offset_reset="earliest", enable_auto_commit=False
    )
    try:
        last: dict[tuple[str, str], int] = {}

        def read_all() -> bool:
            r = c.poll(0.2)
            if r is not None:
                last[(r.topic, r.partition)] = r.offset
            return last.get(key) == 29

        wait_until(read_all, timeout=30, what="30 records")
        c.commit()
        wait_until(lambda: committed(tower, "gx", {part}) == {part: 30}, 30, what="a commit of 30")
        done = dafka(
            "groups", "reset", "gx", "--tower", tower.address, "--to-offset", "5", "--execute"
        )
        assert done.returncode == 0, done.stderr
        wait_until(lambda: c.committed().get(key) == 5, timeout=20, what="the member seeing it")
        with pytest.raises(CommitFailedError, match="reset by an admin"):
            c.commit({key: 30})
        assert committed(tower, "gx", {part}) == {part: 5}
        first = None
        deadline = time.monotonic() + 20
        while first is None and time.monotonic() < deadline:
            first = c.poll(0.2)
        assert first is not None and first.offset == 5
        c.commit({key: 6})  # after a poll: the new assignment's position
        wait_until(lambda: committed(tower, "gx", {part}) == {part: 6}, 30, what="a commit of 6")
    finally:
        c.close()


def test_with_retention_on_the_group_topic_a_reset_ages_out_and_describe_still_reads(
    tower: Tower, start_store
) -> None:
    """The red team's fourth and fifth breaks: once the group topic's retention deleted old
    group records, `dafka groups describe` (and a reset's plan) timed out on the deleted
    range; and a reset members had overtaken came back when retention deleted their
    commits. Now the range is skipped (retention is by design there) and a reset ages out
    with the retention, so the expired group has no committed offset, as Kafka's does."""
    start_store()
    with Producer("t", towers=tower.address) as p:
        for i in range(20):
            p.send(f"r{i}")
        p.flush(timeout=20)
        part = p.partition
    key = ("t", part)
    c = Consumer("t", towers=tower.address, group="gret", offset_reset="earliest")
    try:
        wait_until(lambda: c.poll(0.2) is None and c.positions().get(key) == 20, 30, what="20")
        c.commit()
    finally:
        c.close()
    done = dafka(
        "groups", "reset", "gret", "--tower", tower.address, "--to-offset", "2", "--execute"
    )
    assert done.returncode == 0, done.stderr
    assert committed(tower, "gret", {part}) == {part: 2}
    with MetadataClient(tower.address, timeout=10) as admin:
        admin.alter_topic("__group.gret", {"retention_ms": 1500})
    # the store's retention pass (every 5 s) deletes the old group records; the reset,
    # made more than 1.5 s ago, counts no more: no committed offset, and describe answers
    wait_until(lambda: committed(tower, "gret", {part}).get(part) is None, 40, what="the expiry")
    out = dafka("groups", "describe", "gret", "--tower", tower.address, "--json")
    assert out.returncode == 0, out.stderr
