"""The Kafka group coordinator (pure), with fake time."""

from __future__ import annotations

import itertools

from dafka.kafka.coordinator import Coordinator, GroupState, JoinResult, Limits, SyncResult
from dafka.kafka.model import Code

PROTO = [("range", b"meta-range"), ("roundrobin", b"meta-rr")]


def _ids():
    n = itertools.count()
    return lambda: f"{next(n):032x}"


def core(**kw) -> Coordinator:
    return Coordinator(Limits(**kw), new_id=_ids())


def join(c, token, group="g", member="", now=0.0, protocols=PROTO, session=10.0, **kw):
    return c.join(token, group, member, "consumer", protocols, session, 30.0, now, **kw)


def ready(c, now):
    return dict(c.poll(now))


def test_single_member_join_sync_heartbeat():
    c = core()
    a = join(c, 1)
    assert isinstance(a, JoinResult) and a.error == Code.NONE
    assert a.generation == 1 and a.leader == a.member_id and a.protocol_name == "range"
    assert [m.metadata for m in a.members] == [b"meta-range"]
    s = c.sync(2, "g", 1, a.member_id, [(a.member_id, b"assign")], 0.0)
    assert s == SyncResult(Code.NONE, "consumer", "range", b"assign")
    assert c.heartbeat("g", 1, a.member_id, 1.0) == Code.NONE


def test_member_id_required_for_v4_first_join():
    c = core()
    a = join(c, 1, require_known_id=True)
    assert a.error == Code.MEMBER_ID_REQUIRED and len(a.member_id) == 32
    b = join(c, 2, member=a.member_id, require_known_id=True)
    assert b.error == Code.NONE and b.member_id == a.member_id


def test_member_ids_are_random_128_bit_hex():
    c = Coordinator()
    ids = {join(c, i, require_known_id=True).member_id for i in range(50)}
    assert len(ids) == 50 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def two_members(c):
    a = join(c, 1)
    c.sync(2, "g", 1, a.member_id, [], 0.0)
    assert join(c, 3, now=1.0) is None  # b waits for a to rejoin
    assert c.heartbeat("g", 1, a.member_id, 1.0) == Code.REBALANCE_IN_PROGRESS
    a2 = join(c, 4, member=a.member_id, now=1.5)
    b = ready(c, 1.5)[3]
    assert a2.generation == b.generation == 2
    assert a2.leader == a.member_id and len(a2.members) == 2 and b.members == ()
    # the follower waits for the leader's assignment
    assert c.sync(5, "g", 2, b.member_id, [], 2.0) is None
    s = c.sync(6, "g", 2, a.member_id, [(a.member_id, b"A"), (b.member_id, b"B")], 2.0)
    assert s.assignment == b"A"
    assert ready(c, 2.0)[5].assignment == b"B"
    return a.member_id, b.member_id


def test_second_member_rebalances_and_gets_the_leaders_assignment():
    c = core()
    two_members(c)


def test_dead_member_is_removed_after_session_timeout_and_group_rebalances():
    c = core()
    a, b = two_members(c)
    for t in (4.0, 8.0, 11.0):
        assert c.heartbeat("g", 2, a, t) == Code.NONE
        c.poll(t)
    c.poll(12.5)  # b silent since 2.0, session 10 s
    assert c.heartbeat("g", 2, b, 12.6) == Code.UNKNOWN_MEMBER_ID
    assert c.heartbeat("g", 2, a, 12.6) == Code.REBALANCE_IN_PROGRESS
    a3 = join(c, 7, member=a, now=13.0)
    assert a3.generation == 3 and [m.member_id for m in a3.members] == [a]


def test_member_not_rejoining_within_rebalance_timeout_is_dropped():
    c = core()
    a, b = two_members(c)
    join(c, 9, member=a, now=3.0)  # a rejoins: round starts, b must rejoin within 30 s
    for t in (5.0, 9.0, 13.0, 20.0, 28.0):
        c.heartbeat("g", 2, b, t)  # heartbeats do not count as a rejoin
        assert 9 not in ready(c, t)
    got = ready(c, 33.1)
    assert got[9].generation == 3 and len(got[9].members) == 1
    assert c.heartbeat("g", 3, b, 33.2) == Code.UNKNOWN_MEMBER_ID


def test_leave_batch_and_group_forgotten_when_empty():
    c = core()
    a, b = two_members(c)
    assert c.leave("g", [b, "f" * 32], 3.0) == [Code.NONE, Code.UNKNOWN_MEMBER_ID]
    assert c.heartbeat("g", 2, a, 3.1) == Code.REBALANCE_IN_PROGRESS
    assert c.leave("g", [a], 3.2) == [Code.NONE]
    assert c.groups() == []


def test_generation_checks():
    c = core()
    a, b = two_members(c)
    assert c.heartbeat("g", 1, a, 3.0) == Code.ILLEGAL_GENERATION
    assert c.sync(10, "g", 1, a, [], 3.0).error == Code.ILLEGAL_GENERATION
    assert c.check_commit("g", 1, a, 3.0) == Code.ILLEGAL_GENERATION
    assert c.check_commit("g", 2, a, 3.0) == Code.NONE
    assert c.check_commit("g", -1, "", 3.0) == Code.UNKNOWN_MEMBER_ID  # the group is active
    assert c.check_commit("other", -1, "", 3.0) == Code.NONE  # a standalone commit


