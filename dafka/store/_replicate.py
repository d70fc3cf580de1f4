"""Re-replication between stores, and what a store can tell of missing copies
(:class:`StoreReplication`).

Stores learn partitions from their producers' live traffic; a store whose disk was
replaced would never get back the partitions whose producers are gone. So a store asks
the other stores, at start and every ``replicate_interval`` seconds, for the heads of
every topic it keeps (GET-HEADS, in its own name, at most :data:`MAX_ROUND_TOPICS` topics
a round, round-robin) and fills what it lacks through its gap machinery (``gaps.py``):
the gap FETCHes go to every store, whose answers are verified batch by batch as any
other (``ingest.py``). A topic is kept if the metadata names it or the store holds it.

What a peer store says (its DIRECT-HEAD) is hostile:

* the producer's signed HEAD it passes on is acted on as a HEAD (verified first,
  ``signed``), and bounded by ``max_head_lead`` as any;
* its own head, unsigned, is a *claim*: it opens a gap too (bounded by ``max_head_lead``
  and :data:`MAX_CLAIMS`), but a claim that brings nothing for :data:`MAX_STRIKES`
  rounds is dropped and refused for :data:`CLAIM_PENALTY` seconds, so a lying store
  cannot keep us fetching what nobody holds; what it makes us fetch is whatever the
  gap machinery sends (rate-limited per partition, backing off);
* its tail (the first offset it still holds, retention) moves where this store
  continues only if a store signed it (``signed``) and the store is trusted in the
  metadata, or, with no trusted stores configured, only up to what the producer signed
  (a verified HEAD or batch): a store down longer than the retention period then
  continues from that tail (``store.retention_skip``, ``retention_skips``) instead of
  asking for a trimmed range for ever. Under rfc46 no tail is told: nothing is skipped.

What other stores said they hold (``_peer_heads``, bounded by :data:`MAX_PEER_KEYS`, and
forgotten when not heard again for a few rounds) is also what :attr:`under_replicated`
counts: the partitions (and records) held by fewer stores than their topic's
``min_acks``, as far as this store can tell. A lying store can make that look better
than it is (its claims count as copies); nothing here depends on it. Pure: the time is
passed in.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ..core import messages as m
from ..core.effects import Publish
from ..errors import ConfigError, StorageError
from ..storage.base import Storage
from ._gaps import StoreGaps
from ._ingest import StoreIngest
from ._partitions import PartitionTable
from ._policy import StorePolicy
from ._state import PartitionKey, StoreConfig, StoreStats, _Batch, _Gap

log = logging.getLogger(__name__)

REPLICATE_INTERVAL = 5.0
"""Seconds between two rounds of GET-HEADS to the other stores (the first at start)."""
EARLY_ROUND = 1.0
"""Seconds from a peer connecting to the round it brings forward, and between two early rounds."""
MAX_ROUND_TOPICS = 32
"""Topics asked about per round (round-robin): within a peer's head-request rate."""
MAX_CLAIMS = 4096
"""Partitions whose unsigned claims are being followed at once: a quarter of the open gaps
(``gaps.MAX_OPEN_GAPS``), so a lying store leaves the rest to live traffic."""
MAX_STRIKES = 4
"""Rounds a claim may bring nothing before it is dropped."""
CLAIM_PENALTY = 60.0
"""Seconds a dropped claim's partition is not followed again up to the same offset."""
MAX_PEER_KEYS = 65_536
"""(partition, store) heads remembered from other stores, over all partitions."""
MAX_PEERS_PER_PARTITION = 16
"""Stores remembered per partition (min_acks is at most 16)."""
STALE_ROUNDS = 3
"""A store's head not heard again for this many full rounds is forgotten."""
UNDER_LOG_PERIOD = 30.0
"""Seconds between two ``store.under_replicated`` lines."""


@dataclass(slots=True)
class _Claim:
    """An unsigned claim by another store that a partition reaches ``target``."""

    target: int
    head: int  # our head when the claim was last checked
    strikes: int = 0


@dataclass(frozen=True, slots=True)
class UnderReplication:
    """Partitions (and their records) held by fewer stores than their topic's min_acks."""

    partitions: int = 0
    records: int = 0


