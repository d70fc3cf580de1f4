"""The background scrub's pace (``dafka.storage.scrub``), with fake time and a fake
storage: what it reads stays within its byte rate, however often it is stepped, and a
finished pass waits before the next one."""

from __future__ import annotations

from dafka.storage.scrub import Scrubber


class FakeStorage:
    """``count`` batches of ``size`` bytes; records what each scrub call was given."""

    def __init__(self, count: int, size: int) -> None:
        self.count, self.size = count, size
        self.budgets: list[int] = []
        self.read = 0

    def scrub(self, after: bytes, budget: int) -> tuple[bytes | None, int]:
        self.budgets.append(budget)
        start = int.from_bytes(after, "big") if after else 0
        n = min(self.count - start, max(1, -(-budget // self.size)))
        self.read += n * self.size
        end = start + n
        return (None if end >= self.count else end.to_bytes(8, "big")), n * self.size


def test_the_scrub_reads_at_most_its_rate_however_often_it_is_stepped() -> None:
    storage = FakeStorage(count=10**6, size=4096)
    scrub = Scrubber(storage, rate=1_000_000)
    now = 0.0
    for _ in range(10_000):  # 100 s in steps of 10 ms
        scrub.step(now)
        now += 0.01
    # 1 MB/s for 100 s, plus at most one batch over the budget
    assert 99_000_000 <= storage.read <= 100_000_000 + 4096


def test_a_long_pause_does_not_become_a_burst() -> None:
    storage = FakeStorage(count=10**6, size=4096)
    scrub = Scrubber(storage, rate=1_000_000)
    scrub.step(0.0)
    assert scrub.step(3600.0) <= 250_000 + 4096  # a quarter second's worth, not an hour's


def test_a_finished_pass_waits_before_the_next_and_rate_0_reads_nothing() -> None:
    storage = FakeStorage(count=10, size=100)
    scrub = Scrubber(storage, rate=1_000_000, min_pass=60.0)
    scrub.step(0.0)
    assert scrub.step(1.0) == 1000  # the whole store: the pass ends
    assert scrub.step(2.0) == 0 and scrub.step(59.0) == 0
    assert scrub.step(61.0) == 1000
    idle = FakeStorage(count=10, size=100)
    off = Scrubber(idle, rate=0)
    assert [off.step(t) for t in (0.0, 1.0, 100.0)] == [0, 0, 0] and idle.read == 0
