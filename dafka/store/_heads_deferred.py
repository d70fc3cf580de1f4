"""Head answers waiting for a store's DIRECT-HEAD budget (:class:`DeferredHeads`).

A store answers GET-HEADS and CONSUMER-HELLO with one DIRECT-HEAD per partition of each
topic asked for, from one budget over all requesters (``StoreServing._heads_out``). A topic
of a request that was accepted (its requester's rate limit and the read ACL passed) and met
the budget spent used to be dropped, and a consumer concluding the end of stream from the
stores' silence (``dafka-consumer -e``) ended with records unread. It waits here instead,
as ``(requester, topic)``, and is answered as the budget refills; the partitions and heads
are read then, so the answer is current.

Who fills it: ``StoreServing.answer_heads``, with what any peer sends: the requester ID
(made up at will without CURVE, from an unknown connection: *proxied*,
:class:`~dafka.core.read_guard.RequesterCheck`) and the topic names (up to 1,024 a HELLO).
So everything is bounded, and past a bound a topic is refused (the caller counts it in
``heads_limited``, as when it was dropped):

* :data:`MAX_DEFERRED` entries in all, :data:`MAX_DEFERRED_PROXIED` (half) made in another
  node's name, as pending FETCHes; per requester :data:`MAX_DEFERRED_PER_REQUESTER` on its
  own connection and :data:`PROXIED_PER_REQUESTER` in its name from elsewhere, counted
  apart: requests in a node's name must not fill the node's own share (the red team's one
  HELLO of 1,024 made-up topics in a consumer's name shut its own asks out);
* one entry per requester, topic and lane: asking again while it waits adds nothing, and its
  age runs from the first ask. A repeat that restarted the age let ten requesters, each
  asking for a topic of 2,000 partitions every 1.5 s, keep their entries forever: a turn
  over them cost 4 s of the budget, and honest asks expired before theirs came (the second
  red team: 4 of 51 answered, 12 with no queue at all, 38 with the age from the first ask).
  The price: a repeat that comes while its first copy waits expires with it (a consumer's
  ask at 1.0 s and its repeat at 2.9 s, both lost at 3.0 s, where dropping answered the
  repeat at once). A scheduler fair in tokens rather than topics would serve both; not
  built. The lane (own connection or proxied) is part of the key: a request in a node's name
  from elsewhere, waiting in the slow lane and then expiring, must not swallow the node's
  own request for the same topic;
* an entry waits at most :data:`MAX_DEFER_AGE` seconds, then is dropped (counted,
  :attr:`DeferredHeads.expired`): without it, a one-second burst of spoofed requesters
  (640 the request buckets let through, a topic of 200 partitions each) kept honest
  readers waiting two minutes where dropping let them through at once.

Order: round-robin over requesters, first in first out within one. A single FIFO would
let one requester's 1,024 topics (of many partitions each) hold another's single topic for
seconds; in turns, a requester waits for at most one topic of each other requester
waiting. Requesters on their own connection go first: those asked for in another node's
name get one turn in :data:`~dafka.core.read_guard.PROXY_SHARE` while own ones wait, so a
flood of made-up requester IDs from unknown connections does not stand before every real
reader. A turn is a topic, not a token: a proxied topic of many partitions takes more of
the budget than one eighth (the red team's topic of 2,000 partitions asked in made-up names
took most of it; own readers were still answered, 1,627 of 2,000 within 0.5 s where the
code before answered 46). Pure: ``now`` is passed in.
"""

from __future__ import annotations

import enum
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from ..core.read_guard import PROXY_SHARE

__all__ = [
    "MAX_DEFERRED",
    "MAX_DEFERRED_PER_REQUESTER",
    "MAX_DEFERRED_PROXIED",
    "MAX_DEFER_AGE",
    "PROXIED_PER_REQUESTER",
    "Deferral",
    "DeferredHeads",
]

MAX_DEFERRED = 4_096
"""Topics of head requests waiting for the budget, over all requesters."""
MAX_DEFERRED_PER_REQUESTER = 1_024
"""Of them, for one requester (a HELLO names at most 1,024 topics)."""
MAX_DEFERRED_PROXIED = MAX_DEFERRED // 2
"""Of them, asked for in another node's name (an unknown connection, no CURVE)."""
PROXIED_PER_REQUESTER = MAX_DEFERRED_PER_REQUESTER // PROXY_SHARE
"""Of those, in one requester's name: apart from its own share, and smaller."""
MAX_DEFER_AGE = 2.0
"""Seconds a topic waits at most; it is then dropped and counted. Shorter than the 2-4 s
a consumer's next ask after a join comes (``dafka.consumer._asks``)."""


class Deferral(enum.Enum):
    """What :meth:`DeferredHeads.add` did (the value, as logged)."""

    ADDED = "added"
    DUPLICATE = "duplicate"
    """The requester's topic waits already (in the same lane): answered once, when its turn
    comes, its age counted from the first ask."""
    FULL = "full"
    REQUESTER_FULL = "requester-full"
    PROXIED_FULL = "proxied-full"


@dataclass(slots=True)
class _Waiting:
    topic: str
    since: float


