"""The store core that the IO shell drives (:class:`StoreCore`).

It owns the parts of the package, each with its own state, and puts them together: one
drained batch of messages is dispatched to the ingest (``ingest.py``), the answers
(``serve.py``) and the re-replication (``replicate.py``), committed in one append, and
followed by gap FETCHes (``gaps.py``), head answers, the next serving step and, last,
the ACKs. What each message does is described in :mod:`dafka.store`.
"""

from __future__ import annotations

import logging
import math
import struct
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core import messages as m
from ..core.effects import Publish
from ..core.ready import Ready
from ..core.topic_counts import DEFAULT_TOPIC_CAP, TopicCounts, check_topic_cap
from ..errors import DafkaError, StorageError
from ..ids import is_node_id
from ..storage.base import Storage
from ..storage.retention import HeldLedger
from ..wire.profiles import RFC46, Profile
from ..wire.rfc46 import Command, direct_prefix
from ._credits import DEFAULT_SEND_CREDITS
from ._gaps import StoreGaps
from ._ingest import StoreIngest
from ._partitions import PartitionTable
from ._policy import StorePolicy
from ._repair import StoreRepair
from ._replicate import REPLICATE_INTERVAL, StoreReplication, UnderReplication
from ._serve import StoreServing
from ._state import Equivocation, StoreConfig, StoreStats, _Batch
from ._waiting import WaitingDrain

log = logging.getLogger(__name__)

MAX_ACK_RECEIPTS = 64
"""Drains' receipt times kept for the shell's ACK latency between two of its reads."""

MAX_HELLO_TOPICS = 1024
"""Topics answered per CONSUMER-HELLO; the rest are ignored (a peer controls the list)."""

_BAD_INPUT = (DafkaError, ValueError, TypeError, OverflowError, struct.error)
_TOPICAL = (m.Record, m.DirectRecord, m.Fetch, m.Ack, m.Head, m.DirectHead, m.GetHeads, m.Oversized)
"""The messages about one topic (all but CONSUMER-HELLO and STORE-HELLO)."""


