"""The store: one package holding its core, its facade and its IO-thread half.

The facade, :class:`Store` (``_facade.py``), opens the data directory and runs the node;
its IO-thread half, ``_StoreHandler`` (same file), steps drained messages through the
core and runs its :class:`~dafka.core.ready.Ready`: a drain's records persisted
(fsynced, LMDB) before the ACKs that follow them are published, on the IO thread by
:func:`~dafka.io.ready_shell.run_ready` or on a writer thread (``_pipeline.py``,
:mod:`dafka.io.ready_writer`, ``--commit-thread``). The rest of this text is the core's.

:class:`StoreCore` takes drained batches of decoded messages and the time, and
returns :class:`~dafka.core.effects.Publish` effects. It never reads a clock,
sleeps or touches a socket; the IO shell (``dafka.store._facade``) drives it.

It does what the C reference store does (wire reference §7) with DESIGN's fixes:

* **Group commit, ACK after commit.** All records accepted from one drained
  batch go to storage in one ``append`` (one fsynced transaction); only when it
  returns does one ACK per partition go out, carrying the new head. If it
  raises, nothing is ACKed and the heads stay where they were.
* **Duplicates are re-ACKed** (the reference drops them silently, so a producer
  whose ACK was lost waits forever). A HEAD at or below what we hold is
  re-ACKed for the same reason.
* **Gaps.** A record beyond ``head + 1`` opens a gap: the store sends
  ``FETCH(head + 1, count = gap size)``. Out-of-order records are kept in a
  bounded buffer (``max_buffered_bytes``; 0 restores the reference's
  drop-and-refetch behaviour) and drained into the write batch when the gap
  fills, so a store behind a live stream catches up in one round trip instead
  of chasing the stream forever. Gap FETCHes are rate-limited per partition:
  a new one only when the previous one was fully answered, or after the retry
  interval (``fetch_retry``, doubling while nothing arrives, up to 64x), so a
  flood of records or HEADs never becomes a flood of FETCHes.
* **Serving.** A FETCH is answered with exactly the stored records in
  ``[offset, offset + count)`` (the reference sends ``count + 1``), served at
  most ``serve_chunk`` records per call, round-robin across pending fetches, so
  the IO loop stays responsive; under ``signed`` one answer ends after at most
  ``ANSWER_BATCHES`` batches and ``ANSWER_BYTES`` bytes, whatever the count, and
  the requester asks again (:mod:`dafka.core.answers`). Heads are matched by exact
  topic. Under ``signed`` what goes to one requester (answers, DIRECT-HEADs, ACKs) is
  paced to what it has taken (:mod:`.credits`), since the shell's data XPUB keeps
  few messages per connection; so are the store's own gap FETCHes, which go to every
  store.
* **Bad input** never raises out of :meth:`StoreCore.handle_batch`: it is
  counted in :attr:`StoreCore.stats` and dropped.
* **Records over the size bound** (rfc46: a C producer has no cap) reach the core
  as :class:`~dafka.core.messages.Oversized`, their content dropped by the IO
  shell. The store refuses that offset and goes on: the next record is stored as
  one batch spanning the refused offsets and itself (an rfc46 batch of more than
  one offset holds only the record at its last offset), so the records after it
  are stored and ACKed (cumulatively, which frees the refused one at a C
  producer) and the refusal is counted (``oversized``) and logged. Served, such a
  batch yields its one record: nobody can serve the refused offsets.
* **A FETCH answered in full below the head** (rfc46) is followed by a DIRECT-HEAD
  to its requester, so a C consumer, which asks in windows and only when told of
  more, does not stop after its first window (``docs/wire.md`` §13).

A RECORD is a batch (``dafka.core.messages``): one record under ``rfc46``, a
producer-signed batch blob under ``signed``. Under ``signed`` the store:

* **verifies before it keeps**: a batch is stored (or buffered) only if the
  profile accepts it (signature, the signing key owns the partition, topic,
  offsets); forgeries are dropped and counted (``rejected``);
* keeps the **blob verbatim** (one :class:`StoredBatch` per blob) and serves
  it verbatim in DIRECT-RECORD, so consumers check the producer's signature
  whoever served the bytes;
* tells **replays from equivocation**: a batch at offsets it already holds is
  a duplicate (re-ACKed, never verified) when it is byte-identical to the
  stored one; otherwise it is verified, and a second validly signed batch for
  stored offsets is equivocation: the first is kept, the second counted
  (``equivocations``), logged and reported in :attr:`StoreCore.equivocations`;
* verifies a HEAD before it opens a gap for it, keeps the newest verified
  HEAD per partition to pass on in DIRECT-HEAD, and lets a HEAD move the gap
  target at most ``max_head_lead`` offsets past what it holds.

Each partition is pinned to the profile of its first batch (the storage
records it); a store speaks one profile, and its partitions of the other
profile (a data directory reused under another profile) are neither written
nor served (``wrong_profile``). FETCHes and head requests are rate-limited per
requester (``dafka.core.limits``) on top of the pending-fetch cap.

A FETCH's identity for de-duplication is ``(requester, topic, partition,
offset)``: under rfc46 one producer ID names one partition in each topic it
writes, so the partition ID alone does not say which records are asked for.

The core's parts, each an object :class:`StoreCore` owns, with its own state (what one part
only reads of another's it keeps as a read-only reference, named in its constructor):

* ``_state.py``: :class:`~dafka.store._state.StoreConfig` (the options every part is
  configured with), :class:`StoreStats`, :class:`Equivocation` and the scratch state of
  one drained batch (``_Batch``);
* ``_partitions.py``: :class:`~dafka.store._partitions.PartitionTable`, heads, tails,
  pinned profiles, deletion fences, verified HEADs and the gate of new partitions: the
  only writer of them;
* ``_policy.py``: :class:`~dafka.store._policy.StorePolicy`, the metadata's write
  and read ACLs, retention and topic deletions;
* ``_gaps.py``: :class:`~dafka.store._gaps.StoreGaps`, open gaps, the out-of-order
  buffer and the rate-limited gap FETCHes;
* ``_ingest.py``: :class:`~dafka.store._ingest.StoreIngest`, records and HEADs in:
  verification, duplicates, replays, equivocation, superseding gap statements, new
  partitions, oversized records, and the group commit;
* ``_serve.py``: :class:`~dafka.store._serve.StoreServing`, FETCHes served chunk by
  chunk and head requests answered, within their rate limits and read ACLs, and what
  waits for a requester's credit (``_credits.py``);
* ``_replicate.py``: :class:`~dafka.store._replicate.StoreReplication`, rounds of
  GET-HEADS to the other stores and their DIRECT-HEADs in: what they hold and this store
  lacks is fetched (re-replication), a trusted store's signed tail lets a store down past
  retention continue, and the partitions held by fewer stores than ``min_acks`` are counted;
* ``_repair.py``: :class:`~dafka.store._repair.StoreRepair`, corrupt batches asked for;
* ``_compaction.py``: compacted topics: the pure planner (which records a compacted
  partition drops), the ingest rule (a producer's batch on such a topic: format 5, a
  key on every record) and :class:`~dafka.store._compaction.Compactor`, the background
  job the IO shell steps within ``--compaction-rate`` (``docs/storage.md``);
* ``_waiting.py``: the drain gathered while a commit is in flight (writer thread);
* ``_core.py``: :class:`StoreCore`, which builds the parts and runs one drained batch
  through them, ACKs last.

The names below are imported when first used (PEP 562), as ``dafka``'s are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ._compaction import COMPACTION_PASS_SECONDS, DEFAULT_COMPACTION_RATE
    from ._core import MAX_HELLO_TOPICS, StoreCore
    from ._facade import DEFAULT_SERVE_RATE, MIN_SERVE_RATE, Store
    from ._gaps import MAX_OPEN_GAPS
    from ._replicate import REPLICATE_INTERVAL
    from ._state import Equivocation, StoreStats

__all__ = [
    "COMPACTION_PASS_SECONDS",
    "DEFAULT_COMPACTION_RATE",
    "DEFAULT_SERVE_RATE",
    "MAX_HELLO_TOPICS",
    "MAX_OPEN_GAPS",
    "MIN_SERVE_RATE",
    "REPLICATE_INTERVAL",
    "Equivocation",
    "Store",
    "StoreCore",
    "StoreStats",
]

_LAZY = {
    "COMPACTION_PASS_SECONDS": "._compaction",
    "DEFAULT_COMPACTION_RATE": "._compaction",
    "DEFAULT_SERVE_RATE": "._facade",
    "MAX_HELLO_TOPICS": "._core",
    "MAX_OPEN_GAPS": "._gaps",
    "MIN_SERVE_RATE": "._facade",
    "REPLICATE_INTERVAL": "._replicate",
    "Equivocation": "._state",
    "Store": "._facade",
    "StoreCore": "._core",
    "StoreStats": "._state",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
