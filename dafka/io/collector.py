"""Keep the garbage collector's full collections short: freeze what a node starts with.

A full collection (CPython's oldest generation) walks every object the collector tracks,
holding the GIL, so it stops every thread of the process, the node's IO thread included.
A producer or consumer process holds some 35,000 such objects from the moment it starts
(pyzmq, PyNaCl, click and dafka's own modules, the node's objects) that live as long as
it does: walking them took 6-7 ms here, and 12-15 ms in the latency benchmark's producer
under load (``python -m benchmarks.throughput --phases latency``), once every few seconds
at 10,000 records/s: at that rate, a pause of 15 ms holds up 150 records.

:func:`freeze_heap` moves what exists when it is called into the collector's permanent
generation (``gc.freeze``), which no collection walks again; every later object is
collected as before. What it freezes is never freed either: call it once, when the
process has started its node, not in a loop. The store, producer and consumer commands
call it; an application embedding a node may too (like :mod:`dafka.io.malloc`, it changes
process-wide state, so it is not done behind the caller's back).
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

__all__ = ["freeze_heap"]


def freeze_heap() -> int:
    """Collect what is garbage now, then freeze every object left; returns how many are
    frozen in all."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("gc.frozen objects=%d", frozen)
    return frozen
