"""KafkaGroups (the GroupApi) with kio request objects at several versions and a fake
backend; every response is written with kio's own encoder, so its types are right."""

from __future__ import annotations

import datetime
import io
import threading
import time
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.serial import entity_writer
from kio.static.primitive import i32Timedelta

from dafka.kafka.coordinator import Limits
from dafka.kafka.group_api import KafkaGroups, _item
from dafka.kafka.model import Broker, Code, Deferred

JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14
COMMIT, FETCH, FIND, DESCRIBE, LIST = 8, 9, 10, 15, 16


class FakeBackend:
    def __init__(self) -> None:
        self.commits: dict[str, dict] = {}
        self.calls = 0
        self.gate = threading.Event()
        self.gate.set()

    def group_coordinator(self, group: str) -> Broker | None:
        return Broker(7, "127.0.0.1", 9092)

    def commit_offsets(self, group, offsets) -> None:
        self.calls += 1
        self.gate.wait(10)
        self.commits.setdefault(group, {}).update(offsets)

    def committed_offsets(self, group, partitions):
        got = self.commits.get(group, {})
        if partitions is None:
            return dict(got)
        return {k: got[k] for k in partitions if k in got}


def ms(n: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=n))


def mk(cls: Any, **kw: Any) -> Any:
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in kw.items() if k in names})


def req(api: int, version: int, **kw: Any) -> Any:
    return mk(load_request_schema(api, version), **kw)


def nested(api: int, version: int, *path: str) -> Any:
    cls = load_request_schema(api, version)
    for name in path:
        cls = _item(cls, name)
    return cls


def encodes(response: Any) -> Any:
    entity_writer(type(response))(io.BytesIO(), response)
    return response


@pytest.fixture
def api():
    a = KafkaGroups(FakeBackend(), Limits(min_session=0.1))
    woken = []
    a.set_waker(lambda: woken.append(1))
    a.woken = woken
    yield a
    a.backend.gate.set()
    a.close()


def call(a, token, api_key, version, request, now=0.0):
    got = a.handle(token, api_key, version, request, None, now)
    return got if isinstance(got, Deferred) else encodes(got)


def wait(a, token, now=0.0):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for t, resp in a.poll(now):
            if t == token:
                return encodes(resp)
        time.sleep(0.005)
    raise AssertionError(f"no answer for {token}")


def join_req(version, member="", group="g"):
    proto = nested(JOIN, version, "protocols")
    return req(
        JOIN,
        version,
        group_id=group,
        session_timeout=ms(10_000),
        rebalance_timeout=ms(20_000),
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(proto(name="range", metadata=b"m"),),
        reason=None,
    )


def sync_req(version, member, generation, assignments=(), group="g"):
    item = nested(SYNC, version, "assignments")
    return req(
        SYNC,
        version,
        group_id=group,
        generation_id=generation,
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=tuple(item(member_id=m, assignment=b) for m, b in assignments),
    )


@pytest.mark.parametrize("version", [0, 1, 3, 4, 5, 7, 9])
def test_join_sync_heartbeat_leave_at_every_version(api, version) -> None:
    r = call(api, 1, JOIN, version, join_req(version))
    if version >= 4:
        assert r.error_code == Code.MEMBER_ID_REQUIRED
        r = call(api, 2, JOIN, version, join_req(version, r.member_id))
    assert r.error_code == Code.NONE and r.generation_id == 1 and r.leader == r.member_id
    assert [m.metadata for m in r.members] == [b"m"]
    me = r.member_id
    sv = min(version, 5)
    s = call(api, 3, SYNC, sv, sync_req(sv, me, 1, [(me, b"assigned")]))
    assert s.error_code == Code.NONE and s.assignment == b"assigned"
    hv = min(version, 4)
    h = req(HEARTBEAT, hv, group_id="g", generation_id=1, member_id=me, group_instance_id=None)
    assert call(api, 4, HEARTBEAT, hv, h).error_code == Code.NONE
    lv = min(version, 5)
    if lv >= 3:
        item = nested(LEAVE, lv, "members")
        leave = req(LEAVE, lv, group_id="g", members=(item(member_id=me, group_instance_id=None),))
        got = call(api, 5, LEAVE, lv, leave)
        assert [m.error_code for m in got.members] == [Code.NONE]
    else:
        got = call(api, 5, LEAVE, lv, req(LEAVE, lv, group_id="g", member_id=me))
        assert got.error_code == Code.NONE


