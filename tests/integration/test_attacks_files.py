"""Point 7 of issue 10: records and keys on disk are for their node only.

Data and state directories are 0700 and every file in them 0600, whatever the
umask (here 0, the most permissive): a producer's state directory (key,
journals, write-ahead log, lock) and a store's data directory (LMDB files, key).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dafka.producer._facade import Producer
from dafka.store._facade import Store

pytestmark = pytest.mark.integration

NO_TOWER = "127.0.0.1:9"  # nothing listens: the nodes never join, nothing needs them to


def _modes(root: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        out[str(path.relative_to(root))] = stat.S_IMODE(path.stat().st_mode)
    return out


def _check_private(root: Path) -> None:
    for name, mode in _modes(root).items():
        path = root / name
        want = 0o700 if path.is_dir() else 0o600
        assert mode == want, f"{path} is {mode:o}, not {want:o}"


def test_a_producers_state_directory_is_private_under_any_umask(tmp_path: Path) -> None:
    state = tmp_path / "p"
    old = os.umask(0)
    try:
        producer = Producer("t", towers=NO_TOWER, state_dir=state, durable=True, metadata=False)
        try:
            producer.send(b"kept on disk")  # durable: in the write-ahead log once it returns
        finally:
            producer.close(timeout=0)
    finally:
        os.umask(old)
    names = set(_modes(state))
    assert "node.key" in names and "producer.wal" in names, names
    _check_private(state)


def test_a_stores_data_directory_is_private_under_any_umask(tmp_path: Path) -> None:
    data = tmp_path / "s"
    old = os.umask(0)
    try:
        Store(data, towers=NO_TOWER, metadata=False).stop()
    finally:
        os.umask(old)
    names = set(_modes(data))
    assert {"data.mdb", "lock.mdb", "node.key"} <= names, names
    _check_private(data)
