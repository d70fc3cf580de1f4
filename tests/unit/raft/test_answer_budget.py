"""The bytes large query answers keep queued on a Raft peer's ROUTER (dafka.raft.peer._answer_budget)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dafka.raft.peer._answer_budget import (
    CONNECTION_SHARE,
    LARGE_ANSWER,
    PRUNE_EVERY,
    AnswerBudget,
)


@dataclass
class FakeTracker:
    done: bool = False


def send(
    budget: AnswerBudget, buffer: bytes, now: float = 0.0, to: bytes = b""
) -> FakeTracker | None:
    """What ClientService._dispatch_reply does with one answer frame for connection ``to``."""
    large = budget.large([b"small", buffer])
    if not budget.admit(large, now, to):
        return None
    tracker = FakeTracker()
    for frame in large:
        budget.sent(frame, tracker, to)
    return tracker


def test_only_large_frames_count() -> None:
    budget = AnswerBudget(limit=LARGE_ANSWER)
    small = b"x" * (LARGE_ANSWER - 1)
    assert budget.large([small]) == []
    for _ in range(100):
        assert send(budget, small) is not None
    assert budget.pinned == 0 and budget.tracked == 0


def test_one_buffer_sent_to_many_counts_once() -> None:
    config = b"c" * 100_000
    budget = AnswerBudget(limit=150_000)
    trackers = [send(budget, config, to=b"%d" % i) for i in range(1000)]
    assert all(t is not None for t in trackers)
    assert budget.pinned == 100_000 and budget.tracked == 1000
    # another buffer of the same bytes is another 100,000 pinned: over the limit
    assert send(budget, b"c" * 100_000) is None
    assert not budget.refused_share
    assert budget.refused == 1


def test_a_buffer_counts_until_every_frame_holding_it_is_done() -> None:
    budget = AnswerBudget(limit=150_000)
    old = b"o" * 100_000
    trackers = [send(budget, old, to=b"%d" % i) for i in range(3)]
    new = b"n" * 100_000
    assert send(budget, new, now=0.0) is None  # the old state's answers are still queued
    for t in trackers[:2]:
        assert t is not None
        t.done = True
    assert send(budget, new, now=PRUNE_EVERY) is None  # one frame still holds it
    assert budget.pinned == 100_000 and budget.tracked == 1
    assert trackers[2] is not None
    trackers[2].done = True
    assert send(budget, new, now=2 * PRUNE_EVERY) is not None
    assert budget.pinned == 100_000 and budget.tracked == 1


def test_scans_for_done_frames_are_rate_limited() -> None:
    budget = AnswerBudget(limit=150_000)
    first = send(budget, b"a" * 100_000, now=0.0)
    assert first is not None
    first.done = True
    second = send(budget, b"b" * 100_000, now=0.0)  # the first scan lets go of "a"
    assert second is not None
    assert budget.pinned == 100_000 and budget.tracked == 1
    second.done = True
    # within PRUNE_EVERY of the last scan a refusal does not scan again
    assert send(budget, b"c" * 100_000, now=PRUNE_EVERY / 2) is None
    assert send(budget, b"c" * 100_000, now=PRUNE_EVERY) is not None


def test_tick_lets_go_of_buffers_no_queue_holds() -> None:
    budget = AnswerBudget(limit=1 << 20)
    tracker = send(budget, b"t" * 10_000, now=0.0)
    assert tracker is not None
    budget.tick(PRUNE_EVERY)
    assert budget.pinned == 10_000
    tracker.done = True
    budget.tick(PRUNE_EVERY / 2 + PRUNE_EVERY)  # too soon after the last scan
    assert budget.pinned == 10_000
    budget.tick(2 * PRUNE_EVERY)
    assert budget.pinned == 0 and budget.tracked == 0 and budget._held == {}


def test_frames_in_flight_are_bounded_in_number() -> None:
    budget = AnswerBudget(limit=1 << 30, max_tracked=10)
    config = b"c" * 10_000
    assert all(send(budget, config, to=b"%d" % i) is not None for i in range(10))
    assert send(budget, config, to=b"another") is None


def test_a_client_that_never_reads_is_refused_on_its_own() -> None:
    """One connection asks after each change of state and reads nothing: it gets its share
    (a quarter) of the budget, and the other clients are still answered."""
    budget = AnswerBudget(limit=1_000_000)
    assert CONNECTION_SHARE == 4 and budget.connection_limit == 250_000
    states = [bytes([65 + i]) * 100_000 for i in range(5)]
    assert send(budget, states[0], to=b"flood") is not None
    assert send(budget, states[1], to=b"flood") is not None
    assert send(budget, states[1], to=b"flood") is not None  # a buffer it holds costs nothing
    assert send(budget, states[2], to=b"flood") is None  # 300,000 bytes: over its share
    assert budget.refused_share  # the client is told it is its own unread answers
    assert budget.held_by(b"flood") == (200_000, 3)
    # another client reads the newest state; the budget as a whole has room
    assert send(budget, states[2], to=b"honest") is not None
    assert send(budget, states[3], to=b"honest") is not None
    # and the flood may hold what the honest client pinned only within its own share
    assert send(budget, states[3], to=b"flood") is None
    assert budget.pinned == 400_000 and budget.tracked == 5


def test_a_connection_that_holds_nothing_may_take_a_large_answer() -> None:
    budget = AnswerBudget(limit=1_000_000)
    big = b"b" * 600_000  # more than one share, within the budget
    tracker = send(budget, big, to=b"one")
    assert tracker is not None
    assert send(budget, b"c" * 10_000, to=b"one") is None  # it holds more than its share
    tracker.done = True
    assert send(budget, b"c" * 10_000, now=PRUNE_EVERY, to=b"one") is not None
    assert budget.held_by(b"one") == (10_000, 1)


def test_a_connection_is_forgotten_once_its_frames_are_done() -> None:
    budget = AnswerBudget(limit=1 << 20, max_tracked=8)
    assert budget.connection_max_tracked == 2
    shared = b"s" * 10_000
    trackers = [send(budget, shared, to=b"c") for _ in range(3)]
    assert trackers[2] is None  # a quarter of 8 frames
    assert send(budget, shared, to=b"d") is not None
    for t in trackers[:2]:
        assert t is not None
        t.done = True
    budget.tick(PRUNE_EVERY)
    assert budget.held_by(b"c") == (0, 0) and b"c" not in budget._connections
    assert budget.held_by(b"d") == (10_000, 1) and budget.pinned == 10_000


def test_a_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError):
        AnswerBudget(limit=-1)
    with pytest.raises(ValueError):
        AnswerBudget(max_tracked=0)
