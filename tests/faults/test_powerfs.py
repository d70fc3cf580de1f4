"""The power-loss layer itself: what a crash keeps and drops (real FUSE mounts, root only)."""

from __future__ import annotations

import errno
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.powerfs import SECTOR, Op, Pending, PowerFS, torn, unavailable


def test_pending_reads_overlay_writes_and_truncations(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDWR)
    try:
        p = Pending(fd)
        p.ops += [Op(2, b"ab"), Op(size=4), Op(6, b"xy")]
        assert p.size() == 8
        assert p.read(0, 100) == b"01ab\0\0xy"
        assert p.read(3, 4) == b"b\0\0x"
        p.write_back(p.ops)
        assert path.read_bytes() == b"01ab\0\0xy"
    finally:
        os.close(fd)


def test_torn_writeback_keeps_part_of_the_writes_in_another_order() -> None:
    ops = [Op(i * 4 * SECTOR, bytes([i]) * 4 * SECTOR) for i in range(40)]
    kept = torn(ops, random.Random(3))
    assert 0 < len(kept)
    assert any(len(op.data or b"") == SECTOR for op in kept)  # some cut to one sector
    offsets = [op.offset for op in kept]
    assert offsets != sorted(offsets)  # reordered
    assert torn([Op(0, b"x", lost=True)], random.Random(1)) == []  # lost data never lands


pytestmark_fuse = pytest.mark.skipif(
    unavailable() is not None or os.geteuid() != 0,
    reason=f"powerfs cannot mount here: {unavailable() or 'not root'}",
)


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[PowerFS]:
    pfs = PowerFS(tmp_path / "backing", tmp_path / "mnt")
    pfs.start()
    try:
        yield pfs
    finally:
        pfs.stop()


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@pytestmark_fuse
def test_unsynced_writes_and_names_are_gone_after_a_crash(fs: PowerFS) -> None:
    m = fs.mountpoint
    (m / "kept").write_bytes(b"old")
    _sync(m / "kept")
    _sync(m)
    (m / "kept").write_bytes(b"new, never synced")
    (m / "fresh").write_bytes(b"x")
    _sync(m / "fresh")  # the data, but not its name (strict: the directory was not synced)
    assert (m / "kept").read_bytes() == b"new, never synced"
    assert "dropped=" in fs.crash()
    assert (m / "kept").read_bytes() == b"old"
    assert not (m / "fresh").exists()
    assert sorted(os.listdir(m)) == ["kept"]


@pytest.mark.skipif(unavailable() is not None or os.geteuid() != 0, reason="no powerfs here")
def test_synced_writes_and_names_survive_a_crash(fs: PowerFS) -> None:
    m = fs.mountpoint
    with open(m / "log", "ab") as f:  # O_APPEND, as the producer's journals
        f.write(b"one,")
        f.write(b"two,")
        f.flush()
        os.fsync(f.fileno())
        f.write(b"three")
    _sync(m)
    os.mkdir(m / "d")
    _sync(m)
    (m / "d" / "x").write_bytes(b"in d")
    _sync(m / "d" / "x")
    _sync(m / "d")
    fs.crash()
    assert (m / "log").read_bytes() == b"one,two,"
    assert (m / "d" / "x").read_bytes() == b"in d"


@pytestmark_fuse
def test_a_rename_counts_once_its_directory_is_synced(fs: PowerFS) -> None:
    m = fs.mountpoint
    (m / "state").write_bytes(b"v1")
    _sync(m / "state")
    _sync(m)
    for version, sync_dir in ((b"v2", False), (b"v3", True)):
        (m / "state.tmp").write_bytes(version)
        _sync(m / "state.tmp")
        os.rename(m / "state.tmp", m / "state")
        if sync_dir:
            _sync(m)
        fs.crash()
        expected = b"v3" if sync_dir else b"v1"
        assert (m / "state").read_bytes() == expected
        assert not (m / "state.tmp").exists()  # (its creation was never synced either)


@pytestmark_fuse
def test_an_unsynced_unlink_comes_back(fs: PowerFS) -> None:
    m = fs.mountpoint
    (m / "f").write_bytes(b"data")
    _sync(m / "f")
    _sync(m)
    (m / "f").unlink()
    fs.crash()
    assert (m / "f").read_bytes() == b"data"


@pytestmark_fuse
def test_a_torn_crash_keeps_some_sectors_of_an_unsynced_write(fs: PowerFS) -> None:
    m = fs.mountpoint
    size = 64 * SECTOR
    (m / "f").write_bytes(b"\0" * size)
    _sync(m / "f")
    _sync(m)
    with open(m / "f", "r+b") as f:
        for i in range(0, size, 4 * SECTOR):  # 16 writes of four sectors
            f.seek(i)
            f.write(b"\xff" * 4 * SECTOR)
            f.flush()
    fs.crash(tear=True, seed=5)
    data = (m / "f").read_bytes()
    assert len(data) == size
    new = sum(1 for i in range(0, size, SECTOR) if data[i : i + SECTOR] == b"\xff" * SECTOR)
    assert 0 < new < size // SECTOR
    assert all(
        data[i : i + SECTOR] in (b"\0" * SECTOR, b"\xff" * SECTOR) for i in range(0, size, SECTOR)
    )


@pytestmark_fuse
def test_a_failed_fsync_loses_what_it_covered(fs: PowerFS) -> None:
    m = fs.mountpoint
    (m / "f").write_bytes(b"synced")
    _sync(m / "f")
    _sync(m)
    fs.command("eio on f")
    with open(m / "f", "r+b") as f:
        f.write(b"FAILED")
        f.flush()
        with pytest.raises(OSError) as err:
            os.fsync(f.fileno())
        assert err.value.errno == errno.EIO
    assert (m / "f").read_bytes() == b"FAILED"  # still readable, as Linux's clean pages are
    fs.command("eio off")
    _sync(m / "f")  # a later fsync succeeds without writing it back
    fs.crash()
    assert (m / "f").read_bytes() == b"synced"
    assert "eio=1" in fs.command("stats")


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[PowerFS]:
    pfs = PowerFS(tmp_path / "backing", tmp_path / "mnt", dir_sync="file")
    pfs.start()
    try:
        yield pfs
    finally:
        pfs.stop()


@pytestmark_fuse
def test_with_ext4_names_any_fsync_commits_the_names_made_before_it(ext4: PowerFS) -> None:
    m = ext4.mountpoint
    os.mkdir(m / "d")
    (m / "d" / "key.tmp").write_bytes(b"key")
    _sync(m / "d" / "key.tmp")
    os.rename(m / "d" / "key.tmp", m / "d" / "key")
    (m / "other").write_bytes(b"x")
    _sync(m / "other")  # commits the mkdir and the rename too (one journal)
    (m / "late").write_bytes(b"y")  # no fsync after it: lost
    ext4.crash()
    assert (m / "d" / "key").read_bytes() == b"key"
    assert (m / "other").read_bytes() == b"x"
    assert not (m / "late").exists()
