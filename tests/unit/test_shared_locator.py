"""The Spark driver's store locator is kept per process and per cluster, within a bound."""

from __future__ import annotations

from dafka.query import locator


def test_one_locator_per_tower_list_is_reused_and_the_oldest_closed_past_the_bound() -> None:
    locator.close_shared()  # those of earlier tests in this process: closed, not dropped
    first, lock = locator.shared_locator("127.0.0.1:5556", wait=0.1, key=None)
    again, lock_again = locator.shared_locator("127.0.0.1:5556", wait=0.1, key=None)
    assert again is first and lock_again is lock  # a warm session does not listen again
    other, _ = locator.shared_locator("127.0.0.1:6556", wait=0.1, key=None)
    assert other is not first
    closed: list[object] = []
    first.close = lambda: closed.append(first)  # type: ignore[method-assign]
    for port in range(7000, 7000 + locator.MAX_SHARED):
        locator.shared_locator(f"127.0.0.1:{port}", wait=0.1, key=None)
    assert closed == [first]
    assert len(locator._SHARED) == locator.MAX_SHARED
    fresh, _ = locator.shared_locator("127.0.0.1:5556", wait=0.1, key=None)
    assert fresh is not first
    locator.close_shared()
    assert locator._SHARED == {}
