"""The producer's node logic, sans IO, for both wire profiles.

A producer owns one partition (its node ID) in every topic it writes. It
numbers records per topic, keeps them in memory until they are durable, and
answers FETCHes for what it still holds. Compared with the C reference
(``dafka_producer.c`` / ``dafka_unacked_list.c``) it:

* serves the *right* content for every fetched offset (the reference resends the
  wrong records at 256 or more past the oldest unacked one),
* answers a FETCH with exactly the records asked for, capped by
  ``max_fetch_count`` (and under ``signed`` by one answer's bound,
  :mod:`dafka.core.answers`), and rate-limits FETCHes per requester (a FETCH past
  its bytes a second waits for them, :mod:`dafka.producer._serve`),
* refuses ACKs for offsets it never published, so a confused or hostile store
  cannot make it drop records no store has.

What a RECORD holds depends on the profile (``dafka.wire.profiles``):

* ``rfc46``: one unsigned record. The core keeps one content per offset and
  publishes with one :class:`~dafka.core.effects.PublishRecords` per call.
* ``signed``: whatever was queued when the IO loop woke is sealed into signed
  batches (natural batching, up to the profile's record and byte caps). The
  core keeps the blobs, re-serves them verbatim to FETCHes, and frees a blob
  once every offset in it is durable.

*Durable* means acknowledged by ``min_acks`` distinct stores. Under
``signed`` an ACK names its store (by the key that signed it), and counts
only if that store is in ``trusted_stores`` (node IDs; ``None`` trusts any
store whose signature verifies) and the signature verifies: a forged ACK never
frees a record. rfc46 ACKs are anonymous, so ``min_acks`` must be 1 there.

The core reads no clock and owns no socket: the IO shell passes ``now`` (and the wall
clock, ``wall_ms``, that gap statements are stamped with) and sends the effects it
returns; HEADs are signed by the profile when encoded. Messages go in by the one
contract (:mod:`dafka.core.ready`): :meth:`ProducerCore.step`, then ``ready()`` (FETCH
answers to publish, :class:`Acked` to deliver) and ``advance()``. ``publish`` is the
application's command: its shell reserves the offsets before it and logs what it
returns before sending it (:mod:`dafka.producer._ready`). A restart's recovery of
an earlier run is a part of its own (:mod:`dafka.producer._runs`).
"""

from __future__ import annotations

import bisect
import heapq
import logging
from collections.abc import Collection, KeysView, Mapping, Sequence
from dataclasses import dataclass

from ..core import messages as m
from ..core.effects import Acked, Effect, Outgoing, Publish, PublishRecords
from ..core.read_guard import (
    ReadView,
    RequesterCheck,
    RequestLog,
    Sender,
    check_requester,
)
from ..core.ready import Ready
from ..errors import ConfigError, ProfileError
from ..ids import check_topic
from ..wire.profiles import RFC46, Profile
from ..wire.rfc46 import Command, direct_prefix
from ..wire.signed_builder import RecordExtra, needs_rich
from ..wire.signed_rich import Codec
from ._recovery import DEFAULT_BUDGET, DEFAULT_WAIT, Recovery
from ._runs import EarlierRuns
from ._serve import FetchServing, HeldTopic

log = logging.getLogger(__name__)

__all__ = ["ProducerCore", "ProducerStats"]

MAX_STORES_TRACKED = 256
"""Stores whose ACK offsets are remembered per topic (trust-any-store mode can meet many)."""

_ANONYMOUS = ""  # the store of an rfc46 ACK

MAX_UNTRUSTED_NAMED = 16
"""Untrusted stores whose ACK names a producer remembers, to say why it waits."""


