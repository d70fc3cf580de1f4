"""A store's data directory: one store at a time, private modes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dafka.errors import ConfigError
from dafka.store import Store

pytestmark = pytest.mark.integration

NO_TOWER = "127.0.0.1:9"  # nothing is started here; the stores never join


def test_a_second_store_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "db"
    first = Store(data, towers=NO_TOWER, metadata=False)
    try:
        with pytest.raises(ConfigError) as info:
            Store(data, towers=NO_TOWER, metadata=False)
        assert str(info.value) == (
            f"data directory {data} is in use by another store (pid {os.getpid()})"
        )
    finally:
        first.stop()
    again = Store(data, towers=NO_TOWER, metadata=False)  # free once the first stopped
    assert again.node_id == first.node_id
    again.stop()


def test_a_store_that_fails_to_open_releases_the_directory(tmp_path: Path) -> None:
    data = tmp_path / "db"
    with pytest.raises(ConfigError, match="bad query port"):
        Store(data, towers=NO_TOWER, metadata=False, query_port=70000)
    key = data / "node.key"
    key.write_bytes(b"garbage")
    key.chmod(0o600)
    with pytest.raises(ConfigError, match="node.key"):
        Store(data, towers=NO_TOWER, metadata=False)
    key.unlink()
    Store(data, towers=NO_TOWER, metadata=False).stop()


def test_data_directory_and_files_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        data = tmp_path / "new" / "db"
        Store(data, towers=NO_TOWER, metadata=False).stop()
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for name in ("data.mdb", "lock.mdb", "node.key", "lock"):
        assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name
