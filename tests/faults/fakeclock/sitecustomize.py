"""A wall clock the fault suite can step and skew, for the node processes it starts.

With ``DAFKA_FAULT_CLOCK=PATH`` in the environment (and this directory first on
``PYTHONPATH``), ``time.time`` and ``time.time_ns`` read ``PATH`` at most twice a second:
``+2400`` puts the wall clock 2,400 s ahead of the real one from now on, ``-3600`` an hour
behind, ``+0 x10`` makes it run ten times as fast from where it is. The monotonic clock stays
real, as it does when a system clock is stepped.

libfaketime (Debian 0.9.10) was tried first: with its monotonic clock left real, Python's
``time.sleep`` (an absolute ``clock_nanosleep`` on the monotonic clock) fails with EINVAL;
with it faked, a process hangs in its first sleep once an offset is set.
"""

from __future__ import annotations

import os
import time

_PATH = os.environ.get("DAFKA_FAULT_CLOCK")


class _Clock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.real_ns = time.time_ns
        self.checked = -1.0
        self.spec = ("+0", 1.0)
        self.base_real = self.real_ns()
        self.base_fake = self.base_real
        self.rate = 1.0

    def _read(self) -> None:
        now = time.monotonic()
        if now - self.checked < 0.5:
            return
        self.checked = now
        try:
            with open(self.path, encoding="ascii") as f:
                words = f.read().split()
            offset = words[0] if words else "+0"
            rate = float(words[1][1:]) if len(words) > 1 and words[1][:1] == "x" else 1.0
            float(offset)
        except (OSError, ValueError):
            return
        if (offset, rate) == self.spec:
            return
        real = self.real_ns()
        self.spec = (offset, rate)
        self.base_real = real
        # a step is from the real clock; a new rate goes on from where the clock is
        start = real if rate == 1.0 else self.now(real)
        self.base_fake = start + int(float(offset) * 1e9)
        self.rate = rate

    def now(self, real: int) -> int:
        return self.base_fake + int((real - self.base_real) * self.rate)

    def time_ns(self) -> int:
        self._read()
        return self.now(self.real_ns())

    def time(self) -> float:
        return self.time_ns() / 1e9


if _PATH:
    _clock = _Clock(_PATH)
    time.time_ns = _clock.time_ns
    time.time = _clock.time
