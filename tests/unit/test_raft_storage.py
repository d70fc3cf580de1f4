"""Durable Raft storage: restart, torn tails, corruption, truncation, snapshots, compaction."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dafka.errors import StorageError
from dafka.raft.codec import (
    ClusterConfig,
    Entry,
    EntryType,
    HardState,
    Peer,
    SnapshotMeta,
)
from dafka.raft.peer import FileStorage, MemoryStorage
from dafka.raft.peer import _storage as storage_module
from dafka.raft.peer._storageapi import LoadedState

CONFIG = ClusterConfig((Peer("a", "tcp://127.0.0.1:1"), Peer("b", "tcp://127.0.0.1:2")))


def entries(first: int, last: int, term: int = 1) -> list[Entry]:
    return [
        Entry(i, term, EntryType.STATE, i.to_bytes(12, "big"), f"data-{i}".encode() * (i % 4))
        for i in range(first, last + 1)
    ]


def crash(storage: FileStorage) -> None:
    """Drop the storage like a killed process would: no flush, just the fds closed."""
    os.close(storage._fd)
    os.close(storage._lock_fd)
    storage._fd = storage._lock_fd = -1


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "raft"


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FileStorage | MemoryStorage]:
    if request.param == "memory":
        yield MemoryStorage()
    else:
        storage = FileStorage(tmp_path / "raft")
        yield storage
        storage.close()


def log_size(path: Path) -> int:
    return (path / "log").stat().st_size


def flip(path: Path, offset: int) -> None:
    with open(path / "log", "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x55]))


# -- the contract, for both implementations ---------------------------------------------------


def test_fresh(store) -> None:
    state = store.load()
    assert state == LoadedState(HardState(), SnapshotMeta(), [], None)
    assert (store.first_index, store.last_index) == (1, 0)


def test_append_read_term(store) -> None:
    store.append(entries(1, 5))
    store.append(entries(6, 8, term=2))
    assert store.load().entries == entries(1, 5) + entries(6, 8, term=2)
    assert store.read_entries(3, 7) == entries(3, 5) + entries(6, 6, term=2)
    assert store.read_entries(0, 100) == store.load().entries
    assert store.read_entries(9, 12) == []
    assert (store.term(5), store.term(6), store.term(9), store.term(0)) == (1, 2, None, 0)
    assert store.last_index == 8


def test_append_must_continue_the_log(store) -> None:
    store.append(entries(1, 3))
    with pytest.raises(StorageError):
        store.append(entries(5, 6))  # gap
    with pytest.raises(StorageError):
        store.append(entries(3, 4))  # overlap: truncate first
    with pytest.raises(StorageError):
        store.append([*entries(4, 4), *entries(6, 6)])  # not consecutive
    store.append([])
    assert store.last_index == 3


def test_truncate_from_then_append(store) -> None:
    store.append(entries(1, 6))
    store.truncate_from(4)
    assert store.last_index == 3
    store.append(entries(4, 5, term=2))
    assert store.load().entries == entries(1, 3) + entries(4, 5, term=2)
    store.truncate_from(10)  # beyond the end: nothing to do
    assert store.last_index == 5


def test_hard_state(store) -> None:
    store.save_hard_state(HardState(3, "b", 7))
    assert store.hard_state == HardState(3, "b", 7)
    assert store.load().hard_state == HardState(3, "b", 7)


def test_snapshot_keeps_matching_log_then_compacts(store) -> None:
    store.append(entries(1, 10, term=2))
    meta = SnapshotMeta(6, 2, CONFIG)
    store.save_snapshot(meta, b"state@6")
    assert store.load() == LoadedState(HardState(), meta, entries(7, 10, term=2), b"state@6")
    assert store.first_index == 1  # entries <= 6 stay until compacted
    store.compact(4)
    assert store.first_index == 5
    assert store.read_entries(1, 20) == entries(5, 10, term=2)
    store.compact(6)
    assert (store.first_index, store.last_index) == (7, 10)
    assert store.term(6) == 2  # from the snapshot
    with pytest.raises(StorageError):
        store.compact(7)  # not covered by the snapshot
    with pytest.raises(StorageError):
        store.truncate_from(6)  # covered by the snapshot
    store.append(entries(11, 11, term=3))
    assert store.load().entries == entries(7, 10, term=2) + entries(11, 11, term=3)


def test_snapshot_with_other_term_discards_the_log(store) -> None:
    store.append(entries(1, 10, term=1))
    store.save_snapshot(SnapshotMeta(8, 2, CONFIG), b"s")
    assert store.load().entries == []
    assert (store.first_index, store.last_index) == (9, 8)
    store.append(entries(9, 9, term=2))
    assert store.load().entries == entries(9, 9, term=2)


def test_snapshot_beyond_the_log_discards_it(store) -> None:
    store.append(entries(1, 3))
    store.save_snapshot(SnapshotMeta(50, 4, CONFIG), b"s")
    assert (store.first_index, store.last_index) == (51, 50)
    with pytest.raises(StorageError):
        store.append(entries(4, 4))
    store.append(entries(51, 52, term=4))
    assert store.snapshot_data() == b"s"
    with pytest.raises(StorageError):
        store.save_snapshot(SnapshotMeta(49, 4, CONFIG), b"older")


# -- durability across restarts (FileStorage) -------------------------------------------------


def test_restart_from_disk(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 100))
        storage.truncate_from(91)
        storage.append(entries(91, 120, term=2))
        storage.save_hard_state(HardState(2, "a", 50))
    with FileStorage(path) as storage:
        state = storage.load()
        assert state.hard_state == HardState(2, "a", 50)
        assert state.entries == entries(1, 90) + entries(91, 120, term=2)
        assert (storage.first_index, storage.last_index) == (1, 120)
        storage.append(entries(121, 121, term=2))
    with FileStorage(path) as storage:
        assert storage.last_index == 121


def test_second_open_is_refused_while_locked(path: Path) -> None:
    with FileStorage(path), pytest.raises(StorageError, match="in use"):
        FileStorage(path)
    FileStorage(path).close()


def test_commit_only_changes_are_deferred(path: Path) -> None:
    storage = FileStorage(path)
    storage.save_hard_state(HardState(1, "a", 1))
    storage.save_hard_state(HardState(1, "a", 5), sync=False)
    assert storage.hard_state == HardState(1, "a", 5)
    crash(storage)
    storage = FileStorage(path)
    assert storage.hard_state == HardState(1, "a", 1)  # a stale commit is harmless
    storage.save_hard_state(HardState(1, "a", 9), sync=False)
    storage.close()  # close writes the deferred commit
    storage = FileStorage(path)
    assert storage.hard_state == HardState(1, "a", 9)
    # a term or vote change is durable even when asked with sync=False
    storage.save_hard_state(HardState(2, None, 9), sync=False)
    crash(storage)
    with FileStorage(path) as storage:
        assert storage.hard_state == HardState(2, None, 9)


def test_unsynced_appends_survive_a_clean_restart(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 5), sync=False)
    with FileStorage(path) as storage:
        assert storage.load().entries == entries(1, 5)


def test_compaction_and_snapshot_survive_restart(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 20, term=3))
        storage.save_snapshot(SnapshotMeta(15, 3, CONFIG), b"\x00snapshot\xff" * 1000)
        storage.compact(15)
        storage.save_hard_state(HardState(3, "b", 15))
    with FileStorage(path) as storage:
        state = storage.load()
        assert state.snapshot_meta == SnapshotMeta(15, 3, CONFIG)
        assert state.snapshot == b"\x00snapshot\xff" * 1000
        assert state.entries == entries(16, 20, term=3)
        assert (storage.first_index, storage.last_index) == (16, 20)
        storage.compact(15)  # idempotent
        storage.append(entries(21, 22, term=3))
    with FileStorage(path) as storage:
        assert storage.load().entries == entries(16, 22, term=3)


def test_empty_log_after_compaction_restarts_at_snapshot(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 5))
        storage.save_snapshot(SnapshotMeta(5, 1, CONFIG), b"s")
        storage.compact(5)
    with FileStorage(path) as storage:
        assert (storage.first_index, storage.last_index) == (6, 5)
        storage.append(entries(6, 6))


def test_compaction_copies_the_kept_records_as_they_are(path: Path) -> None:
    """A compaction copies the kept records byte for byte (batch stamps included), not
    re-encoded, and the offsets it keeps find them."""
    with FileStorage(path) as storage:
        storage.append(entries(1, 4, term=2))
        cut = log_size(path)  # where record 5 starts
        storage.append(entries(5, 9, term=2))
        storage.append(entries(10, 12, term=3))
        records = (path / "log").read_bytes()[cut:]
        storage.save_snapshot(SnapshotMeta(4, 2, CONFIG), b"s")
        storage.compact(4)
        assert (path / "log").read_bytes()[20:] == records  # after the 20-byte header
        assert storage.read_entries(5, 13) == entries(5, 9, term=2) + entries(10, 12, term=3)
        assert (storage.term(9), storage.term(10), storage.first_index) == (2, 3, 5)
        storage.append(entries(13, 13, term=3))
    with FileStorage(path) as storage:
        assert storage.load().entries == [*entries(5, 9, 2), *entries(10, 13, 3)]


def test_compaction_refuses_a_damaged_kept_record(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 4))
        at = log_size(path)  # where record 5 starts
        storage.append(entries(5, 8))
        storage.save_snapshot(SnapshotMeta(3, 1, CONFIG), b"s")
        flip(path, at + 30)  # record 5, kept by the compaction
        with pytest.raises(StorageError, match="entry 5 is damaged"):
            storage.compact(3)


def test_damage_in_a_compacted_log_before_a_later_batch_is_still_refused(path: Path) -> None:
    """The kept records keep their batch stamps: damage in one that a later append
    followed was fsynced, and recovery still refuses to drop it after a compaction."""
    with FileStorage(path) as storage:
        storage.append(entries(1, 3))
        storage.append(entries(4, 6))
        storage.append(entries(7, 9))
        storage.save_snapshot(SnapshotMeta(3, 1, CONFIG), b"s")
        storage.compact(3)
        at = storage._offsets[5 - 4]
    flip(path, at + 30)  # record 5: its batch (4) is followed by the batch of 7
    with pytest.raises(StorageError, match="refusing"):
        FileStorage(path)


def test_snapshot_round_trip_with_joint_config(path: Path) -> None:
    joint = ClusterConfig((Peer("a", "u1"), Peer("c", "u3")), (Peer("a", "u1"),), (Peer("l", "u"),))
    with FileStorage(path) as storage:
        storage.save_snapshot(SnapshotMeta(7, 2, joint), b"")
    with FileStorage(path) as storage:
        assert storage.load() == LoadedState(HardState(), SnapshotMeta(7, 2, joint), [], b"")


def test_crash_between_snapshot_and_log_rewrite(path: Path, tmp_path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 5, term=1))
    other = tmp_path / "other"
    shutil.copytree(path, other)
    with FileStorage(other) as storage:
        storage.save_snapshot(SnapshotMeta(8, 2, CONFIG), b"s")
    shutil.copy(other / "snapshot", path / "snapshot")  # the snapshot landed, the log did not
    with FileStorage(path) as storage:
        state = storage.load()
        assert state.snapshot_meta.index == 8
        assert state.entries == []
        assert storage.first_index == 9


# -- damaged files ----------------------------------------------------------------------------


def test_torn_tail_is_truncated(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 10))
        size_after_10 = log_size(path)
        storage.append(entries(11, 12))
    with open(path / "log", "r+b") as handle:
        handle.truncate(log_size(path) - 7)  # cut into record 12
    with caplog.at_level(logging.WARNING, logger="dafka.raft.peer._storage"):
        storage = FileStorage(path)
    assert "torn-tail" in caplog.text
    assert storage.load().entries == entries(1, 11)
    assert log_size(path) < size_after_10 + 200
    storage.append(entries(12, 13, term=2))
    storage.close()
    with FileStorage(path) as storage:
        assert storage.load().entries == entries(1, 11) + entries(12, 13, term=2)


@pytest.mark.parametrize("keep", [1, 5, 27, 28, 29])
def test_tail_cut_anywhere_in_a_record(path: Path, keep: int) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 3))
        cut = log_size(path)
        storage.append(entries(4, 4))
    with open(path / "log", "r+b") as handle:
        handle.truncate(cut + keep)
    with FileStorage(path) as storage:
        assert storage.last_index == 3
    assert log_size(path) == cut


def test_flipped_byte_in_the_last_record_is_rot_not_a_torn_tail(path: Path) -> None:
    # issue 33 point 5: the record was complete and fsynced; it was taken for a torn tail
    with FileStorage(path) as storage:
        storage.append(entries(1, 8))
        storage.append(entries(9, 9))
    flip(path, log_size(path) - 2)  # inside the data of entry 9
    size = log_size(path)
    for _ in range(2):  # and the refused open wrote nothing
        with pytest.raises(StorageError, match="index 9, rot in a complete record"):
            FileStorage(path)
    assert log_size(path) == size


def test_garbage_after_the_last_record(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 4))
    with open(path / "log", "ab") as handle:
        handle.write(b"\x00" * 4096)
    with FileStorage(path) as storage:
        assert storage.load().entries == entries(1, 4)


def test_zeroed_bytes_inside_the_last_batch_are_a_torn_write(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 3))
        start = log_size(path)
        storage.append(entries(4, 10))  # one batch; its sectors may persist out of order
    with open(path / "log", "r+b") as handle:  # record 4 never landed, 5..10 did
        handle.seek(start + 20)
        handle.write(b"\0" * 16)
    with FileStorage(path) as storage:
        assert storage.last_index == 3


def test_a_flipped_byte_inside_the_last_batch_is_rot(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 3))
        start = log_size(path)
        storage.append(entries(4, 10))
    flip(path, start + 30)  # a byte no torn write leaves: nonzero and not what was written
    with pytest.raises(StorageError, match=r"index 4, rot .* entries 4\.\.10"):
        FileStorage(path)


def test_damage_before_a_later_batch_is_refused(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 3))
        start = log_size(path)
        storage.append(entries(4, 6))
        storage.append(entries(7, 9))  # written after 4..6 was fsynced
    flip(path, start + 30)
    with pytest.raises(StorageError, match="refusing"):
        FileStorage(path)
    # the lock is released after a refused open; repair=True truncates at the damage
    with FileStorage(path, repair=True) as storage:
        assert storage.last_index == 3
    with FileStorage(path) as storage:
        assert storage.load().entries == entries(1, 3)


def test_damaged_first_record_before_later_batch_is_refused(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append(entries(1, 2))
        storage.append(entries(3, 4))
    flip(path, 20 + 30)  # log header is 20 bytes; damage record 1
    with pytest.raises(StorageError):
        FileStorage(path)


def test_damaged_state_or_snapshot_is_refused(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.save_hard_state(HardState(1, "a", 0))
        storage.save_snapshot(SnapshotMeta(0, 0, CONFIG), b"x" * 10)
    original = (path / "state").read_bytes()
    (path / "state").write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(StorageError, match="state"):
        FileStorage(path)
    (path / "state").write_bytes(original)
    snap = (path / "snapshot").read_bytes()
    (path / "snapshot").write_bytes(snap[:20] + b"Y" + snap[21:])
    with pytest.raises(StorageError, match="snapshot"):
        FileStorage(path)


def test_missing_log_with_state_is_refused(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.save_hard_state(HardState(1, "a", 0))
    (path / "log").unlink()
    with pytest.raises(StorageError, match="missing"):
        FileStorage(path)


def test_leftover_tmp_files_are_removed(path: Path) -> None:
    FileStorage(path).close()
    (path / "state.tmp").write_bytes(b"half")
    with FileStorage(path) as storage:
        assert storage.hard_state == HardState()
    assert not (path / "state.tmp").exists()


def test_closed_storage_refuses_work(path: Path) -> None:
    storage = FileStorage(path)
    storage.close()
    storage.close()
    with pytest.raises(StorageError, match="closed"):
        storage.append(entries(1, 1))


# -- batching ---------------------------------------------------------------------------------


def test_append_is_one_write_and_one_sync(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"pwrite": 0, "sync": 0}
    real_pwrite, real_sync = os.pwrite, storage_module._fdatasync

    def pwrite(fd, data, offset):
        calls["pwrite"] += 1
        return real_pwrite(fd, data, offset)

    def sync(fd):
        calls["sync"] += 1
        real_sync(fd)

    with FileStorage(path) as storage:
        monkeypatch.setattr(storage_module.os, "pwrite", pwrite)
        monkeypatch.setattr(storage_module, "_fdatasync", sync)
        storage.append(entries(1, 64))
        assert calls == {"pwrite": 1, "sync": 1}
        storage.append(entries(65, 128), sync=False)
        assert calls == {"pwrite": 2, "sync": 1}


# -- model check: FileStorage (with restarts) behaves like MemoryStorage ----------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4), st.integers(1, 3)),
        st.tuples(st.just("truncate"), st.integers(0, 6)),
        st.tuples(st.just("snapshot"), st.integers(0, 6), st.booleans()),
        st.tuples(st.just("compact"), st.integers(0, 6)),
        st.tuples(st.just("reopen")),
    ),
    max_size=12,
)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_file_storage_matches_memory_model(tmp_path_factory, operations) -> None:
    path = tmp_path_factory.mktemp("model")
    model, real = MemoryStorage(), FileStorage(path)
    try:
        for op in operations:
            outcomes = []
            for target in (model, real):
                try:
                    if op[0] == "append":
                        first = target.last_index + 1
                        target.append(entries(first, first + op[1] - 1, term=op[2]))
                    elif op[0] == "truncate":
                        target.truncate_from(max(1, target.last_index - op[1]))
                    elif op[0] == "snapshot":
                        index = max(0, target.last_index - op[1])
                        term = target.term(index) if op[2] else 99
                        target.save_snapshot(SnapshotMeta(index, term or 0, CONFIG), b"s")
                    elif op[0] == "compact":
                        target.compact(max(0, target.snapshot_meta.index - op[1]))
                    elif op[0] == "reopen" and target is real:
                        real.close()
                        real = FileStorage(path)
                    outcomes.append("ok")
                except StorageError:
                    outcomes.append("error")
            assert outcomes[0] == outcomes[1], op
            assert real.load() == model.load(), op
            assert (real.first_index, real.last_index) == (model.first_index, model.last_index)
    finally:
        real.close()


def test_a_staged_snapshot_changes_nothing_until_installed(path: Path) -> None:
    with FileStorage(path) as storage:
        storage.append([Entry(i, 1, EntryType.STATE, bytes(12), b"x") for i in range(1, 6)])
        staged = storage.stage_snapshot(SnapshotMeta(3, 1, CONFIG), b"state at 3")
        assert storage.snapshot_meta.index == 0 and storage.snapshot_data() is None
    with FileStorage(path) as storage:  # a crash before install: the staged file is gone
        assert not staged.exists() and storage.snapshot_meta.index == 0
        staged = storage.stage_snapshot(SnapshotMeta(3, 1, CONFIG), b"state at 3")
        assert storage.install_staged(SnapshotMeta(3, 1, CONFIG), staged)
        assert storage.snapshot_data() == b"state at 3" and storage.last_index == 5  # log kept
        older = storage.stage_snapshot(SnapshotMeta(2, 1, CONFIG), b"state at 2")
        assert not storage.install_staged(SnapshotMeta(2, 1, CONFIG), older)
        assert not older.exists() and storage.snapshot_meta.index == 3
    with FileStorage(path) as storage:
        assert storage.snapshot_data() == b"state at 3" and storage.first_index == 1