@dataclass(frozen=True, slots=True)
class ProducerStats:
    """Counters of what the core refused or served, for metrics and logs."""

    foreign: int
    """ACKs/FETCHes addressed to another partition (a prefix leak or a bug)."""
    unknown_topic: int
    """ACKs/FETCHes for a topic this producer never wrote."""
    bogus_acks: int
    """ACKs above the last published offset: a store can't ack what we never sent."""
    stale_acks: int
    """ACKs at or below what that store had already acknowledged (normal with several stores)."""
    fetches_served: int
    records_resent: int
    untrusted_acks: int = 0
    """Signed ACKs from a store that is not in ``trusted_stores``."""
    forged_acks: int = 0
    """Signed ACKs whose signature does not verify (or that are not signed at all)."""
    fetches_limited: int = 0
    """FETCHes dropped: past their requester's FETCH rate, or with the wait queue full."""
    fetches_paced: int = 0
    """FETCHes that waited for their requester's bytes a second to be paid back, then were
    answered (:mod:`dafka.producer._serve`)."""
    recovered: int = 0
    """Offsets of an earlier run found on stores and held again after a restart."""
    recovery_rejected: int = 0
    """Answers to a recovery FETCH that were not batches this producer signed."""
    gap_offsets: int = 0
    """Offsets of an earlier run that no store held, closed by a signed gap statement
    (signed) or numbered again (rfc46)."""
    read_refused: int = 0
    """FETCHes for a topic whose read ACL does not name the requester (nor a trusted store)."""
    requests_forged: int = 0
    """FETCHes refused under CURVE: they named another node than their connection's key."""
    fetches_proxied: int = 0
    """FETCHes (NULL) that did not come on their requester's connection: answered from a
    small budget of their own per recipient (:mod:`dafka.producer._serve`)."""


