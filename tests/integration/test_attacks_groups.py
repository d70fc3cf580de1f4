"""Attacks on a consumer group through its topic: a producer that is not a member writes
commit and heartbeat records into ``__group.NAME``. With the group topic's producer ACL
naming the members, neither the stores nor the members' readers take them."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.api.consumer import Consumer
from dafka.api.producer import Producer
from dafka.api.store import Store
from dafka.groups.admin import describe
from dafka.groups.records import Commit, Heartbeat, encode
from dafka.metadata import MetadataClient
from dafka.storage.state_dir import StateDir
from tests.procs import Tower, wait_until

pytestmark = pytest.mark.integration

VICTIM = "0123456789ABCDEF0123456789ABCDEF"


def test_a_non_member_cannot_commit_or_hold_partitions_for_a_group(tmp_path: Path) -> None:
    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True).start()
    member_dir = tmp_path / "member"
    with StateDir(member_dir) as state:
        member_id = state.identity().node_id
    member = rogue = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("__group.g", {"producers": [member_id]})
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
        key = ("t", VICTIM)
        assert member.commit({key: 5}) == {key: 5}
        rogue = Producer("__group.g", towers=tower.address, metadata=True)
        rogue.send(encode(Commit((("t", VICTIM, 999, 99),))))
        rogue.send(encode(Heartbeat(("t",), frozenset({key}), frozenset({key}), "rogue")))
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
        store.stop()
        tower.stop()
