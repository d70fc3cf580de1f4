"""The group assignment rule and the member's plan: properties over arbitrary inputs."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from dafka.groups.assign import assign
from dafka.groups.plan import plan
from dafka.groups.view import MemberState

IDS = st.text("0123456789ABCDEF", min_size=32, max_size=32)
TOPICS = st.sampled_from(["a", "b", "c"])
MEMBERS = st.dictionaries(IDS, st.sets(TOPICS, min_size=1), min_size=1, max_size=8)
PARTS = st.sets(st.tuples(TOPICS, IDS), max_size=40)


@given(MEMBERS, PARTS)
def test_every_partition_of_a_subscribed_topic_has_exactly_one_owner(members, parts) -> None:
    out = assign(members, parts)
    assert set(out) == set(members)
    owners: dict = {}
    for member, keys in out.items():
        for key in keys:
            assert key not in owners, f"{key} owned twice"
            assert key[0] in members[member], "owner does not subscribe to the topic"
            owners[key] = member
    subscribed = set().union(*members.values())
    assert set(owners) == {k for k in parts if k[0] in subscribed}


@given(MEMBERS, PARTS, st.randoms())
def test_the_rule_does_not_depend_on_input_order(members, parts, rnd) -> None:
    items = list(members.items())
    rnd.shuffle(items)
    plist = list(parts)
    rnd.shuffle(plist)
    assert assign(dict(items), plist) == assign(members, parts)


@given(st.sets(IDS, min_size=1, max_size=8), PARTS)
def test_counts_per_topic_differ_by_at_most_one_when_all_subscribe_alike(ids, parts) -> None:
    members = {m: {"a", "b", "c"} for m in ids}
    out = assign(members, parts)
    for topic in "abc":
        counts = [sum(1 for k in keys if k[0] == topic) for keys in out.values()]
        assert max(counts) - min(counts) <= 1


def test_partitions_spread_over_members() -> None:
    rnd = random.Random(7)
    ids = [f"{rnd.getrandbits(128):032X}" for _ in range(3)]
    parts = [("t", f"{rnd.getrandbits(128):032X}") for _ in range(6)]
    out = assign(dict.fromkeys(ids, {"t"}), parts)
    assert sorted(len(v) for v in out.values()) == [2, 2, 2]


def state(member: str, held=(), topics=("t",), parts=(), seen_at=0.0) -> MemberState:
    return MemberState(member, tuple(topics), frozenset(held), frozenset(parts), "", seen_at)


A = "A" * 32
B = "B" * 32
P1 = ("t", "1" * 32)
P2 = ("t", "2" * 32)
P3 = ("t", "3" * 32)
P4 = ("t", "4" * 32)
ALL = {P1, P2, P3, P4}


def test_plan_takes_nothing_before_its_own_heartbeat_is_read_back() -> None:
    p = plan(A, ["t"], frozenset(), {}, ALL, now=1.0, fence=6.0)
    assert not p.take and not p.revoke


def test_plan_fences_itself_when_its_heartbeats_stop_coming_back() -> None:
    alive = {A: state(A, held={P1}, seen_at=0.0)}
    p = plan(A, ["t"], frozenset({P1}), alive, ALL, now=7.0, fence=6.0)
    assert p.revoke == {P1} and not p.take


def test_plan_alone_takes_everything() -> None:
    p = plan(A, ["t"], frozenset(), {A: state(A)}, ALL, now=1.0, fence=6.0)
    assert p.take == ALL


def test_plan_waits_for_the_previous_owner_to_let_go() -> None:
    target_a = assign({A: ["t"], B: ["t"]}, ALL)[A]
    alive = {A: state(A, held=ALL), B: state(B)}
    # B joined: A gives up B's share
    pa = plan(A, ["t"], frozenset(ALL), alive, ALL, now=1.0, fence=6.0)
    assert pa.revoke == ALL - target_a and not pa.take
    # B may not take what A still says it holds
    pb = plan(B, ["t"], frozenset(), alive, ALL, now=1.0, fence=6.0)
    assert not pb.take
    # once A's heartbeat no longer lists them, B takes exactly those
    alive[A] = state(A, held=target_a)
    pb = plan(B, ["t"], frozenset(), alive, ALL, now=1.0, fence=6.0)
    assert pb.take == ALL - target_a


def test_plan_learns_partitions_from_the_other_members() -> None:
    alive = {A: state(A, parts={P1, P2})}
    p = plan(A, ["t"], frozenset(), alive, set(), now=1.0, fence=6.0)
    assert p.take == {P1, P2}


@given(
    st.lists(st.sets(st.sampled_from(sorted(ALL))), min_size=2, max_size=2),
    st.sets(st.sampled_from([A, B, "C" * 32]), min_size=1),
)
def test_plan_never_takes_what_another_live_member_holds(helds, ids) -> None:
    others = {m: state(m, held=helds[i % 2]) for i, m in enumerate(sorted(ids)) if m != A}
    alive = {A: state(A), **others}
    p = plan(A, ["t"], frozenset(), alive, ALL, now=1.0, fence=6.0)
    for s in others.values():
        assert not (p.take & s.held)