def test_second_member_join_is_deferred_and_answered_through_poll(api) -> None:
    a = call(api, 1, JOIN, 5, join_req(5, call(api, 0, JOIN, 5, join_req(5)).member_id))
    call(api, 2, SYNC, 5, sync_req(5, a.member_id, 1, [(a.member_id, b"x")]))
    b_id = call(api, 3, JOIN, 5, join_req(5)).member_id
    assert call(api, 4, JOIN, 5, join_req(5, b_id)) == Deferred(4)
    woken = len(api.woken)
    a2 = call(api, 5, JOIN, 5, join_req(5, a.member_id))  # completes the round
    assert a2.generation_id == 2 and len(a2.members) == 2
    assert len(api.woken) > woken  # the server is told to poll
    b = wait(api, 4)
    assert b.generation_id == 2 and b.members == () and b.member_id == b_id
    assert call(api, 6, SYNC, 5, sync_req(5, b_id, 2)) == Deferred(6)
    call(api, 7, SYNC, 5, sync_req(5, a.member_id, 2, [(a.member_id, b"A"), (b_id, b"B")]))
    assert wait(api, 6).assignment == b"B"
    d = call(
        api, 8, DESCRIBE, 5, req(DESCRIBE, 5, groups=("g",), include_authorized_operations=False)
    )
    assert d.groups[0].group_state == "Stable" and len(d.groups[0].members) == 2
    lst = call(api, 9, LIST, 4, req(LIST, 4, states_filter=()))
    assert [(g.group_id, g.group_state) for g in lst.groups] == [("g", "Stable")]


@pytest.mark.parametrize("version", [0, 1, 3, 4])
def test_find_coordinator(api, version) -> None:
    r = req(FIND, version, key="g", key_type=0, coordinator_keys=("g", "h"))
    assert call(api, 1, FIND, version, r) == Deferred(1)
    got = wait(api, 1)
    if version >= 4:
        assert [(c.key, c.node_id, c.port) for c in got.coordinators] == [
            ("g", 7, 9092),
            ("h", 7, 9092),
        ]
    else:
        assert (got.error_code, got.node_id, got.host) == (Code.NONE, 7, "127.0.0.1")


def commit_req(version, group, generation, member, parts, meta=None):
    topic = nested(COMMIT, version, "topics")
    part = nested(COMMIT, version, "topics", "partitions")
    by: dict[str, list] = {}
    for (t, p), off in parts:
        by.setdefault(t, []).append(
            part(partition_index=p, committed_offset=off, committed_metadata=meta)
        )
    return req(
        COMMIT,
        version,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        topics=tuple(topic(name=t, partitions=tuple(ps)) for t, ps in by.items()),
    )


def fetch_req(version, group, parts):
    if version >= 8:
        g = nested(FETCH, version, "groups")
        t = nested(FETCH, version, "groups", "topics")
        topics = None if parts is None else (t(name="t", partition_indexes=tuple(parts)),)
        return req(
            FETCH,
            version,
            groups=(mk(g, group_id=group, member_id=None, member_epoch=-1, topics=topics),),
            require_stable=False,
        )
    t = nested(FETCH, version, "topics")
    topics = None if parts is None else (t(name="t", partition_indexes=tuple(parts)),)
    return req(FETCH, version, group_id=group, topics=topics, require_stable=False)


