"""Rebalance callbacks run in the caller's poll, before the records they come before.

A consumer that never contacts anything (tower at port 1, no metadata) stands in for a
group member: the test plays the member's thread by queueing events
(``_group_event``) and delivering runs (``_shared.deliver``) as the member and the IO
thread do.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from dafka import Consumer
from dafka.consumer._group import MAX_GROUP_EVENTS
from dafka.core.effects import RecordBatch
from dafka.groups.member import ASSIGN, REVOKE

A = ("t", "A" * 32)
B = ("t", "B" * 32)


@pytest.fixture
def member() -> Iterator[tuple[Consumer, list[tuple]]]:
    """A consumer in group mode with both callbacks, and what they saw."""
    c = Consumer("t", towers="127.0.0.1:1", metadata=False)
    seen: list[tuple] = []
    c._shared.held = set()
    c._group_callbacks = {
        ASSIGN: lambda keys: seen.append((ASSIGN, keys, threading.get_ident())),
        REVOKE: lambda keys: seen.append((REVOKE, keys, threading.get_ident())),
    }
    try:
        yield c, seen
    finally:
        c.close()


def assign(c: Consumer, key: tuple[str, str]) -> None:
    """What the member does: the event first, then the partition is read."""
    c._group_event(ASSIGN, frozenset({key}))
    assert c._shared.held is not None
    with c._shared.cond:
        c._shared.held.add(key)


def deliver(c: Consumer, key: tuple[str, str], offset: int) -> None:
    c._shared.deliver([RecordBatch(key[0], key[1], offset, [b"v%d" % offset])])


def test_callbacks_run_on_the_polling_thread_before_the_records(member) -> None:
    c, seen = member
    got: list[tuple] = []
    done = threading.Event()

    def member_thread() -> None:
        assign(c, A)
        deliver(c, A, 0)
        done.set()

    threading.Thread(target=member_thread).start()
    assert done.wait(5)
    assert seen == []  # nothing ran on the member's thread
    for record in c.poll_batch(10, timeout=1):
        got.append(("record", record.offset))
    assert seen == [(ASSIGN, [A], threading.get_ident())]
    assert got == [("record", 0)]


def test_a_callback_queued_after_a_poll_ran_callbacks_still_comes_first(member) -> None:
    """The member assigns B just after the poll ran A's callback (outside the lock) and
    B's record arrives before the poll takes: the poll must run B's on_assign before it
    returns B's record (it looks again, holding the lock, before it takes)."""
    c, seen = member
    run = c._run_group_callbacks
    raced: list[bool] = []

    def run_then_race() -> None:
        run()
        if not raced:  # the member's thread, between the callbacks and the take
            raced.append(True)
            assign(c, B)
            deliver(c, B, 0)

    c._run_group_callbacks = run_then_race  # type: ignore[method-assign]
    assign(c, A)
    records = c.poll_batch(10, timeout=1)
    order = [f"{k} {keys[0][1][0]}" for k, keys, _ in seen]
    order += [f"record {r.partition[0]}" for r in records]
    assert raced and order == ["assign A", "assign B", "record B"]


def test_revoke_then_records_of_the_new_assignment_in_order(member) -> None:
    c, seen = member
    assign(c, A)
    deliver(c, A, 0)
    assert [r.offset for r in c.poll_batch(10, timeout=1)] == [0]
    # a rebalance: A revoked (its records dropped, as _group_revoke does), B assigned
    assert c._shared.held is not None
    with c._shared.cond:
        c._shared.held.discard(A)
        c._shared.drop(*A)
    c._group_event(REVOKE, frozenset({A}))
    assign(c, B)
    deliver(c, A, 1)  # late: filtered, A is no longer read
    deliver(c, B, 0)
    records = c.poll_batch(10, timeout=1)
    assert [k for k, _, _ in seen] == [ASSIGN, REVOKE, ASSIGN]
    assert [(r.partition, r.offset) for r in records] == [(B[1], 0)]


def test_a_poll_with_no_record_still_runs_the_callbacks(member) -> None:
    c, seen = member
    assign(c, A)
    assert c.poll(timeout=0) is None
    assert [k for k, _, _ in seen] == [ASSIGN]
    assert c.wait(0) is False  # nothing left to run or take


def test_a_failing_callback_is_logged_and_the_poll_goes_on(member, caplog) -> None:
    c, seen = member

    def boom(keys: list) -> None:
        raise RuntimeError("application bug")

    c._group_callbacks[ASSIGN] = boom
    assign(c, A)
    deliver(c, A, 0)
    with caplog.at_level(logging.ERROR):
        assert [r.offset for r in c.poll_batch(10, timeout=1)] == [0]
    assert "group.callback_failed" in caplog.text


def test_no_callback_given_queues_nothing() -> None:
    c = Consumer("t", towers="127.0.0.1:1", metadata=False)
    try:
        c._group_callbacks = {ASSIGN: None, REVOKE: None}
        c._group_event(ASSIGN, frozenset({A}))
        assert not c._group_events
    finally:
        c.close()


def test_a_consumer_that_never_polls_holds_a_bounded_queue_of_net_changes(member) -> None:
    """A member that churns while its application does not poll: the queue is folded into
    what changed since the last callback that ran."""
    c, seen = member
    assign(c, A)
    c.poll(timeout=0)  # told: A
    seen.clear()
    for _ in range(MAX_GROUP_EVENTS):  # B comes and goes, A goes and comes back
        c._group_event(ASSIGN, frozenset({B}))
        c._group_event(REVOKE, frozenset({B}))
        c._group_event(REVOKE, frozenset({A}))
        c._group_event(ASSIGN, frozenset({A}))
        assert len(c._group_events) <= MAX_GROUP_EVENTS
    c._group_event(REVOKE, frozenset({A}))
    c._group_event(ASSIGN, frozenset({B}))
    c.poll(timeout=0)
    assert [(k, keys) for k, keys, _ in seen] == [(REVOKE, [A]), (ASSIGN, [B])]
