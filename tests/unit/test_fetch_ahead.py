"""A signed consumer asks for the next answer as the last batch of one arrives.

``ConsumerCore.ask_ahead`` reads the headers of what the IO thread has just drained,
before any of it is verified: when the outstanding answer's last batch is among them,
the next FETCH goes out at once, so a store sends the next answer while this one is
being verified. Verification decides everything else: it takes that FETCH for the one it
asks for when the answer ends at the same place (not sent twice), and asks as before
when a forged header misled the guess. No time passes in these tests and ``tick`` is
never called: a consumer that waited for its fetch timeout would not catch up. The node
loop sends what ``on_arrival`` returns before its handler works on the drained messages.
"""

from __future__ import annotations

import zmq

from dafka.config import NodeConfig, TowerAddress
from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.answers import ANSWER_BATCHES
from dafka.core.effects import Deliver, Publish
from dafka.io.node import NodeLoop
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from tests.idle_handler import IdleHandler
from tests.signing import (
    CONSUMER,
    STORE,
    WIRE,
    P,
    blob,
    direct,
    forged_for,
    from_blob,
    record,
    sent,
)


def fetches(effects: list) -> list[m.Fetch]:
    return [e.msg for e in effects if isinstance(e, Publish) and isinstance(e.msg, m.Fetch)]


def delivered(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


def consumer_at(end: int) -> tuple[ConsumerCore, m.Fetch]:
    """A consumer from 0 that learned of ``end`` from a live batch, and its first FETCH."""
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    (first,) = fetches(core.handle(record(end), 0.0))
    return core, first


def test_the_next_fetch_goes_out_before_the_answer_is_verified_and_only_once() -> None:
    n = 3 * ANSWER_BATCHES
    store = StoreCore(STORE.node_id, MemoryStorage(), profile=SignedProfile(STORE))
    store.handle_batch([record(i) for i in range(n)], 0.0)
    consumer, fetch = consumer_at(n)
    got: list[int] = []
    rounds = 0
    while fetch is not None and rounds < 10:
        rounds += 1
        out = sent(store.handle_batch([fetch], 1.0))
        while store.has_pending():
            out += sent(store.tick(1.0))
        answer = [d for d in out if isinstance(d, m.DirectRecord)]
        ahead = fetches(consumer.ask_ahead(answer, 0.0))  # drained, not verified yet
        assert consumer.ask_ahead(answer, 0.0) == []  # one FETCH ahead, no more
        for d in answer:  # verified and delivered: no FETCH sent twice
            effects = consumer.handle(d, 0.0)
            got += delivered(effects)
            assert fetches(effects) == []
        fetch = ahead[0] if ahead else None
        if fetch is not None:
            assert fetch.offset == rounds * ANSWER_BATCHES
    got += delivered(consumer.handle(record(n), 0.0))  # a duplicate of the held one
    assert got == list(range(n + 1))  # in order, each once
    assert rounds == 3 and consumer.stats.delivered == n + 1


def test_a_forged_last_batch_costs_one_fetch_and_no_stall() -> None:
    n = 3 * ANSWER_BATCHES
    consumer, fetch = consumer_at(n)
    assert fetch.offset == 0
    forged = from_blob(forged_for(P, ANSWER_BATCHES - 1, 5), to=CONSUMER)  # claims 7..11
    drained = [direct(i) for i in range(ANSWER_BATCHES - 1)] + [forged]
    assert [f.offset for f in fetches(consumer.ask_ahead(drained, 0.0))] == [ANSWER_BATCHES + 4]
    for msg in drained:
        assert fetches(consumer.handle(msg, 0.0)) == []  # the forgery is rejected
    assert consumer.stats.rejected == 1
    real = direct(ANSWER_BATCHES - 1)
    assert consumer.ask_ahead([real], 0.0) == []  # one ahead already
    out = consumer.handle(real, 0.0)  # verified: the answer ends here, not where guessed
    assert [f.offset for f in fetches(out)] == [ANSWER_BATCHES]
    assert delivered(out) == [ANSWER_BATCHES - 1]
    follow = [direct(i) for i in range(ANSWER_BATCHES, 2 * ANSWER_BATCHES)]
    assert [f.offset for f in fetches(consumer.ask_ahead(follow, 0.0))] == [2 * ANSWER_BATCHES]


def test_an_answer_short_of_its_bound_is_not_asked_ahead() -> None:
    consumer, fetch = consumer_at(50)
    assert (fetch.offset, fetch.count) == (0, 50)
    some = [direct(i) for i in range(ANSWER_BATCHES - 1)]
    assert consumer.ask_ahead(some, 0.0) == []  # the store may still be sending


def test_rfc46_asks_nothing_ahead() -> None:
    core = ConsumerCore(CONSUMER, offset_reset="earliest")
    core.subscribe("t", 0.0)
    assert core.ask_ahead([direct(i) for i in range(ANSWER_BATCHES)], 0.0) == []


# ------------------------------------------------------------------- the IO shell


class _Arrivals(IdleHandler):
    """A handler that notes when the node loop sends what ``on_arrival`` returned."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_arrival(self, msgs: list, now: float) -> list:
        self.calls.append(f"arrival {len(msgs)}")
        return ["ahead"]

    def on_messages(self, msgs: list, now: float, sources: object = ()) -> list:
        self.calls.append(f"messages {len(msgs)}")
        return ["after"]


def test_the_node_loop_sends_what_arrives_ahead_before_the_handler_works() -> None:
    handler = _Arrivals()
    config = NodeConfig(towers=(TowerAddress("127.0.0.1", 1),))
    loop = NodeLoop(CONSUMER, config, handler, profile=WIRE)  # type: ignore[arg-type]
    ctx = zmq.Context.instance()
    pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    try:
        pull.bind("inproc://arrivals")
        push.connect("inproc://arrivals")
        for i in range(3):
            push.send_multipart(signed.encode(signed.DirectRecord.of(CONSUMER, blob(i, 1))))
        assert pull.poll(5000)  # inproc: the three are queued once the first is

        def send(effects: object) -> None:
            handler.calls.append(f"sent {effects}")

        out = loop._on_data(pull, 0.0, send)
        assert handler.calls == ["arrival 3", "sent ['ahead']", "messages 3"]
        assert out == ["after"]
    finally:
        pull.close(0)
        push.close(0)
        loop._close_wake()  # never started: its wake-up pipe is all it opened
