"""LmdbStorage on a real disk: reopen, map growth, identity, and a SIGKILLed writer."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import lmdb
import pytest

from dafka.errors import StorageDamagedError, StorageError, StoreFullError
from dafka.ids import is_node_id
from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_store import LmdbStorage, translate_error

pytestmark = pytest.mark.integration

P = "0123456789ABCDEF0123456789ABCDEF"
P2 = "FEDCBA9876543210FEDCBA9876543210"
ROOT = Path(__file__).resolve().parents[2]


def rec(offset: int, size: int = 0, topic: str = "t", partition: str = P) -> StoredBatch:
    blob = f"{offset}:".encode().ljust(size, b"x")
    return StoredBatch(topic, partition, offset, offset, blob)


def test_data_heads_and_identity_survive_reopen(tmp_path: Path) -> None:
    s = LmdbStorage(tmp_path / "db")
    node = s.node_id()
    s.append([rec(i) for i in range(300)] + [rec(5, topic="u", partition=P2)])
    s.close()
    s = LmdbStorage(tmp_path / "db")
    try:
        assert s.node_id() == node and is_node_id(node)
        assert s.heads() == {("t", P): (299, 0), ("u", P2): (5, 5)}
        assert s.partitions("t") == [(P, 299)]
        assert s.read("t", P, 0, 1000) == [rec(i) for i in range(300)]
        s.append([rec(300)])  # and it continues where it stopped
        assert s.heads()[("t", P)] == (300, 0)
    finally:
        s.close()


def test_each_store_has_its_own_identity(tmp_path: Path) -> None:
    a, b = LmdbStorage(tmp_path / "a"), LmdbStorage(tmp_path / "b")
    try:
        assert a.node_id() != b.node_id()
    finally:
        a.close()
        b.close()


def test_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    LmdbStorage(tmp_path / "db").close()
    env = lmdb.open(str(tmp_path / "db"), max_dbs=3)
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", b"99", db=env.open_db(b"meta", txn=txn))
    env.close()
    with pytest.raises(StorageError, match="schema version"):
        LmdbStorage(tmp_path / "db")


def test_map_grows_on_map_full_and_nothing_is_lost(tmp_path: Path) -> None:
    s = LmdbStorage(tmp_path / "db", map_size=256 * 1024)
    batches = [rec(i, size=1000) for i in range(3000)]  # ~3 MB in one transaction
    s.append(batches)
    grown = s.map_size
    assert grown >= 4 * 1024 * 1024
    assert s.heads() == {("t", P): (2999, 0)}
    assert s.read("t", P, 0, 5000) == batches
    s.close()
    s = LmdbStorage(tmp_path / "db", map_size=256 * 1024)  # a smaller map than the data
    try:
        assert s.map_size >= grown // 2
        assert s.read("t", P, 0, 5000) == batches
    finally:
        s.close()


def test_max_map_size_stops_growth_and_stores_nothing(tmp_path: Path) -> None:
    s = LmdbStorage(tmp_path / "db", map_size=256 * 1024, max_map_size=512 * 1024)
    try:
        s.append([rec(0)])
        with pytest.raises(StorageError, match="max_map_size") as info:
            s.append([rec(i, size=1000) for i in range(1, 2000)])
        assert not isinstance(info.value, StoreFullError)
        assert s.heads() == {("t", P): (0, 0)}
        assert s.read("t", P, 1, 10) == []
        s.append([rec(1)])  # still usable
        assert s.heads() == {("t", P): (1, 0)}
    finally:
        s.close()


def test_disk_errors_become_store_full() -> None:
    assert isinstance(translate_error(lmdb.DiskError("x"), "append"), StoreFullError)
    assert isinstance(translate_error(OSError(errno.ENOSPC, "full"), "append"), StoreFullError)
    assert isinstance(translate_error(OSError(errno.EDQUOT, "quota"), "append"), StoreFullError)
    other = translate_error(lmdb.BadValsizeError("x"), "append")
    assert type(other) is StorageError and isinstance(other.__cause__, lmdb.BadValsizeError)
    damaged = translate_error(lmdb.CorruptedError("x"), "append")
    assert type(damaged) is StorageDamagedError
    assert isinstance(damaged.__cause__, lmdb.CorruptedError)


_WRITER = textwrap.dedent(
    """
    import sys
    from dafka.storage.base import StoredBatch
    from dafka.storage.lmdb_store import LmdbStorage

    s = LmdbStorage(sys.argv[1])
    offset = 0
    while True:
        s.append([StoredBatch("t", sys.argv[2], offset + i, offset + i, b"%d" % (offset + i))
                  for i in range(50)])
        offset += 50
        print(offset - 1, flush=True)  # only after append() returned
    """
)


def test_everything_appended_survives_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db), P], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    try:
        confirmed = -1
        for _ in range(40):
            line = child.stdout.readline()
            assert line, f"writer died early with {child.wait()}"
            confirmed = int(line)
        child.send_signal(signal.SIGKILL)  # most likely in the middle of a transaction
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert confirmed == 40 * 50 - 1
    s = LmdbStorage(db)
    try:
        head, tail = s.heads()[("t", P)]
        assert tail == 0 and head >= confirmed and (head + 1) % 50 == 0
        got = s.read("t", P, 0, head + 10)
        assert [(b.first_offset, b.blob) for b in got] == [(i, b"%d" % i) for i in range(head + 1)]
    finally:
        s.close()


def test_use_after_fork_is_refused(tmp_path: Path) -> None:
    s = LmdbStorage(tmp_path / "db")
    s.append([rec(0)])
    pid = os.fork()
    if pid == 0:  # child: must not touch the parent's environment, nor return into pytest
        code = 2  # any other exception
        try:
            s.read("t", P, 0, 1)
            code = 1
        except StorageError:
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    try:
        assert os.waitstatus_to_exitcode(status) == 0
        assert s.read("t", P, 0, 1) == [rec(0)]  # the parent's handle still works
    finally:
        s.close()


def test_profiles_survive_reopen(tmp_path: Path) -> None:
    s = LmdbStorage(tmp_path / "db")
    s.append([rec(0), StoredBatch("t", P2, 0, 9, b"ten", "signed")])
    s.close()
    s = LmdbStorage(tmp_path / "db")
    try:
        assert s.profiles() == {("t", P): "rfc46", ("t", P2): "signed"}
        assert s.read("t", P2, 5, 1)[0].profile == "signed"
        with pytest.raises(StorageError, match="never mixes"):
            s.append([StoredBatch("t", P, 1, 1, b"x", "signed")])
    finally:
        s.close()


def test_a_schema_1_store_is_read_as_rfc46(tmp_path: Path) -> None:
    """Before profiles were recorded, heads were 16 bytes and every partition was rfc46."""
    s = LmdbStorage(tmp_path / "db")
    s.append([rec(0), rec(1)])
    s.close()
    env = lmdb.open(str(tmp_path / "db"), max_dbs=3)
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", b"1", db=env.open_db(b"meta", txn=txn))
        heads = env.open_db(b"heads", txn=txn)
        for key, value in list(txn.cursor(db=heads)):
            txn.put(key, value[:16], db=heads)
    env.close()
    s = LmdbStorage(tmp_path / "db")
    try:
        assert s.heads() == {("t", P): (1, 0)} and s.profiles() == {("t", P): "rfc46"}
        s.append([rec(2)])
        assert [b.profile for b in s.read("t", P, 0, 5)] == ["rfc46"] * 3
    finally:
        s.close()


def test_a_given_node_id_is_recorded_and_kept(tmp_path: Path) -> None:
    s = LmdbStorage(tmp_path / "db")
    random_id = s.node_id()
    s.close()
    s = LmdbStorage(tmp_path / "db", node_id=P2)  # the store now derives its ID from its key
    assert s.node_id() == P2 != random_id
    s.close()
    s = LmdbStorage(tmp_path / "db")
    try:
        assert s.node_id() == P2
    finally:
        s.close()


def test_a_full_disk_is_store_full_and_nothing_committed_is_lost(small_fs: Path) -> None:
    s = LmdbStorage(small_fs / "db", map_size=64 * 1024 * 1024)
    try:
        acked = -1
        failed: list[StoredBatch] = []
        for _ in range(1000):  # ~20 KiB per append; 2 MiB fill well before the bound
            batch = [rec(acked + 1 + i, size=1000) for i in range(20)]
            try:
                s.append(batch)
            except StoreFullError as exc:
                err = exc
                failed = batch
                break
            acked += len(batch)
        else:
            pytest.fail("a 2 MiB filesystem took 1000 appends of 20 KiB")
        assert acked > 0
        assert "disk full" in str(err) and str(small_fs / "db") in str(err)
        assert "Input/output" not in str(err).split(";")[0]
        assert err.path == str(small_fs / "db")
        assert err.need_bytes is not None and err.need_bytes >= 20 * 1000
        assert err.free_bytes is not None and err.free_bytes < err.need_bytes
        # nothing half-written: the heads and the data are what was acknowledged
        assert s.heads() == {("t", P): (acked, 0)}
        assert len(s.read("t", P, 0, 5000)) == acked + 1
        with pytest.raises(StoreFullError):  # still full: still refused, still usable
            s.append(failed)
        subprocess.run(["mount", "-o", "remount,size=8m", str(small_fs)], check=True)
        s.append(failed)  # room again: the same batch goes in
        assert s.heads() == {("t", P): (acked + 20, 0)}
    finally:
        s.close()
    s = LmdbStorage(small_fs / "db")
    try:
        assert s.read("t", P, 0, 5000) == [rec(i, size=1000) for i in range(acked + 21)]
    finally:
        s.close()
