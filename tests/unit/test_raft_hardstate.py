"""The hard state file: one write + one fdatasync a save, and a crash mid-save keeps the
last durable state readable."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import msgpack
import pytest

from dafka.errors import StorageError
from dafka.raft.codec import HardState
from dafka.raft.peer import FileStorage
from dafka.raft.peer import _hardstate as hardstate
from dafka.raft.peer._hardstate import SLOT_SIZE

A = HardState(3, "a", 0)
B = HardState(4, "b", 0)
C = HardState(4, "b", 7)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "raft"


def saved(path: Path, *states: HardState) -> bytes:
    with FileStorage(path) as storage:
        for state in states:
            storage.save_hard_state(state)
    return (path / "state").read_bytes()


def reopened(path: Path) -> HardState:
    with FileStorage(path) as storage:
        return storage.hard_state


def slot_of(blob: bytes, state: HardState) -> int:
    body = hardstate.pack_state(state)
    return next(k for k in (0, 1) if body in blob[k * SLOT_SIZE : (k + 1) * SLOT_SIZE])


def test_each_save_is_one_write_and_one_fdatasync_without_rename(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved(path, A)  # the file exists: later saves are in place
    calls: list[str] = []
    real_sync, real_replace = hardstate._fdatasync, os.replace
    monkeypatch.setattr(hardstate, "_fdatasync", lambda fd: (calls.append("sync"), real_sync(fd)))
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append("fsync"))
    monkeypatch.setattr(os, "replace", lambda *a: (calls.append("rename"), real_replace(*a)))
    with FileStorage(path) as storage:
        storage.save_hard_state(B)
        assert calls == ["sync"]
        storage.save_hard_state(C)
        assert calls == ["sync", "sync"]
    assert reopened(path) == C
    assert not (path / "state.tmp").exists()


@pytest.mark.parametrize(
    ("saves", "damage"),
    [(3, "truncated"), (3, "torn"), (3, "zeroed"), (2, "torn"), (2, "zeroed")],
)
def test_a_crash_during_a_save_leaves_the_previous_state(
    path: Path, saves: int, damage: str
) -> None:
    states = [A, B, C][:saves]
    blob = saved(path, *states)
    crashed, previous = states[-1], states[-2]
    k = slot_of(blob, crashed)  # its slot is damaged; the other one holds ``previous``
    lo, hi = k * SLOT_SIZE, k * SLOT_SIZE + 40
    if damage == "truncated":
        blob = blob[: lo + 20]
    elif damage == "torn":
        blob = blob[: lo + 10] + b"\xff" * 30 + blob[hi:]  # half new, half old sectors
    else:
        blob = blob[:lo] + b"\0" * len(blob[lo:hi]) + blob[hi:]
    (path / "state").write_bytes(blob)
    assert reopened(path) == previous
    with FileStorage(path) as storage:  # and the next save goes on from there
        storage.save_hard_state(HardState(9, None, 1))
    assert reopened(path) == HardState(9, None, 1)


def test_the_newer_slot_wins_and_both_damaged_is_refused(path: Path) -> None:
    blob = saved(path, A, B, C)
    assert reopened(path) == C
    (path / "state").write_bytes(b"\xaa" * len(blob))
    with pytest.raises(StorageError, match="state"):
        FileStorage(path)


def test_an_old_format_state_file_is_read_and_rewritten_in_slots(path: Path) -> None:
    FileStorage(path).close()
    body = b"DAFKRHS1" + msgpack.packb([3, "a", 2])
    (path / "state").write_bytes(body + zlib.crc32(body).to_bytes(4, "little"))
    assert reopened(path) == HardState(3, "a", 2)
    saved(path, B)
    assert reopened(path) == B
    assert (path / "state").read_bytes()[:8] != b"DAFKRHS1"
