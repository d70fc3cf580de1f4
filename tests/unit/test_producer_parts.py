"""The producer's parts on their own: the unacknowledged budget and opening the state."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from dafka.config import ProducerConfig
from dafka.errors import BufferFullError, ClosedError, ConfigError, DafkaTimeout
from dafka.producer._budget import CloseResult, UnackedBudget
from dafka.producer._setup import open_state


def test_a_full_budget_raises_and_failures_are_counted_once_per_wait() -> None:
    budget = UnackedBudget(limit=10, most=100, block=False)
    budget.reserve(1, 8)
    with pytest.raises(BufferFullError):
        budget.reserve(1, 8)
    error = RuntimeError("sealing failed")
    budget.rejected(1, 8, error)
    assert budget.wait(0, lambda: True) == (1, error)
    assert budget.wait(0, lambda: True) == (0, None)
    budget.reserve(2, 4)
    budget.released(2, 4)
    assert budget.result() == CloseResult(acknowledged=2, unacknowledged=0, failed=1)


def test_waiting_on_records_ends_with_the_timeout_or_the_io_thread() -> None:
    budget = UnackedBudget(limit=10, most=100, block=True)
    budget.reserve(1, 1)
    with pytest.raises(DafkaTimeout, match="1 records not acknowledged"):
        budget.wait(0, lambda: True)
    with pytest.raises(ClosedError, match="IO thread has stopped"):
        budget.wait(None, lambda: False)
    budget.close()
    with pytest.raises(ClosedError):
        budget.reserve(1, 1)
    assert budget.result() == CloseResult(acknowledged=0, unacknowledged=1, failed=0)


def test_a_refused_state_directory_is_left_unlocked(tmp_path: Path) -> None:
    state = tmp_path / "p"
    signed = ProducerConfig(state_dir=state).validate()
    first = open_state(signed, durable=True)
    assert first.state is not None and first.wal is not None
    first.wal.close()
    first.state.close()
    rfc46 = ProducerConfig(state_dir=state, profile="rfc46").validate()
    with pytest.raises(ConfigError, match="signed-profile node"):
        open_state(rfc46, durable=False)
    again = open_state(signed, durable=False)  # not "held by another process"
    assert again.node_id == first.node_id and again.identity is not None
    assert again.state is not None
    again.state.close()


def test_the_budget_counts_a_per_record_overhead_until_release() -> None:
    """Small records cost more than their bytes: 1,000 records of 1 byte fill 64 KiB."""
    budget = UnackedBudget(limit=64 * 1024, most=10**6, block=False, overhead=63)
    budget.reserve(500, 500)
    assert budget.charged == 500 * 64
    budget.reserve(500, 500)
    with pytest.raises(BufferFullError):
        budget.reserve(40, 40)  # the bytes alone (1,040) would fit many times over
    budget.released(500, 500)
    budget.reserve(40, 40)
    assert budget.charged == 540 * 64 and budget.unacked_bytes == 540


def test_releases_notify_only_when_someone_waits() -> None:
    """The IO thread holds the lock every send() takes only for a few updates: it
    notifies the condition only while a thread waits on it, and that thread wakes."""
    budget = UnackedBudget(limit=1000, most=2, block=True)
    notified: list[int] = []
    real_notify = budget._cond.notify_all
    budget._cond.notify_all = lambda: (notified.append(1), real_notify())[-1]  # type: ignore[method-assign]
    budget.reserve(2, 10)
    budget.released(1, 5)
    assert notified == []  # nobody waits
    budget.reserve(1, 5)
    done = threading.Event()

    def blocked() -> None:
        budget.reserve(1, 5)  # the budget holds 2 records at most: waits for a release
        done.set()

    t = threading.Thread(target=blocked)
    t.start()
    deadline = time.monotonic() + 10
    while budget._waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert budget._waiting == 1 and not done.is_set()
    budget.released(1, 5)
    t.join(10)
    assert done.is_set() and notified == [1] and budget._waiting == 0
