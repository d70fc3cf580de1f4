"""When and how a consumer asks the stores for the heads again (:class:`HeadsAsks`).

A consumer learns of a partition from live records, its producer's HEADs and the stores'
answers (DIRECT-HEADs). It asks the stores on subscribing and in each greeting; this module
says when it asks *again* and what the ask is. Pure: every call carries ``now``; driven by
:class:`~dafka.consumer._core.ConsumerCore`.

When: every :data:`HEADS_REFRESH` seconds (a store's DIRECT-HEAD can be lost), and
:data:`HEADS_AFTER_PEER` seconds after a peer joins the mesh. A producer that came and went
before our subscription reached it (our loop late or our process paused when its beacon
came; a CLI producer lives well under a second) left its records only at the stores, and
only the refresh told us of them, a minute later.

How: see :meth:`HeadsAsks.ask`. What peers control: joins (anyone can beacon made-up
endpoints through a tower) move the asks no closer than :data:`HEADS_AFTER_PEER` apart, and
further for a consumer of many topics (:data:`ASK_TOPICS_RATE`); the stores we know (a node
can greet us under a made-up store ID and subscribe for its HELLOs) get at most
:data:`ASK_STORES` HELLOs an ask, and never stop the GET-HEADS every store hears.
"""

from __future__ import annotations

from typing import Protocol

from ..core import messages as m
from ..core.effects import Publish

HEADS_REFRESH = 60.0
"""Seconds between two asks for the heads of every topic whose heads a consumer wants, after
the ones it sends on subscribing and in each CONSUMER-HELLO. A store's DIRECT-HEAD can be lost
(a store's data XPUB drops past its mark when a reader falls behind); without this, a
consumer would never learn of a partition whose producers are gone until it reconnected."""
HEADS_AFTER_PEER = (2.0, 10.0)
"""Seconds after a peer joins the mesh (:meth:`HeadsAsks.joined`) that the stores are asked
again: soon (the records of a producer gone need the time to reach the stores), and later,
for a subscription slow to land. Joins coalesce: an ask already due within the first delay of
a join covers it and is never put off (so a steady stream of joins asks every 2 s, not
never); only the later ask moves with each join."""
HELLO_TOPICS = 1_024
"""Topics named in one CONSUMER-HELLO: as many as a store answers for in one
(``dafka.store.MAX_HELLO_TOPICS``); a consumer of more sends several."""
ASK_TOPICS = 16
"""Topics asked for by GET-HEADS in one ask: all of them up to this many, else this many in
turn, within a store's per-requester burst of 40 requests."""
ASK_STORES = 8
"""Stores sent a CONSUMER-HELLO in one ask (a consumer of more than :data:`ASK_TOPICS`
topics), in turn."""
ASK_TOPICS_RATE = 50.0
"""Topics a second, on average, that the asks after joins name: a consumer of more than 100
topics waits longer than ``HEADS_AFTER_PEER[0]`` to ask. Every store answers each topic and
each partition from one budget of 5,000 answers a second that all its readers share."""
_MAX_SOON = 4  # asks after joins pending at once (two in the shell: it asks as it is told)


class KnownStores(Protocol):
    def reachable(self) -> list[str]:
        """The stores that hear us and that we hear."""
        ...


def hellos(store: str, node: str, topics: list[str]) -> list[Publish]:
    """CONSUMER-HELLOs from ``node`` to ``store`` naming ``topics``, :data:`HELLO_TOPICS` a
    message (none: one naming none)."""
    n = HELLO_TOPICS
    return [
        Publish(m.ConsumerHello(store, node, tuple(topics[i : i + n])))
        for i in range(0, max(len(topics), 1), n)
    ]


def in_turn(items: list[str], turn: int, n: int) -> list[str]:
    """The ``turn``-th ``n`` of ``items`` taken round and round (all of them when few)."""
    if len(items) <= n:
        return items
    start = turn * n % len(items)
    return [items[(start + i) % len(items)] for i in range(n)]


class HeadsAsks:
    """The asks' schedule (:meth:`joined`, :meth:`due`) and their shape (:meth:`ask`)."""

    __slots__ = ("_again", "_asks", "_due", "_soon")

    def __init__(self) -> None:
        self._due: float | None = None  # the next refresh (None: not timed yet)
        self._soon: list[float] = []  # asks due after peers joined
        self._again: float | None = None  # ... and the later one, after the last join
        self._asks = 0  # asks made: which topics and stores the next one takes in turn

    def joined(self, now: float, topics: int) -> None:
        """A peer joined the mesh, of a consumer wanting the heads of ``topics`` topics."""
        first, again = HEADS_AFTER_PEER
        # guard: asks-after-joins-paced-by-topics
        first = max(first, topics / ASK_TOPICS_RATE)
        again = max(again, first)
        soon = self._soon
        # an ask due within ``first`` covers this join too; one due now does not (the records
        # of a producer gone need the time to reach the stores), so it stays and one is added
        # guard: peer-joins-never-put-off-a-pending-heads-ask
        if not any(now < t <= now + first for t in soon) and len(soon) < _MAX_SOON:
            soon.append(now + first)
        self._again = now + again

    def due(self, now: float) -> bool:
        """Whether to ask now (then the next refresh is :data:`HEADS_REFRESH` away)."""
        soon, again = self._soon, self._again
        asked = bool(soon) and now >= min(soon)
        if asked:
            self._soon = [t for t in soon if t > now]
        if again is not None and now >= again:
            asked, self._again = True, None
        if self._due is None:
            self._due = now + HEADS_REFRESH  # the first call times the refresh
        if asked or now >= self._due:
            self._due = now + HEADS_REFRESH
            return True
        return False

    def ask(self, node: str, wanted: list[str], stores: KnownStores) -> list[Publish]:
        """The ask of consumer ``node`` for the heads of ``wanted`` topics.

        Up to :data:`ASK_TOPICS` topics: a GET-HEADS for each, which every store hears.
        More: a store answers a GET-HEADS for one topic and a CONSUMER-HELLO for all it
        names, each as one request of the requester's budget (20 a second, bursts of 40), so
        a refresh of GET-HEADS from a consumer of 100 topics had the same 60 unanswered every
        time. Then the ask is a HELLO to each of :data:`ASK_STORES` stores that hear us and
        that we hear, in turn, and a GET-HEADS for :data:`ASK_TOPICS` of the topics, in turn:
        peers choose which stores we know, so HELLOs alone could all go to made-up stores
        while a real one never heard an ask (the red team's, with one made-up store)."""
        if not wanted:
            return []
        turn = self._asks
        self._asks += 1
        # guard: heads-asks-get-heads-for-few-topics
        if len(wanted) <= ASK_TOPICS:
            return [Publish(m.GetHeads(t, node)) for t in wanted]
        out: list[Publish] = []
        # guard: heads-asks-go-as-one-hello-a-store
        for store in in_turn(stores.reachable(), turn, ASK_STORES):
            out.extend(hellos(store, node, wanted))
        # guard: heads-asks-get-heads-in-turn-whatever-the-stores
        out.extend(Publish(m.GetHeads(t, node)) for t in in_turn(wanted, turn, ASK_TOPICS))
        return out
