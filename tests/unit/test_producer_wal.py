"""The durable producer's log: group-committed frames, replay, torn tails, release."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.errors import StorageError
from dafka.producer import _wal as walmod
from dafka.producer._wal import LoggedBatch, ProducerLog


def batch(topic: str, first: int, count: int = 1) -> LoggedBatch:
    return LoggedBatch(topic, first, count, f"{topic}:{first}".encode() * 3)


def test_logged_batches_come_back_after_reopening(tmp_path: Path) -> None:
    log = ProducerLog(tmp_path / "w")
    log.append([batch("a", 0, 2), batch("b", 0), batch("a", 2, 3)])
    log.close()
    again = ProducerLog(tmp_path / "w")
    assert again.pending({}) == [batch("a", 0, 2), batch("b", 0), batch("a", 2, 3)]
    assert again.pending({"a": 2, "b": 1}) == [batch("a", 2, 3)]
    assert again.ends() == {"a": 5, "b": 1}


def test_a_torn_last_frame_is_cut_off(tmp_path: Path) -> None:
    log = ProducerLog(tmp_path / "w")
    log.append([batch("a", 0), batch("a", 1)])
    size = log.size
    log.close()
    with open(tmp_path / "w", "r+b") as f:
        f.truncate(size - 3)  # the crash hit mid-write
    again = ProducerLog(tmp_path / "w")
    assert again.pending({}) == [batch("a", 0)]
    assert (tmp_path / "w").stat().st_size == again.size < size - 3


def test_damage_before_valid_frames_is_refused(tmp_path: Path) -> None:
    log = ProducerLog(tmp_path / "w")
    log.append([batch("a", 0), batch("a", 1)])
    log.close()
    raw = bytearray((tmp_path / "w").read_bytes())
    raw[12] ^= 0xFF  # inside the first frame
    (tmp_path / "w").write_bytes(bytes(raw))
    with pytest.raises(StorageError, match="corrupt"):
        ProducerLog(tmp_path / "w")


def test_release_truncates_once_everything_is_acknowledged(tmp_path: Path) -> None:
    log = ProducerLog(tmp_path / "w")
    log.append([batch("a", 0, 2), batch("b", 0, 2)])
    log.release({"a": 2})
    assert log.size > 0 and log.pending({}) == [batch("b", 0, 2)]
    log.release({"a": 2, "b": 2})
    assert log.size == 0 and (tmp_path / "w").stat().st_size == 0
    log.append([batch("a", 2)])
    log.close()
    assert ProducerLog(tmp_path / "w").pending({"a": 2}) == [batch("a", 2)]


def test_release_rewrites_when_dead_frames_are_most_of_a_large_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walmod, "REWRITE_BYTES", 100)
    log = ProducerLog(tmp_path / "w")
    log.append([batch("a", i) for i in range(20)] + [batch("b", 0)])
    before = log.size
    log.release({"a": 20})  # b:0 stays live: no truncation, but a rewrite
    assert 0 < log.size < before // 5
    log.close()
    assert ProducerLog(tmp_path / "w").pending({}) == [batch("b", 0)]
