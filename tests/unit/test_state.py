"""StateDir and OffsetJournal: identity and offsets that survive restarts and crashes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dafka.errors import ConfigError, StorageError
from dafka.ids import is_node_id
from dafka.storage.state_dir import OffsetJournal, StateDir, write_atomic

# ------------------------------------------------------------------ StateDir


def test_creates_a_private_directory(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "state"
    with StateDir(path) as state:
        assert path.is_dir()
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
        assert state.path == path


def test_node_id_is_made_once_and_persists(tmp_path: Path) -> None:
    with StateDir(tmp_path / "s") as state:
        node = state.node_id()
        assert is_node_id(node)
        assert state.node_id() == node
    assert (tmp_path / "s" / "node_id").read_text() == node + "\n"
    assert stat.S_IMODE((tmp_path / "s" / "node_id").stat().st_mode) == 0o600
    with StateDir(tmp_path / "s") as state:
        assert state.node_id() == node
    with StateDir(tmp_path / "other") as state:
        assert state.node_id() != node


def test_corrupt_node_id_is_an_error_not_a_new_identity(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "node_id").write_text("garbage\n")
    with (
        StateDir(tmp_path / "s") as state,
        pytest.raises(ConfigError, match="does not hold a node ID"),
    ):
        state.node_id()
    assert (tmp_path / "s" / "node_id").read_text() == "garbage\n"


def test_second_user_of_the_directory_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    first = StateDir(path)
    with pytest.raises(ConfigError) as info:
        StateDir(path)
    assert str(info.value) == (
        f"state directory {path} is in use by another process (pid {os.getpid()})"
    )
    first.close()
    assert first.closed
    StateDir(path).close()  # free again once released


def test_another_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    script = textwrap.dedent(
        f"""
        from dafka.errors import ConfigError
        from dafka.storage.state_dir import StateDir
        try:
            StateDir({str(path)!r})
        except ConfigError as exc:
            print(exc)
        else:
            print("acquired")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with StateDir(path):
        out = subprocess.run(
            [sys.executable, "-c", script],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
        assert out.stdout.strip() == (
            f"state directory {path} is in use by another process (pid {os.getpid()})"
        )
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert out.stdout.strip() == "acquired"


def test_directory_that_cannot_be_created_is_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError) as info:
        StateDir(blocker / "state")
    assert str(info.value).startswith(f"cannot create state directory {blocker / 'state'}: ")
    assert "\n" not in str(info.value)


def test_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="state directory .* is not a directory|cannot create"):
        StateDir(blocker)


