"""The producer's answers to FETCHes: what it still holds, within rates per requester.

A producer answers a FETCH from what it holds until durable (:class:`HeldTopic`): every
held record in the range (rfc46), or the held blobs from the one holding the asked offset
on, up to one answer's bound (signed, :mod:`dafka.core.answers`). FETCHes are not signed,
so the work is bounded per requester and over all requesters
(:class:`~dafka.core.limits.RequestLimiter`): FETCHes a second, dropped past their rate
(``fetches_limited``), and bytes resent a second, blobs or rfc46 records (64 MiB per
requester, bursts of 128 MiB; 256 MiB over all, bursts of 512 MiB). A FETCH whose
requester, or all requesters together, spent those bytes waits in a bounded queue until
they are paid back, then is served (``fetches_paced``), as a store's does
(:mod:`dafka.store._serve`): dropped, it was asked again only after the requester's
timeout (1 s), so a consumer catching up past the burst from a producer no store had
acknowledged stalled a second about every 64 MiB. The queue holds one entry per distinct
FETCH (asked again, it is not queued twice, nor charged a FETCH again) and at most
:data:`MAX_WAITING_FETCHES`; past that a FETCH is dropped and counted in
``fetches_limited``.

A FETCH that did not come on its requester's own connection (``proxied``: without
CURVE, nothing proves who sent it, ``dafka.core.read_guard.check_requester``) is answered
from a budget of its own per recipient, :data:`PROXY_SHARE` times smaller (FETCHes and
bytes), and never waits: whoever sends FETCHes in another node's name spends neither that
node's budget nor the wait queue, and adds at most an eighth of its rate to what the node
receives (issue 32: forged FETCHes took a catching-up consumer's budget and reflected
136 MB at it).

Sans IO: ``now`` is passed in, and :attr:`FetchServing.serve_at` says when the waiting
FETCHes can go on (the shell wakes then and calls :meth:`FetchServing.serve`).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Mapping

from ..core import messages as m
from ..core.answers import answer_full
from ..core.effects import Publish
from ..core.limits import RequestLimiter
from ..core.read_guard import PROXY_SHARE

__all__ = ["MAX_WAITING_FETCHES", "FetchServing", "HeldTopic"]

MAX_WAITING_FETCHES = 1024
"""FETCHes waiting for their requester's bytes, at most (as many as a store keeps pending)."""


class HeldTopic:
    """Per-topic state: offsets, what is held until durable, ACKs per store, HEAD schedule.

    ``held`` holds offsets ``[base, next_offset)``. Under rfc46 it is one
    content per offset (``ends`` is ``None``): one list extend per call on the
    hot path, O(1) indexing for FETCH; an ACK only moves ``dead`` (how many
    leading entries are freed), and the list is compacted once half of it is
    dead, so freeing stays O(1) per record however many are held. Under signed
    it is one blob per batch and ``ends[i]`` is one past the last offset of
    ``held[i]``, so FETCH and ACK find blobs by bisection.
    """

    __slots__ = (
        "acked",
        "acks",
        "base",
        "dead",
        "ends",
        "head_due",
        "held",
        "name",
        "nbytes",
        "next_offset",
    )

    def __init__(self, name: str, next_offset: int, batched: bool) -> None:
        self.name = name
        self.next_offset = next_offset
        self.base = next_offset
        self.held: list[bytes] = []
        self.dead = 0
        self.ends: list[int] | None = [] if batched else None
        self.nbytes = 0
        self.acked: int | None = None
        self.acks: dict[str, int] = {}
        # None until this process publishes on the topic: an offset restored
        # from the journal may never have reached the wire, so announcing it
        # would send stores fetching for a record nobody has.
        self.head_due: float | None = None


