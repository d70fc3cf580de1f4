"""The consumer core's per-partition state, its counters and its bounds.

Split out of :mod:`dafka.consumer._core` to keep that module about behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.answers import AnswerCursor
from ..core.equivocation import BatchMemory
from ..wire.profiles import RichOpened

__all__ = ["ConsumerStats", "PartitionState"]

RECENT_PRUNE_AT = 32
REJECT_LOG_PERIOD = 5.0
# Partitions known only from a store's unsigned hint (a DIRECT-HEAD's ``sequence``):
# at most this many at once, made at this rate, each forgotten after this many
# FETCHes that brought nothing verified.
MAX_UNCONFIRMED = 1024
HINT_RATE = 100.0
HINT_BURST = 512.0
UNCONFIRMED_TRIES = 3
# FETCHes this consumer sends, over all partitions.
FETCH_RATE = 2000.0
FETCH_BURST = 4000.0
MAX_EQUIVOCATION_REPORTS = 100
SIGNATURE_BYTES = 64  # a signed batch ends with its Ed25519 signature
MAX_REFUSED = 64  # oversized offsets remembered per partition until delivery reaches them
# The reorder buffer's byte bounds (defaults of ``max_buffered_bytes`` and
# ``max_buffered_bytes_per_partition``): a batch held out of order costs its wire size
# plus HELD_OVERHEAD a record (the Python objects of its keys and values).
MAX_BUFFERED_BYTES = 64 * 1024 * 1024
MAX_BUFFERED_BYTES_PER_PARTITION = 16 * 1024 * 1024
HELD_OVERHEAD = 64

# A buffered batch: (count, keys or None, values, timestamp in seconds or None, the bytes
# it is counted for in the reorder buffer's byte bounds, what format 5 adds or None)
Held = tuple[
    int, Sequence[bytes | None] | None, Sequence[bytes | None], float | None, int, RichOpened | None
]


@dataclass(frozen=True, slots=True)
class ConsumerStats:
    """Counters of what the core dropped or sent, for metrics and logs."""

    delivered: int
    duplicates: int
    """Batches at or below the delivered point, or already buffered."""
    beyond_buffer: int
    """Batches ahead of delivery not buffered: too far ahead (``max_buffered`` offsets) or
    over the reorder buffer's byte bounds; they are fetched again when their turn comes."""
    ignored: int
    """Messages for topics we don't subscribe to or addressed to another node."""
    refused_partitions: int
    """New partitions refused: malformed partition ID or ``max_partitions`` reached."""
    fetches_sent: int
    rejected: int = 0
    """Batches that failed verification (forged, tampered, wrong partition or topic)."""
    rejected_heads: int = 0
    """HEADs that failed verification (signed by a key that does not own the partition)."""
    unauthorized: int = 0
    """Batches and HEADs of producers the topic's ACL (metadata) does not allow."""
    data_lost: int = 0
    """Records skipped because a store's retention deleted them before delivery."""
    gap_offsets: int = 0
    """Offsets passed without records because their producer's signed gap statement
    says they hold none (a range it reserved before a crash and never got stored)."""
    ignored_tails: int = 0
    """Store tails not acted on: unsigned, badly signed, from an untrusted store, or
    above what signed statements say exists."""
    limited_hints: int = 0
    """Unsigned store hints for unknown partitions refused (rate or count bound)."""
    limited_fetches: int = 0
    """FETCHes held back by the bound on FETCHes over all partitions."""
    equivocations: int = 0
    """Validly signed batches for offsets already taken with other content (dropped;
    reported in ``ConsumerCore.equivocations``)."""
    oversized: int = 0
    """Records over ``max_message_size`` seen (their content dropped by the IO shell)."""
    unserved: int = 0
    """rfc46: offsets skipped because nobody served them for ``unserved_after`` seconds
    while later records of the partition were held (also counted in ``data_lost``)."""
    before_start: int = 0
    """Records passed, not delivered, because their batch is stamped before the
    consumer's ``start_timestamp`` (or a timestamp seek)."""
    tail_claims: int = 0
    """Store tails heard as claims, not acted on at once: from a store not on the trust
    list, or from any store without one (then acted on after ``unserved_after`` seconds
    in which no store served the range; ``dafka.consumer._heads``)."""
    tail_waits: int = 0
    """Times a claimed tail was still waited on past ``unserved_after`` seconds: no store
    serves the range and no trusted store's tail lets it be skipped (each is also a
    rate-limited warning line)."""
    compacted: int = 0
    """Offsets passed without records because a store's compaction dropped them from a
    signed batch (a later record of the same key exists: not a data loss)."""
    unopened: Mapping[str, int] = field(default_factory=dict)
    """Format-5 batches whose signature verified but whose records were refused, by
    reason: ``bomb`` (decompressed size over ``max_decompressed_bytes``), ``root`` (the
    records are not the ones signed), ``payload`` (they do not parse)."""


