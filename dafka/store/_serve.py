"""A store core's answers to readers (:class:`StoreServing`).

FETCHes are queued (de-duplicated by requester, topic, partition and offset, capped,
rate-limited per requester) and served chunk by chunk, round-robin, whole batches
verbatim, within ``serve_chunk`` records and ``SERVE_BYTES`` bytes per step and a byte
rate per requester and in total. Under ``signed`` one answer holds at most
``ANSWER_BATCHES`` batches and ``ANSWER_BYTES`` bytes, whatever ``count`` asks for: the
requester FETCHes again from where it ended (:mod:`dafka.core.answers`). GET-HEADS and
CONSUMER-HELLO are answered with one DIRECT-HEAD per partition, within a global budget
(a topic read costs one token, each partition one more); a topic of an accepted request
that meets it spent waits for it (:mod:`._heads_deferred`: in turns over requesters, 4,096
in all, 1,024 a requester and 128 in its name from elsewhere, half in other nodes' names,
2 s at most) and is answered, read then, as it refills; past those bounds it is dropped and
counted (``heads_limited``).
A FETCH below the retention tail is answered with a DIRECT-HEAD carrying the tail; under
rfc46 a FETCH answered in full below the head is followed by a DIRECT-HEAD
(``docs/wire.md`` §13). Read ACLs are checked on the way in.

A request must come on its requester's own connection
(:func:`~dafka.core.read_guard.check_requester`): under CURVE one naming another node is
refused; without CURVE it is served from a budget of its own per recipient,
:data:`~dafka.core.read_guard.PROXY_SHARE` times smaller (requests, bytes), never
tells the store what the recipient has taken (its credit), and may hold at most half of
the pending queue: whoever asks in another node's name spends none of that node's budget.

Under ``signed`` what goes to one requester is paced by :class:`.credits.SendCredits`:
the data XPUB keeps few messages per connection, so DIRECT-HEADs wait in the core
(bounded, :data:`MAX_HELD_HEADS`) and FETCHes stay pending until the requester has
taken what it was sent. The ACKs and the store's own gap FETCHes (``gaps.py``) that wait
for credit go out through the same paced sender (:meth:`StoreServing._send_paced`).
Pure: the time is passed in.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..core import messages as m
from ..core.answers import ANSWER_BATCHES, answer_full
from ..core.effects import Publish
from ..core.limits import RequestLimiter, TokenBucket
from ..core.read_guard import PROXY_SHARE, RequesterCheck, RequestLog, check_requester
from ..core.topic_counts import BYTES_SERVED, RECORDS_SERVED
from ..errors import StorageError
from ..ids import is_node_id
from ..storage.base import Storage
from ._credits import (
    ACK_HOLD,
    DEFAULT_SEND_CREDITS,
    FETCH_SUBSCRIBERS,
    HOLD,
    SendCredits,
)
from ._gaps import StoreGaps
from ._heads_deferred import Deferral, DeferredHeads
from ._partitions import PartitionTable
from ._policy import StorePolicy
from ._state import PartitionKey, StoreConfig, StoreStats, _Batch, _PendingFetch

log = logging.getLogger(__name__)

_Held = Any  # a recipient's held messages: a deque of DIRECT-HEADs, or ACK heads or gap FETCHes by partition


def _take_heads(held: deque[m.DirectHead], n: int) -> list[m.DirectHead]:
    return [held.popleft() for _ in range(n)]


def _take_acks(held: dict[PartitionKey, int], n: int) -> list[m.Ack]:
    """The first ``n`` partitions' ACKs, each at the latest head held for it."""
    return [m.Ack(key[1], key[0], held.pop(key)) for key in list(held)[:n]]


def _take_fetches(held: dict[PartitionKey, m.Fetch], n: int) -> list[m.Fetch]:
    """The first ``n`` partitions' gap FETCHes, each the latest held for it."""
    return [held.pop(key) for key in list(held)[:n]]


