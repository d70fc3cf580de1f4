"""Retention: which whole old batches of a partition fall out of its topic's limits.

Pure planning, no IO: given a partition's batches oldest first as
:class:`BatchInfo` (offsets, stored size, producer timestamp), :func:`retention_cut`
says from which batch on to keep. Only whole batches go, oldest first, and the
newest batch always stays (so a partition keeps a head and a tail).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BatchInfo", "retention_cut"]


@dataclass(frozen=True, slots=True)
class BatchInfo:
    first_offset: int
    last_offset: int
    size: int
    timestamp_ms: int | None
    """The producer's timestamp (None under rfc46: age retention does not apply)."""


def retention_cut(
    batches: Sequence[BatchInfo],
    *,
    max_age_ms: int | None,
    max_bytes: int | None,
    now_ms: int,
) -> int:
    """How many of ``batches`` (oldest first) to delete: too old, or beyond ``max_bytes``
    counted from the newest. Never all of them."""
    if len(batches) <= 1:
        return 0
    drop = 0
    if max_age_ms is not None:
        horizon = now_ms - max_age_ms
        for batch in batches[:-1]:
            if batch.timestamp_ms is None or batch.timestamp_ms >= horizon:
                break
            drop += 1
    if max_bytes is not None:
        total = 0
        keep_from = len(batches) - 1
        for i in range(len(batches) - 1, -1, -1):
            total += batches[i].size
            if total > max_bytes and i < len(batches) - 1:
                break
            keep_from = i
        drop = max(drop, keep_from)
    return min(drop, len(batches) - 1)
