"""Metadata snapshots on real towers (issue 32, point 1): a tower that compacts its log into
snapshots restarts from its own (verified) snapshot, and a second tower catches up through
an InstallSnapshot that it verifies; a MetadataView catches up through RequestEntries."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.config import TowerAddress
from dafka.metadata import MetadataClient, MetadataView
from dafka.metadata.state import MetadataStateMachine
from dafka.raft.peer import PeerOptions
from tests.admin import ADMIN_HEX
from tests.procs import free_tower_address, wait_until
from tower.metadata import TowerNode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

STORE = "0123456789ABCDEF0123456789ABCDEF"


def _tower(data: Path, port: int = 0) -> TowerNode:
    options = PeerOptions(snapshot_every=4, keep_entries=1)
    return TowerNode(
        TowerAddress("127.0.0.1", port), data_dir=data, admin_keys=[ADMIN_HEX], options=options
    ).start()


def test_a_tower_restarts_from_its_own_snapshot_and_a_view_restores_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[int] = []
    real_check = MetadataStateMachine.check_snapshot

    def check(sm: MetadataStateMachine, data: bytes) -> None:
        real_check(sm, data)
        checked.append(sm.revision)

    monkeypatch.setattr(MetadataStateMachine, "check_snapshot", check)
    # a port below the ephemeral range, so that nothing connecting meanwhile (the view, the
    # admin client) can be handed it as its source port while the tower restarts
    port = int(free_tower_address().rsplit(":", 1)[1])
    tower = _tower(tmp_path / "t", port)
    try:
        with MetadataClient(str(tower.address), timeout=10) as admin:
            for i in range(6):
                admin.create_topic(f"ev{i}", {"min_acks": 1})
            admin.trust_store(STORE)
            admin.set_cluster({"auto_create": False})
            wait_until(lambda: tower.raft.storage.snapshot_meta.index > 4, 20)
            view = MetadataView(str(tower.address), anchors=[ADMIN_HEX])
            try:
                assert view.start(wait=20)
                assert view.trusted_stores() == (STORE,) and view.snapshots_refused == 0
                assert checked == [0]  # the view's empty replica took the tower's snapshot
            finally:
                view.stop()
            before = admin.config()
    finally:
        tower.stop()
    again = _tower(tmp_path / "t", port)
    try:
        assert again.sm.snapshots_refused == 0 and len(checked) == 2  # its own, verified
        with MetadataClient(str(again.address), timeout=10) as admin:
            after = admin.config()
            assert after["topics"] == before["topics"] and after["stores"] == [STORE]
            admin.revoke_store(STORE)  # the restored replica still takes signed changes
            assert admin.stores() == []
    finally:
        again.stop()
