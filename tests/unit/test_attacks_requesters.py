"""Requests read in another node's name, or sent in it (issue 32, points 3 and 8).

A FETCH, GET-HEADS or CONSUMER-HELLO names its requester, and the answer goes to that
node. Two attacks on that, against the producer and store cores:

* reading: a node the topic's read ACL does not name sends the producer a FETCH naming
  itself and subscribes to its own ``D`` prefix (which the XPUB guard grants it). The
  producer answered without the read ACL: 263-284 of 284 records. It must check the ACL,
  as the store does.
* spending: a node sends requests naming a catching-up consumer. Under CURVE the
  connection a request came on proves who sent it (``Sender.proven``) and such a request
  is refused (``requests_forged``); without CURVE it is served only from a budget of its
  own per recipient, an eighth of the recipient's (``requests_proxied``), so the consumer's
  own budget, credit and the wait queues stay its own (the issue: its catch-up went from
  2.0 s to 7.8 s, and 136 MB were reflected at it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

from dafka.core import messages as m
from dafka.core.read_guard import PROXY_SHARE, ReadView, RequesterCheck, Sender, check_requester
from dafka.producer._core import ProducerCore
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.signing import CONSUMER, PRODUCER, STORE, STORE2, F, P, record, sent
from tests.unit.test_signed_cores import store

S2 = STORE2.node_id
RATE = 1024 * 1024  # the producer's bytes a second to one requester (bursts of 2 MiB)


class From(Sequence[str]):
    """What the IO shell passes a core: each message's source host, and the node whose
    connection it came on (``dafka.io.bounds.FrameSources``)."""

    def __init__(self, n: int, node: str, proven: bool) -> None:
        self._n = n
        self._sender = Sender(node, proven)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        return "127.0.0.1" if isinstance(index, int) else ["127.0.0.1"] * self._n

    def sender(self, index: int) -> Sender | None:
        return self._sender if 0 <= index < self._n else None


def producer(batches: int = 8) -> ProducerCore:
    """``batches`` held batches of ``t`` and of ``open``, 10 values of 60,000 bytes each."""
    wire = SignedProfile(PRODUCER, max_batch_records=10, max_batch_bytes=1024 * 1024)
    core = ProducerCore(P, profile=wire, trusted_stores=[STORE.node_id], serve_rate=RATE)
    for topic in ("t", "open"):
        for _ in range(batches):
            core.publish(topic, [b"x" * 60_000] * 10, 1.0, None, 1)
    core.set_read_view(ReadView({"t": frozenset({CONSUMER})}, frozenset({S2})))
    return core


def served(out: Sequence[object]) -> list[tuple[str, int]]:
    return [(x.recipient, x.offset) for x in sent(out) if isinstance(x, m.DirectRecord)]


# -- point 3: the producer answers a FETCH only to a node the read ACL admits -------------


def test_a_producer_does_not_answer_a_fetch_from_a_node_the_read_acl_does_not_name() -> None:
    core = producer()
    me = Sender(F, proven=True)  # its own name, on its own connection: the attack
    assert served(core.handle(m.Fetch(P, F, "t", 0, 40), 1.0, me)) == []
    assert core.stats.read_refused == 1 and core.stats.fetches_served == 0
    assert served(core.tick(1.5)) == []  # nothing was queued either
    assert served(core.handle(m.Fetch(P, F, "open", 0, 20), 1.5, me)) == [(F, 0), (F, 10)]


def test_the_named_consumer_and_a_trusted_store_are_answered() -> None:
    core = producer()
    for who in (CONSUMER, S2):
        out = core.handle(m.Fetch(P, who, "t", 0, 20), 1.0, Sender(who, True))
        assert served(out) == [(who, 0), (who, 10)]
    assert core.stats.read_refused == 0


def test_a_producer_follows_the_read_acl_as_it_changes() -> None:
    core = producer()
    core.set_read_view(ReadView())  # the topic opened
    assert served(core.handle(m.Fetch(P, F, "t", 0, 10), 1.0)) == [(F, 0)]
    core.set_read_view(ReadView({"t": frozenset({CONSUMER})}))
    assert served(core.handle(m.Fetch(P, F, "t", 10, 10), 2.0)) == []
    assert core.stats.read_refused == 1


# -- point 8: requests in another node's name ----------------------------------------------


def test_a_request_is_judged_by_the_connection_it_came_on() -> None:
    assert check_requester(CONSUMER, None) is RequesterCheck.OWN  # in-process: no connection
    assert check_requester(CONSUMER, Sender(CONSUMER, True)) is RequesterCheck.OWN
    assert check_requester(CONSUMER, Sender(F, True)) is RequesterCheck.FORGED
    assert check_requester(CONSUMER, Sender("", True)) is RequesterCheck.FORGED
    assert check_requester(CONSUMER, Sender(F, False)) is RequesterCheck.FORGED
    assert check_requester(CONSUMER, Sender("", False)) is RequesterCheck.PROXIED


def test_under_curve_a_producer_refuses_a_fetch_naming_another_node() -> None:
    core = producer()
    forged = m.Fetch(P, CONSUMER, "t", 0, 40)
    assert served(core.handle(forged, 1.0, Sender(F, proven=True))) == []
    assert core.stats.requests_forged == 1 and core.stats.fetches_served == 0
    out = core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0, Sender(CONSUMER, proven=True))
    assert [o for _, o in served(out)] == [0, 10, 20, 30]


def test_without_curve_a_fetch_naming_another_node_than_its_connections_is_refused() -> None:
    """Without CURVE the beacons say whose endpoint a connection is: no request of ours
    names another node than its sender, so one that does is refused as under CURVE."""
    core = producer()
    forged = m.Fetch(P, CONSUMER, "t", 0, 40)
    assert served(core.handle(forged, 1.0, Sender(F, proven=False))) == []
    assert core.stats.requests_forged == 1 and core.stats.fetches_served == 0


def test_without_curve_fetches_from_an_unknown_connection_spend_none_of_its_budget() -> None:
    """A forger whose connection no beacon names asks for everything in the consumer's
    name, over and over: what reaches the consumer on its behalf is an eighth of the
    consumer's rate, and the consumer's own FETCH right after is answered in full, not
    paced behind the forger's bytes."""
    core = producer(batches=40)
    forger = Sender("", proven=False)
    reflected = 0
    for i in range(200):  # 2 s of FETCHes, 100 a second
        now = 1.0 + i / 100
        for offset in range(0, 400, 40):
            reflected += len(
                served(core.handle(m.Fetch(P, CONSUMER, "t", offset, 40), now, forger))
            )
    assert core.stats.fetches_proxied == 2000 and core.stats.fetches_paced == 0
    # 600 kB batches: a burst of 2/8 MiB and 1/8 MiB a second, plus one answer owed (4)
    assert reflected * 600_000 <= (2 + 2 * 1) * RATE / PROXY_SHARE + 4 * 600_000
    own = core.handle(m.Fetch(P, CONSUMER, "t", 0, 30), 3.0, Sender(CONSUMER, False))
    assert [o for _, o in served(own)] == [0, 10, 20]
    assert core.stats.fetches_paced == 0 and core.serve_at is None