SIGNED_READ_BATCHES = 4
"""Signed batches read per serving step of one FETCH (each may be up to 16 MiB)."""
SERVE_BYTES = 16 * 1024 * 1024
"""Bytes of batches served per step, over every pending FETCH."""
MAX_HELD_HEADS = 16_384
"""DIRECT-HEADs waiting for their requesters' credit, over all requesters; past it a
head answer is left out and counted (``heads_limited``), as past the bounds of the topics
waiting for the head budget (:mod:`._heads_deferred`)."""
DEFER_WAKE_TOKENS = 32.0
"""Topics waiting for the head budget are answered again once it holds this many tokens
(6.4 ms at the default 5,000 a second), not at each one: a queue of made-up topics (one
token each) would otherwise wake the IO loop thousands of times a second."""
_LOG_PERIOD = 5.0


class StoreServing:
    """FETCH, GET-HEADS and CONSUMER-HELLO in; DIRECT-RECORD and DIRECT-HEAD out.

    It owns the pending FETCHes, the rate limits and budgets of what is served, and
    (``signed``) the credit of each requester with what waits for it: DIRECT-HEADs,
    ACKs and (from :attr:`.gaps.StoreGaps.held_fetches`) the store's own gap FETCHes.
    It reads the partition table and the policy's read ACLs."""

    def __init__(
        self,
        config: StoreConfig,
        stats: StoreStats,
        storage: Storage,
        table: PartitionTable,
        policy: StorePolicy,
        gaps: StoreGaps,
        *,
        fetch_rate: float = 2000.0,
        fetch_burst: float = 4000.0,
        heads_rate: float = 20.0,
        heads_burst: float = 40.0,
        heads_answer_rate: float = 5000.0,
        heads_answer_burst: float = 10000.0,
        serve_rate: float = 64 * 1024 * 1024,
        serve_total_rate: float = 256 * 1024 * 1024,
        send_credits: int | None = DEFAULT_SEND_CREDITS,
    ) -> None:
        node_id = config.node_id
        self.stats = stats
        self._storage = storage
        self._node_id = node_id
        self._signed = config.signed
        self._name = config.name
        self._max_fetch_count = config.max_fetch_count
        self._serve_chunk = config.serve_chunk
        self._max_pending = config.max_pending_fetches
        self._table = table
        # read only: the partition table's and the policy's
        self._heads: Mapping[PartitionKey, int] = table.heads
        self._tails: Mapping[PartitionKey, int] = table.tails
        self._profiles: Mapping[PartitionKey, str] = table.profiles
        self._signed_heads: Mapping[PartitionKey, m.Head] = table.signed_heads
        self._readers: Mapping[str, frozenset[str]] = policy.readers
        self.may_read = policy.may_read
        self._held_fetches = gaps.held_fetches  # the gap FETCHes waiting for credit
        self._pending: deque[_PendingFetch] = deque()
        self._pending_keys: set[tuple[str, str, str, int]] = set()
        self._fetch_limiter = RequestLimiter(fetch_rate, fetch_burst)
        self._heads_limiter = RequestLimiter(heads_rate, heads_burst)
        # requests in another node's name (NULL, ``read_guard.check_requester``): a budget
        # of their own per recipient, PROXY_SHARE times smaller (requests and bytes)
        self._requests = RequestLog(node_id)
        self._proxied_fetches = RequestLimiter(
            fetch_rate / PROXY_SHARE, max(1.0, fetch_burst / PROXY_SHARE)
        )
        self._proxied_heads = RequestLimiter(
            heads_rate / PROXY_SHARE, max(1.0, heads_burst / PROXY_SHARE)
        )
        self._proxied_bytes = RequestLimiter(
            serve_rate / PROXY_SHARE,
            2 * serve_rate / PROXY_SHARE,
            total_rate=serve_total_rate / PROXY_SHARE,
            total_burst=2 * serve_total_rate / PROXY_SHARE,
        )
        # bytes served per requester and in total: what a requester that never reads can
        # pile up in the data PUB's queue grows at most this fast (docs/wire.md §11.6)
        self._bytes_limiter = RequestLimiter(
            serve_rate,
            2 * serve_rate,
            total_rate=serve_total_rate,
            total_burst=2 * serve_total_rate,
        )
        # DIRECT-HEADs sent in answer to GET-HEADS / CONSUMER-HELLO, over all requesters
        # (one request may name 1,024 topics of many partitions each): charged per topic
        self._heads_out = TokenBucket(heads_answer_rate, heads_answer_burst)
        # the topics of accepted requests that met it spent, answered in turns as it refills
        self._deferred = DeferredHeads()
        self._deferred_at = math.inf  # when the budget holds DEFER_WAKE_TOKENS again
        self._limited_logged = -math.inf
        # signed: what one requester may have on its way (the data XPUB keeps few messages)
        self._credits = (
            SendCredits(send_credits) if self._signed and send_credits is not None else None
        )
        self._held_heads: dict[str, deque[m.DirectHead]] = {}
        self._held_count = 0
        self._held_acks: dict[str, dict[PartitionKey, int]] = {}
        """Per producer, the ACKs waiting for its credit: a partition's latest committed
        head, one per partition held (so bounded by them)."""
        self.serve_at = math.inf
        """When serving can go on: now while budgets ran out, the end of a requester's
        hold while every fetch waits for credit, ``inf`` when nothing waits."""

    @property
    def paces_requesters(self) -> bool:
        """Whether what goes to one requester is paced by its credit (``signed``): the
        shell's data XPUB then keeps a byte-safe count (``dafka.io.bounds``)."""
        return self._credits is not None

    def has_pending(self, now: float = math.inf) -> bool:
        """True while fetches or head answers can be served at ``now``: the shell should
        poll without blocking (:attr:`serve_at` says when the waiting ones can)."""
        deferred = bool(self._deferred) and now >= self._deferred_at
        # guard: rfc46-store-waits-for-serve-at
        if self._credits is None:  # rfc46: a FETCH waiting for its bytes waits (no spin)
            return (bool(self._pending) and now >= self.serve_at) or deferred
        held = self._held_heads or self._held_acks or self._held_fetches
        return (bool(self._pending or held) and now >= self.serve_at) or deferred

    def drop_unreadable(self) -> None:
        """The read ACLs changed: FETCHes queued and head answers deferred before an ACL
        closed are not served."""
        # guard: store-drops-queued-fetches-when
        if self._readers and self._pending:
            kept = [f for f in self._pending if self.may_read(f.requester, f.topic)]
            self.stats.read_refused += len(self._pending) - len(kept)
            self._pending = deque(kept)
            self._pending_keys = {f.key for f in kept}
        # guard: store-drops-deferred-heads-unreadable
        if self._readers and self._deferred:
            may_read = self.may_read
            self.stats.read_refused += self._deferred.drop(lambda r, t: not may_read(r, t))

    def forget_topic(self, topic: str) -> None:
        """Drop the FETCHes and deferred head answers of ``topic`` (deleted)."""
        self._pending = deque(f for f in self._pending if f.topic != topic)
        self._pending_keys = {k for k in self._pending_keys if k[1] != topic}
        # guard: store-drops-deferred-heads-of-deleted
        self._deferred.drop(lambda _, t: t == topic)

    def _check_requester(self, kind: str, requester: str, b: _Batch) -> RequesterCheck:
        """Whether the request being handled came on ``requester``'s own connection;
        one that did not is counted (and logged, rate-limited)."""
        sender = b.sender
        check = check_requester(requester, sender)
        if check is not RequesterCheck.OWN:
            requests = self._requests
            requests.note(check, kind, requester, sender, b.now)
            self.stats.requests_forged = requests.forged
            self.stats.requests_proxied = requests.proxied
        return check

    def on_fetch(self, msg: m.Fetch, b: _Batch) -> None:
        now = b.now
        if msg.requester == self._node_id or msg.count == 0:
            self.stats.ignored += 1
            return
        check = self._check_requester("fetch", msg.requester, b)
        if check is RequesterCheck.FORGED:
            return
        # guard: store-answers-proxied-requests-budget
        proxied = check is RequesterCheck.PROXIED
        if self._credits is not None and not proxied:  # what was sent before has arrived
            self._credits.taken(msg.requester, (msg.topic, msg.partition), msg.offset)
        # guard: store-read-acl-fetch
        if self._readers and not self.may_read(msg.requester, msg.topic):
            self.stats.read_refused += 1
            return
        key = (msg.topic, msg.partition)
        head = self._heads.get(key)
        if head is None or msg.offset > head:
            return  # nothing stored to answer with; the producer or another store may
        if not is_node_id(msg.requester):
            self.stats.malformed += 1
            return
        if self._table.pinned_elsewhere(key):
            return
        if self._signed and msg.offset < self._tails.get(key, 0):
            # Below the retention tail: say so (DIRECT-HEAD with the tail), rate-limited.
            if not self._fetch_limiter.allow(msg.requester, now):
                self.stats.fetches_limited += 1
                return
            answer = (msg.requester, msg.topic, msg.partition)
            if answer not in b.tail_answers:  # one per requester and partition per batch
                b.tail_answers.append(answer)
            return
        pkey = (msg.requester, msg.topic, msg.partition, msg.offset)
        if pkey in self._pending_keys:
            return
        if len(self._pending) >= (self._max_pending // 2 if proxied else self._max_pending):
            self.stats.fetches_refused += 1
            log.debug("store.fetch_refused requester=%s", msg.requester)
            return
        limiter = self._proxied_fetches if proxied else self._fetch_limiter
        if not limiter.allow(msg.requester, now):
            self.stats.fetches_limited += 1
            return
        end = msg.offset + min(msg.count, self._max_fetch_count)
        self._pending.append(
            _PendingFetch(
                pkey, msg.requester, msg.topic, msg.partition, msg.offset, end, proxied=proxied
            )
        )
        self._pending_keys.add(pkey)
        self.stats.fetches_queued += 1

    def on_head_request(self, requester: str, topics: Sequence[str], b: _Batch) -> None:
        if not is_node_id(requester):
            self.stats.malformed += 1
            return
        check = self._check_requester("heads", requester, b)
        if check is RequesterCheck.FORGED:
            return
        # guard: store-read-acl-head-requests
        if self._readers:
            allowed = tuple(t for t in topics if self.may_read(requester, t))
            if len(allowed) < len(topics):
                self.stats.read_refused += 1
                if not allowed:
                    return
            topics = allowed
        proxied = check is RequesterCheck.PROXIED
        # guard: store-answers-proxied-requests-budget-2
        limiter = self._proxied_heads if proxied else self._heads_limiter
        if not limiter.allow(requester, b.now):
            self.stats.fetches_limited += 1
            return
        b.head_requests.append((requester, topics, proxied))

    def answer_heads(
        self,
        requester: str,
        topics: Sequence[str],
        out: list[Publish],
        now: float,
        proxied: bool = False,
    ) -> None:
        """Answer an accepted head request, topic by topic, within the budget; the topics
        past it wait for it (:mod:`._heads_deferred`), after those already waiting."""
        self._answer_deferred(out, now)
        budget = self._heads_out
        full: Deferral | None = None  # a bound reached: the rest of the request is past it
        left_out = 0
        for topic in topics:  # a topic read costs one token, each answer one more
            # guard: store-bounds-head-answers-over
            if self._deferred or not budget.allow(now):
                if full is not None and not self._deferred.holds(requester, topic, proxied):
                    left_out += 1  # (a HELLO of 1,024 topics past the bounds: one verdict)
                    continue
                # guard: store-defers-head-answers-past-budget
                verdict = self._defer(requester, topic, proxied, now)
                if verdict not in (Deferral.ADDED, Deferral.DUPLICATE):
                    full = verdict
                continue
            self._answer_topic(requester, topic, out)
        if left_out and full is not None:
            self._limited(full.value, requester, now, left_out)
        self._wake_for_deferred(now)

    def _answer_topic(self, requester: str, topic: str, out: list[Publish]) -> None:
        """One DIRECT-HEAD per partition of ``topic`` to ``requester``, as they are now
        (the budget's token for reading the topic taken; one more charged per partition)."""
        try:
            parts = self._storage.partitions(topic)
        except StorageError as exc:
            log.warning("store.heads_failed topic=%r error=%s", topic, exc)
            return
        self._heads_out.charge(len(parts))
        profiles = self._profiles
        signed_heads = self._signed_heads
        for partition, head in parts:
            key = (topic, partition)
            if profiles.get(key, self._name) != self._name:
                continue
            proof = signed_heads.get(key)
            tail = self._tails.get(key, 0) if self._signed else 0
            self._direct(
                m.DirectHead(requester, topic, partition, head, proof, tail if tail > 0 else None),
                out,
            )

    def _defer(self, requester: str, topic: str, proxied: bool, now: float) -> Deferral:
        """Let ``requester``'s ``topic`` wait for the budget; past the bounds it is left out,
        counted (``heads_limited``) and logged at most every 5 s."""
        verdict = self._deferred.add(requester, topic, proxied, now)
        if verdict is Deferral.ADDED:
            self.stats.heads_deferred += 1
        elif verdict is not Deferral.DUPLICATE:
            self._limited(verdict.value, requester, now)
        return verdict

    def _limited(self, reason: str, requester: str, now: float, n: int = 1) -> None:
        self.stats.heads_limited += n
        if now - self._limited_logged >= _LOG_PERIOD:
            self._limited_logged = now
            log.warning(
                "store.heads_limited id=%s reason=%s requester=%.32s deferred=%d limited=%d",
                self._node_id,
                reason,
                requester,
                len(self._deferred),
                self.stats.heads_limited,
            )

    def _answer_deferred(self, out: list[Publish], now: float) -> None:
        """Answer the topics waiting for the budget, in turns, while it holds a token."""
        deferred = self._deferred
        budget = self._heads_out
        while deferred and budget.ready_at(now) <= now:
            turn = deferred.pop(now)
            if turn is None:
                break
            budget.allow(now)
            self._answer_topic(turn[0], turn[1], out)
        expired = deferred.take_expired()
        if expired:
            self._limited("expired", "-", now, expired)

    def _wake_for_deferred(self, now: float) -> None:
        """Have the shell come back when the budget has refilled for what waits
        (:meth:`has_pending`, :attr:`serve_at`): not before, so it does not spin."""
        if self._deferred:
            self._deferred_at = self._heads_out.ready_at(now, DEFER_WAKE_TOKENS)
            self.serve_at = min(self.serve_at, self._deferred_at)
        else:
            self._deferred_at = math.inf

    def answer_tail(self, requester: str, topic: str, partition: str, out: list[Publish]) -> None:
        """Tell a consumer that FETCHed below the tail where the partition now starts."""
        key = (topic, partition)
        head = self._heads.get(key)
        tail = self._tails.get(key, 0)
        if head is None or tail <= 0:
            return
        proof = self._signed_heads.get(key)
        self._direct(m.DirectHead(requester, topic, partition, head, proof, tail), out)

    def _direct(self, head: m.DirectHead, out: list[Publish]) -> None:
        """Send ``head`` now, or once its recipient has credit (``signed``)."""
        if self._credits is None:
            out.append(Publish(head))
            self.stats.heads_sent += 1
            return
        if self._held_count >= MAX_HELD_HEADS:
            self.stats.heads_limited += 1
            return
        held = self._held_heads.get(head.recipient)
        if held is None:
            held = self._held_heads[head.recipient] = deque()
        held.append(head)
        self._held_count += 1

    def ack(self, keys: Sequence[PartitionKey], out: list[Publish], now: float) -> None:
        """ACK each of ``keys`` at its committed head: at once, or (``signed``) as its
        producer has credit, the latest head of a partition replacing one still held.

        Sent at once, the ACKs of a drain that advanced many partitions of one producer
        (one of many topics) went past the data XPUB's mark and were dropped silently:
        the producer waited for its next HEAD to be answered, a second or two, with its
        flush or its budget stalled (30 topics: 1-2 s)."""
        heads = self._heads
        if self._credits is None:
            for key in keys:
                head = heads.get(key)
                if head is not None:
                    out.append(Publish(m.Ack(key[1], key[0], head)))
                    self.stats.acks_sent += 1
            return
        held_acks = self._held_acks
        for key in keys:
            head = heads.get(key)
            if head is not None:
                held = held_acks.get(key[1])  # a producer's partition is its node ID
                if held is None:
                    held = held_acks[key[1]] = {}
                held[key] = head
        self.serve_at = min(self.serve_at, self._send_held_acks(out, now))

    def _send_held_acks(self, out: list[Publish], now: float) -> float:
        """Send the held ACKs their producers have credit for; return when the next of the
        rest may go (``inf``: none left)."""
        sent, due = self._send_paced(self._held_acks, _take_acks, out, now, ACK_HOLD)
        self.stats.acks_sent += sent
        return due

    def _send_held(self, out: list[Publish], now: float) -> float:
        """Send the held ACKs, gap FETCHes and DIRECT-HEADs their recipients have credit
        for; return when the next of the rest may go (``inf``: none left)."""
        due = self._send_held_acks(out, now)
        sent, fetches_due = self._send_paced(
            self._held_fetches, _take_fetches, out, now, HOLD, FETCH_SUBSCRIBERS
        )
        self.stats.fetches_sent += sent
        sent, heads_due = self._send_paced(self._held_heads, _take_heads, out, now, HOLD)
        self._held_count -= sent
        self.stats.heads_sent += sent
        return min(due, fetches_due, heads_due)

    def _send_paced(
        self,
        waiting: dict[str, _Held],
        take: Callable[[_Held, int], Iterable[m.Message]],
        out: list[Publish],
        now: float,
        hold: float,
        shared: str | None = None,
    ) -> tuple[int, float]:
        """Send what waits for each recipient in ``waiting`` as far as its credit goes
        (``take`` removes that many of its messages), each holding the credit ``hold``
        seconds; recipients left with nothing are forgotten, the others go last next time.
        ``shared``: an account that every one of these messages also goes to and is
        charged to (its credit bounds them all, in turns: one recipient with thousands
        waiting does not hold the others back until it is done). Returns how many went and
        when the next of the rest may go (``inf``: none left, or not ``signed``)."""
        credits = self._credits
        if credits is None or not waiting:
            return 0, math.inf
        sent, due = 0, math.inf
        for recipient in list(waiting):
            # guard: signed-store-paces-what-sends-3
            if shared is not None and not credits.room(shared, now):
                return sent, min(due, credits.free_at(shared))  # the rest wait for it
            held = waiting[recipient]
            accounts = (recipient,) if shared is None else (recipient, shared)
            # guard: signed-store-paces-what-sends-2
            n = min(min(credits.room(a, now) for a in accounts), len(held))
            if n:
                out.extend(Publish(msg) for msg in take(held, n))
                for a in accounts:
                    credits.spend(a, n, now, hold=hold)
                sent += n
            if held:  # it goes on once each account it waits for has room, after the others
                full = [credits.free_at(a) for a in accounts if not credits.room(a, now)]
                due = min(due, max(full, default=now))
                waiting[recipient] = waiting.pop(recipient)
            else:
                del waiting[recipient]
        return sent, due

    def serve(self, out: list[Publish], now: float) -> None:
        """Serve up to ``serve_chunk`` records and ``SERVE_BYTES`` bytes, round-robin.

        Whole batches are charged, so one step never sends more than the
        budgets plus one batch, however many fetches are pending. A fetch whose
        requester (or all requesters together) spent its bytes per second waits in the
        queue until they are paid back (counted, ``fetches_paced``), as does one whose
        requester has no credit left (``signed``); :attr:`serve_at` says when serving
        can go on.
        """
        # the deferred answers first: those held for credit go out in this turn's send
        self._answer_deferred(out, now)
        due = self._send_held(out, now)
        credits = self._credits
        own = self._bytes_limiter
        budget = self._serve_chunk
        room = SERVE_BYTES
        queue = self._pending
        # fetches that must wait (bytes spent, no credit) are set aside for the rest of this
        # call and go back to the queue's end after it: kept in the rounds, 511 of them
        # waiting were each checked again in every round of one share (a record or two) of
        # the one that could go on, about 1,400 rounds, 1.1 s of CPU in one call (the red team)
        parked: list[_PendingFetch] = []
        while budget > 0 and room > 0 and queue:
            share = max(1, budget // len(queue))
            for _ in range(len(queue)):
                if budget <= 0 or room <= 0:
                    break
                fetch = queue.popleft()
                limiter = self._proxied_bytes if fetch.proxied else own
                # guard: store-bounds-bytes-served-per
                if not limiter.allow(fetch.requester, now, 0.0):
                    # its bytes a second are spent: it waits in the queue (whose bound
                    # holds it) for them, not dropped to be asked again after the
                    # requester's timeout (a catch-up past its burst stalled a second
                    # at each answer)
                    self.stats.fetches_paced += 1
                    due = min(due, limiter.ready_at(fetch.requester, now))
                    parked.append(fetch)
                    continue
                free = ANSWER_BATCHES
                if credits is not None:
                    free = credits.room(fetch.requester, now)
                    # guard: signed-store-paces-what-sends
                    if free == 0:  # it has not taken what it was sent yet
                        due = min(due, credits.free_at(fetch.requester))
                        parked.append(fetch)
                        continue
                before = len(out)
                sent, size, done = self._serve_one(fetch, min(share, budget), out, free)
                if credits is not None:
                    credits.spend(
                        fetch.requester,
                        len(out) - before,
                        now,
                        size,
                        (fetch.topic, fetch.partition),
                        fetch.next,
                    )
                limiter.charge(fetch.requester, size)
                # guard: bounded-serving-steps
                budget -= sent
                # guard: bounded-serving-steps-2
                room -= size
                if done:
                    self._pending_keys.discard(fetch.key)
                    if not self._signed and fetch.next >= fetch.end:
                        self._tell_more(fetch, out)
                else:
                    queue.append(fetch)
        if queue:
            due = now  # the budgets ran out first: go on at once
        queue.extend(parked)
        self.serve_at = due
        self._wake_for_deferred(now)

    def _tell_more(self, fetch: _PendingFetch, out: list[Publish]) -> None:
        """rfc46: a FETCH whose count ran out below what is held is followed by a
        DIRECT-HEAD to its requester. A C consumer FETCHes only when a record shows a
        gap or a HEAD / DIRECT-HEAD shows more (in windows up to the next multiple of
        100,000), so without it a C consumer catching up with no live producer stops
        after its first window; ours take it as the hint it is."""
        head = self._heads.get((fetch.topic, fetch.partition))
        if head is None or head < fetch.end:
            return
        self._direct(m.DirectHead(fetch.requester, fetch.topic, fetch.partition, head), out)

    def _serve_one(
        self, fetch: _PendingFetch, limit: int, out: list[Publish], messages: int
    ) -> tuple[int, int, bool]:
        """Send about ``limit`` records of ``fetch`` in at most ``messages`` signed batches;
        return (records sent, bytes, finished).

        Batches go out whole and verbatim; the first may start before the
        offset asked for (a signed batch holding it).
        """
        want = min(limit, fetch.end - fetch.next)
        if want <= 0:
            return 0, 0, True
        signed = self._signed
        # rfc46 batches hold one record; signed ones up to 64 Ki, so read a few at a time,
        # and no more than the answer's bound leaves (dafka.core.answers)
        max_batches = (
            min(want, SIGNED_READ_BATCHES, max(1, ANSWER_BATCHES - fetch.batches), messages)
            if signed
            else want
        )
        try:  # (signed: no batch past what this step sends, since each read is a copy)
            batches = self._storage.read(
                fetch.topic, fetch.partition, fetch.next, max_batches, want if signed else None
            )
        except StorageError as exc:
            log.warning(
                "store.read_failed topic=%s offset=%d error=%s", fetch.topic, fetch.next, exc
            )
            return 0, 0, True
        sent = 0
        size = 0
        name = self._name
        finished = len(batches) < max_batches
        for batch in batches:
            first, last = batch.first_offset, batch.last_offset
            if first > fetch.next or last < fetch.next or batch.profile != name:
                finished = True  # a hole, or a batch this profile cannot carry
                break
            # rfc46: one record, at the batch's last offset (offsets before it were refused)
            offset, count = (first, last - first + 1) if signed else (last, 1)
            out.append(
                Publish(
                    m.DirectRecord(
                        fetch.requester,
                        fetch.topic,
                        fetch.partition,
                        offset,
                        batch.blob,
                        count,
                    )
                )
            )
            sent += last - first + 1
            size += len(batch.blob)
            fetch.next = last + 1
            if signed:
                fetch.batches += 1
                fetch.nbytes += len(batch.blob)
                # guard: signed-fetch-answer-bounded-whatever
                if answer_full(fetch.batches, fetch.nbytes):
                    finished = True  # the answer's bound: the requester asks again from here
                    break
            if fetch.next >= fetch.end or sent >= want:
                finished = False  # stopped early: what was read is not all there is
                break
        self.stats.records_served += sent
        self.stats.bytes_served += size
        if sent:
            counts = self.stats.topics.slot(fetch.topic)
            counts[RECORDS_SERVED] += sent
            counts[BYTES_SERVED] += size
        return sent, size, finished or fetch.next >= fetch.end
