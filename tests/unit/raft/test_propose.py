"""RequestUpdate semantics: leader only, request-id deduplication and expiry."""

from __future__ import annotations

import pytest

from dafka.errors import NotLeader, WireError
from dafka.raft.codec import Entry, EntryType, HardState
from dafka.raft.core import AppendEntries, ProposeStatus

from .sim import Network, drain, elect, new_core, put

NOW = 1_700_000_000.0


def reqid(n: int, at: float = NOW) -> bytes:
    return int(at).to_bytes(4, "big") + n.to_bytes(8, "big")


def test_propose_on_a_follower_raises_not_leader_with_the_hint():
    follower = new_core("b", "abc")
    with pytest.raises(NotLeader) as info:
        follower.propose(b"x", reqid(1), NOW)
    assert info.value.leader is None
    follower.step(AppendEntries("c", "b", 1, 0, 0, 0))
    with pytest.raises(NotLeader) as info:
        follower.propose(b"x", reqid(1), NOW)
    assert info.value.leader == "c"


def test_request_id_dedup_a_resend_returns_the_original_index_even_after_commit():
    net = Network("abc", seed=61)
    lead = net.wait_leader()
    rid = net.new_reqid()
    first = net.propose(lead.id, put("k", 1), rid)
    net.run(5)
    assert lead.core.commit >= first.index
    last = lead.core.last_index
    again = net.propose(lead.id, put("k", 1), rid)
    assert (
        again.accepted
        and again.duplicate
        and (again.index, again.term)
        == (
            first.index,
            first.term,
        )
    )
    assert lead.core.last_index == last  # nothing appended


def test_request_id_dedup_survives_a_leader_change():
    net = Network("abc", seed=63)
    old = net.wait_leader()
    rid = net.new_reqid()
    first = net.propose(old.id, put("k", 1), rid)
    net.run(5)
    net.crash(old.id)
    new = net.wait_leader()
    again = new.core.propose(put("k", 1), rid, net.now())
    assert again.duplicate and again.index == first.index


def test_request_id_expiry():
    core = new_core("a", "a", request_id_ttl=60.0)
    elect(core)
    assert core.propose(b"x", reqid(1, at=NOW - 61), NOW).status is ProposeStatus.EXPIRED
    assert core.propose(b"x", reqid(2, at=NOW - 59), NOW).accepted
    default = new_core("a", "a")
    elect(default)
    assert default.propose(b"x", reqid(3, at=NOW - 8 * 3600), NOW).status is ProposeStatus.EXPIRED
    assert default.propose(b"x", reqid(4, at=NOW - 7 * 3600), NOW).accepted


def test_request_ids_are_twelve_bytes():
    core = new_core("a", "a")
    elect(core)
    with pytest.raises(WireError):
        core.propose(b"x", b"short", NOW)


def test_dedup_memory_forgets_committed_ids_once_they_expire():
    core = new_core("a", "a", request_id_ttl=100.0)
    elect(core)
    old = core.propose(b"x", reqid(0), NOW)
    assert core.propose(b"x", reqid(0), NOW + 50).duplicate
    later = NOW + 200
    for n in range(1, 1100):  # enough to trigger a prune
        core.propose(b"y", reqid(n, at=later), later)
        drain(core)
    assert old.accepted
    assert core.propose(b"x", reqid(0), later).status is ProposeStatus.EXPIRED
    assert core.propose(b"y", reqid(5, at=later), later).duplicate


def test_a_truncated_entry_forgets_its_request_id():
    rid = reqid(7)
    follower = new_core("b", "abc", hard_state=HardState(term=1))
    follower.step(AppendEntries("a", "b", 1, 0, 0, 0, (Entry(1, 1, EntryType.STATE, rid, b"x"),)))
    follower.step(AppendEntries("c", "b", 2, 0, 0, 0, (Entry(1, 2, EntryType.CHECKPOINT),)))
    drain(follower)
    elect(follower)
    result = follower.propose(b"x", rid, NOW)
    assert not result.duplicate and result.index == 3  # after the checkpoint of its own term


def test_entries_from_a_restart_are_remembered():
    rid = reqid(9)
    log = [Entry(1, 1, EntryType.STATE, rid, b"x")]
    core = new_core("a", "a", hard_state=HardState(term=1, commit=1), entries=log)
    elect(core)
    assert core.propose(b"x", rid, NOW).index == 1


def test_a_follower_forgets_committed_ids_once_they_expire_too():
    """The dedup memory of a follower is pruned like a leader's: without it, every reqid a
    follower was ever sent stayed (the map grew by one per entry until it led)."""
    follower = new_core("b", "abc", hard_state=HardState(term=1), request_id_ttl=100.0)
    index = 0
    for batch in range(300):  # 3,000 entries, their reqids made over 3,000 s
        at = NOW + 10 * batch
        sent = tuple(
            Entry(index + 1 + k, 1, EntryType.STATE, reqid(index + k, at=at), b"x")
            for k in range(10)
        )
        follower.step(AppendEntries("a", "b", 1, index, 1 if index else 0, index + 10, sent))
        drain(follower)
        index += 10
    assert follower.commit == 3000
    assert len(follower.requests) < 2 * 1024  # about 100 s worth, not all 3,000
    assert reqid(2999, at=NOW + 2990) in follower.requests  # the recent ones stay