def test_without_curve_proxied_fetches_never_fill_the_producers_wait_queue() -> None:
    core = producer(batches=40)
    forger = Sender("", proven=False)
    for i in range(2000):
        core.handle(m.Fetch(P, CONSUMER, "t", (i * 10) % 400, 10), 1.0 + i / 1000, forger)
    assert core.serve_at is None  # nothing of the forger's waits: dropped past its budget


# -- the store: FETCH, GET-HEADS, CONSUMER-HELLO ------------------------------------------


def store_with_records() -> StoreCore:
    core, _ = store()
    core.handle_batch([record(i, 1) for i in range(4)], 0.0)
    return core


def test_under_curve_a_store_refuses_requests_naming_another_node() -> None:
    core = store_with_records()
    forger = From(3, F, proven=True)
    requests: list[m.Message] = [
        m.Fetch(P, CONSUMER, "t", 0, 4),
        m.GetHeads("t", CONSUMER),
        m.ConsumerHello(STORE.node_id, CONSUMER, ("t",)),
    ]
    out = core.handle_batch(requests, 1.0, forger)
    assert sent(out) + sent(core.tick(2.0)) == []
    assert core.stats.requests_forged == 3
    own = sent(core.handle_batch(requests, 3.0, From(3, CONSUMER, proven=True)))
    assert {type(x) for x in own} == {m.DirectRecord, m.DirectHead}


def test_without_curve_a_store_refuses_requests_naming_another_node_than_the_beacons_say() -> None:
    core = store_with_records()
    requests: list[m.Message] = [
        m.Fetch(P, CONSUMER, "t", 0, 4),
        m.GetHeads("t", CONSUMER),
        m.ConsumerHello(STORE.node_id, CONSUMER, ("t",)),
    ]
    out = core.handle_batch(requests, 1.0, From(3, F, proven=False))
    assert sent(out) + sent(core.tick(2.0)) == []
    assert core.stats.requests_forged == 3


def test_without_curve_a_stores_answers_to_unknown_connections_have_a_budget_of_their_own() -> None:
    """Requests in the consumer's name from a connection no beacon names: GET-HEADS past
    the proxied rate are dropped while the consumer's own are answered; FETCHes are served
    from the proxied budget, not the consumer's."""
    core = store_with_records()
    forger = From(1, "", proven=False)
    heads = 0
    for i in range(100):
        heads += len(sent(core.handle_batch([m.GetHeads("t", CONSUMER)], 1.0 + i / 1000, forger)))
    assert heads <= 40 / PROXY_SHARE  # the burst of head requests, an eighth of it
    assert core.stats.requests_proxied == 100
    own = core.handle_batch([m.GetHeads("t", CONSUMER)], 1.2, From(1, CONSUMER, False))
    assert [type(x) for x in sent(own)] == [m.DirectHead]
    for i in range(100):
        core.handle_batch([m.Fetch(P, CONSUMER, "t", i % 4, 1)], 2.0 + i / 1000, forger)
    mine = core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 4)], 2.2, From(1, CONSUMER, False))
    assert 0 in [x.offset for x in sent(mine) if isinstance(x, m.DirectRecord)]
