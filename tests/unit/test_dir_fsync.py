"""Issue 33, point 11: every name a producer or a store creates in its directory is made
durable by an fsync of that directory after it was created (fsyncing a file syncs its
data, not the directory entry that names it: a power cut could lose the file whole).

``os.fsync`` is wrapped by a recorder: on a directory's descriptor it notes the names the
directory holds at that moment. Each name in the final directory must have been seen by
such an fsync (so: created, then the directory synced)."""

from __future__ import annotations

import os
import stat
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka.config import ProducerConfig
from dafka.producer._setup import open_state
from dafka.security import identity as identity_module
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.state_dir import lock_directory, unlock_directory


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[Path, set[str]]]:
    """Directory -> every name it held at one of its fsyncs."""
    seen: dict[Path, set[str]] = defaultdict(set)
    real = os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            path = Path(os.readlink(f"/proc/self/fd/{fd}"))
            seen[path].update(os.listdir(path))

    monkeypatch.setattr(os, "fsync", fsync)
    yield seen


def _unsynced(directory: Path, seen: dict[Path, set[str]]) -> set[str]:
    return set(os.listdir(directory)) - seen[directory.resolve()]


def test_a_producer_state_directory_syncs_every_name(
    tmp_path: Path, synced: dict[Path, set[str]]
) -> None:
    state = tmp_path / "new" / "state"
    opened = open_state(ProducerConfig(state_dir=state).validate(), durable=True)
    try:
        assert opened.journal is not None and opened.wal is not None
        names = set(os.listdir(state))
        assert {"lock", "node.key", "offsets.journal", "acked.journal", "producer.wal"} <= names
        assert _unsynced(state, synced) == set()
        # the directories made for it are named durably in their parents too
        assert _unsynced(tmp_path / "new", synced) == set()
        assert "new" in synced[tmp_path.resolve()]
    finally:
        assert opened.wal is not None and opened.state is not None
        opened.wal.close()
        opened.state.close()


def test_a_store_data_directory_syncs_every_name(
    tmp_path: Path, synced: dict[Path, set[str]]
) -> None:
    path = tmp_path / "store"
    path.mkdir()
    fd = lock_directory(path, "data directory")
    try:
        identity = identity_module.load_or_create(path)
        storage = LmdbStorage(path, map_size=1 << 20, node_id=identity.node_id)
        storage.close()
    finally:
        unlock_directory(fd)
    assert {"lock", "node.key", "data.mdb", "lock.mdb"} <= set(os.listdir(path))
    assert _unsynced(path, synced) == set()
