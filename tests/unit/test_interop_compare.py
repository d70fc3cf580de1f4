"""The mixed-cluster ring's log comparison (:func:`tests.interop.reference.compare_logs`):
what it must find, on hand-made logs (no processes)."""

from __future__ import annotations

from dafka.raft.codec import Entry, EntryType
from tests.interop.reference import Acked, compare_logs


def _entry(index: int, term: int = 1, tag: str = "") -> Entry:
    reqid = index.to_bytes(12, "big")
    return Entry(index, term, EntryType.STATE, reqid, f"v{index}{tag}".encode())


def _log(n: int, **changes: Entry | None) -> list[Entry]:
    entries = [_entry(k) for k in range(1, n + 1)]
    return [changes.get(f"i{e.index}", e) for e in entries if changes.get(f"i{e.index}", e)]


def _acked(*indexes: int) -> list[Acked]:
    return [Acked(k, _entry(k).reqid, _entry(k).data) for k in indexes]


def test_identical_logs_holding_every_acknowledged_update_pass() -> None:
    logs = {p: (0, _log(10)) for p in ("a", "b", "c")}
    assert compare_logs(logs, _acked(*range(1, 11))) == []


def test_a_truncated_follower_is_reported_by_index_and_as_missing_acknowledged_updates() -> None:
    logs = {"a": (0, _log(10)), "b": (0, _log(10)), "r": (0, _log(7))}
    problems = compare_logs(logs, _acked(*range(1, 11)))
    assert problems[0] == "logs differ at 3 indexes: 8-10"
    assert problems[1].startswith("  index 8: a: term 1 STATE reqid ")
    assert problems[1].endswith("r: (none)")
    assert "r does not hold 3 acknowledged updates at their index: 8-10" in problems
    assert not any(p.startswith("LOST") for p in problems)  # still on a majority


def test_an_acknowledged_update_on_a_minority_is_lost() -> None:
    other = _entry(5, term=2, tag="x")
    logs = {"a": (0, _log(6)), "b": (0, _log(6, i5=other)), "c": (0, _log(4))}
    problems = compare_logs(logs, _acked(5))
    assert "logs differ at 2 indexes: 5-6" in problems
    assert "LOST: 1 acknowledged updates are on fewer than 2 of 3 peers: 5" in problems


def test_same_term_different_content_and_duplicate_reqids_are_found() -> None:
    dup = Entry(3, 1, EntryType.STATE, _entry(2).reqid, _entry(2).data)
    logs = {"a": (0, _log(4)), "b": (0, _log(4, i3=dup))}
    problems = compare_logs(logs, [])
    assert f"b: reqid {_entry(2).reqid.hex()} at indexes 2 and 3" in problems
    assert "logs differ at 1 indexes: 3" in problems


def test_indexes_below_a_compacted_snapshot_are_not_compared() -> None:
    logs = {"a": (0, _log(6)), "b": (4, _log(6)[4:])}
    assert compare_logs(logs, _acked(2, 5, 6)) == []
