"""dafka-local watches its two nodes: a store whose IO thread stopped, or a tower whose
beacon relay or metadata peer stopped, ends the command with the reason instead of leaving a
live-looking platform (``dafka.cli.local.check_nodes``, run every 0.5 s while it waits
for Ctrl-C). Real nodes in this process, stopped under the watch."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from dafka.cli.local import check_nodes
from dafka.config import TowerAddress
from dafka.errors import DafkaError, RaftError
from dafka.store._facade import Store
from tests.admin import tower_args
from tower.metadata import TowerNode
from tower.service_replay import ServiceReplay


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


def test_a_tower_whose_beacon_relay_dies_ends_the_watch_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tower = TowerNode(TowerAddress("127.0.0.1", 0), data_dir=tmp_path / "t").start()
    store = None
    try:
        store = Store(tmp_path / "s", towers=str(tower.address), host="127.0.0.1").start()
        check_nodes(store, tower)

        def broken(self: ServiceReplay, now: float) -> list[list[bytes]]:
            raise RuntimeError("injected")

        monkeypatch.setattr(ServiceReplay, "due", broken)  # the relay calls it every turn
        deadline = time.monotonic() + 10
        while tower.relay.running and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(DafkaError, match="beacon relay stopped: RuntimeError"):
            check_nodes(store, tower)
    finally:
        if store is not None:
            store.stop()
        tower.stop()


CRASHING_TOWER = """
import sys
import tower.service_replay as replay
def broken(self, now):
    raise RuntimeError("injected")
replay.ServiceReplay.due = broken
from tower.cli import main
sys.argv = ["dafka-tower", *sys.argv[1:]]
main()
"""


def test_a_tower_process_whose_beacon_relay_dies_exits_non_zero(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_TOWER, "--bind", "127.0.0.1:0"]
        + ["--data-dir", str(tmp_path / "t"), *tower_args()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "beacon relay stopped: RuntimeError('injected')" in last
