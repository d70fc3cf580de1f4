"""The simulated clock and network of :mod:`dafka.sim.discovery_sim`: a heap of timed events
and the time a message takes to cross one hop."""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from typing import Any

Handler = Callable[[Any], None]


class SimClock:
    """Events at simulated times, run in time order (events at one time in the order they
    were scheduled); every hop takes ``delay`` plus up to ``jitter`` seconds, drawn from
    the run's one ``rng``, and a node reads what reaches it at the end of a ``turn``."""

    def __init__(self, rng: random.Random, delay: float, jitter: float, turn: float) -> None:
        self.rng = rng
        self.delay = delay
        self.jitter = jitter
        self.turn = turn
        self.now = 0.0
        self.events = 0
        self._heap: list[tuple[float, int, Handler, Any]] = []
        self._seq = 0

    def at(self, when: float, handler: Handler, arg: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, handler, arg))

    def hop(self) -> float:
        return self.delay + self.rng.random() * self.jitter

    def arrival(self) -> float:
        """When a message sent now to nodes is read: a hop later, at the end of a turn."""
        turn = self.turn
        return math.ceil((self.now + self.hop()) / turn) * turn

    def run(self, end: float) -> None:
        """Process every event due by ``end``; the clock then reads ``end``."""
        heap = self._heap
        pop = heapq.heappop
        while heap and heap[0][0] <= end:
            when, _, handler, arg = pop(heap)
            self.now = when
            self.events += 1
            handler(arg)
        self.now = end
