"""The consumer's end of stream (``at_end``, ``dafka-consumer -e``) is never said early
(issue 34, points 1 and 2).

1. ``at_end`` read the count of unpolled records on the caller's thread, then asked the IO
   thread whether the core was at the stores' heads: a window delivered between the two
   made it answer "at end" with that window unpolled, and ``-e`` exited 0 without
   printing it. The answer is now one step on the IO thread.
2. A store that greeted the consumer (STORE-HELLO) before it could hear it (its SUB
   connects when the consumer's beacon reaches it) lost the CONSUMER-HELLO sent in answer,
   and its silence was taken as "holds nothing": ``-e`` exited 0 with 0 of 2,000 records.
   A store now counts only once it was asked after it could hear us and we it.

The handler and core are driven with plain messages and explicit times; the race of
point 1 is laid out on the IO thread's command queue, in order, not by timing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from dafka.consumer._core import ConsumerCore
from dafka.consumer._end import END_QUIET, MAX_STORES, StoreAnswers
from dafka.consumer._facade import Consumer
from dafka.consumer._io import _ConsumerHandler
from dafka.consumer._shared import ConsumerShared
from dafka.core.effects import DataLoss, Publish
from dafka.core.messages import (
    ConsumerHello,
    DirectHead,
    DirectRecord,
    Fetch,
    GetHeads,
    StoreHello,
    Subscription,
)
from dafka.errors import DataLossError
from dafka.wire.profiles import RFC46
from tests.signing import WIRE

C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
P = "0123456789ABCDEF0123456789ABCDEF"
STORE = "FEDCBA9876543210FEDCBA9876543210"
STORE2 = "ABABABABABABABABABABABABABABABAB"


def hears_us(store: str) -> Subscription:
    """What our XPUB sees when a store's SUB subscribes to our CONSUMER-HELLOs to it."""
    return Subscription(True, b"W", store.encode())


def left(store: str) -> Subscription:
    return Subscription(False, b"W", store.encode())


class _Facade(ConsumerShared):
    """What the handler shares with the Consumer: its ready records and their lock."""

    def data_loss(self, loss: DataLoss) -> None:
        raise AssertionError(loss)

    def poll_all(self) -> None:
        with self.cond:
            self.take(self.count)


def handler(profile: Any = RFC46, reset: str = "earliest") -> tuple[_ConsumerHandler, _Facade]:
    core = ConsumerCore(C, offset_reset=reset, profile=profile)  # type: ignore[arg-type]
    core.subscribe("t", 0.0)
    facade = _Facade()
    return _ConsumerHandler(facade, core), facade


def sent(out: list[Publish]) -> list[object]:
    return [p.msg for p in out]


# ------------------------------------------------------------------ point 2


@pytest.mark.parametrize("profile", [RFC46, WIRE], ids=["rfc46", "signed"])
def test_a_store_that_greeted_us_before_it_could_hear_us_is_not_taken_as_empty(
    profile: Any,
) -> None:
    """Its greeting arrives, our CONSUMER-HELLO in answer is lost (its SUB is not connected
    to us yet): however long it stays silent, that silence says nothing. Once it
    subscribes, the CONSUMER-HELLO sent then asks it; the end waits for its answer."""
    h, facade = handler(profile)
    assert sent(h.on_messages([StoreHello(C, STORE)], 1.0)) == [ConsumerHello(STORE, C, ("t",))]
    for now in (1.0 + END_QUIET, 5.0, 60.0):  # that hello went nowhere
        assert not h.at_end(now)
    assert not h.core.stores_asked
    assert h.core.stores_waiting(61.0) == {STORE: 60.0}
    # 1.5 s (here a minute) later the store's beacon... our beacon reaches it: it subscribes
    assert sent(h.on_subscription(hears_us(STORE), 61.0)) == [ConsumerHello(STORE, C, ("t",))]
    assert h.core.stores_asked == 1 and h.core.stores_waiting(61.0) == {}
    assert not h.at_end(61.0 + END_QUIET / 2)  # its answer may still be coming
    if profile is RFC46:  # it holds records 0..2 of partition P: they are the end
        out = sent(h.on_messages([DirectHead(C, "t", P, 2)], 61.1))
        assert out == [Fetch(P, C, "t", 0, out[0].count)]  # type: ignore[attr-defined]
        assert not h.at_end(70.0)
        h.on_messages([DirectRecord(C, "t", P, i, b"v%d" % i) for i in range(3)], 70.0)
        assert facade.count == 3
        assert not h.at_end(71.0)  # delivered, not polled
        facade.poll_all()
        assert h.at_end(71.0)
    else:  # it holds nothing of t: its silence after being asked is the answer
        assert h.at_end(61.0 + END_QUIET)


def test_a_store_that_hears_us_but_whose_greeting_has_not_reached_us_holds_the_end() -> None:
    """The other order: it subscribed (heard our beacon first) and was asked, but our SUB
    is not connected to it yet, so its answer went nowhere. Its STORE-HELLO, once our SUB
    connects, makes the CONSUMER-HELLO that counts."""
    h, _ = handler()
    assert sent(h.on_subscription(hears_us(STORE), 1.0)) == [ConsumerHello(STORE, C, ("t",))]
    assert not h.at_end(60.0)
    h.on_messages([StoreHello(C, STORE)], 61.0)
    assert not h.at_end(61.0 + END_QUIET / 2)
    assert h.at_end(61.0 + END_QUIET)


