"""The bit-rot helpers find what they damage in files the real code wrote."""

from __future__ import annotations

import random
from pathlib import Path

from dafka.raft.codec import Entry, EntryType
from dafka.raft.peer import FileStorage
from dafka.storage.state_dir import OffsetJournal
from tests.faults.checker import content
from tests.faults.rot import (
    journal_frames,
    raft_records,
    rot_last_journal_frame,
    rot_last_raft_record,
    rot_values,
)


def test_the_last_journal_frame_is_rotten_and_the_others_hold(tmp_path: Path) -> None:
    path = tmp_path / "offsets.journal"
    journal = OffsetJournal(path)
    for offset in (10, 20, 30):
        journal.reserve("t", offset)
    journal.close()
    assert len(journal_frames(path.read_bytes())) == 6  # each record written twice
    left = set()
    for seed in range(8):  # one copy rotten, or both
        copy = tmp_path / f"copy-{seed}"
        copy.write_bytes(path.read_bytes())
        pos = rot_last_journal_frame(copy, random.Random(seed))
        frames = journal_frames(copy.read_bytes())
        assert pos is not None and frames[-1][1] <= pos
        left.add(len(frames))
    assert left == {4, 5}


def test_the_last_raft_record_is_rotten_and_the_others_hold(tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "raft")
    for i in range(1, 4):
        storage.append([Entry(i, 1, EntryType.STATE, data=b"x" * 20)])
    storage.close()
    (log,) = [p for p in (tmp_path / "raft").rglob("log")]
    assert len(raft_records(log.read_bytes())) == 3
    pos = rot_last_raft_record(log, random.Random(2))
    assert pos is not None and len(raft_records(log.read_bytes())) == 2


def test_values_are_rotten_in_their_padding_only(tmp_path: Path) -> None:
    values = [content("p1", 0, seq).encode() for seq in range(20)]
    path = tmp_path / "data.mdb"
    path.write_bytes(b"\0" * 100 + b"|".join(values))
    flipped = rot_values(path, random.Random(3), count=4)
    assert len(flipped) == 4
    after = path.read_bytes()
    assert len(after) == 100 + len(b"|".join(values))
    stored = after[100:].split(b"|")
    assert sum(1 for a, b in zip(stored, values, strict=True) if a != b) == 4
    assert all(len(a) == len(b) for a, b in zip(stored, values, strict=True))
