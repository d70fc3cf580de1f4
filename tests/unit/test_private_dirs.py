"""Key and data directories are 0700 whatever the umask, parents included (issue 32, 9).

``Path.mkdir(mode=0o700, parents=True)`` made the parents with 0777 less the umask: under
``umask 000``, ``.dafka/`` (which holds dafka-local's admin key) was 0777.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka.raft.peer import FileStorage
from dafka.security import identity
from dafka.security.private_dirs import make_private_dirs
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.state_dir import StateDir, make_data_dir
from tests.attack_mutants import mutated
from tests.procs import py


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_every_directory_made_is_0700_under_umask_000(tmp_path: Path, open_umask: None) -> None:
    leaf = make_private_dirs(tmp_path / "a" / "b" / "c")
    assert leaf.is_dir()
    for p in (tmp_path / "a", tmp_path / "a" / "b", leaf):
        assert mode(p) == 0o700, p


def test_a_umask_that_takes_the_owners_bits_still_gives_0700(tmp_path: Path) -> None:
    old = os.umask(0o277)
    try:
        make_private_dirs(tmp_path / "x" / "y")
    finally:
        os.umask(old)
    assert mode(tmp_path / "x") == mode(tmp_path / "x" / "y") == 0o700


def test_directories_that_exist_are_left_as_they_are(tmp_path: Path, open_umask: None) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    make_private_dirs(shared / "mine")
    assert mode(shared) == 0o755
    assert mode(shared / "mine") == 0o700


def test_a_file_in_the_way_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(OSError):
        make_private_dirs(tmp_path / "f" / "d")


def test_each_place_that_makes_directories_makes_its_parents_private(
    tmp_path: Path, open_umask: None
) -> None:
    identity.create_file(tmp_path / "k" / ".dafka" / "admin.key")
    make_data_dir(tmp_path / "d" / "data")
    StateDir(tmp_path / "s" / "state").close()
    LmdbStorage(tmp_path / "l" / "store", map_size=1 << 20).close()
    FileStorage(tmp_path / "r" / "raft").close()
    for top in "kdslr":
        for p in [tmp_path / top, *(q for q in (tmp_path / top).rglob("*") if q.is_dir())]:
            assert mode(p) == 0o700, p


def test_the_admin_key_cli_under_umask_000_makes_dot_dafka_0700(tmp_path: Path) -> None:
    key = tmp_path / "home" / ".dafka" / "admin.key"
    done = subprocess.run(
        mutated(py("dafka.cli.keys", "create-admin", str(key))),
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0),
    )
    assert done.returncode == 0, done.stderr
    assert mode(tmp_path / "home") == mode(key.parent) == 0o700
    assert mode(key) == 0o600
