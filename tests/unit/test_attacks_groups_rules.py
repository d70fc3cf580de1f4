"""Attacks on a consumer group through its topic, against the pure rules every group reader
applies (``dafka/groups/view.py``, ``plan.py``, ``admission.py``) and the store's write ACL
for group topics: no sockets, fake time.

Issue 32, point 5: a plain producer wrote a commit for a partition at epoch 2^64-1 (every
later member started there, and no honest epoch could beat it); a fake member heartbeating
that it held a partition stalled a new member for as long as it kept heartbeating."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dafka.groups.admission import OPEN, Admission
from dafka.groups.assign import assign
from dafka.groups.plan import plan
from dafka.groups.records import PREFIX, Commit, Heartbeat, Leave
from dafka.groups.view import MAX_COMMITTERS, MAX_EPOCH_STEP, GroupView
from dafka.ids import is_group_topic
from dafka.spark.options import ReadOptions
from tests.signing import CONSUMER, F
from tests.unit.test_signed_cores import store

A = "A" * 32
B = "B" * 32
ROGUE = "F" * 32
P1 = ("t", "1" * 32)
P2 = ("t", "2" * 32)
ALL = {P1, P2}
TOP = (1 << 64) - 1


def hb(held=(), topics=("t",), parts=ALL) -> Heartbeat:
    return Heartbeat(tuple(topics), frozenset(held), frozenset(parts), "")


def commit(key, offset: int, epoch: int) -> Commit:
    return Commit(((key[0], key[1], offset, epoch),))


def offsets(v: GroupView) -> dict:
    return {k: (c.offset, c.epoch, c.member) for k, c in v.committed().items()}


# ------------------------------------------------------------------ commits


def test_a_commit_from_a_writer_that_never_heartbeated_is_ignored() -> None:
    """The issue's forged commit: a plain producer, a fresh key, offset 250, epoch 2^64-1."""
    v = GroupView(10.0)
    v.apply(A, hb(held={P1}), 0.0)
    v.apply(A, commit(P1, 100, 1), 0.0)
    v.apply(ROGUE, commit(P1, 250, TOP), 0.0)
    assert offsets(v) == {P1: (100, 1, A)} and v.refused == 1
    assert v.epoch(P1) == 1  # a successor takes P1 at epoch 2, and wins


def test_a_commit_for_a_partition_the_writer_does_not_hold_is_ignored() -> None:
    v = GroupView(10.0)
    v.apply(A, hb(held={P1}), 0.0)
    v.apply(B, hb(held={P2}), 0.0)
    v.apply(A, commit(P1, 100, 1), 0.0)
    v.apply(B, commit(P1, 7, 2), 0.0)  # B is a member, but P1 is A's
    assert offsets(v) == {P1: (100, 1, A)}
    v.apply(A, hb(held=()), 1.0)  # A let go of P1: its later commits of P1 do not count
    v.apply(A, commit(P1, 5, 1), 1.0)
    assert offsets(v) == {P1: (100, 1, A)}


def test_a_holder_cannot_put_an_epoch_out_of_reach() -> None:
    """A member that holds P1 commits with epoch 2^64-1: beyond the step, ignored; so the
    honest successor's epoch (the highest plus one) always wins."""
    v = GroupView(10.0)
    v.apply(A, hb(held={P1}), 0.0)
    v.apply(A, commit(P1, 100, 1), 0.0)
    v.apply(A, commit(P1, 250, TOP), 0.0)
    v.apply(A, commit(P1, 250, 1 + MAX_EPOCH_STEP + 1), 0.0)
    assert offsets(v) == {P1: (100, 1, A)}
    v.apply(A, commit(P1, 120, 1 + MAX_EPOCH_STEP), 0.0)  # at the bound: taken
    assert v.epoch(P1) == 1 + MAX_EPOCH_STEP
    v.apply(B, hb(held={P1}), 1.0)
    v.apply(B, commit(P1, 130, v.epoch(P1) + 1), 1.0)
    assert offsets(v)[P1] == (130, 2 + MAX_EPOCH_STEP, B)


def test_the_member_applies_its_own_commit_before_its_heartbeat_comes_back() -> None:
    v = GroupView(10.0)
    v.apply(A, commit(P1, 3, 1), 0.0, own=True)
    assert offsets(v) == {P1: (3, 1, A)}
    v.apply(B, commit(P2, 3, TOP), 0.0, own=True)  # own still has the epoch bound
    assert P2 not in v.committed()


def test_commits_kept_per_partition_are_bounded_and_the_winner_survives() -> None:
    v = GroupView(10.0)
    writers = [f"{i:032X}" for i in range(MAX_COMMITTERS * 4)]
    for i, w in enumerate(writers):
        v.apply(w, hb(held={P1}), 0.0)
        v.apply(w, commit(P1, i, 1 + i % 3), 0.0)
    assert len(v._commits[P1]) == MAX_COMMITTERS
    best = max((1 + i % 3, w) for i, w in enumerate(writers))
    assert (v.committed()[P1].epoch, v.committed()[P1].member) == best


# ------------------------------------------------------------------ admission


def test_a_writer_the_group_does_not_admit_is_no_member_and_commits_nothing() -> None:
    v = GroupView(10.0, Admission(members=frozenset({A})))
    v.apply(ROGUE, hb(held=ALL), 0.0)
    v.apply(ROGUE, commit(P1, 250, 1), 0.0)
    v.apply(A, hb(held={P1}), 0.0)
    v.apply(A, commit(P1, 5, 1), 0.0)
    assert list(v.alive(1.0)) == [A] and offsets(v) == {P1: (5, 1, A)}


