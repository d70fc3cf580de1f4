"""``dafka topics describe`` and ``dafka stores list`` flag partitions with fewer copies
than their topic's ``min_acks`` (issue 33, point 2): copies are the stores that answered
holding the partition's head."""

from __future__ import annotations

from dafka.cli.holdings import Copies, StoreView, below_min_acks, copies
from dafka.query.protocol import PartitionInfo

A, B, C = "A" * 32, "B" * 32, "C" * 32


def view(node: str, *parts: tuple[str, str, int, int]) -> StoreView:
    return StoreView(node, "tcp://127.0.0.1:1", None, tuple(PartitionInfo(*p) for p in parts))


def test_a_store_behind_the_head_is_no_copy_and_a_silent_one_counts_for_nothing() -> None:
    stores = [
        view(A, ("t", "p", 0, 9), ("t", "q", 0, 4)),
        view(B, ("t", "p", 0, 7), ("t", "q", 2, 4)),  # behind on p
        StoreView(C, "tcp://127.0.0.1:2", None, None, "timed out"),
    ]
    held = copies(stores)
    assert held == {("t", "p"): Copies(9, (A,)), ("t", "q"): Copies(4, (A, B))}
    assert below_min_acks(held, {"t": 2}) == {("t", "p"): (1, 2)}
    assert below_min_acks(held, {"t": 3}) == {("t", "p"): (1, 3), ("t", "q"): (2, 3)}
    assert below_min_acks(held, {}) == {}  # a topic the metadata does not name: 1


def test_with_trusted_stores_an_untrusted_stores_word_is_no_copy() -> None:
    """Attack (a red-team pass): with A and B trusted and B gone, a store that holds
    nothing answers the query endpoint with A's head; `topics describe` counted it as a
    second copy and flagged nothing. Only trusted stores' copies count when some are."""
    stores = [view(A, ("t", "p", 0, 9)), view(C, ("t", "p", 0, 9))]
    assert below_min_acks(copies(stores), {"t": 2}) == {}  # no trust list: every store
    held = copies(stores, trusted=[A, B])
    assert held == {("t", "p"): Copies(9, (A,))}
    assert below_min_acks(held, {"t": 2}) == {("t", "p"): (1, 2)}
