"""dafka-local watches its two nodes: a store whose IO thread stopped, or a tower whose
metadata peer stopped, ends the command with the reason instead of leaving a
live-looking platform (``dafka.cli.local.check_nodes``, run every 0.5 s while it waits
for Ctrl-C). Real nodes in this process, stopped under the watch."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.api.store import Store
from dafka.cli.local import check_nodes
from dafka.config import TowerAddress
from dafka.errors import DafkaError, RaftError
from tower.metadata import TowerNode


def test_a_stopped_store_or_tower_ends_the_watch_with_the_reason(tmp_path: Path) -> None:
    tower = TowerNode(TowerAddress("127.0.0.1", 0), data_dir=tmp_path / "t").start()
    store = None
    try:
        store = Store(tmp_path / "s", towers=str(tower.address), host="127.0.0.1").start()
        check_nodes(store, tower)  # both alive: nothing to say
        store.stop()
        with pytest.raises(DafkaError, match="store's IO thread stopped"):
            check_nodes(store, tower)
        store = Store(tmp_path / "s", towers=str(tower.address), host="127.0.0.1").start()
        tower.raft.stop()  # the metadata peer alone, as if its thread had died
        with pytest.raises(RaftError, match="metadata peer .* stopped"):
            check_nodes(store, tower)
    finally:
        if store is not None:
            store.stop()
        tower.stop()
