"""RequestIds alone: the request-id dedup and expiry part of the Raft core."""

from __future__ import annotations

import pytest

from dafka.errors import WireError
from dafka.raft.codec import Entry, EntryType
from dafka.raft.core import ProposeStatus
from dafka.raft.core._requests import PRUNE_AT_LEAST, RequestIds

NOW = 1_700_000_000.0


def reqid(n: int, at: float = NOW) -> bytes:
    return int(at).to_bytes(4, "big") + n.to_bytes(8, "big")


def entry(index: int, rid: bytes, term: int = 1) -> Entry:
    return Entry(index, term, EntryType.STATE, rid, b"x")


def test_a_new_id_passes_a_known_one_is_a_duplicate_of_its_entry():
    ids = RequestIds(ttl=100.0)
    assert ids.check(reqid(1), NOW, commit=0) is None
    ids.note([entry(7, reqid(1), term=3)])
    again = ids.check(reqid(1), NOW + 50, commit=0)
    assert again is not None and again.duplicate
    assert (again.status, again.index, again.term) == (ProposeStatus.ACCEPTED, 7, 3)
    assert reqid(1) in ids and len(ids) == 1


def test_an_id_older_than_the_ttl_is_expired_and_a_bad_length_raises():
    ids = RequestIds(ttl=100.0)
    result = ids.check(reqid(1, at=NOW - 100), NOW, commit=0)
    assert result is not None and result.status is ProposeStatus.EXPIRED
    with pytest.raises(WireError):
        ids.check(b"short", NOW, commit=0)


def test_admit_many_numbers_new_entries_and_answers_each_item():
    ids = RequestIds(ttl=100.0)
    ids.note([entry(3, reqid(9))])
    items = [
        (b"a", reqid(1)),
        (b"b", b"bad"),
        (b"c", reqid(9)),  # in the log already
        (b"d", reqid(1)),  # a resend within the batch
        (b"e", reqid(2, at=NOW - 500)),  # expired
        (b"f", reqid(3)),
    ]
    results, added = ids.admit_many(items, NOW, last_index=3, term=2, commit=0)
    assert [e.index for e in added] == [4, 5] and [e.data for e in added] == [b"a", b"f"]
    assert all(e.term == 2 and e.type is EntryType.STATE for e in added)
    statuses = [r.status for r in results]
    assert statuses == [
        ProposeStatus.ACCEPTED,
        ProposeStatus.ARGUMENT_ERROR,
        ProposeStatus.ACCEPTED,
        ProposeStatus.ACCEPTED,
        ProposeStatus.EXPIRED,
        ProposeStatus.ACCEPTED,
    ]
    assert results[2].duplicate and results[2].index == 3
    assert results[3].duplicate and results[3].index == 4
    assert ids.clock == NOW


def test_forget_and_keep_through_drop_the_ids_of_removed_entries():
    ids = RequestIds(ttl=100.0)
    ids.note([entry(k, reqid(k)) for k in range(1, 6)])
    ids.forget([entry(5, reqid(5)), entry(4, reqid(2))])  # reqid(2) is at 2, not 4: kept
    assert reqid(5) not in ids and reqid(2) in ids
    ids.keep_through(2)
    assert sorted(ids.ids) == [reqid(1), reqid(2)]


def test_prune_forgets_committed_expired_ids_only_and_waits_for_the_next_expiry():
    ids = RequestIds(ttl=100.0)
    old = [entry(k, reqid(k, at=NOW)) for k in range(1, PRUNE_AT_LEAST + 1)]
    ids.note(old)
    ids.note([entry(PRUNE_AT_LEAST + 1, reqid(0, at=NOW + 150))])  # the clock moves on
    ids.prune_if_due(commit=10)
    assert len(ids) == PRUNE_AT_LEAST + 1 - 10  # only the 10 committed ones went
    ids.prune_if_due(commit=PRUNE_AT_LEAST)  # not due: fewer than twice what was kept
    assert len(ids) == PRUNE_AT_LEAST + 1 - 10
    ids.prune(commit=PRUNE_AT_LEAST + 1)
    assert sorted(ids.ids) == [reqid(0, at=NOW + 150)]  # its stamp is not past the TTL