class PartitionState:
    """Delivery state of one partition.

    ``next`` is the next offset to deliver; ``known_end`` is one past the
    highest offset known to exist (from HEADs and records seen) and
    ``seen_end`` one past the highest offset of a verified record, so
    ``[next, known_end)`` is what is missing. ``[req_start, req_end)`` is the
    latest FETCH window asked for, and under ``signed`` ``answer`` counts
    its answer to see where it ends (:mod:`dafka.core.answers`), and ``ahead`` is
    the next FETCH if it went out before that answer's last batch was verified;
    ``recent`` maps FETCH offsets to when they were sent, to rate-limit repeats. ``buffer`` maps the first offset of a
    verified batch that arrived early to its records, ``held_bytes`` what they are
    counted for (see ``HELD_OVERHEAD``). ``not_before``: while set,
    batches stamped before it are passed over (a timestamp start).

    Who writes what (the parts of :class:`~dafka.consumer._core.ConsumerCore`):

    * ``PartitionTable.create`` (consumer_base) makes it; ``confirmed`` is the table's;
    * the FETCH window (``req_*``, ``recent``, ``ahead``, ``tries``, ``settled``) is
      written in consumer_fetch only (``FetchPlanning``), ``answer`` made there and
      counted as batches arrive (consumer_delivery);
    * ``buffer``, ``buffer_ends`` and ``held_bytes`` only by ``ReorderBuffers``
      (consumer_buffer);
    * the delivery point ``next`` (and ``progress_at``, ``memory``, ``refused``,
      ``not_before``) by ``Delivery`` (consumer_delivery), ``FetchPlanning.aim_from_end``
      (``-N``) and the core's seeks (consumer);
    * the ends: ``seen_end`` by ``Delivery``, ``signed_end`` and ``claim_since`` by
      ``HeadTracking`` (consumer_heads), ``known_end`` by both (and the core's seeks).
    """

    __slots__ = (
        "ahead",
        "answer",
        "buffer",
        "buffer_ends",
        "claim_since",
        "confirmed",
        "from_end",
        "held_bytes",
        "known_end",
        "memory",
        "next",
        "not_before",
        "partition",
        "progress_at",
        "recent",
        "refused",
        "req_end",
        "req_mid",
        "req_start",
        "seen_end",
        "settled",
        "signed_end",
        "start",
        "topic",
        "tries",
    )

    def __init__(self, topic: str, partition: str, start: int, now: float) -> None:
        self.topic = topic
        self.partition = partition
        self.next = start
        self.start = start  # where it began: not evidence of records (see watermarks)
        self.known_end = start
        self.seen_end = start
        self.buffer: dict[int, Held] = {}
        self.buffer_ends: dict[int, int] = {}  # last offset -> first offset, of buffered batches
        self.held_bytes = 0  # the sum of the buffered batches' byte costs
        self.req_start = start
        self.req_mid = start
        self.req_end = start
        # signed: the count of the latest FETCH's answer, which ends at its bound
        self.answer: AnswerCursor | None = None
        # signed: the FETCH sent when the answer's last batch arrived, before it was verified
        # (start, end, when); taken for the one its verification asks for if they agree
        self.ahead: tuple[int, int, float] | None = None
        self.progress_at = now
        self.recent: dict[int, float] = {}
        # one past the highest offset a signed statement (record, producer HEAD) shows
        self.signed_end = start
        # False while the partition is known only from unsigned store hints
        self.confirmed = True
        self.tries = 0  # FETCHes sent while unconfirmed
        self.memory: BatchMemory | None = None  # signatures of recent batches (signed)
        # rfc46: offsets ahead whose record was over max_message_size (seen, refused)
        self.refused: set[int] | None = None
        # a timestamp start (seconds): batches stamped before it are passed, not delivered
        self.not_before: float | None = None
        # -N: N, until the first record is delivered; ``settled`` once the end is proven
        # and delivery starts N before it (dafka.consumer._fetch.FetchPlanning.aim_from_end)
        self.from_end = 0
        self.settled = False
        # when a store's tail claim not (yet) acted on was first heard (since the last
        # progress); dafka.consumer._heads
        self.claim_since: float | None = None
