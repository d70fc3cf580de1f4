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
further for a consumer of many topics or partitions (:data:`ASK_ANSWERS_RATE`), each delay
drawn anew so that the consumers of a topic a join reaches together do not all ask at once
(the red team's 60 consumers did, and a store refused a third of their asks). The stores we
know (a node can greet us under a made-up store ID and subscribe for its HELLOs) get at most
:data:`ASK_STORES` HELLOs an ask, and never stop the GET-HEADS every store hears.
"""

from __future__ import annotations

import random
from typing import Protocol

from ..core import messages as m
from ..core.effects import Publish
from ..wire.signed import MAX_HELLO_TOPICS

HEADS_REFRESH = 60.0
"""Seconds between two asks for the heads of every topic whose heads a consumer wants, after
the ones it sends on subscribing and in each CONSUMER-HELLO. A store's DIRECT-HEAD can be lost
(a store's data XPUB drops past its mark when a reader falls behind); without this, a
consumer would never learn of a partition whose producers are gone until it reconnected."""
HEADS_AFTER_PEER = (2.0, 10.0)
"""Seconds after a peer joins the mesh (:meth:`HeadsAsks.joined`) that the stores are asked
again: soon (the records of a producer gone need the time to reach the stores), and later,
for a subscription slow to land. Each is drawn from ``[first, 2 first)`` and
``[again, 1.5 again)`` (:meth:`HeadsAsks.joined`). Joins coalesce: an ask already due within
twice the first delay of a join covers it and is never put off (so a steady stream of joins
asks every 2-4 s, not never); only the later ask moves with each join."""
ASK_TOPICS = 16
"""Topics asked for by GET-HEADS in one ask: all of them up to this many, else this many in
turn, within a store's per-requester burst of 40 requests."""
ASK_STORES = 8
"""Stores sent a CONSUMER-HELLO in one ask (a consumer of more than :data:`ASK_TOPICS`
topics), in turn."""
ASK_ANSWERS_RATE = 500.0
"""Answers a second, on average, that a consumer's asks after joins may cost the stores
(each topic asked for one, each partition known one more): a tenth of the one budget of
5,000 a second that all of a store's readers share. A consumer of many topics or partitions
waits longer than ``HEADS_AFTER_PEER[0]`` after a join (the red team's two consumers of a
topic of 6,000 partitions, asking every 2 s, cost a store 36 times the old refresh's
answers, and another reader's greeting went unanswered)."""
_MAX_SOON = 4  # asks after joins pending at once (two in the shell: it asks as it is told)


class KnownStores(Protocol):
    def reachable(self) -> list[str]:
        """The stores that hear us and that we hear."""
        ...


def hellos(store: str, node: str, topics: list[str]) -> list[Publish]:
    """CONSUMER-HELLOs from ``node`` to ``store`` naming ``topics``, as many a message as
    the signed wire allows and a store answers for (``MAX_HELLO_TOPICS``; none: one naming
    none)."""
    n = MAX_HELLO_TOPICS
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
    """The asks' schedule (:meth:`joined`, :meth:`due`) and their shape (:meth:`ask`).

    ``seed``: the node ID, say; it draws the delays after joins (reproducible in tests)."""

    __slots__ = ("_again", "_asks", "_due", "_random", "_soon")

    def __init__(self, seed: str = "") -> None:
        self._due: float | None = None  # the next refresh (None: not timed yet)
        self._soon: list[float] = []  # asks due after peers joined
        self._again: float | None = None  # ... and the later one, after the last join
        self._asks = 0  # asks made: which topics and stores the next one takes in turn
        self._random = random.Random(seed)

    def joined(self, now: float, answers: int) -> None:
        """A peer joined the mesh, of a consumer whose ask costs a store about ``answers``
        answers (its wanted topics and the partitions it knows).

        The next ask comes within twice the first delay of :data:`HEADS_AFTER_PEER` (paced
        by :data:`ASK_ANSWERS_RATE`), drawn in ``[first, 2 first)``; the later one in
        ``[again, 1.5 again)``."""
        first, again = HEADS_AFTER_PEER
        # guard: asks-after-joins-paced-by-answers
        first = max(first, answers / ASK_ANSWERS_RATE)
        again = max(again, 2 * first)
        draw = self._random.random
        # guard: asks-after-joins-jittered
        delay, later = first * (1 + draw()), again * (1 + draw() / 2)
        soon = self._soon
        # an ask due within ``2 first`` covers this join too; one due now does not (the
        # records of a producer gone need the time to reach the stores): it stays, one is added
        # guard: peer-joins-never-put-off-a-pending-heads-ask
        if not any(now < t <= now + 2 * first for t in soon) and len(soon) < _MAX_SOON:
            soon.append(now + delay)
        self._again = max(self._again or 0.0, now + later)

    def due(self, now: float) -> bool:
        """Whether to ask now. An ask after joins leaves the refresh where it was: the
        consumers a join reached together would otherwise refresh together for good."""
        if self._due is None:
            self._due = now + HEADS_REFRESH  # the first call times the refresh
        soon, again = self._soon, self._again
        asked = bool(soon) and now >= min(soon)
        if asked:
            self._soon = [t for t in soon if t > now]
        if again is not None and now >= again:
            asked, self._again = True, None
        # guard: asks-after-joins-leave-the-refresh
        if now >= self._due:
            self._due = now + HEADS_REFRESH
            return True
        return asked

    def ask(self, node: str, wanted: list[str], stores: KnownStores) -> list[Publish]:
        """The ask of consumer ``node`` for the heads of ``wanted`` topics.

        Up to :data:`ASK_TOPICS` topics: a GET-HEADS for each, which every store hears.
        More: a store answers a GET-HEADS for one topic and a CONSUMER-HELLO for all it
        names, each as one request of the requester's budget (20 a second, bursts of 40), so
        a refresh of GET-HEADS from a consumer of 100 topics had the same 60 unanswered every
        time. Then the ask is a GET-HEADS for :data:`ASK_TOPICS` of the topics, in turn, and
        a HELLO to each of :data:`ASK_STORES` stores that hear us and that we hear, in turn,
        naming every topic from where the GET-HEADS stopped: peers choose which stores we
        know, so HELLOs alone could all go to made-up stores while a real one never heard an
        ask (the red team's, with one made-up store). The GET-HEADS go first and the HELLOs'
        topics turn: a HELLO whose answers overran a store's budget starved what came after
        it, the GET-HEADS and its own last topics, at every ask (the red team's 100 topics of
        120 partitions: 17 topics never answered)."""
        if not wanted:
            return []
        turn = self._asks
        self._asks += 1
        # guard: heads-asks-get-heads-for-few-topics
        if len(wanted) <= ASK_TOPICS:
            return [Publish(m.GetHeads(t, node)) for t in wanted]
        # guard: heads-asks-get-heads-in-turn-whatever-the-stores
        out = [Publish(m.GetHeads(t, node)) for t in in_turn(wanted, turn, ASK_TOPICS)]
        start = (turn + 1) * ASK_TOPICS % len(wanted)
        # guard: heads-asks-hellos-turn-their-topics
        named = wanted[start:] + wanted[:start]
        # guard: heads-asks-go-as-one-hello-a-store
        for store in in_turn(stores.reachable(), turn, ASK_STORES):
            out.extend(hellos(store, node, named))
        return out
