"""Store node logic, sans-IO, for both wire profiles (a package of its parts).

:class:`StoreCore` takes drained batches of decoded messages and the time, and
returns :class:`~dafka.core.effects.Publish` effects. It never reads a clock,
sleeps or touches a socket; the IO shell (``dafka.api.store``) drives it.

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

The parts, each an object :class:`StoreCore` owns, with its own state (what one part
only reads of another's it keeps as a read-only reference, named in its constructor):

* ``state.py``: :class:`~dafka.core.store.state.StoreConfig` (the options every part is
  configured with), :class:`StoreStats`, :class:`Equivocation` and the scratch state of
  one drained batch (``_Batch``);
* ``partitions.py``: :class:`~dafka.core.store.partitions.PartitionTable`, heads, tails,
  pinned profiles, deletion fences, verified HEADs and the gate of new partitions: the
  only writer of them;
* ``policy.py``: :class:`~dafka.core.store.policy.StorePolicy`, the metadata's write
  and read ACLs, retention and topic deletions;
* ``gaps.py``: :class:`~dafka.core.store.gaps.StoreGaps`, open gaps, the out-of-order
  buffer and the rate-limited gap FETCHes;
* ``ingest.py``: :class:`~dafka.core.store.ingest.StoreIngest`, records and HEADs in:
  verification, duplicates, replays, equivocation, superseding gap statements, new
  partitions, oversized records, and the group commit;
* ``serve.py``: :class:`~dafka.core.store.serve.StoreServing`, FETCHes served chunk by
  chunk and head requests answered, within their rate limits and read ACLs, and what
  waits for a requester's credit (``credits.py``);
* ``replicate.py``: :class:`~dafka.core.store.replicate.StoreReplication`, rounds of
  GET-HEADS to the other stores and their DIRECT-HEADs in: what they hold and this store
  lacks is fetched (re-replication), a trusted store's signed tail lets a store down past
  retention continue, and the partitions held by fewer stores than ``min_acks`` are counted;
* ``repair.py``: :class:`~dafka.core.store.repair.StoreRepair`, corrupt batches asked for;
* ``core.py``: :class:`StoreCore`, which builds the parts and runs one drained batch
  through them, ACKs last.
"""

from .core import MAX_HELLO_TOPICS, StoreCore
from .gaps import MAX_OPEN_GAPS
from .state import Equivocation, StoreStats

__all__ = ["MAX_HELLO_TOPICS", "MAX_OPEN_GAPS", "Equivocation", "StoreCore", "StoreStats"]