def test_by_default_a_member_must_be_allowed_to_read_its_topics() -> None:
    admission = Admission(readers={"t": frozenset({A})})
    assert admission.admits(A, ("t", "open")) and not admission.admits(ROGUE, ("t",))
    assert admission.admits(ROGUE, ("open",))
    v = GroupView(10.0, admission)
    v.apply(ROGUE, hb(held=ALL), 0.0)
    assert v.alive(1.0) == {}


def test_admission_follows_the_metadata_for_what_is_already_held() -> None:
    """The ACL set after a rogue got in: its membership and commits stop counting."""
    v = GroupView(10.0)
    v.apply(A, hb(held={P1}), 0.0)
    v.apply(A, commit(P1, 5, 1), 0.0)
    v.apply(ROGUE, hb(held={P1}), 0.0)
    v.apply(ROGUE, commit(P1, 250, 2), 0.0)
    assert offsets(v)[P1][2] == ROGUE
    v.set_admission(Admission(members=frozenset({A})))
    assert list(v.alive(1.0)) == [A] and offsets(v) == {P1: (5, 1, A)}


def test_admission_from_the_metadata() -> None:
    g = PREFIX + "g"
    assert Admission.from_config(None, g) is OPEN
    topics = {
        g: {"producers": [A], "consumers": [B]},
        "t": {"consumers": [A]},
        "open": {"consumers": None},
    }
    assert Admission.from_config({"topics": topics}, g) == Admission(members=frozenset({A}))
    topics[g] = {"producers": None, "consumers": [B]}
    assert Admission.from_config({"topics": topics}, g) == Admission(members=frozenset({B}))
    del topics[g]
    assert Admission.from_config({"topics": topics}, g) == Admission(readers={"t": frozenset({A})})


def test_a_heartbeat_claims_only_partitions_of_the_topics_it_names() -> None:
    v = GroupView(10.0)
    v.apply(ROGUE, Heartbeat(("u",), frozenset({P1}), frozenset(), ""), 0.0)
    assert v.alive(0.0)[ROGUE].held == frozenset()
    v.apply(ROGUE, commit(P1, 250, 1), 0.0)
    assert v.committed() == {}


def test_a_claim_lapses_without_heartbeats_and_at_a_leave() -> None:
    v = GroupView(10.0)
    v.apply(ROGUE, hb(held={P1}), 0.0)
    assert v.alive(9.0)[ROGUE].held == {P1}
    assert v.alive(10.0) == {}
    v.apply(ROGUE, hb(held={P1}), 11.0)
    v.apply(ROGUE, Leave(), 11.5)
    assert v.alive(11.5) == {}


# ------------------------------------------------------------------ claims (plan)


def test_a_member_that_does_not_let_go_stalls_a_partition_for_the_grace_only() -> None:
    """The issue's fake member: it keeps heartbeating that it holds what the rule gives the
    new member. The new member waits ``grace`` (the session timeout), then takes it."""
    target_b = assign({ROGUE: ["t"], B: ["t"]}, ALL)[B]
    alive = {
        ROGUE: _state(ROGUE, held=ALL),
        B: _state(B),
    }
    p = plan(B, ["t"], frozenset(), alive, ALL, now=1.0, fence=6.0, grace=10.0)
    assert not p.take and set(p.contests) == {(ROGUE, k) for k in target_b}
    alive[B] = _state(B, seen_at=10.0)  # B's own heartbeats keep coming back (no fence)
    p = plan(B, ["t"], frozenset(), alive, ALL, 10.9, 6.0, p.contests, grace=10.0)
    assert not p.take
    p = plan(B, ["t"], frozenset(), alive, ALL, 11.0, 6.0, p.contests, grace=10.0)
    assert p.take == target_b


def test_a_claim_the_rule_gives_its_member_is_not_contested() -> None:
    target_a = assign({A: ["t"], B: ["t"]}, ALL)[A]
    alive = {A: _state(A, held=target_a), B: _state(B)}
    p = plan(B, ["t"], frozenset(), alive, ALL, now=1.0, fence=6.0, grace=0.0)
    assert p.contests == {} and not p.take & target_a


@given(st.floats(0.0, 9.99))
def test_an_honest_previous_owner_is_waited_for_within_the_grace(dt) -> None:
    alive = {A: _state(A, held=ALL, seen_at=dt), B: _state(B, seen_at=dt)}
    p = plan(B, ["t"], frozenset(), alive, ALL, now=0.0, fence=6.0, grace=10.0)
    p = plan(B, ["t"], frozenset(), alive, ALL, dt, 6.0, p.contests, grace=10.0)
    assert not p.take


def _state(member: str, held=(), seen_at=0.0):
    from dafka.groups.view import MemberState

    return MemberState(member, ("t",), frozenset(held), frozenset(ALL), "", seen_at)


# ------------------------------------------------------------------ stores and listings


def test_a_store_lets_only_its_readers_write_a_group_topic_with_a_read_acl() -> None:
    core, _ = store()
    g = PREFIX + "g"
    assert is_group_topic(g) and not is_group_topic("t")  # the store's rule and the groups' agree
    core.set_policy({g: {"consumers": [CONSUMER]}, "t": {"consumers": [CONSUMER]}})
    assert core.may_write(g, CONSUMER) and not core.may_write(g, F)
    assert core.may_write("t", F)  # a data topic's write ACL is its producers only
    core.set_policy({g: {"producers": [F], "consumers": [CONSUMER]}})
    assert core.may_write(g, F) and not core.may_write(g, CONSUMER)
    core.set_policy({})
    assert core.may_write(g, F)


def test_a_spark_pattern_does_not_match_group_topics() -> None:
    opts = ReadOptions.parse({"towers": "127.0.0.1:5556", "subscribePattern": ".*"}, batch=True)
    assert opts.wants("orders") and not opts.wants(PREFIX + "billing")