def test_the_end_waits_for_every_store_that_greeted_us() -> None:
    """A second store still connecting may hold what the first does not; one that leaves
    (its SUB disconnects: the W subscription goes) is not waited for."""
    h, _ = handler()
    h.on_subscription(hears_us(STORE), 1.0)
    h.on_messages([StoreHello(C, STORE)], 1.0)
    assert h.at_end(2.0)
    h.on_messages([StoreHello(C, STORE2)], 3.0)  # greeted us, cannot hear us yet
    assert not h.at_end(30.0)
    h.on_subscription(hears_us(STORE2), 31.0)
    h.on_subscription(left(STORE2), 31.1)  # and went away again
    assert h.core.stores_asked == 1
    assert h.at_end(31.0 + END_QUIET)
    h.on_subscription(left(STORE), 40.0)
    assert not h.at_end(50.0) and not h.core.stores_asked  # no store: nobody said where the end is


def test_a_get_heads_for_a_new_topic_is_waited_for() -> None:
    """Subscribing to one more topic asks the stores again (GET-HEADS): the end waits for
    their answers as for a CONSUMER-HELLO's."""
    h, _ = handler()
    h.on_subscription(hears_us(STORE), 1.0)
    h.on_messages([StoreHello(C, STORE)], 1.0)
    assert h.at_end(2.0)
    assert sent(h.core.subscribe("u", 3.0)) == [GetHeads("u", C)]
    assert not h.at_end(3.0 + END_QUIET / 2)
    h.on_messages([DirectHead(C, "u", P, 0)], 3.2)  # it holds one record of u
    assert not h.at_end(10.0)


def test_a_greeting_is_tracked_only_when_addressed_to_us_under_a_node_id() -> None:
    h, _ = handler()
    h.on_messages([StoreHello(STORE2, STORE)], 1.0)  # for another consumer
    h.on_subscription(Subscription(True, b"W", b"not a node id"), 1.0)
    assert h.core.stores_waiting(2.0) == {}


def test_stores_tracked_are_bounded() -> None:
    """Greetings under made-up store IDs cost a bounded table; beyond it a store is not
    tracked (the end rests on the ones that are)."""
    answers = StoreAnswers()
    for i in range(MAX_STORES + 100):
        answers.greeted(f"{i:032X}", 1.0)
    assert answers.known == MAX_STORES
    assert not answers.settled(10.0)


# ------------------------------------------------------------------ point 1


def test_at_end_is_false_while_a_window_delivered_after_the_caller_looked_is_unpolled() -> None:
    """The last window lands between the caller's look at its ready records and the IO
    thread's answer (laid out on the IO thread's command queue, in that order): the
    answer must count it. It said "at end" with the window unpolled, and ``-e`` exited 0
    without printing it."""
    c = Consumer(
        "t", towers="127.0.0.1:1", metadata=False, profile="rfc46", offset_reset="earliest"
    )
    try:
        me = c.node_id
        h = c._handler

        def on_io(fn: Callable[[float], object]) -> None:
            done = threading.Event()

            def call(now: float) -> list[Publish]:
                fn(now)
                done.set()
                return []

            c._loop.call(call)
            assert done.wait(10)

        # a store that greeted us, hears us and answered long ago: it holds offsets 0..2
        on_io(lambda now: h.on_messages([StoreHello(me, STORE)], now - 10))
        on_io(lambda now: h.on_subscription(hears_us(STORE), now - 10))
        on_io(lambda now: h.on_messages([DirectHead(me, "t", P, 2)], now - 10))
        assert not c.at_end()  # nothing delivered yet

        window = [DirectRecord(me, "t", P, i, b"v%d" % i) for i in range(3)]
        asks = c._on_loop

        def window_lands_first(fn: Any, timeout: float = 10.0) -> Any:
            c._on_loop = asks  # type: ignore[method-assign]
            c._loop.call(lambda now: h.on_messages(window, now))  # queued before the question
            return asks(fn, timeout)

        c._on_loop = window_lands_first  # type: ignore[method-assign]
        assert not c.at_end()
        assert [r.offset for r in c.poll_batch(10, timeout=5)] == [0, 1, 2]
        assert c.at_end()
    finally:
        c.close()


def test_at_end_is_false_while_an_error_waits_to_be_raised_by_a_poll() -> None:
    """A data loss reported with the last window is raised by the next poll: until then the
    stream has not ended (``-e`` would exit 0 without saying records were lost)."""
    h, facade = handler()
    h.on_subscription(hears_us(STORE), 1.0)
    h.on_messages([StoreHello(C, STORE)], 1.0)
    facade.errors.append(DataLossError("offsets 0..9 were deleted"))
    assert not h.at_end(10.0)
    facade.errors.clear()
    assert h.at_end(10.0)