@pytest.mark.parametrize("cv,fv", [(2, 1), (5, 5), (8, 7), (9, 8), (9, 9)])
def test_standalone_commit_then_fetch(api, cv, fv) -> None:
    r = commit_req(cv, "solo", -1, "", [(("t", 0), 5), (("t", 1), 9)], meta="m1")
    assert call(api, 1, COMMIT, cv, r) == Deferred(1)
    got = wait(api, 1)
    assert [(p.partition_index, p.error_code) for p in got.topics[0].partitions] == [
        (0, Code.NONE),
        (1, Code.NONE),
    ]
    assert api.backend.commits["solo"] == {("t", 0): (5, "m1"), ("t", 1): (9, "m1")}
    assert call(api, 2, FETCH, fv, fetch_req(fv, "solo", [0, 1, 2])) == Deferred(2)
    got = wait(api, 2)
    topics = got.groups[0].topics if fv >= 8 else got.topics
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in topics[0].partitions] == [
        (0, 5, "m1"),
        (1, 9, "m1"),
        (2, -1, ""),
    ]
    if fv >= 2:  # null topics: every committed partition
        call(api, 3, FETCH, fv, fetch_req(fv, "solo", None))
        got = wait(api, 3)
        topics = got.groups[0].topics if fv >= 8 else got.topics
        assert len(topics[0].partitions) == 2


def test_member_commit_checks_generation(api) -> None:
    me = call(api, 1, JOIN, 3, join_req(3)).member_id
    call(api, 2, SYNC, 3, sync_req(3, me, 1, [(me, b"")]))
    assert call(api, 3, COMMIT, 8, commit_req(8, "g", 1, me, [(("t", 0), 1)])) == Deferred(3)
    assert wait(api, 3).topics[0].partitions[0].error_code == Code.NONE


# ------------------------------------------------------------------ attacks


def test_attack_commit_with_a_stale_generation_is_refused(api) -> None:
    me = call(api, 1, JOIN, 3, join_req(3)).member_id
    call(api, 2, SYNC, 3, sync_req(3, me, 1, [(me, b"")]))
    got = call(api, 3, COMMIT, 8, commit_req(8, "g", 0, me, [(("t", 0), 1)]))
    assert got.topics[0].partitions[0].error_code == Code.ILLEGAL_GENERATION
    got = call(api, 4, COMMIT, 8, commit_req(8, "g", 1, "f" * 32, [(("t", 0), 1)]))
    assert got.topics[0].partitions[0].error_code == Code.UNKNOWN_MEMBER_ID
    assert api.backend.calls == 0


def test_attack_commit_of_a_million_partitions_is_refused_cheaply(api) -> None:
    part = nested(COMMIT, 8, "topics", "partitions")(
        partition_index=0, committed_offset=1, committed_metadata=None
    )
    topic = nested(COMMIT, 8, "topics")(name="t", partitions=(part,) * 1_000_000)
    r = req(
        COMMIT,
        8,
        group_id="solo",
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(topic,),
    )
    t0 = time.monotonic()
    got = call(api, 1, COMMIT, 8, r)
    assert time.monotonic() - t0 < 0.5
    assert not isinstance(got, Deferred) and got.topics == ()
    assert api.backend.calls == 0


def test_attack_commit_metadata_over_the_cap(api) -> None:
    got = call(api, 1, COMMIT, 8, commit_req(8, "solo", -1, "", [(("t", 0), 1)], meta="x" * 5000))
    assert got.topics[0].partitions[0].error_code == Code.OFFSET_METADATA_TOO_LARGE
    assert api.backend.calls == 0


def test_attack_commits_past_the_worker_queue_are_refused_not_queued(api) -> None:
    api.backend.gate.clear()  # the backend hangs: the queue fills
    answers = [
        call(api, i, COMMIT, 8, commit_req(8, "solo", -1, "", [(("t", 0), i)])) for i in range(400)
    ]
    busy = [a for a in answers if not isinstance(a, Deferred)]
    assert busy and all(
        a.topics[0].partitions[0].error_code == Code.COORDINATOR_LOAD_IN_PROGRESS for a in busy
    )
    api.backend.gate.set()