Lanes = OrderedDict[str, deque[_Waiting]]


class DeferredHeads:
    """The ``(requester, topic)`` pairs whose answer waits for the budget, in turns."""

    def __init__(
        self,
        max_size: int = MAX_DEFERRED,
        max_per_requester: int = MAX_DEFERRED_PER_REQUESTER,
        max_proxied: int = MAX_DEFERRED_PROXIED,
        max_age: float = MAX_DEFER_AGE,
        proxied_per_requester: int | None = None,
    ) -> None:
        self.max_size = max_size
        self.max_per_requester = max_per_requester
        self.max_proxied = max_proxied
        self.max_age = max_age
        self.proxied_per_requester = (
            max(1, max_per_requester // PROXY_SHARE)
            if proxied_per_requester is None
            else proxied_per_requester
        )
        self._own: Lanes = OrderedDict()  # requester -> its topics, first asked first
        self._proxied: Lanes = OrderedDict()  # the same, asked for in its name
        # (requester, topic, proxied) -> its entry in its lane
        self._entries: dict[tuple[str, str, bool], _Waiting] = {}
        self._proxied_count = 0
        self._turn = 0  # pops; every PROXY_SHARE-th goes to a proxied lane
        self.expired = 0
        """Entries dropped for waiting past ``max_age`` (the caller takes them,
        :meth:`take_expired`)."""

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def proxied(self) -> int:
        """Entries asked for in another node's name."""
        return self._proxied_count

    def waiting(self, requester: str, proxied: bool | None = None) -> int:
        """Entries of ``requester``: in both lanes, or in the one ``proxied`` names."""
        own = 0 if proxied else len(self._own.get(requester, ()))
        theirs = 0 if proxied is False else len(self._proxied.get(requester, ()))
        return own + theirs

    def holds(self, requester: str, topic: str, proxied: bool) -> bool:
        """Whether ``requester``'s ``topic`` waits in that lane."""
        return (requester, topic, proxied) in self._entries

    def add(self, requester: str, topic: str, proxied: bool, now: float) -> Deferral:
        """Let ``requester``'s ``topic`` wait for its turn, within the bounds."""
        # guard: deferred-heads-lane-in-key
        key = (requester, topic, proxied)
        held = self._entries.get(key)
        # guard: deferred-heads-once-per-requester-topic
        if held is not None:  # its age runs from the first ask (see the module docstring)
            return Deferral.DUPLICATE
        # guard: deferred-heads-total-bound
        if len(self._entries) >= self.max_size:
            return Deferral.FULL
        # guard: deferred-heads-proxied-half
        if proxied and self._proxied_count >= self.max_proxied:
            return Deferral.PROXIED_FULL
        lanes = self._proxied if proxied else self._own
        lane = lanes.get(requester)
        # guard: deferred-heads-lane-shares
        share = self.proxied_per_requester if proxied else self.max_per_requester
        # guard: deferred-heads-requester-share
        if lane is not None and len(lane) >= share:
            return Deferral.REQUESTER_FULL
        if lane is None:
            lane = lanes[requester] = deque()
        waiting = _Waiting(topic, now)
        lane.append(waiting)
        self._entries[key] = waiting
        self._proxied_count += proxied
        return Deferral.ADDED

    def pop(self, now: float) -> tuple[str, str] | None:
        """The next ``(requester, topic)`` to answer (``None``: none), taken out; those
        that waited past ``max_age`` on the way are dropped and counted (:attr:`expired`)."""
        while self._entries:
            self._turn += 1
            proxied = bool(self._proxied) and (not self._own or self._turn % PROXY_SHARE == 0)
            lanes = self._proxied if proxied else self._own
            requester, lane = next(iter(lanes.items()))
            waiting = lane.popleft()
            if lane:  # its next topic after the others' next
                # guard: deferred-heads-in-turns
                lanes.move_to_end(requester)
            else:
                del lanes[requester]
            del self._entries[(requester, waiting.topic, proxied)]
            self._proxied_count -= proxied
            # guard: deferred-heads-age-bound
            if now - waiting.since > self.max_age:
                self.expired += 1
                continue
            return requester, waiting.topic
        return None

    def take_expired(self) -> int:
        """How many expired since the last call."""
        n, self.expired = self.expired, 0
        return n

    def drop(self, unwanted: Callable[[str, str], bool]) -> int:
        """Drop the entries ``(requester, topic)`` for which ``unwanted`` is true (a read
        ACL closed, a topic deleted); return how many."""
        dropped = 0
        for proxied, lanes in ((False, self._own), (True, self._proxied)):
            for requester in list(lanes):
                kept: deque[_Waiting] = deque()
                for waiting in lanes[requester]:
                    if unwanted(requester, waiting.topic):
                        del self._entries[(requester, waiting.topic, proxied)]
                        dropped += 1
                        self._proxied_count -= proxied
                    else:
                        kept.append(waiting)
                if not kept:
                    del lanes[requester]
                elif len(kept) < len(lanes[requester]):
                    lanes[requester] = kept  # (keeps its place in the turns)
        return dropped