class ProducerCore:
    """Numbers, holds and re-serves one producer's records; counts ACKs; emits HEADs.

    ``next_offsets`` restores where each topic continues after a restart (from
    the state directory's offset journal). Offsets below it are never reused.
    ``profile`` is the node's wire profile (``rfc46`` unless given; a signed
    profile needs the producer's identity to seal batches). ``trusted_stores``
    are the node IDs whose ACKs count (signed profile; ``None``: any store
    whose ACK signature verifies).
    """

    def __init__(
        self,
        node_id: str,
        *,
        next_offsets: Mapping[str, int] | None = None,
        head_interval: float = 1.0,
        max_fetch_count: int = 100_000,
        profile: Profile = RFC46,
        min_acks: int = 1,
        trusted_stores: Collection[str] | None = None,
        fetch_rate: float = 2000.0,
        fetch_burst: float = 4000.0,
        serve_rate: float = 64 * 1024 * 1024,
        acked_offsets: Mapping[str, int] | None = None,
        recovery_wait: float = DEFAULT_WAIT,
        logged: Sequence[tuple[str, int, int, bytes]] = (),
        recovery_budget: int = DEFAULT_BUDGET,
        journal_in_doubt: bool = False,
        run: int | None = None,
        acked_in_doubt: bool = False,
    ) -> None:
        if head_interval <= 0:
            raise ValueError("head_interval must be positive")
        if max_fetch_count <= 0:
            raise ValueError("max_fetch_count must be positive")
        if min_acks < 1:
            raise ConfigError("min_acks must be at least 1")
        if min_acks > 1 and not profile.keys:
            raise ConfigError(
                "min_acks > 1 needs the signed profile: rfc46 ACKs do not say which store sent them"
            )
        if trusted_stores is not None and len(trusted_stores) < min_acks:
            raise ConfigError(
                f"min_acks={min_acks} can never be reached with {len(trusted_stores)} trusted stores"
            )
        self._node_id = node_id
        self._profile = profile
        self._batched = profile.batched
        self._head_interval = float(head_interval)
        self._max_fetch = max_fetch_count
        self._min_acks = min_acks
        self._trusted = frozenset(trusted_stores) if trusted_stores is not None else None
        self._topic_min_acks: dict[str, int] = {}
        self._serving = FetchServing(
            node_id,
            max_fetch_count=max_fetch_count,
            fetch_rate=fetch_rate,
            fetch_burst=fetch_burst,
            serve_rate=serve_rate,
        )
        self._read_view = ReadView()
        self._read_refused = 0
        self._requests = RequestLog(node_id)
        self._topics: dict[str, HeldTopic] = {}
        self._unacked_bytes = 0
        self._foreign = 0
        self._unknown_topic = 0
        self._bogus_acks = 0
        self._stale_acks = 0
        self._untrusted_acks = 0
        self.untrusted_from: set[str] = set()
        """Stores named by ACKs that were not counted for want of trust (at most
        :data:`MAX_UNTRUSTED_NAMED`; not verified): to say why nothing is acknowledged."""
        self._forged_acks = 0
        self._runs = EarlierRuns(
            node_id,
            profile,
            run=run,
            recovery_wait=recovery_wait,
            head_interval=self._head_interval,
            max_fetch=max_fetch_count,
        )
        """What this start recovers of the earlier runs' ranges, and the gaps it closes."""
        acked_next = acked_offsets or {}
        reserved = dict(next_offsets or {})
        for topic, acked in acked_next.items():
            # never number below what stores acknowledged, whatever the offset journal
            # lost (issue 33: a rotten last record read as a torn write)
            # guard: producer-never-numbers-below
            if acked > reserved.get(topic, 0):
                log.warning(
                    "producer.reserved_below_acked topic=%s reserved=%s acked_next=%d",
                    topic,
                    reserved.get(topic),
                    acked,
                )
                reserved[topic] = acked
        if acked_in_doubt:
            # the acked journal lost a record: anything reserved may have been acknowledged,
            # so none of it may be declared a gap (a hole is left rather than a loss)
            log.warning("producer.acked_in_doubt topics=%d", len(reserved))
            # guard: producer-whose-acked-bound-doubt
            acked_next = dict(reserved)
        for topic, offset in reserved.items():
            if offset < 0:
                raise ValueError(f"next offset for topic {topic!r} is negative")
            self._topics[check_topic(topic)] = HeldTopic(topic, offset, self._batched)
            start = min(max(acked_next.get(topic, 0), 0), offset)
            # guard: producer-whose-journal-bound-doubt
            if start < offset or journal_in_doubt:
                # in doubt, the journal's bound may be below what was published: ask
                # the stores past it before numbering (a probe, dafka.producer._recovery)
                # guard: producer-whose-journal-bound-doubt-2
                self._runs.add(
                    Recovery(
                        topic,
                        start,
                        offset,
                        recovery_budget,
                        paced=profile.batched,
                        probe=journal_in_doubt,
                    )
                )
        self._runs.offer_logged(logged)  # durable mode: our own log
        self._listen_direct = bool(self._runs.recoveries)
        self._outbox: list[Outgoing] = []
        """What :meth:`step` made to publish, until :meth:`ready` takes it."""
        self._acked: list[Acked] = []
        """What :meth:`step` found durable, until :meth:`ready` takes it."""

    # ------------------------------------------------------------ properties

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def profile(self) -> Profile:
        return self._profile

    @property
    def unacked_bytes(self) -> int:
        """Bytes held until durable: record contents (rfc46) or sealed blobs (signed)."""
        return self._unacked_bytes

    def unacked_count(self, topic: str | None = None) -> int:
        """Records held for ``topic`` (or all topics) until durable."""
        if topic is None:
            return sum(t.next_offset - t.base for t in self._topics.values())
        state = self._topics.get(topic)
        return state.next_offset - state.base if state is not None else 0

    def next_offset(self, topic: str) -> int:
        """The offset the next record published on ``topic`` will get."""
        state = self._topics.get(topic)
        return state.next_offset if state is not None else 0

    def last_acked(self, topic: str) -> int | None:
        """The highest durable offset of ``topic`` in this run, if any."""
        state = self._topics.get(topic)
        return state.acked if state is not None else None

    def store_acks(self, topic: str) -> dict[str, int]:
        """What each store has acknowledged of ``topic`` (``""`` for anonymous rfc46 stores)."""
        state = self._topics.get(topic)
        return dict(state.acks) if state is not None else {}

    def topics(self) -> list[str]:
        """Every topic this producer knows (written now or restored)."""
        return list(self._topics)

    @property
    def topic_names(self) -> KeysView[str]:
        """:meth:`topics` as a live view (asked every turn: no copy)."""
        return self._topics.keys()

    @property
    def stats(self) -> ProducerStats:
        return ProducerStats(
            foreign=self._foreign,
            unknown_topic=self._unknown_topic,
            bogus_acks=self._bogus_acks,
            stale_acks=self._stale_acks,
            fetches_served=self._serving.served,
            records_resent=self._serving.resent,
            untrusted_acks=self._untrusted_acks,
            forged_acks=self._forged_acks,
            fetches_limited=self._serving.limited,
            fetches_paced=self._serving.paced,
            recovered=self._runs.recovered,
            recovery_rejected=self._runs.rejected,
            gap_offsets=self._runs.gap_offsets,
            read_refused=self._read_refused,
            requests_forged=self._requests.forged,
            fetches_proxied=self._requests.proxied,
        )

    def set_read_view(self, view: ReadView) -> None:
        """The metadata's read ACLs and trusted stores: FETCHes are answered only to the
        nodes a topic's read ACL admits (none given: every topic is open)."""
        self._read_view = view

    def stores_connected(self, connected: bool) -> None:
        """Whether some store is subscribed to this producer's data socket (the shell says,
        from its subscriptions): a probe's wait for the stores runs only while one is."""
        self._runs.in_contact = connected

    @property
    def recovering(self) -> bool:
        """Whether a range reserved by an earlier run is still being recovered."""
        return bool(self._runs.recoveries)

    @property
    def holds_publishing(self) -> bool:
        """Whether new records must wait: rfc46 numbers them from the end of what
        recovery finds, so it cannot number any before recovery is over; nor can a
        probe (the journal's bound was in doubt) before it knows where its topic ends."""
        return self._runs.holds_publishing

    def subscriptions(self) -> list[bytes]:
        """SUB prefixes: ACKs and FETCHes addressed to this partition."""
        prefixes = [
            direct_prefix(Command.ACK, self._node_id),
            direct_prefix(Command.FETCH, self._node_id),
        ]
        if self._listen_direct:  # recovery FETCHes are answered to us
            prefixes.append(direct_prefix(Command.DIRECT_RECORD, self._node_id))
        return prefixes

    # ------------------------------------------------------------------- API

    def publish(
        self,
        topic: str,
        contents: Sequence[bytes],
        now: float,
        keys: Sequence[bytes | None] | None = None,
        timestamp_ms: int = 0,
        value_lengths: Sequence[int] | None = None,
        extras: Mapping[int, RecordExtra] | None = None,
        codec: Codec = Codec.NONE,
        compacted: bool = False,
    ) -> tuple[int, list[Outgoing]]:
        """Number ``contents`` (values) consecutively on ``topic`` and hold them until durable.

        Returns the first offset assigned and the effects that publish them:
        one :class:`PublishRecords` (rfc46), or one ``Publish(Record)`` per
        sealed batch stamped ``timestamp_ms`` (signed). ``keys`` (one per value,
        ``None`` for no key) need the signed profile; ``value_lengths``, ``len`` of
        each value, spare measuring them again when the caller has. This runs for
        every record, so it builds no per-record objects. ``extras`` (by index in
        ``contents``: a record's headers, own time, tombstone), a ``codec`` other than
        none and a ``compacted`` topic make the batches format 5 (signed profile only).
        """
        state = self._topics.get(topic)
        if state is None:
            state = self._topics[check_topic(topic)] = HeldTopic(topic, 0, self._batched)
        first = state.next_offset
        count = len(contents)
        if not count:
            return first, []
        if state.head_due is None:
            state.head_due = now + self._head_interval
        if not self._batched:
            if keys is not None and any(k is not None for k in keys):
                raise ProfileError(
                    "the rfc46 wire profile has no record keys: send without a key "
                    "or use the signed profile"
                )
            # guard: producer-rfc46-refuses-rich
            if needs_rich(extras, codec, compacted):
                raise ProfileError(
                    "the rfc46 wire profile has no headers, record timestamps, tombstones, "
                    "compression or compacted topics: use the signed profile"
                )
            state.held.extend(contents)
            size = sum(map(len, contents) if value_lengths is None else value_lengths)
            state.nbytes += size
            self._unacked_bytes += size
            state.next_offset = first + count
            return first, [PublishRecords(topic, self._node_id, first, tuple(contents))]
        if extras or codec or compacted:  # Codec.NONE is 0
            sealed = self._profile.seal(
                topic, first, keys, contents, timestamp_ms, None, extras, codec, compacted
            )
        else:
            sealed = self._profile.seal(topic, first, keys, contents, timestamp_ms, value_lengths)
        ends = state.ends
        assert ends is not None
        out: list[Outgoing] = []
        size = 0
        node = self._node_id
        for start, n, blob in sealed:
            state.held.append(blob)
            ends.append(start + n)
            size += len(blob)
            out.append(Publish(m.Record(topic, node, start, blob, n)))
        state.nbytes += size
        self._unacked_bytes += size
        state.next_offset = first + count
        return first, out

    def handle(
        self, msg: m.Message, now: float, sender: Sender | None = None, wall_ms: int = 0
    ) -> list[Effect]:
        """React to an ACK or FETCH; anything else is not for a producer. ``sender``: the
        node whose connection ``msg`` came on (None: not known, e.g. in-process);
        ``wall_ms``: the wall clock (ms), stamping the gap statements an answer to a
        restart's recovery may make (the core reads no clock)."""
        kind = type(msg)
        if kind is m.Ack:
            assert isinstance(msg, m.Ack)
            return self._on_ack(msg)
        if kind is m.Fetch:
            assert isinstance(msg, m.Fetch)
            return self._on_fetch(msg, now, sender)
        if kind is m.DirectRecord and self._runs.recoveries:
            assert isinstance(msg, m.DirectRecord)
            out, complete = self._runs.on_recovered(msg, now)
            if complete:
                out.extend(self._finish(self._runs.recoveries[msg.topic], now, wall_ms))
            return out
        return []

    # ------------------------------------------------------ the one contract

    def step(
        self, msg: m.Message, now: float, sender: Sender | None = None, wall_ms: int = 0
    ) -> None:
        """:meth:`handle` ``msg``, keeping what it makes for :meth:`ready`: the messages to
        publish (FETCH answers, a recovery's), and the :class:`Acked` to deliver."""
        for effect in self.handle(msg, now, sender, wall_ms):
            kind = type(effect)
            if kind is Acked:
                self._acked.append(effect)  # type: ignore[arg-type]
            elif kind is Publish or kind is PublishRecords:
                self._outbox.append(effect)  # type: ignore[arg-type]

    def has_ready(self) -> bool:
        return bool(self._outbox or self._acked)

    def ready(self) -> Ready:
        """What :meth:`step` made: ``publish`` and ``deliver`` (:class:`Acked`, in order);
        nothing to persist (the producer's journals are its shell's, ``dafka.api``)."""
        rd = Ready(publish=tuple(self._outbox), deliver=tuple(self._acked))
        self._outbox, self._acked = [], []
        return rd

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        """Nothing to do: :meth:`ready` handed over what it returned."""

    @property
    def serve_at(self) -> float | None:
        """When FETCHes waiting for their requester's bytes can be answered (by
        :meth:`tick`); None if none waits."""
        return self._serving.serve_at if self._serving.waiting else None

    def tick(self, now: float, wall_ms: int = 0) -> list[Publish]:
        """HEAD (last published offset) for each topic whose interval has passed, after
        the gap statements this run repeats; the FETCHes and the end of a restart's
        recovery (``wall_ms``, the wall clock in ms, stamps the gap statements it makes);
        the answers to FETCHes whose requester's bytes are paid back."""
        out = self._serving.serve(self._topics, now)
        runs = self._runs
        if runs.recoveries:
            out.extend(self._recovery_tick(now, wall_ms))
        for state in self._topics.values():
            due = state.head_due
            if due is not None and now >= due:
                if runs.gaps_from:
                    out.extend(runs.repeated(state.name, now))
                out.append(Publish(m.Head(state.name, self._node_id, state.next_offset - 1)))
                state.head_due = now + self._head_interval
        return out

    # -------------------------------------------------------------- recovery

    def _recovery_tick(self, now: float, wall_ms: int) -> list[Publish]:
        out: list[Publish] = []
        runs = self._runs
        for rec in list(runs.recoveries.values()):
            if runs.over(rec, now):
                out.extend(self._finish(rec, now, wall_ms))
                continue
            fetch = runs.fetch(rec, now)
            if fetch is not None:
                out.append(fetch)
        return out

    def _finish(self, rec: Recovery, now: float, wall_ms: int) -> list[Publish]:
        """Hold what was recovered again, close the rest of the range, and free what
        stores acknowledged meanwhile."""
        state = self._topics[rec.topic]
        out, size = self._runs.finish(rec, state, now, wall_ms)
        self._unacked_bytes += size
        if state.acked is not None:
            self._free(state, state.acked)
        if state.next_offset > 0:
            state.head_due = now  # tell stores and consumers where the partition ends
        return out

    # ------------------------------------------------------------- internals

    def _known_topic(self, partition: str, topic: str) -> HeldTopic | None:
        if partition != self._node_id:
            self._foreign += 1
            return None
        state = self._topics.get(topic)
        if state is None:
            self._unknown_topic += 1
        return state

    def _on_ack(self, msg: m.Ack) -> list[Effect]:
        state = self._known_topic(msg.partition, msg.topic)
        if state is None:
            return []
        if self._batched:
            store = msg.store
            # guard: producer-trusts-listed-stores
            if store is None or (self._trusted is not None and store not in self._trusted):
                # cheap check first: an untrusted ACK costs no signature check
                self._untrusted_acks += 1
                # guard: producer-names-boundedly-untrusted
                if store is not None and len(self.untrusted_from) < MAX_UNTRUSTED_NAMED:
                    self.untrusted_from.add(store)  # unverified: named only to explain
                return []
        else:
            store = _ANONYMOUS
        offset = msg.offset
        if offset >= state.next_offset:
            self._bogus_acks += 1
            log.debug(
                "ack.bogus topic=%s offset=%d last_published=%d",
                msg.topic,
                offset,
                state.next_offset - 1,
            )
            return []
        acks = state.acks
        previous = acks.get(store)
        if previous is not None and offset <= previous:
            self._stale_acks += 1
            return []
        # guard: producer-checks-ack-signatures
        if self._batched and not self._profile.check_ack(msg):
            self._forged_acks += 1
            log.warning(
                "ack.forged topic=%s store=%s offset=%d total=%d",
                msg.topic,
                store,
                offset,
                self._forged_acks,
            )
            return []
        if previous is None and len(acks) >= MAX_STORES_TRACKED:
            del acks[min(acks, key=acks.__getitem__)]
        acks[store] = offset
        return self._advance(msg.topic, state)

    def needs(self, topic: str) -> tuple[int, bool]:
        """The distinct stores' ACKs a record of ``topic`` needs, and whether that is the
        topic's ``min_acks`` from the metadata (above the producer's own)."""
        need = self._topic_min_acks.get(topic, self._min_acks)
        return need, need > self._min_acks

    @property
    def trusted(self) -> frozenset[str] | None:
        """The stores whose ACKs count (None: any whose signature verifies)."""
        return self._trusted

    def _advance(self, topic: str, state: HeldTopic) -> list[Effect]:
        acks = state.acks
        need = self._topic_min_acks.get(topic, self._min_acks)
        if len(acks) < need:
            return []
        if need == 1:
            durable = max(acks.values())
        else:
            durable = heapq.nlargest(need, acks.values())[-1]
        if state.acked is not None and durable <= state.acked:
            return []
        state.acked = durable
        self._free(state, durable)
        return [Acked(topic, durable)]

    def set_policy(
        self,
        trusted_stores: Collection[str] | None,
        min_acks: Mapping[str, int] | None = None,
    ) -> list[Effect]:
        """Change which stores' ACKs count and the per-topic ``min_acks`` (metadata).

        ACKs already held from stores no longer trusted stop counting; records that
        the new policy makes durable are reported as :class:`Acked` at once.
        """
        for topic, need in (min_acks or {}).items():
            if need < 1 or (need > 1 and not self._profile.keys):
                raise ConfigError(f"min_acks={need} for topic {topic!r} is not possible here")
        self._trusted = frozenset(trusted_stores) if trusted_stores is not None else None
        self._topic_min_acks = dict(min_acks or {})
        out: list[Effect] = []
        for topic, state in self._topics.items():
            if self._trusted is not None and self._batched:
                for store in [s for s in state.acks if s not in self._trusted]:
                    del state.acks[store]
            out.extend(self._advance(topic, state))
        return out

    def forget_unacked(self, topic: str) -> int:
        """The topic was deleted: stop holding, re-serving and announcing (HEAD) its records
        not acknowledged yet, so they can never reach a re-created topic; returns how many.
        Offsets are never reused: a re-created topic's partition goes on from here."""
        state = self._topics.get(topic)
        if state is None:
            return 0
        dropped = state.next_offset - 1 - (-1 if state.acked is None else state.acked)
        self._free(state, state.next_offset - 1)
        state.acks.clear()
        state.acked = state.next_offset - 1 if state.next_offset else None
        state.head_due = None
        self._runs.forget(topic)
        return dropped

    def _free(self, state: HeldTopic, durable: int) -> None:
        """Drop what is held up to ``durable`` (whole blobs only, under signed)."""
        held = state.held
        ends = state.ends
        if ends is None:
            freed = durable + 1 - state.base
            if freed <= 0:
                return
            dead = state.dead
            size = sum(map(len, held[dead : dead + freed]))
            dead += freed
            if dead > 1024 and 2 * dead > len(held):
                del held[:dead]
                dead = 0
            state.dead = dead
            state.base = durable + 1
        else:
            freed = bisect.bisect_right(ends, durable + 1)
            if freed <= 0:
                return
            size = sum(map(len, held[:freed]))
            state.base = ends[freed - 1]
            del held[:freed]
            del ends[:freed]
        state.nbytes -= size
        self._unacked_bytes -= size

    def _on_fetch(self, msg: m.Fetch, now: float, sender: Sender | None) -> list[Effect]:
        state = self._known_topic(msg.partition, msg.topic)
        if state is None:
            return []
        # guard: producer-read-acl-fetch
        if not self._read_view.admits(msg.requester, msg.topic):
            self._read_refused += 1  # the answer goes to the requester: it may not read
            return []
        check = check_requester(msg.requester, sender)
        if check is not RequesterCheck.OWN:
            self._requests.note(check, "fetch", msg.requester, sender, now)
            if check is RequesterCheck.FORGED:
                return []
        # guard: producer-answers-proxied-fetches-budget
        proxied = check is RequesterCheck.PROXIED
        return self._serving.on_fetch(msg, state, now, proxied)  # type: ignore[return-value]