def test_two_groups_are_independent():
    c = core()
    a = join(c, 1, group="g1")
    b = join(c, 2, group="g2")
    assert a.generation == b.generation == 1
    assert c.heartbeat("g2", 1, a.member_id, 0.5) == Code.UNKNOWN_MEMBER_ID
    c.sync(3, "g1", 1, a.member_id, [], 0.5)
    c.poll(10.5)  # b never synced nor heartbeated; a neither: both expire alone
    assert c.groups() == []


def test_protocol_must_be_shared():
    c = core()
    a = join(c, 1, protocols=[("range", b"")])
    assert join(c, 2, protocols=[("sticky", b"")]).error == Code.INCONSISTENT_GROUP_PROTOCOL
    assert a.error == Code.NONE
    b = join(c, 3, protocols=[("sticky", b""), ("range", b"x")])
    assert b is None
    a2 = join(c, 4, member=a.member_id, protocols=[("range", b"")])
    assert a2.protocol_name == "range"


def test_static_membership_is_served_as_dynamic():
    c = core()
    a = join(c, 1, instance_id="pod-1")
    assert a.error == Code.NONE and a.members[0].instance_id == "pod-1"


def test_session_timeout_bounds():
    c = core()
    assert join(c, 1, session=0.1).error == Code.INVALID_SESSION_TIMEOUT
    assert join(c, 1, session=1e9).error == Code.INVALID_SESSION_TIMEOUT


# ------------------------------------------------------------------ attacks


def test_attack_member_metadata_over_the_cap_is_refused():
    c = core(max_metadata_bytes=1000)
    assert join(c, 1, protocols=[("range", b"x" * 2000)]).error == Code.INVALID_REQUEST
    assert c.groups() == []
    assert join(c, 2, protocols=[("range", b"x" * 900)]).error == Code.NONE


def test_attack_too_many_members_is_refused():
    c = core(max_members=5)
    codes = [join(c, i, require_known_id=True).error for i in range(8)]
    assert codes == [Code.MEMBER_ID_REQUIRED] * 5 + [Code.GROUP_MAX_SIZE_REACHED] * 3


def test_attack_too_many_members_over_all_groups_is_refused():
    c = core(max_members_total=4)
    codes = [join(c, i, group=f"g{i}", require_known_id=True).error for i in range(6)]
    assert codes.count(Code.GROUP_MAX_SIZE_REACHED) == 2


def test_attack_heartbeat_with_a_guessed_or_other_groups_member_id():
    c = core()
    a, b = two_members(c)
    assert c.heartbeat("g", 2, "e" * 32, 3.0) == Code.UNKNOWN_MEMBER_ID
    assert c.heartbeat("g", 2, "", 3.0) == Code.UNKNOWN_MEMBER_ID
    join(c, 20, group="h")
    assert c.heartbeat("h", 1, a, 3.0) == Code.UNKNOWN_MEMBER_ID


def test_attack_join_with_a_made_up_member_id_is_refused():
    c = core()
    assert join(c, 1, member="f" * 32).error == Code.UNKNOWN_MEMBER_ID
    assert c.groups() == []


def test_attack_commit_with_a_stale_generation_is_refused():
    c = core()
    a, b = two_members(c)
    assert c.check_commit("g", 1, b, 3.0) == Code.ILLEGAL_GENERATION


def test_attack_group_id_too_long():
    c = core(max_group_id=10)
    assert join(c, 1, group="x" * 11).error == Code.INVALID_GROUP_ID
    assert join(c, 1, group="").error == Code.INVALID_GROUP_ID


def test_attack_assignment_over_the_cap():
    c = core(max_assignment_bytes=100)
    a = join(c, 1)
    s = c.sync(2, "g", 1, a.member_id, [(a.member_id, b"x" * 101)], 0.0)
    assert s.error == Code.INVALID_REQUEST


def test_attack_too_many_groups():
    c = core(max_groups=3)
    codes = [join(c, i, group=f"g{i}").error for i in range(5)]
    assert codes == [Code.NONE] * 3 + [Code.COORDINATOR_NOT_AVAILABLE] * 2
    assert len(c.groups()) == 3 and all(
        s == GroupState.AWAITING_SYNC.value for _, _, s in c.groups()
    )


def test_a_follower_waiting_for_a_dead_leaders_sync_is_told_to_rejoin():
    c = core()
    a = join(c, 1)
    c.sync(2, "g", 1, a.member_id, [], 0.0)
    join(c, 3, now=1.0)
    join(c, 4, member=a.member_id, now=1.0)
    b = ready(c, 1.0)[3].member_id
    assert c.sync(5, "g", 2, b, [], 1.0) is None  # the leader a never syncs, and dies
    got = ready(c, 11.5)  # a's session ends; b, waiting, is not expired
    assert got[5].error == Code.REBALANCE_IN_PROGRESS
    assert c.heartbeat("g", 2, b, 11.6) == Code.REBALANCE_IN_PROGRESS
    assert join(c, 6, member=b, now=12.0).leader == b
