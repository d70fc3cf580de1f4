"""A store's data directory: one store at a time, private modes, a full disk."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from dafka.config import TowerAddress
from dafka.errors import ConfigError, DafkaTimeout
from dafka.producer._facade import Producer
from dafka.store._facade import Store
from tests.procs import StoreProc, Tower, stored_head
from tower.metadata import TowerNode

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


COMMIT_THREAD = pytest.mark.parametrize(
    "store_args", [(), ("--commit-thread",)], ids=["io-thread", "commit-thread"]
)
"""Each test twice: the store commits on its IO thread, or on a writer thread."""


@COMMIT_THREAD
def test_a_store_on_a_full_disk_says_so_and_acks_again_when_room_returns(
    small_fs: Path, tower: Tower, store_args: tuple[str, ...]
) -> None:
    data = small_fs / "db"
    store = StoreProc(data, tower.address, *store_args)
    producer = Producer("full", towers=tower.address, metadata=False)
    try:
        value = b"v" * 1000
        sent = 0
        for _ in range(100):  # 100 KB a round: a 2 MiB disk fills long before the bound
            for _ in range(100):
                producer.send(value)
            sent += 100
            try:
                producer.flush(timeout=5)
            except DafkaTimeout:
                break
        else:
            pytest.fail("10 MB fit on a 2 MiB filesystem")
        acked = sent - producer.unacked
        assert acked > 0 and producer.unacked > 0
        line = store.proc.wait_line(
            r"store\.disk_full dir=(\S+) need_bytes=(\d+) free_bytes=(\d+) ", 10
        )
        assert line.group(1) == str(data) and int(line.group(2)) > int(line.group(3))
        assert "Input/output" not in store.proc.stderr and "Traceback" not in store.proc.stderr
        head = stored_head(data, "full", producer.partition)
        assert head is not None and acked - 1 <= head < sent - 1  # nothing acked is missing
        subprocess.run(["mount", "-o", "remount,size=16m", str(small_fs)], check=True)
        producer.flush(timeout=60)  # the store fetches what it could not store, and ACKs
        assert stored_head(data, "full", producer.partition) == sent - 1
        store.proc.wait_line(r"store\.disk_full\.cleared", 10)
    finally:
        producer.close(timeout=0)
        store.kill()


@COMMIT_THREAD
def test_a_store_sigkilled_mid_stream_holds_everything_it_acknowledged(
    tmp_path: Path, tower: Tower, store_args: tuple[str, ...]
) -> None:
    data = tmp_path / "db"
    store = StoreProc(data, tower.address, *store_args)
    producer = Producer("midstream", towers=tower.address, metadata=False)
    try:
        value = b"v" * 1000
        sent = acked = 0
        deadline = time.monotonic() + 30
        # send without waiting until some is acknowledged and more is on its way
        while acked < 20_000 or producer.unacked == 0:
            assert time.monotonic() < deadline, f"{acked} of {sent} acknowledged in 30 s"
            producer.send_many([value] * 1000)
            sent += 1000
            acked = sent - producer.unacked
        acked = sent - producer.unacked  # a lower bound: ACKs may arrive until the kill
        store.kill()  # SIGKILL, mid-stream: commits in flight are lost, acknowledged ones not
        head = stored_head(data, "midstream", producer.partition)
        assert head is not None and head >= acked - 1, (head, acked, sent)
    finally:
        producer.close(timeout=0)
        store.kill()


def test_a_towers_data_directories_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        node = TowerNode(TowerAddress("127.0.0.1", 0), data_dir=tmp_path / "t").start()
        node.stop()
    finally:
        os.umask(old)
    for path in (tmp_path / "t", tmp_path / "t" / "raft"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
