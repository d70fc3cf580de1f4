"""dafka.io.deadline_timer: a timerfd readable at its deadline, read once per firing, and a
deadline never armed twice (a handler that keeps a passed deadline is not a busy loop)."""

from __future__ import annotations

import select
import sys
import time

import pytest

from dafka.io.deadline_timer import DeadlineTimer

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="timerfd: Linux only")


def _readable(timer: DeadlineTimer, wait: float) -> bool:
    return bool(select.select([timer.fd], [], [], wait)[0])


def test_the_timer_fires_at_its_deadline_and_once() -> None:
    timer = DeadlineTimer()
    try:
        assert timer.fd >= 0
        assert not _readable(timer, 0)  # never armed
        timer.arm(time.monotonic() + 3600)
        assert not _readable(timer, 0.01)  # an hour away
        timer.arm(time.monotonic() + 0.001)  # another deadline replaces it
        assert _readable(timer, 10)
        timer.fired()
        assert not _readable(timer, 0.01)  # read: quiet until armed again
    finally:
        timer.close()
    assert timer.fd == -1


def test_a_deadline_is_armed_once_even_after_it_fired() -> None:
    timer = DeadlineTimer()
    try:
        passed = time.monotonic() - 1
        timer.arm(passed)
        assert _readable(timer, 10)  # a passed deadline fires at once
        timer.fired()
        timer.arm(passed)  # the same deadline again: not re-armed
        assert not _readable(timer, 0.01)
        timer.arm(passed + 0.5)  # a new one (passed too) is
        assert _readable(timer, 10)
    finally:
        timer.close()


def test_a_disabled_timer_has_no_descriptor_and_ignores_deadlines() -> None:
    timer = DeadlineTimer(enabled=False)
    assert timer.fd == -1
    timer.arm(time.monotonic())
    timer.close()