class StoreCore:
    """The store's state machine: records in, (FETCH | DIRECT-* | STORE-HELLO | ACK) out.

    ``profile`` is the store's wire profile (``rfc46`` unless given); it
    verifies what the store keeps. ACKs come out unsigned and the profile signs
    them in the shell. The parts, each owning its state:

    * :attr:`table`, :class:`~.partitions.PartitionTable`: heads, tails, profiles,
      fences and verified HEADs of the partitions held (the only writer of them);
    * :attr:`policy`, :class:`~.policy.StorePolicy`: ACLs, retention, deletions;
    * :attr:`gaps`, :class:`~.gaps.StoreGaps`: open gaps, the out-of-order buffer, the
      gap FETCHes;
    * :attr:`intake`, :class:`~.ingest.StoreIngest`: records and HEADs in, the commit;
    * :attr:`serving`, :class:`~.serve.StoreServing`: FETCHes and head requests
      answered, ACKs and what waits for a requester's credit;
    * :attr:`replication`, :class:`~.replicate.StoreReplication`: rounds of GET-HEADS to
      the other stores and their DIRECT-HEADs;
    * :attr:`repair`, :class:`~.repair.StoreRepair`: corrupt batches asked for again.
    """

    def __init__(
        self,
        node_id: str,
        storage: Storage,
        *,
        max_fetch_count: int = 100_000,
        serve_chunk: int = 2000,
        fetch_retry: float = 0.5,
        max_pending_fetches: int = 1024,
        max_buffered_bytes: int = 64 * 1024 * 1024,
        max_head_lead: int = 1_000_000,
        profile: Profile = RFC46,
        fetch_rate: float = 2000.0,
        fetch_burst: float = 4000.0,
        heads_rate: float = 20.0,
        heads_burst: float = 40.0,
        heads_answer_rate: float = 5000.0,
        heads_answer_burst: float = 10000.0,
        serve_rate: float = 64 * 1024 * 1024,
        serve_total_rate: float = 256 * 1024 * 1024,
        max_partitions_per_topic: int = 10_000,
        new_partition_rate: float = 100.0,
        new_partition_burst: float = 1000.0,
        send_credits: int | None = DEFAULT_SEND_CREDITS,
        replicate_interval: float = REPLICATE_INTERVAL,
        topic_cap: int = DEFAULT_TOPIC_CAP,
    ) -> None:
        config = StoreConfig(
            node_id,
            profile,
            max_fetch_count,
            serve_chunk,
            fetch_retry,
            max_pending_fetches,
            max_buffered_bytes,
            max_head_lead,
        )
        config.check()
        self.config = config
        self._node_id = node_id
        self._storage = storage
        self.stats = StoreStats(topics=TopicCounts(check_topic_cap(topic_cap)))
        heads = storage.heads()
        self.table = PartitionTable(
            self.stats,
            profile.name,
            heads,
            storage.profiles(),
            max_partitions_per_topic=max_partitions_per_topic,
            new_partition_rate=new_partition_rate,
            new_partition_burst=new_partition_burst,
        )
        self.policy = StorePolicy(storage, self.stats, self.table)
        signed = config.signed
        paced = signed and send_credits is not None
        self.gaps = StoreGaps(config, self.stats, self.table, paced=paced)
        self.repair = StoreRepair(node_id, signed=signed, held_bad=storage.bad)
        """Corrupt batches asked for from the other stores, and the copies that came."""
        self.intake = StoreIngest(
            config, self.stats, storage, self.table, self.policy, self.gaps, self.repair
        )
        self.serving = StoreServing(
            config,
            self.stats,
            storage,
            self.table,
            self.policy,
            self.gaps,
            fetch_rate=fetch_rate,
            fetch_burst=fetch_burst,
            heads_rate=heads_rate,
            heads_burst=heads_burst,
            heads_answer_rate=heads_answer_rate,
            heads_answer_burst=heads_answer_burst,
            serve_rate=serve_rate,
            serve_total_rate=serve_total_rate,
            send_credits=send_credits,
        )
        self.replication = StoreReplication(
            config,
            self.stats,
            storage,
            self.table,
            self.policy,
            self.gaps,
            self.intake,
            replicate_interval=replicate_interval,
        )
        # the Ready side (dafka.core.ready): a drain ingested and waiting for its commit's
        # Ready, the commit handed out and not advanced yet, what arrived meanwhile, and
        # what to publish in the next Ready
        self._now = -math.inf
        self._ingested: _Batch | None = None
        self._committing: tuple[Ready, _Batch] | None = None
        self._waiting: WaitingDrain | None = None
        self._outbox: list[Publish] = []
        self.verified_ahead = 0
        """Pieces of drains verified while the drain before them was being committed."""
        self.ack_receipts: list[float] = []
        """Receipt times of the drains whose ACKs were made, for the shell to time
        (:meth:`take_ack_receipts`; at most ``MAX_ACK_RECEIPTS``, the rest not timed)."""

    # ------------------------------------------------------------------ queries

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def storage(self) -> Storage:
        """What the store holds (read by the parts; written through the shell's persist
        of a Ready, and by retention, deletions and a superseding gap statement)."""
        return self._storage

    @property
    def profile(self) -> Profile:
        return self.config.profile

    def head(self, topic: str, partition: str) -> int | None:
        """The committed head of a partition, or ``None`` if nothing is stored."""
        return self.table.heads.get((topic, partition))

    @property
    def paces_requesters(self) -> bool:
        """Whether what goes to one requester is paced by its credit (``signed``): the
        shell's data XPUB then keeps a byte-safe count (``dafka.io.bounds``)."""
        return self.serving.paces_requesters

    def has_pending(self, now: float = math.inf) -> bool:
        """True while fetches or head answers can be served at ``now``: the shell should
        poll without blocking (:attr:`serve_at` says when the waiting ones can)."""
        return self.serving.has_pending(now)

    @property
    def serve_at(self) -> float:
        """When serving can go on (``inf``: nothing waits)."""
        return self.serving.serve_at

    @property
    def equivocations(self) -> deque[Equivocation]:
        """The latest equivocations seen (a bounded report; ``stats`` counts them all)."""
        return self.intake.equivocations

    @property
    def last_storage_error(self) -> StorageError | None:
        return self.intake.last_storage_error

    @property
    def under_replicated(self) -> UnderReplication:
        """What the last replication round found (``dafka_store_under_replicated_*``)."""
        return self.replication.under_replicated

    @property
    def held(self) -> HeldLedger | None:
        """When this store took in each partition's batches (``dafka.storage.retention``);
        the IO shell sets the one it loaded from the data directory."""
        return self.policy.held

    @held.setter
    def held(self, held: HeldLedger | None) -> None:
        self.policy.held = held

    def subscriptions(self) -> list[bytes]:
        """The SUB prefixes a store needs (wire reference §4, writer and reader as one node)."""
        return [
            Command.RECORD.value,
            Command.HEAD.value,
            Command.FETCH.value,
            Command.GET_HEADS.value,
            direct_prefix(Command.DIRECT_RECORD, self._node_id),
            direct_prefix(Command.CONSUMER_HELLO, self._node_id),
            direct_prefix(Command.DIRECT_HEAD, self._node_id),  # other stores' heads
        ]

    def may_write(self, topic: str, partition: str) -> bool:
        return self.policy.may_write(topic, partition)

    def may_read(self, requester: str, topic: str) -> bool:
        return self.policy.may_read(requester, topic)

    def readers_of(self, topic: str) -> frozenset[str] | None:
        return self.policy.readers_of(topic)

    # ------------------------------------------------------------------ the metadata

    def set_policy(
        self, topics: Mapping[str, Mapping[str, Any]], stores: Iterable[str] = ()
    ) -> None:
        """Per-topic settings from the cluster metadata (:meth:`StorePolicy.set_policy`)
        and the trusted stores; FETCHes queued and head answers deferred before a read
        ACL closed are dropped."""
        self.policy.set_policy(topics, stores)
        self.serving.drop_unreadable()
        self.replication.set_policy(topics, stores)

    def apply_deletions(
        self, deleted: Mapping[str, int], live: Iterable[str]
    ) -> list[tuple[str, int]]:
        """The metadata's topic deletions (:meth:`StorePolicy.apply_deletions`)."""
        return self.policy.apply_deletions(deleted, live, self._forget)

    def _forget(self, topic: str) -> None:
        """Drop everything the parts hold about ``topic`` (its storage is already gone)."""
        self.table.forget_topic(topic)
        self.gaps.forget_topic(topic)
        self.serving.forget_topic(topic)
        self.replication.forget_topic(topic)
        self.stats.topics.forget(topic)

    def apply_retention(self, now_ms: int, mono_ms: int) -> list[tuple[str, str, int]]:
        """Trim what fell out of retention (:meth:`StorePolicy.apply_retention`)."""
        return self.policy.apply_retention(now_ms, mono_ms)

    # ------------------------------------------------------------------ replication

    def replicate(self, now: float) -> list[Publish]:
        """A replication round, when due (:meth:`StoreReplication.replicate`)."""
        return self.replication.replicate(now)

    def replicate_soon(self, now: float) -> None:
        self.replication.replicate_soon(now)

    # ------------------------------------------------------------------ the Ready side

    def step(self, msgs: Sequence[m.Message], now: float, sources: Sequence[str] = ()) -> None:
        """One drained batch, for the shell to execute as Readies (:mod:`dafka.core.ready`):
        its records come out as a Ready whose ``persist`` is their one group commit
        (``must_sync``), and the FETCHes, answers and ACKs that follow as the Ready after
        it, made once the commit is reported (:meth:`advance`), so no ACK leaves before
        its records are durable. While a commit is handed out and not reported, a drain is
        only verified ahead (:meth:`verify_ahead`) and kept: it is ingested, as one with
        anything else that came meanwhile, once the commit is reported. ``sources``: as
        :meth:`handle_batch`'s."""
        self._now = now
        committing = self._committing
        if committing is not None:
            checked = self.intake.verify_ahead(msgs, committing[1])
            if self._waiting is None:
                self._waiting = WaitingDrain(now)
            self._waiting.add(msgs, sources, checked)
            self.verified_ahead += 1
            return
        self._take(self.ingest(msgs, now, sources))

    def _take(self, b: _Batch) -> None:
        """``b`` was ingested: its commit is the next Ready, or (nothing to store) its
        answers at once."""
        if b.accepted:
            self._ingested = b
        else:
            self._outbox.extend(self.finish(b, True, self._now))

    def at(self, now: float) -> None:
        """The shell's time, before it reports a commit made on a writer thread."""
        self._now = now

    @property
    def committing(self) -> bool:
        """Whether a commit was handed out and not reported yet (the heads are those of
        the commit before it)."""
        return self._committing is not None

    @property
    def waiting(self) -> tuple[int, int]:
        """Messages and bytes of the drain waiting for the commit in flight."""
        w = self._waiting
        return (0, 0) if w is None else (len(w.msgs), w.bytes)

    def push(self, publish: Sequence[Publish]) -> None:
        """Messages a :meth:`tick`, a subscription, a replication round or a repair made,
        to go out in the next :meth:`ready`. None of them waits for a commit in flight:
        they answer from (and ask about) what is committed, and the ACKs of a commit are
        made only when it is reported (:meth:`advance`), so while one is in flight every
        Ready is publish-only and the shell may run it at once."""
        self._outbox.extend(publish)

    def has_ready(self) -> bool:
        return bool(self._outbox) or (self._ingested is not None and self._committing is None)

    def ready(self) -> Ready:
        """What is to publish first, then the next commit (its records, to sync)."""
        if self._outbox:
            out, self._outbox = self._outbox, []
            return Ready(publish=tuple(out))
        b = self._ingested
        assert b is not None and self._committing is None
        self._ingested = None
        rd = Ready(persist=tuple(b.accepted), must_sync=True)
        self._committing = (rd, b)
        return rd

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        """``rd`` was executed; a commit's report moves the heads (or, ``failed``, notes
        its records as missing) and makes the Ready of its answers and ACKs, then the
        drain that waited for it is ingested."""
        committing = self._committing
        if committing is None or committing[0] is not rd:
            return  # a Ready that only published
        self._committing = None
        b, now = committing[1], self._now
        if failed is None:
            done = self.intake.committed(b, now)
        else:
            assert isinstance(failed, StorageError)
            done = self.intake.commit_failed(b, failed, now)
        self._outbox.extend(self.finish(b, done, now))
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            b = self.ingest(waiting.msgs, now, waiting.sources, waiting.checked)
            b.received = waiting.since
            self._take(b)

    # ------------------------------------------------------------------ batches

    def handle_batch(
        self, msgs: Sequence[m.Message], now: float, sources: Sequence[str] = ()
    ) -> list[Publish]:
        """Process one drained batch: store, then publish FETCHes, answers and ACKs (last).

        ``sources[i]``: the host ``msgs[i]`` came from, whose budget of new partitions
        it spends (:class:`~dafka.core.admission.PartitionGate`; "" or none: unknown);
        read only for a message that would take on a new partition.

        What :meth:`step` and the shell's ``run_ready`` do together, with the append made
        here (``Storage.append``): for callers without a shell (tests, tools); the IO
        shell runs :meth:`step`'s Readies (``dafka.store._facade``, on a writer thread
        ``dafka.store._pipeline``), which ``tests/unit/test_store_parts.py`` checks
        come to the same."""
        b = self.ingest(msgs, now, sources)
        return self.finish(b, self.intake.commit(b, now), now)

    def ingest(
        self,
        msgs: Sequence[m.Message],
        now: float,
        sources: Sequence[str] = (),
        checked: Mapping[int, tuple[object, Exception | None]] | None = None,
    ) -> _Batch:
        """Dispatch one drained batch; return what its commit must append (``accepted``).

        Nothing may be appended between this and the report of its commit: the heads
        stay those of the last commit until then. ``checked``: what :meth:`verify_ahead`
        found of ``msgs``."""
        b = _Batch(now, sources, checked)
        dispatch = self._dispatch
        for i, msg in enumerate(msgs):
            b.index = i
            try:
                dispatch(msg, b)
            except _BAD_INPUT as exc:
                self.stats.malformed += 1
                log.debug("store.malformed type=%s error=%s", type(msg).__name__, exc)
        return b

    def finish(self, b: _Batch, committed: bool, now: float) -> list[Publish]:
        """After ``b``'s commit was reported: gap FETCHes, answers, then the ACKs, only if
        ``committed``."""
        out: list[Publish] = []
        serving = self.serving
        self.gaps.decide_fetches(b.gap_keys | b.advanced, now, out)
        for requester, topics, proxied in b.head_requests:
            serving.answer_heads(requester, topics, out, now, proxied)
        for requester, topic, partition in b.tail_answers:
            serving.answer_tail(requester, topic, partition, out)
        serving.serve(out, now)
        if committed:
            keys = b.advanced | b.reack
            serving.ack(sorted(keys), out, now)
            receipts = self.ack_receipts
            if keys and len(receipts) < MAX_ACK_RECEIPTS:
                receipts.append(b.received)
        return out

    def take_ack_receipts(self) -> list[float]:
        """When the drains whose ACKs were made since the last call were received (the
        ``now`` given with their first message): the shell observes the ACK latency as
        it sends them (``dafka_store_ack_latency_seconds``)."""
        receipts, self.ack_receipts = self.ack_receipts, []
        return receipts

    def verify_ahead(
        self, msgs: Sequence[m.Message], committing: _Batch
    ) -> dict[int, tuple[object, Exception | None]]:
        """The profile's verdict on ``msgs``' records while ``committing`` is being
        committed (:meth:`StoreIngest.verify_ahead`)."""
        return self.intake.verify_ahead(msgs, committing)

    def committed(self, b: _Batch, now: float) -> bool:
        """``b``'s append returned: move the heads (:meth:`StoreIngest.committed`)."""
        return self.intake.committed(b, now)

    def commit_failed(self, b: _Batch, exc: StorageError, now: float) -> bool:
        """``b``'s append failed (:meth:`StoreIngest.commit_failed`)."""
        return self.intake.commit_failed(b, exc, now)

    def on_subscription(self, sub: m.Subscription, now: float) -> list[Publish]:
        """Greet a consumer that subscribes to its STORE-HELLOs (``L`` + consumer ID); a
        node subscribing to its DIRECT-HEADs (a store or consumer that just connected)
        brings the next replication round forward (:meth:`replicate_soon`)."""
        if sub.subscribe and sub.cmd == Command.DIRECT_HEAD.value:
            self.replicate_soon(now)
            return []
        if not (sub.subscribe and sub.cmd == Command.STORE_HELLO.value):
            return []
        try:
            consumer = sub.rest.decode("ascii")
        except UnicodeDecodeError:
            return []
        if not is_node_id(consumer) or consumer == self._node_id:
            return []
        return [Publish(m.StoreHello(consumer, self._node_id))]

    def tick(self, now: float, gaps: bool = True) -> list[Publish]:
        """Retry FETCHes for gaps still open, then serve the next chunk of pending fetches
        (the shell also calls :meth:`replicate`, the rounds that ask the other stores).

        ``gaps=False``, or a commit handed out (:meth:`ready`) and not reported yet: the
        gaps wait for a tick after the report, so none is fetched again for what the
        commit holds."""
        out: list[Publish] = []
        part = self.gaps
        if gaps and self._committing is None and now >= part.next_check:
            part.next_check = math.inf
            part.decide_fetches(list(part.open), now, out)
        self.serving.serve(out, now)
        return out

    def _dispatch(self, msg: m.Message, b: _Batch) -> None:
        deleted = self.policy.deleted
        if deleted and isinstance(msg, _TOPICAL) and msg.topic in deleted:
            self.stats.deleted_topic += 1
            return
        if isinstance(msg, m.Record) or (
            isinstance(msg, m.DirectRecord) and msg.recipient == self._node_id
        ):
            self.intake.on_record(msg, b)
        elif isinstance(msg, m.Head):
            self.intake.on_head(msg, b)
        elif isinstance(msg, m.Fetch):
            self.serving.on_fetch(msg, b)
        elif isinstance(msg, m.GetHeads):
            self.serving.on_head_request(msg.requester, (msg.topic,), b)
        elif isinstance(msg, m.ConsumerHello) and msg.store == self._node_id:
            topics = tuple(dict.fromkeys(msg.topics[:MAX_HELLO_TOPICS]))
            self.serving.on_head_request(msg.consumer, topics, b)
        elif isinstance(msg, m.DirectHead) and msg.recipient == self._node_id:
            self.replication.on_direct_head(msg, b)  # another store's heads (replicate.py)
        elif isinstance(msg, m.Oversized) and msg.recipient in (None, self._node_id):
            self.intake.on_oversized(msg, b)
        else:
            self.stats.ignored += 1  # ACKs, DIRECT-HEADs, other nodes' direct messages