def test_closed_directory_refuses_use(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    state.close()
    state.close()  # idempotent
    with pytest.raises(ConfigError, match="closed"):
        state.node_id()


def test_write_atomic_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "f"
    write_atomic(target, b"one")
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


# -------------------------------------------------------------- OffsetJournal


def test_journal_survives_reopen(tmp_path: Path) -> None:
    with StateDir(tmp_path / "s") as state:
        journal = state.offset_journal()
        assert journal.load() == {}
        journal.reserve("a", 10)
        journal.reserve("b", 3)
        journal.reserve("a", 25)
    with StateDir(tmp_path / "s") as state:
        assert state.offset_journal().load() == {"a": 25, "b": 3}


def test_reserve_never_goes_backwards(tmp_path: Path) -> None:
    journal = OffsetJournal(tmp_path / "j")
    journal.reserve("a", 10)
    size = journal.size
    journal.reserve("a", 10)
    journal.reserve("a", 4)
    assert journal.size == size  # nothing written
    assert journal.load() == {"a": 10}
    journal.close()
    assert OffsetJournal(tmp_path / "j").load() == {"a": 10}


def test_reserve_many_is_one_frame(tmp_path: Path) -> None:
    journal = OffsetJournal(tmp_path / "j")
    journal.reserve_many({"a": 1, "b": 2, "ü" * 100: 2**64 - 1})
    journal.close()
    assert OffsetJournal(tmp_path / "j").load() == {"a": 1, "b": 2, "ü" * 100: 2**64 - 1}


def test_bad_offsets_are_refused(tmp_path: Path) -> None:
    journal = OffsetJournal(tmp_path / "j")
    with pytest.raises(ValueError):
        journal.reserve("a", -1)
    with pytest.raises(ValueError):
        journal.reserve("a", 2**64)


@pytest.mark.parametrize("cut", [1, 2, 5, 9, 12, 17])
def test_torn_tail_is_ignored_and_cut_off(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "j"
    journal = OffsetJournal(path)
    journal.reserve("a", 100)
    good = journal.size
    journal.reserve("a", 200)
    journal.close()
    data = path.read_bytes()
    path.write_bytes(data[: good + cut])  # the crash hit while writing the last frame
    journal = OffsetJournal(path)
    assert journal.load() == {"a": 100}
    assert path.stat().st_size == good
    journal.reserve("a", 300)  # appends after the repaired tail stay readable
    journal.close()
    assert OffsetJournal(path).load() == {"a": 300}


def test_zero_filled_tail_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "j"
    journal = OffsetJournal(path)
    journal.reserve("a", 7)
    journal.close()
    with open(path, "ab") as f:
        f.write(b"\0" * 4096)  # file size grew but the data never landed
    assert OffsetJournal(path).load() == {"a": 7}


def _pairs(path: Path) -> list[tuple[int, int]]:
    """``(start, size of one copy)`` of each record of a journal written by this version."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        size = 5 + int.from_bytes(data[pos + 1 : pos + 5], "big") + 4
        out.append((pos, size))
        pos += 2 * size
    return out


@pytest.mark.parametrize("copy", [0, 1])
@pytest.mark.parametrize("at", [0, 3, 9, -3])
def test_one_damaged_copy_of_the_last_record_is_read_from_the_other(
    tmp_path: Path, copy: int, at: int
) -> None:
    """Rot after the sync (issue 33, point 4): the reservation is read back whole, never
    taken for a torn write (which would hand out offsets that may have been published)."""
    path = tmp_path / "j"
    journal = OffsetJournal(path)
    journal.reserve("a", 7)
    journal.reserve("a", 8)
    journal.close()
    start, size = _pairs(path)[-1]
    data = bytearray(path.read_bytes())
    data[start + copy * size + at % size] ^= 0x10
    path.write_bytes(bytes(data))
    journal = OffsetJournal(path)
    assert journal.load() == {"a": 8}
    assert not journal.in_doubt
    journal.reserve("a", 9)  # the file was rewritten: appends stay readable
    journal.close()
    assert OffsetJournal(path).load() == {"a": 9}


def test_both_copies_of_the_last_record_damaged_is_in_doubt(tmp_path: Path) -> None:
    path = tmp_path / "j"
    journal = OffsetJournal(path)
    journal.reserve("a", 7)
    journal.reserve("a", 8)
    journal.close()
    start, size = _pairs(path)[-1]
    data = bytearray(path.read_bytes())
    data[start + 9] ^= 0x01
    data[start + size + 9] ^= 0x01
    path.write_bytes(bytes(data))
    journal = OffsetJournal(path)
    assert journal.load() == {"a": 7}
    assert journal.in_doubt  # not a torn write: the producer must ask before numbering


def test_a_torn_tail_is_not_in_doubt(tmp_path: Path) -> None:
    path = tmp_path / "j"
    journal = OffsetJournal(path)
    journal.reserve("a", 7)
    good = journal.size
    journal.reserve("a", 8)
    journal.close()
    path.write_bytes(path.read_bytes()[: good + 11])
    journal = OffsetJournal(path)
    assert journal.load() == {"a": 7}
    assert not journal.in_doubt


def test_corruption_before_valid_frames_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j"
    journal = OffsetJournal(path)
    journal.reserve("a", 7)
    journal.reserve("a", 8)
    journal.reserve("a", 9)
    journal.close()
    start, size = _pairs(path)[0]
    data = bytearray(path.read_bytes())
    data[start + 3] ^= 0xFF  # inside both copies of the first record
    data[start + size + 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(StorageError, match="corrupt"):
        OffsetJournal(path)


def test_a_journal_of_single_frames_is_still_read(tmp_path: Path) -> None:
    """Journals written before records were doubled (magic 0xd4) load as they did."""
    import struct
    import zlib

    def frame(topic: str, offset: int) -> bytes:
        payload = struct.pack(">I", 1) + bytes((len(topic),)) + topic.encode()
        payload += struct.pack(">Q", offset)
        body = b"\xd4" + struct.pack(">I", len(payload)) + payload
        return body + struct.pack(">I", zlib.crc32(body))

    path = tmp_path / "j"
    path.write_bytes(frame("a", 5) + frame("b", 6))
    journal = OffsetJournal(path)
    assert journal.load() == {"a": 5, "b": 6}
    journal.reserve("a", 7)
    journal.close()
    assert OffsetJournal(path).load() == {"a": 7, "b": 6}


def test_journal_compacts_when_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "j"
    journal = OffsetJournal(path, compact_bytes=1024)
    for i in range(1, 500):
        journal.reserve_many({"a": i, "b": 2 * i})
        assert journal.size <= 1024 + 64
    assert path.stat().st_size == journal.size
    journal.reserve("c", 1)
    journal.close()
    assert OffsetJournal(path).load() == {"a": 499, "b": 998, "c": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j"]


def test_a_compaction_that_fails_does_not_fail_the_reservation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reservation is written and synced before the journal compacts: a compaction that
    cannot write (a full disk) leaves it standing, and the next reservation tries again."""
    import dafka.storage.state_dir as state_dir

    path = tmp_path / "j"
    journal = OffsetJournal(path, compact_bytes=256)

    def no_room(target: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(state_dir, "write_atomic", no_room)
    for i in range(1, 40):
        journal.reserve("a", i)  # past 256 bytes each compaction fails; none raises
    assert journal.size > 256 and journal.load() == {"a": 39}
    monkeypatch.undo()
    journal.reserve("a", 40)
    assert journal.size < 256
    journal.close()
    assert OffsetJournal(path).load() == {"a": 40}


def test_journal_file_is_private(tmp_path: Path) -> None:
    journal = OffsetJournal(tmp_path / "j")
    journal.reserve("a", 1)
    journal.compact()
    assert stat.S_IMODE((tmp_path / "j").stat().st_mode) == 0o600
    journal.close()


def test_closed_journal_refuses_writes(tmp_path: Path) -> None:
    journal = OffsetJournal(tmp_path / "j")
    journal.close()
    with pytest.raises(StorageError, match="closed"):
        journal.reserve("a", 1)


def test_state_dir_close_closes_its_journals(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    journal = state.offset_journal()
    state.close()
    with pytest.raises(StorageError):
        journal.reserve("a", 1)


@pytest.mark.parametrize("cut", [23, 30, 45])
def test_a_tail_torn_in_its_second_copy_keeps_the_reservation(tmp_path: Path, cut: int) -> None:
    """The first copy was written whole: taking its value reserves more than may have been
    published, which is safe (recovery closes what no store holds)."""
    path = tmp_path / "j"
    journal = OffsetJournal(path)
    journal.reserve("a", 100)
    good = journal.size
    journal.reserve("a", 200)
    journal.close()
    path.write_bytes(path.read_bytes()[: good + cut])
    journal = OffsetJournal(path)
    assert journal.load() == {"a": 200}
    assert not journal.in_doubt
    journal.reserve("a", 300)
    journal.close()
    assert OffsetJournal(path).load() == {"a": 300}