def test_attack_offset_fetch_of_a_million_partitions_is_refused(api) -> None:
    t = nested(FETCH, 7, "topics")(name="t", partition_indexes=(0,) * 1_000_000)
    r = req(FETCH, 7, group_id="solo", topics=(t,), require_stable=False)
    assert call(api, 1, FETCH, 7, r) == Deferred(1)
    t0 = time.monotonic()
    got = wait(api, 1)
    assert got.error_code == Code.INVALID_REQUEST and got.topics == ()
    assert time.monotonic() - t0 < 0.5


def test_a_lost_group_answers_not_coordinator_and_its_waiting_joins_too(api) -> None:
    a = call(api, 1, JOIN, 3, join_req(3))
    call(api, 2, SYNC, 3, sync_req(3, a.member_id, 1, [(a.member_id, b"")]))
    assert call(api, 3, JOIN, 3, join_req(3)) == Deferred(3)  # waits for a to rejoin
    api.lost("g")
    assert wait(api, 3).error_code == Code.NOT_COORDINATOR
    h = req(HEARTBEAT, 3, group_id="g", generation_id=1, member_id=a.member_id)
    assert call(api, 4, HEARTBEAT, 3, h).error_code == Code.NOT_COORDINATOR
    got = call(api, 5, COMMIT, 8, commit_req(8, "g", 1, a.member_id, [(("t", 0), 1)]))
    assert got.topics[0].partitions[0].error_code == Code.NOT_COORDINATOR
    api.won("g")
    assert call(api, 6, JOIN, 3, join_req(3)).error_code == Code.NONE


def test_find_coordinator_naming_another_listener_sends_members_there() -> None:
    a = KafkaGroups(FakeBackend(), node_id=1)  # the fake backend names broker 7
    try:
        call(a, 1, FIND, 3, req(FIND, 3, key="g", key_type=0))
        assert wait(a, 1).node_id == 7
        assert call(a, 2, JOIN, 3, join_req(3)).error_code == Code.NOT_COORDINATOR
        assert call(a, 3, JOIN, 3, join_req(3, group="h")).error_code == Code.NONE
    finally:
        a.close()


def test_attack_groups_known_elsewhere_are_bounded(api) -> None:
    from dafka.kafka.group_api import MAX_ELSEWHERE

    for i in range(MAX_ELSEWHERE + 50):
        api.lost(f"g{i}")
    assert len(api._elsewhere) == MAX_ELSEWHERE
    api.poll(0.0)
    assert api._drops == []


def test_versions_not_served_raise_unsupported_version(api) -> None:
    from dafka.errors import KafkaRequestError

    r = commit_req(9, "solo", -1, "", [(("t", 0), 1)])
    with pytest.raises(KafkaRequestError) as e:
        api.handle(1, COMMIT, 10, r, None, 0.0)
    assert e.value.code == Code.UNSUPPORTED_VERSION
    with pytest.raises(KafkaRequestError):
        api.handle(2, 0, 9, r, None, 0.0)  # Produce is not a group API


@pytest.mark.parametrize(
    "group", ["x" * 248, "bad\nname", "é" * 124], ids=["long", "newline", "utf8"]
)
def test_a_group_id_that_cannot_name_a_group_topic_is_invalid(api, group) -> None:
    got = call(api, 1, JOIN, 5, join_req(5, group=group))
    assert got.error_code == Code.INVALID_GROUP_ID
    got = call(api, 2, COMMIT, 8, commit_req(8, group, -1, "", [(("t", 0), 1)]))
    assert got.topics[0].partitions[0].error_code == Code.INVALID_GROUP_ID
    call(api, 3, FIND, 3, req(FIND, 3, key=group, key_type=0))
    assert wait(api, 3).error_code == Code.INVALID_GROUP_ID
    call(api, 4, FETCH, 7, fetch_req(7, group, [0]))
    assert wait(api, 4).error_code == Code.INVALID_GROUP_ID
    assert api.backend.calls == 0
    ok = call(api, 5, JOIN, 5, join_req(5, group="x" * 247))
    assert ok.error_code == Code.MEMBER_ID_REQUIRED
