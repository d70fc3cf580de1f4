"""The bytes and rate of a store's query replies (dafka.query.budget), with fake trackers
and fake time."""

from __future__ import annotations

import pytest

from dafka.errors import ConfigError
from dafka.query.budget import MIB, QueryLimits, ReplyBudget, Wait

LIMITS = QueryLimits(
    connection_bytes=4 * MIB, total_bytes=10 * MIB, rate=8 * MIB, burst=8 * MIB, stall=10.0
)


class Tracker:
    def __init__(self, done: bool = False) -> None:
        self.done = done


def test_a_connection_holds_at_most_its_share_of_unread_replies() -> None:
    budget = ReplyBudget(LIMITS, 0.0)
    assert budget.room(b"a", 0.0) == 4 * MIB
    first = Tracker()
    budget.sent(b"a", 3 * MIB, first, 0.0)
    assert budget.room(b"a", 0.0) == MIB  # a READ is clamped to what is left
    budget.sent(b"a", MIB, Tracker(), 0.0)
    assert budget.room(b"a", 0.0) is Wait.SHARE
    assert budget.room(b"b", 0.0) == 4 * MIB  # the others are not held back
    first.done = True  # libzmq wrote it to the kernel: the client reads
    budget.prune()
    assert budget.held_by(b"a") == MIB
    assert budget.room(b"a", 1.0) == 3 * MIB


def test_all_connections_hold_at_most_the_total() -> None:
    budget = ReplyBudget(LIMITS, 0.0)
    trackers = []
    for i, name in enumerate([b"a", b"b"]):
        trackers.append(Tracker())
        budget.sent(name, 4 * MIB, trackers[-1], float(i))
    assert budget.held == 8 * MIB
    assert budget.room(b"c", 5.0) == 2 * MIB
    budget.sent(b"c", 2 * MIB, Tracker(), 5.0)
    assert budget.room(b"d", 10.0) is Wait.TOTAL
    trackers[0].done = True
    budget.prune()
    assert budget.room(b"d", 10.0) == 4 * MIB


def test_replies_are_rated_in_bytes() -> None:
    budget = ReplyBudget(LIMITS, 0.0)
    done = Tracker(done=True)  # read at once: only the rate holds it back
    budget.sent(b"a", 8 * MIB, done, 0.0)
    assert budget.room(b"a", 0.0) is Wait.RATE
    budget.sent(b"a", MIB, done, 0.0)  # a reply past the tokens is a debt
    assert budget.room(b"a", 0.1) is Wait.RATE  # 0.8 MiB back, 1 MiB owed
    assert budget.room(b"a", 0.2) == 4 * MIB
    assert budget.held == 0  # done replies hold nothing
    assert budget.room(b"a", 100.0) == 4 * MIB and budget.tokens == 8 * MIB  # the burst


def test_a_connection_that_does_not_read_is_stalled_after_stall_or_sooner_when_pressed() -> None:
    limits = QueryLimits(stall=10.0, pressed_stall=0.5)
    budget = ReplyBudget(limits, 0.0)
    budget.sent(b"slow", MIB, Tracker(), 0.0)
    budget.sent(b"later", MIB, Tracker(), 1.0)
    reader = Tracker()
    budget.sent(b"reader", MIB, reader, 0.0)
    reader.done = True
    budget.prune()
    assert budget.stalled(9.9, pressed=False) == []
    assert [c for c, _ in budget.stalled(10.0, pressed=False)] == [b"slow"]
    assert [c for c, _ in budget.stalled(1.4, pressed=True)] == [b"slow"]
    assert [c for c, _ in budget.stalled(1.5, pressed=True)] == [b"slow", b"later"]


def test_where_a_connection_is_comes_back_with_it() -> None:
    budget = ReplyBudget(QueryLimits(stall=1.0), 0.0)
    budget.sent(b"a", 10, Tracker(), 0.0, where=(7, ("127.0.0.1", 5)))
    assert budget.stalled(2.0, pressed=False) == [(b"a", (7, ("127.0.0.1", 5)))]


@pytest.mark.parametrize(
    "bad",
    [
        {"connection_bytes": 0},
        {"total_bytes": 0},
        {"rate": 0},
        {"burst": 0},
        {"stall": 0},
        {"park": 0},
        {"parked": 0},
    ],
)
def test_limits_are_checked(bad: dict) -> None:
    with pytest.raises(ConfigError):
        QueryLimits(**bad)


def test_the_budget_says_when_the_rate_lets_replies_go_again() -> None:
    budget = ReplyBudget(LIMITS, 0.0)
    assert budget.refilled_at() is None  # tokens now
    budget.sent(b"a", 10 * MIB, Tracker(done=True), 1.0)  # 2 MiB owed at 8 MiB/s
    due = budget.refilled_at()
    assert due is not None and 1.25 < due < 1.2501
    assert budget.room(b"a", due - 0.001) is Wait.RATE
    assert isinstance(budget.room(b"a", due), int)


def test_asking_for_room_refills_the_tokens_whatever_holds_a_reply_back() -> None:
    # a request held back by its share must not leave a refill time in the past (the
    # store's loop would wake for it without end)
    budget = ReplyBudget(LIMITS, 0.0)
    budget.sent(b"a", 4 * MIB, Tracker(), 0.0)
    budget.sent(b"b", 5 * MIB, Tracker(done=True), 0.0)  # 1 MiB owed
    assert budget.room(b"a", 1.0) is Wait.SHARE
    assert budget.refilled_at() is None
