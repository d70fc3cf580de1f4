"""The bytes large query answers keep queued on a Raft peer's ROUTER (dafka.raft.answer_budget)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dafka.raft.answer_budget import LARGE_ANSWER, PRUNE_EVERY, AnswerBudget


@dataclass
class FakeTracker:
    done: bool = False


def send(budget: AnswerBudget, buffer: bytes, now: float = 0.0) -> FakeTracker | None:
    """What ClientService._dispatch_reply does with one answer frame."""
    large = budget.large([b"small", buffer])
    if not budget.admit(large, now):
        return None
    tracker = FakeTracker()
    for frame in large:
        budget.sent(frame, tracker)
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
    trackers = [send(budget, config) for _ in range(1000)]
    assert all(t is not None for t in trackers)
    assert budget.pinned == 100_000 and budget.tracked == 1000
    # another buffer of the same bytes is another 100,000 pinned: over the limit
    assert send(budget, b"c" * 100_000) is None
    assert budget.refused == 1


def test_a_buffer_counts_until_every_frame_holding_it_is_done() -> None:
    budget = AnswerBudget(limit=150_000)
    old = b"o" * 100_000
    trackers = [send(budget, old) for _ in range(3)]
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
    assert all(send(budget, config) is not None for _ in range(10))
    assert send(budget, config) is None


def test_a_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError):
        AnswerBudget(limit=-1)
    with pytest.raises(ValueError):
        AnswerBudget(max_tracked=0)