class StoreReplication:
    """GET-HEADS rounds to the other stores; their DIRECT-HEADs in (claims, tails).

    ``replicate_interval``: seconds between rounds (positive; ``inf``: one round, at
    start). It owns the rounds, the claims and what the other stores said they hold;
    a tail it follows moves the partition table (:meth:`PartitionTable.skip_to`), and
    what it lacks is fetched through the gaps (:class:`~.gaps.StoreGaps`)."""

    def __init__(
        self,
        config: StoreConfig,
        stats: StoreStats,
        storage: Storage,
        table: PartitionTable,
        policy: StorePolicy,
        gaps: StoreGaps,
        ingest: StoreIngest,
        *,
        replicate_interval: float = REPLICATE_INTERVAL,
    ) -> None:
        if not replicate_interval > 0:
            raise ConfigError(f"replicate_interval must be positive, not {replicate_interval}")
        self.stats = stats
        self._storage = storage
        self._node_id = config.node_id
        self._profile = config.profile
        self._lead = config.max_head_lead
        self._table = table
        self._gaps_part = gaps
        self._ingest = ingest
        # read only: the partition table's, the gaps' and the policy's tables
        self._heads: Mapping[PartitionKey, int] = table.heads
        self._tails: Mapping[PartitionKey, int] = table.tails
        self._signed_heads: Mapping[PartitionKey, m.Head] = table.signed_heads
        self._gaps: Mapping[PartitionKey, _Gap] = gaps.open
        self._buffers: Mapping[PartitionKey, dict[int, tuple[int, bytes]]] = gaps.buffers
        self._retention: Mapping[str, tuple[int | None, int | None]] = policy.retention
        self._deleted: AbstractSet[str] = policy.deleted
        # the other parts' methods it uses
        self._pinned_elsewhere = table.pinned_elsewhere
        self.may_write = policy.may_write
        self._note_gap = gaps.note_gap
        self._drain = gaps.drain
        self._expected = ingest.expected
        self._on_head = ingest.on_head
        interval = replicate_interval
        self._repl_interval = interval
        self._repl_next = -math.inf  # the first round at the first tick
        self._repl_early_next = -math.inf  # when replicate_soon may bring a round forward
        self._repl_cursor = 0
        self._kept_topics: tuple[str, ...] = ()
        self._min_acks: dict[str, int] = {}
        self._trusted_stores: frozenset[str] = frozenset()
        self._claims: dict[PartitionKey, _Claim] = {}
        # (head, since when) of partitions a trusted store's tail is past: how long we
        # have stored nothing in them (_tail_counts; one entry per partition held)
        self._quiet: dict[PartitionKey, tuple[int, float]] = {}
        self._refused_claims: dict[PartitionKey, tuple[int, float]] = {}
        self._peer_heads: dict[PartitionKey, dict[str, tuple[int, float]]] = {}
        self._peer_count = 0
        self._last_under_log = -math.inf
        # the newest offset known per partition at the last round and the one before
        self._horizons: dict[PartitionKey, int] = {}
        self._horizons_old: dict[PartitionKey, int] = {}
        self.under_replicated = UnderReplication()
        """What the last round found (``dafka_store_under_replicated_*``)."""

    def set_policy(
        self, topics: Mapping[str, Mapping[str, Any]], stores: Iterable[str] = ()
    ) -> None:
        """The trusted stores and each topic's ``min_acks`` (the cluster metadata)."""
        self._trusted_stores = frozenset(stores)
        self._min_acks = {t: int(s.get("min_acks") or 1) for t, s in topics.items()}

    # ------------------------------------------------------------------ rounds

    def forget_topic(self, topic: str) -> None:
        """Drop what is held about ``topic`` (deleted)."""
        for key in [k for k in self._quiet if k[0] == topic]:
            del self._quiet[key]

    def _topics_kept(self) -> list[str]:
        topics = set(self._min_acks) | {topic for topic, _ in self._heads}
        return sorted(t for t in topics if t not in self._deleted)

    def replicate_soon(self, now: float) -> None:
        """A peer just connected: the next round at most ``EARLY_ROUND`` seconds from now,
        and never sooner than ``EARLY_ROUND`` after the last early one, so a store replaced
        after a lost disk asks the others at once instead of a whole interval later, and a
        flood of connections brings at most one extra round per ``EARLY_ROUND``."""
        if now < self._repl_early_next:
            return
        self._repl_early_next = now + EARLY_ROUND
        self._repl_next = min(self._repl_next, now + EARLY_ROUND)

    def replicate(self, now: float) -> list[Publish]:
        """A round, when due: GET-HEADS for the next topics, claims checked, peers'
        heads aged and the under-replication counted (and logged, rate-limited)."""
        if now < self._repl_next:
            return []
        self._repl_next = now + self._repl_interval
        topics = self._topics_kept()
        out: list[Publish] = []
        if topics:
            start = self._repl_cursor % len(topics)
            chosen = (topics[start:] + topics[:start])[:MAX_ROUND_TOPICS]
            self._repl_cursor = start + len(chosen)
            out.extend(Publish(m.GetHeads(topic, self._node_id)) for topic in chosen)
        self._check_claims(now)
        rounds = max(1, math.ceil(len(topics) / MAX_ROUND_TOPICS))
        self._age_peers(now - STALE_ROUNDS * rounds * self._repl_interval)
        self._count_under(now)
        return out

    def _check_claims(self, now: float) -> None:
        """Claims met are done; those that brought nothing for MAX_STRIKES rounds are
        dropped, their gap closed unless the producer's signed head backs it."""
        for key, claim in list(self._claims.items()):
            head = self._heads.get(key, -1)
            if head >= claim.target:
                del self._claims[key]
            elif head > claim.head:
                claim.head, claim.strikes = head, 0
            else:
                claim.strikes += 1
                # guard: lying-store-unsigned-claim-dropped
                if claim.strikes >= MAX_STRIKES:
                    self._drop_claim(key, claim, now)
        for key, (_, until) in list(self._refused_claims.items()):
            if now >= until:
                del self._refused_claims[key]

    def _drop_claim(self, key: PartitionKey, claim: _Claim, now: float) -> None:
        del self._claims[key]
        if len(self._refused_claims) < MAX_CLAIMS:
            self._refused_claims[key] = (claim.target, now + CLAIM_PENALTY)
        self.stats.claims_dropped += 1
        gap = self._gaps.get(key)
        signed = self._signed_heads.get(key)
        if gap is not None and gap.target <= claim.target:
            backed = signed.offset if signed is not None else -1
            if backed > self._heads.get(key, -1):
                self._gaps_part.lower_target(key, backed)
            else:
                self._gaps_part.close(key)
        log.info(
            "store.claim_dropped topic=%s partition=%s target=%d head=%d total=%d",
            key[0],
            key[1],
            claim.target,
            self._heads.get(key, -1),
            self.stats.claims_dropped,
        )

    def _age_peers(self, before: float) -> None:
        for key, peers in list(self._peer_heads.items()):
            for store, (_, at) in list(peers.items()):
                if at < before:
                    del peers[store]
                    self._peer_count -= 1
            if not peers:
                del self._peer_heads[key]

    def _count_under(self, now: float) -> None:
        """Partitions and records held by fewer stores than min_acks, from our heads and
        the heads other stores said they hold (fresh ones only). Only records known to
        exist two rounds ago are judged: those after them may still be on their way to
        the other stores (or their word about them to us), and are judged next time."""
        partitions = records = 0
        judged = self._horizons_old
        horizons: dict[PartitionKey, int] = {}
        for key in set(self._heads) | set(self._peer_heads):
            need = self._min_acks.get(key[0], 1)
            if need <= 1:
                continue
            trusted = self._trusted_stores  # configured: another store's word counts not
            # guard: trusted-stores-untrusted-store-claim
            heads = [
                h
                for peer, (h, _) in self._peer_heads.get(key, {}).items()
                if not trusted or peer in trusted
            ]
            own = self._heads.get(key)
            if own is not None and (not trusted or self._node_id in trusted):
                heads.append(own)
            if not heads:
                continue  # no trusted store (us included) said it holds any of it
            heads.sort(reverse=True)
            horizons[key] = heads[0]
            top = judged.get(key)
            if top is None:
                continue
            floor = heads[need - 1] if len(heads) >= need else self._tails.get(key, 0) - 1
            if top > floor:
                partitions += 1
                records += top - max(floor, -1)
        self._horizons_old, self._horizons = self._horizons, horizons
        self.under_replicated = UnderReplication(partitions, records)
        if partitions and now - self._last_under_log >= UNDER_LOG_PERIOD:
            self._last_under_log = now
            log.warning(
                "store.under_replicated partitions=%d records=%d (held by fewer stores "
                "than min_acks, as far as this store heard)",
                partitions,
                records,
            )

    # ------------------------------------------------------------------ answers

    def on_direct_head(self, msg: m.DirectHead, b: _Batch) -> None:
        """Another store's answer to our GET-HEADS (or to a FETCH below its tail)."""
        key = (msg.topic, msg.partition)
        if key[0] not in self._min_acks and key not in self._heads:
            self.stats.ignored += 1  # a topic we do not keep
            return
        nxt = self._expected(key, b)
        if nxt is None or self._pinned_elsewhere(key):
            return
        proof = msg.head
        if proof is not None and (proof.topic, proof.partition) == key and proof.offset >= nxt:
            self._on_head(proof, b)  # verified there (signed), bounded by max_head_lead
        sender = b.sender
        peer = sender.node if sender is not None else ""
        tail = msg.tail
        if tail and nxt < tail <= msg.offset:  # it no longer holds what we lack
            store = self._profile.tail_store(msg)  # verified only then: one check at most
            if store is not None and self._tail_counts(key, store, tail, b.now):
                self._skip_to(key, tail, store, b)
                nxt = b.nexts[key]
            peer = store or peer
        if peer and peer != self._node_id:
            self._note_peer(key, peer, msg.offset, b.now)
        if msg.offset >= nxt:
            self._claim(key, msg.offset, nxt, b)

    def _note_peer(self, key: PartitionKey, peer: str, head: int, now: float) -> None:
        peers = self._peer_heads.get(key)
        if peers is None:
            # guard: heads-remembered-other-stores-bounded
            if self._peer_count >= MAX_PEER_KEYS:
                return
            peers = self._peer_heads[key] = {}
        if peer not in peers:
            # guard: heads-remembered-other-stores-bounded-2
            if len(peers) >= MAX_PEERS_PER_PARTITION or self._peer_count >= MAX_PEER_KEYS:
                return
            self._peer_count += 1
        peers[peer] = (head, now)

    def _claim(self, key: PartitionKey, offset: int, nxt: int, b: _Batch) -> None:
        """Follow another store's unsigned word that ``key`` reaches ``offset``."""
        refused = self._refused_claims.get(key)
        if refused is not None and offset <= refused[0]:
            return
        if not self.may_write(*key):
            return  # what it would send is refused anyway
        claim = self._claims.get(key)
        target = min(offset, nxt - 1 + self._lead)
        if claim is None:
            # guard: claims-other-stores-followed-bounded
            if len(self._claims) >= MAX_CLAIMS:
                return  # not admitted either: a partition is taken on when a verified batch is
            # guard: another-store-claims-take-partition
            claim = self._claims[key] = _Claim(target, self._heads.get(key, -1))
        elif target > claim.target:
            claim.target = target
        self._note_gap(key, target, b)

    # ------------------------------------------------------------------ tails

    def _tail_counts(self, key: PartitionKey, store: str, tail: int, now: float) -> bool:
        """Whether a store's signed tail may move where we continue. Only a trusted
        store's (with none configured, no store's: any node can make a key and sign a
        tail). Over records we hold, only on a topic with retention by age, and once we
        have stored nothing in the partition for a whole retention period by our own
        monotonic clock (from when we first saw it quiet): our own retention would trim
        those records then, but for the newest batch it always keeps. A store that lied
        about its tail (a red-team pass made an honest store drop what two stores had
        acknowledged) moves nothing; a trusted one moves only what is old here too."""
        # guard: store-continues-another-store-tail
        if store not in self._trusted_stores:
            return False
        held = self._heads.get(key)
        if held is None:
            return True  # we drop nothing
        age = self._retention.get(key[0], (None, None))[0]
        # guard: trusted-tail-drops-held-records-2
        if age is None:
            return False
        quiet = self._quiet.get(key)
        if quiet is None or quiet[0] != held:
            self._quiet[key] = (held, now)
            return False
        # guard: trusted-tail-drops-held-records
        return now - quiet[1] >= age / 1000.0

    def _skip_to(self, key: PartitionKey, tail: int, store: str, b: _Batch) -> None:
        """Continue ``key`` from ``tail``: what we hold below it is dropped (the store
        that signed the tail deleted it by retention), nothing below it is asked for."""
        if key in b.advanced:
            return  # batches of it wait in this very write batch: next time
        held = self._heads.get(key)
        was = b.nexts.get(key, -1)
        dropped = 0
        if held is not None:
            first = self._tails.get(key, 0)
            try:
                self._storage.truncate(key[0], key[1], first)
            except StorageError as exc:
                log.warning("store.retention_skip_failed topic=%s error=%s", key[0], exc)
                return
            dropped = held - first + 1
        self._table.skip_to(key, tail)
        b.nexts[key] = tail
        buf = self._buffers.get(key)
        if buf:
            if tail in buf:
                b.nexts[key] = self._drain(key, buf, tail, b)
                b.advanced.add(key)
            else:
                self._drain(key, buf, tail, b)  # drops what lies below the tail
        self._quiet.pop(key, None)
        self.stats.retention_skips += 1
        log.warning(
            "store.retention_skip topic=%s partition=%s from=%d to=%d dropped=%d store=%s "
            "(trimmed by retention at that store; continuing from its signed tail)",
            key[0],
            key[1],
            was,
            tail,
            dropped,
            store,
        )