class FetchServing:
    """Answers FETCHes from the held topics, each within its requester's rates.

    ``serve_rate`` is the bytes a second resent to one requester (bursts of twice that;
    four times both over all requesters); ``fetch_rate`` and ``fetch_burst`` the FETCHes.
    """

    def __init__(
        self,
        node_id: str,
        *,
        max_fetch_count: int,
        fetch_rate: float,
        fetch_burst: float,
        serve_rate: float,
        max_waiting: int = MAX_WAITING_FETCHES,
    ) -> None:
        self._node_id = node_id
        self._max_fetch = max_fetch_count
        self._limiter = RequestLimiter(fetch_rate, fetch_burst)
        # bytes resent per requester (and 4x that in total) per second: a FETCH answer is
        # every held blob in its range, and a requester that never reads piles them up
        self._bytes_limiter = RequestLimiter(
            serve_rate, 2 * serve_rate, total_rate=4 * serve_rate, total_burst=8 * serve_rate
        )
        # FETCHes in another node's name (NULL): a budget of their own per recipient
        self._proxied = RequestLimiter(
            fetch_rate / PROXY_SHARE, max(1.0, fetch_burst / PROXY_SHARE)
        )
        share = serve_rate / PROXY_SHARE
        self._proxied_bytes = RequestLimiter(
            share, 2 * share, total_rate=4 * share, total_burst=8 * share
        )
        self.proxied_dropped = 0
        """Proxied FETCHes dropped: past their recipient's proxied FETCHes or bytes."""
        self._waiting: deque[m.Fetch] = deque()
        self._waiting_keys: set[tuple[str, str, int, int]] = set()
        self._max_waiting = max_waiting
        self.serve_at = math.inf
        """When the waiting FETCHes can go on (``inf``: none waits)."""
        self.served = 0
        self.resent = 0
        self.paced = 0
        """FETCHes that waited for their requester's bytes (each counted once)."""
        self.overflowed = 0
        """FETCHes dropped because :data:`MAX_WAITING_FETCHES` were waiting."""

    @property
    def limited(self) -> int:
        """FETCHes dropped: past their requester's FETCH rate, or the queue full."""
        return self._limiter.refused + self.overflowed

    @property
    def waiting(self) -> int:
        """FETCHes waiting for their requester's bytes."""
        return len(self._waiting)

    def on_fetch(
        self, msg: m.Fetch, state: HeldTopic, now: float, proxied: bool = False
    ) -> list[Publish]:
        """A FETCH for ``state``: its answer, or nothing if it waits for its bytes.
        ``proxied``: it did not come on its requester's connection (see the module doc)."""
        if self._range(state, msg) is None:
            return []
        if proxied:
            if self._proxied.allow(msg.requester, now) and self._proxied_bytes.allow(
                msg.requester, now, 0.0
            ):
                return self._answer(state, msg, self._proxied_bytes)
            self.proxied_dropped += 1
            return []
        if (msg.requester, msg.topic, msg.offset, msg.count) in self._waiting_keys:
            return []  # asked again (its timeout passed): answered when due, at no new cost
        if not self._limiter.allow(msg.requester, now):
            return []
        # guard: producer-bounds-bytes-resent-per
        if self._bytes_limiter.allow(msg.requester, now, 0.0):
            return self._answer(state, msg)
        self._wait(msg, now)
        return []

    def serve(self, topics: Mapping[str, HeldTopic], now: float) -> list[Publish]:
        """Answer the waiting FETCHes whose requester's bytes are paid back, in the order
        they came; the others wait on (:attr:`serve_at`)."""
        if now < self.serve_at:
            return []
        out: list[Publish] = []
        due = math.inf
        limiter = self._bytes_limiter
        queue = self._waiting
        for _ in range(len(queue)):
            msg = queue.popleft()
            if not limiter.allow(msg.requester, now, 0.0):
                queue.append(msg)
                due = min(due, limiter.ready_at(msg.requester, now))
                continue
            self._waiting_keys.discard((msg.requester, msg.topic, msg.offset, msg.count))
            state = topics.get(msg.topic)
            if state is not None:  # what was acknowledged meanwhile is no longer sent
                out.extend(self._answer(state, msg))
        self.serve_at = due
        return out

    def _wait(self, msg: m.Fetch, now: float) -> None:
        # guard: producer-bounds-fetches-waiting-their
        if len(self._waiting) >= self._max_waiting:
            self.overflowed += 1
            return
        self._waiting.append(msg)
        self._waiting_keys.add((msg.requester, msg.topic, msg.offset, msg.count))
        self.paced += 1
        self.serve_at = min(self.serve_at, self._bytes_limiter.ready_at(msg.requester, now))

    def _range(self, state: HeldTopic, msg: m.Fetch) -> tuple[int, int] | None:
        """The held offsets ``[start, end)`` that ``msg`` asks for, if any."""
        start = max(msg.offset, state.base)
        end = min(msg.offset + min(msg.count, self._max_fetch), state.next_offset)
        return (start, end) if start < end else None

    def _answer(
        self, state: HeldTopic, msg: m.Fetch, budget: RequestLimiter | None = None
    ) -> list[Publish]:
        span = self._range(state, msg)
        if span is None:
            return []
        start, end = span
        self.served += 1
        charge = (budget or self._bytes_limiter).charge
        base = state.base
        node = self._node_id
        topic = state.name
        requester = msg.requester
        ends = state.ends
        if ends is None:
            self.resent += end - start
            direct = m.DirectRecord
            contents = state.held[start - base + state.dead : end - base + state.dead]
            # charged in bytes as the blobs below are: up to ``max_fetch_count`` records of
            # any size a FETCH, and a requester's next FETCH waits until they are paid back
            # guard: producer-charges-rfc46-answers-bytes
            charge(requester, sum(map(len, contents)))
            return [
                Publish(direct(requester, topic, node, offset, content))
                for offset, content in zip(range(start, end), contents, strict=True)
            ]
        out: list[Publish] = []
        i = bisect.bisect_right(ends, start)  # the blob holding ``start``
        first = ends[i - 1] if i else base
        held = state.held
        sent = nbytes = 0
        while i < len(ends) and first < end and not answer_full(sent, nbytes):
            last_end = ends[i]
            out.append(
                Publish(m.DirectRecord(requester, topic, node, first, held[i], last_end - first))
            )
            self.resent += last_end - first
            charge(requester, len(held[i]))
            sent += 1
            nbytes += len(held[i])
            first = last_end
            i += 1
        return out
