"""A signed producer's data XPUB mark holds a budget of its batches for a slow store.

Everything a producer sends a store stays unacknowledged until the store answers, so a
store that commits slowly may have the producer's whole ``max_unacked_bytes`` queued for
it. libzmq counts that queue in messages and hears of what the subscriber read only in
steps of half the mark (its low-water mark), so a mark below twice the budget's full
batches dropped batches on their way to the store, which then fetched them from the
producer again: 1.8M of 10M records with a 256 MiB budget over a 256-message mark."""

from __future__ import annotations

import pytest

from dafka import Producer
from dafka.config import NodeConfig
from dafka.io.bounds import xpub_hwm

MIB = 1024 * 1024


@pytest.mark.parametrize("budget", [None, 300 * MIB, 1 * MIB])
def test_the_mark_is_at_least_twice_the_budget_in_full_batches(budget: int | None) -> None:
    options = {} if budget is None else {"max_unacked_bytes": budget}
    with Producer("t", towers="127.0.0.1:9", metadata=False, trust_any_store=True, **options) as p:
        config = p.config
        handler = p._handler
        mark = xpub_hwm(NodeConfig(), handler.xpub_frame_bytes, handler.xpub_min_hwm)
    full_batches = -(-config.max_unacked_bytes // config.max_batch_bytes)
    # what libzmq may not have heard of yet (half the mark) plus the whole budget
    assert mark - (mark + 1) // 2 >= full_batches, (mark, full_batches)
    # never below what the queue's bytes allow (a subscriber that never reads)
    assert mark >= NodeConfig().hwm(config.max_batch_bytes)


def test_the_default_budget_keeps_the_mark_at_the_queue_bytes() -> None:
    """128 MiB: 257 messages of at most 1 MiB, what ``queue_bytes`` gave before (256), so a
    subscriber that never reads still costs a producer about 256 MiB."""
    with Producer("t", towers="127.0.0.1:9", metadata=False, trust_any_store=True) as p:
        handler = p._handler
        assert p.config.max_unacked_bytes == 128 * MIB
        assert xpub_hwm(NodeConfig(), handler.xpub_frame_bytes, handler.xpub_min_hwm) == 257
