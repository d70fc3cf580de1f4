"""The group view (membership with fake time, last commit wins) and the record codec."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import ConfigError, WireError
from dafka.groups.records import Commit, Heartbeat, Leave, decode, encode, group_topic
from dafka.groups.view import GroupView

A = "A" * 32
B = "B" * 32
P1 = ("t", "1" * 32)
P2 = ("t", "2" * 32)


def hb(held=(), parts=()) -> Heartbeat:
    return Heartbeat(("t",), frozenset(held), frozenset(parts), "host/1")


def test_members_expire_after_the_session_timeout() -> None:
    v = GroupView(session_timeout=10.0)
    v.apply(A, hb(), now=0.0)
    v.apply(B, hb(), now=5.0)
    assert list(v.alive(9.9)) == [A, B]
    assert list(v.alive(10.0)) == [B]
    v.apply(A, hb(), now=12.0)  # a heartbeat brings it back
    assert list(v.alive(14.0)) == [A, B]
    assert list(v.alive(15.0)) == [A]


def test_a_member_that_leaves_is_gone_at_once() -> None:
    v = GroupView(10.0)
    v.apply(A, hb(held={P1}), 0.0)
    v.apply(A, Leave(), 1.0)
    assert v.alive(1.0) == {}


def test_replay_gives_the_last_commit_of_each_partition() -> None:
    v = GroupView(10.0)
    v.apply(A, hb(held={P1, P2}), 0.0)
    v.apply(A, Commit((("t", P1[1], 5, 1), ("t", P2[1], 7, 1))), 0.0)
    v.apply(A, Commit((("t", P1[1], 9, 1),)), 0.0)
    v.apply(A, Commit((("t", P1[1], 3, 1),)), 0.0)  # a commit may go back (a seek)
    assert {k: c.offset for k, c in v.committed().items()} == {P1: 3, P2: 7}


@given(st.permutations(range(5)))
def test_after_a_handover_the_new_owner_wins_in_any_replay_order(order) -> None:
    # A owned P1 in epoch 1 and committed 10, 20, 30; B took it (epoch 2), committed 31, 40.
    by_a = [Commit((("t", P1[1], o, 1),)) for o in (10, 20, 30)]
    by_b = [Commit((("t", P1[1], o, 2),)) for o in (31, 40)]
    # each member's records stay in its order; the two partitions interleave arbitrarily
    slots = set(order[:3])
    seq: list = [None] * 5
    ia, ib = iter(by_a), iter(by_b)
    for i in range(5):
        seq[i] = ("a", next(ia)) if i in slots else ("b", next(ib))
    v = GroupView(10.0)
    v.apply(A, hb(held={P1}), 0.0)  # each member's heartbeat holding P1 precedes its commits
    v.apply(B, hb(held={P1}), 0.0)
    for who, rec in seq:
        v.apply(A if who == "a" else B, rec, 0.0)
    c = v.committed()[P1]
    assert (c.offset, c.epoch, c.member) == (40, 2, B)


RECORDS = st.one_of(
    st.builds(
        Heartbeat,
        st.lists(st.sampled_from(["t", "u"]), unique=True).map(lambda x: tuple(sorted(x))),
        st.frozensets(st.sampled_from([P1, P2])),
        st.none() | st.frozensets(st.sampled_from([P1, P2])),
        st.text(max_size=20),
    ),
    st.builds(
        Commit,
        st.lists(
            st.tuples(
                st.just("t"),
                st.sampled_from([P1[1], P2[1]]),
                st.integers(0, 2**63),
                st.integers(0, 1000),
            )
        ).map(tuple),
    ),
    st.just(Leave()),
)


@given(RECORDS)
def test_records_round_trip(record) -> None:
    assert decode(encode(record)) == record


@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_wire_error(data) -> None:
    try:
        decode(data)
    except WireError:
        pass


@pytest.mark.parametrize(
    "value",
    [
        b'{"v":1,"t":"commit","offsets":[["t","1111",1,1]]}',  # not a partition ID
        b'{"v":1,"t":"commit","offsets":[["t","' + b"1" * 32 + b'",-1,1]]}',
        b'{"v":1,"t":"commit","offsets":[["","' + b"1" * 32 + b'",1,1]]}',
        b'{"v":1,"t":"hb","topics":[1],"held":[],"parts":[]}',
        b'{"v":2,"t":"leave"}',
        b'{"v":1,"t":"join"}',
    ],
)
def test_bad_records_are_wire_errors(value) -> None:
    with pytest.raises(WireError):
        decode(value)


def test_group_names() -> None:
    assert group_topic("orders-app") == "__group.orders-app"
    with pytest.raises(ConfigError):
        group_topic("")
    with pytest.raises(ConfigError):
        group_topic("x" * 300)


def test_a_heartbeat_without_parts_keeps_the_ones_said_before() -> None:
    v = GroupView(10.0)
    v.apply(A, hb(parts={P1, P2}), 0.0)
    v.apply(A, Heartbeat(("t",), frozenset(), None, ""), 1.0)
    assert v.alive(1.0)[A].parts == {P1, P2}
