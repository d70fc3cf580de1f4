"""Which stores have been asked for their heads in a way they could answer (the end of
stream, ``dafka-consumer -e``).

A consumer knows where a partition ends only from what stores say they hold (their
DIRECT-HEADs), and a store that holds nothing of a topic says nothing. So "no store
holds more" can only be concluded from silence, and silence means something only after
a question the store could hear, whose answer could reach us:

* it **hears us** once its SUB has subscribed to our CONSUMER-HELLOs: our XPUB sees
  ``W`` + its ID (``ConsumerCore.on_subscription``). A store connects its SUB when our
  beacon reaches it, which can be seconds after it greeted us: a CONSUMER-HELLO sent
  before that is lost (issue 34, point 2: ``-e`` exited 0 with 0 of 2,000 records);
* we **hear it** once its STORE-HELLO reached us: it is sent when its XPUB sees our
  ``L`` + ID subscription, which comes after our ``E`` + ID one (a SUB sends its
  subscriptions in byte order), so its DIRECT-HEADs to us get through;
* it is **asked** by a CONSUMER-HELLO (or a GET-HEADS) sent once both hold. Each of the
  two events above sends a CONSUMER-HELLO, so the later one asks.

:meth:`StoreAnswers.settled` is true when at least one store is known, every store
known was asked, and nothing was asked or heard for ``quiet`` seconds. A store leaves
the table when its ``W`` subscription goes (its SUB disconnected: it stopped). What a
peer controls is bounded: at most :data:`MAX_STORES` stores (further ones are not
tracked: the end then rests on the ones that are, as before), and a node ID is checked
by the caller. A node that greets us under a made-up store ID and never subscribes only
keeps the end from being reached: ``dafka-consumer -e`` then gives up after ``--wait``
with an error, instead of exiting 0 with records missing.
"""

from __future__ import annotations

from dataclasses import dataclass

END_QUIET = 0.5
"""Seconds without an answer from stores, after the last question, before the end can be
reached."""

MAX_STORES = 1_024
"""Stores tracked at once (a bound on what peers' greetings cost)."""


@dataclass(slots=True)
class _Store:
    heard: bool = False  # its STORE-HELLO reached us: its DIRECT-HEADs do too
    hears: bool = False  # its W subscription is on our XPUB: our CONSUMER-HELLOs reach it
    asked_at: float | None = None  # a CONSUMER-HELLO or GET-HEADS sent once both held
    since: float = 0.0  # when it was first known


class StoreAnswers:
    """The stores that greeted this consumer and whether each was asked so it could answer.

    Pure: every event carries ``now``. Driven by :class:`~dafka.consumer._core.ConsumerCore`.
    """

    def __init__(self, quiet: float = END_QUIET) -> None:
        self._quiet = quiet
        self._stores: dict[str, _Store] = {}
        self._asked = 0  # stores asked (asked_at set)
        self._last = float("-inf")  # the last question asked or answer heard

    @property
    def asked(self) -> int:
        """How many stores were asked in a way they could answer."""
        return self._asked

    @property
    def known(self) -> int:
        """How many stores greeted this consumer or subscribed to its greetings."""
        return len(self._stores)

    def reachable(self) -> list[str]:
        """The stores that hear us and that we hear: a CONSUMER-HELLO reaches each, and its
        answers reach us (at most :data:`MAX_STORES`)."""
        return [sid for sid, s in self._stores.items() if s.heard and s.hears]

    def waiting(self, now: float) -> dict[str, float]:
        """The stores known and not asked yet (one direction of the connection is not up
        yet), with the seconds since each was first known."""
        return {sid: now - s.since for sid, s in self._stores.items() if s.asked_at is None}

    def _store(self, store: str, now: float) -> _Store | None:
        s = self._stores.get(store)
        # guard: stores-consumer-tracks-end-bounded
        if s is None and len(self._stores) < MAX_STORES:
            s = self._stores[store] = _Store(since=now)
        return s

    def _ask(self, s: _Store, now: float) -> None:
        # guard: store-counts-asked-hears-us
        if s.heard and s.hears:
            if s.asked_at is None:
                self._asked += 1
            s.asked_at = now
            self._last = now

    def greeted(self, store: str, now: float) -> None:
        """Its STORE-HELLO arrived; the CONSUMER-HELLO sent in answer asks it if it hears us."""
        s = self._store(store, now)
        if s is not None:
            s.heard = True
            self._ask(s, now)
        self._last = now

    def subscribed(self, store: str, now: float) -> None:
        """Its ``W`` subscription arrived; the CONSUMER-HELLO sent for it asks it if we
        have heard it."""
        s = self._store(store, now)
        if s is not None:
            s.hears = True
            self._ask(s, now)

    def unsubscribed(self, store: str) -> None:
        """Its ``W`` subscription went: its SUB disconnected (the store stopped). Forgotten;
        if it comes back, it greets us again."""
        s = self._stores.pop(store, None)
        if s is not None and s.asked_at is not None:
            self._asked -= 1

    def heads_asked(self, now: float) -> None:
        """A GET-HEADS went out: it asks every store that hears us and that we hear."""
        for s in self._stores.values():
            self._ask(s, now)
        self._last = now

    def answered(self, now: float) -> None:
        """A DIRECT-HEAD addressed to us arrived (a store's answer)."""
        self._last = now

    def settled(self, now: float) -> bool:
        """Whether every store known was asked so it could answer and none has said
        anything for ``quiet`` seconds since the last question (at least one store known)."""
        # guard: end-waits-store-greeted-consumer
        if not self._stores or self._asked < len(self._stores):
            return False
        return now - self._last >= self._quiet
