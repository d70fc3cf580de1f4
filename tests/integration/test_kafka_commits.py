"""Kafka groups' committed offsets in the native group topic (GroupCommits), against a real
tower and store: `dafka groups describe` shows them; a restarted GroupCommits reads them back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dafka import Producer
from dafka.errors import ConfigError
from dafka.kafka.commits import GroupCommits
from tests.procs import Tower, py

pytestmark = pytest.mark.integration


def test_commit_describe_and_read_back_after_restart(
    tower: Tower, start_store, tmp_path: Path
) -> None:
    start_store()
    with Producer("t", towers=tower.address) as p:
        for i in range(10):
            p.send(f"v{i}")
        p.flush(timeout=10)
        part = p.partition
    gc = GroupCommits(towers=tower.address, state_dir=tmp_path / "listener")
    writer = gc.writer
    try:
        assert gc.committed("kg") == {}
        gc.commit("kg", {("t", part): (7, "app-meta")}, timeout=10)
        gc.commit("kg", {("t", part): (9, None)}, timeout=10)
        assert gc.committed("kg") == {("t", part): (9, None)}
        gc.commit("kg", {("t", part): (10, "m" * 4096)}, timeout=10)
        with pytest.raises(ConfigError):
            gc.commit("kg", {("t", part): (10, "m" * 4097)}, timeout=10)
    finally:
        gc.close()
    out = subprocess.run(
        py("dafka.cli.admin", "groups", "describe", "kg", "--tower", tower.address, "--json"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["partitions"]
    assert [(r["topic"], r["partition"], r["current_offset"]) for r in rows] == [("t", part, 10)]
    # the same listener identity, restarted, reads its commits back (metadata included)
    again = GroupCommits(towers=tower.address, state_dir=tmp_path / "listener")
    try:
        assert again.writer == writer
        assert again.committed("kg") == {("t", part): (10, "m" * 4096)}
    finally:
        again.close()
    # another listener taking the group over commits above the first one's epoch: it wins
    other = GroupCommits(towers=tower.address, state_dir=tmp_path / "other")
    try:
        other.commit("kg", {("t", part): (4, None)}, timeout=10)
        assert other.committed("kg") == {("t", part): (4, None)}
    finally:
        other.close()
    third = GroupCommits(towers=tower.address)
    try:
        assert third.committed("kg") == {("t", part): (4, None)}
    finally:
        third.close()


def test_attack_commit_of_too_many_partitions_is_refused_cheaply(tower: Tower) -> None:
    gc = GroupCommits(towers=tower.address, read_timeout=1.0)
    try:
        offsets = {("t", f"{i:032X}"): (1, None) for i in range(100_001)}
        with pytest.raises(ConfigError, match="at most"):
            gc.commit("kg", offsets, timeout=1)
    finally:
        gc.close()


def test_group_topic_acl_names_the_listener_others_cannot_commit(tmp_path: Path) -> None:
    """With the group topic's producer ACL naming the listener, its commits count; another
    writer's are refused by the store (never acknowledged) and by every reader."""
    from dafka.errors import DafkaTimeout
    from dafka.metadata import MetadataClient
    from dafka.storage.state_dir import StateDir
    from dafka.store._facade import Store

    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True).start()
    with StateDir(tmp_path / "listener") as state:
        listener_id = state.identity().node_id
    gc = rogue = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("__group.acl", {"producers": [listener_id]})
        part = "B" * 32
        gc = GroupCommits(towers=tower.address, state_dir=tmp_path / "listener", metadata=True)
        assert gc.writer == listener_id
        gc.commit("acl", {("t", part): (5, None)}, timeout=10)
        rogue = GroupCommits(towers=tower.address, metadata=True)
        with pytest.raises(DafkaTimeout):
            rogue.commit("acl", {("t", part): (999, None)}, timeout=2)
        fresh = GroupCommits(towers=tower.address, metadata=True)
        try:
            assert fresh.committed("acl") == {("t", part): (5, None)}
        finally:
            fresh.close(timeout=0.5)
    finally:
        if gc is not None:
            gc.close()
        if rogue is not None:
            rogue.close(timeout=0.5)  # its records are never acknowledged
        store.stop()
        tower.stop()
