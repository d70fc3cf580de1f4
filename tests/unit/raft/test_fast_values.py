"""The hot paths' constructors (``new_entry``, ``accepted_result``) build the same frozen
values as the dataclasses' own ``__init__``: equal, same hash and repr, still frozen."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.raft.codec import Entry, EntryType, new_entry
from dafka.raft.core import ProposeResult, ProposeStatus
from dafka.raft.core._ready import accepted_result

reqids = st.binary(min_size=12, max_size=12)


@given(
    st.integers(min_value=1, max_value=2**53),
    st.integers(min_value=0, max_value=2**53),
    st.sampled_from(EntryType),
    reqids,
    st.binary(max_size=64),
)
def test_new_entry_is_the_entry_init_builds(
    index: int, term: int, kind: EntryType, reqid: bytes, data: bytes
) -> None:
    fast, slow = new_entry(index, term, kind, reqid, data), Entry(index, term, kind, reqid, data)
    assert type(fast) is Entry
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert dataclasses.astuple(fast) == (index, term, kind, reqid, data)
    assert dataclasses.replace(fast, term=term + 1) == Entry(index, term + 1, kind, reqid, data)


def test_a_fast_entry_stays_frozen() -> None:
    entry = new_entry(1, 1, EntryType.STATE, bytes(12), b"x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.index = 2  # type: ignore[misc]


@given(st.integers(min_value=1, max_value=2**53), st.integers(min_value=0, max_value=2**53))
def test_accepted_result_is_the_result_init_builds(index: int, term: int) -> None:
    fast = accepted_result(index, term)
    slow = ProposeResult(ProposeStatus.ACCEPTED, index, term)
    assert type(fast) is ProposeResult and fast.accepted
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.index = 0  # type: ignore[misc]
