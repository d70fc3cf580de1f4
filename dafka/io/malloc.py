"""Keep large freed blocks for reuse: the data path's page faults (glibc only).

A signed batch is about 1 MiB, and a node allocates several buffers of that size per
batch (the received frame, the value a store writes, LMDB's own copy). glibc's malloc
serves blocks that large with ``mmap`` once its adaptive threshold says so, and gives
the top of the heap back to the kernel whenever more than twice that is free; either
way the next batch's buffers are fresh pages, each zeroed by the kernel on first touch.
A store took 700 minor page faults per 8192-record batch, a quarter of its CPU.

:func:`keep_freed_memory` fixes the thresholds instead (``mallopt``): blocks up to
``mmap_threshold`` come from the heap, and up to ``trim_threshold`` bytes of free heap
are kept for the next batches. The process's RSS then stays at its high-water mark
rather than following each burst down: a bounded cost, since what a node holds is
bounded (``docs/security.md``). The store, producer and consumer commands call it; an
application embedding a producer or consumer may too (it sets process-wide malloc
options, so it is not done behind the caller's back). Elsewhere than glibc: nothing.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024
"""glibc's largest (``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit): a 16 MiB batch included."""
TRIM_THRESHOLD = 128 * 1024 * 1024
"""Free heap kept for reuse: a store's drain (64 MiB) with its copies."""


def keep_freed_memory(
    mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD
) -> bool:
    """Set glibc's ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD``; False where there is no
    ``mallopt`` (not glibc) or it refused."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(
        mallopt(_M_TRIM_THRESHOLD, trim_threshold)
    )
    log.debug("malloc.keep_freed mmap=%d trim=%d applied=%s", mmap_threshold, trim_threshold, done)
    return done
