"""What a store keeps, and the interface every storage backend offers.

The unit of storage is a *batch*: a contiguous run of offsets of one partition
stored as one opaque blob. The layer does not look inside blobs, so it serves
both wire profiles: under ``rfc46`` a batch holds one record
(``first_offset == last_offset`` and the blob is the record content); under
``signed`` a blob is the producer's signed multi-record batch, kept verbatim.

Every partition is pinned to the wire profile of its first batch
(:attr:`StoredBatch.profile`), and a batch of the other profile for it is
refused: a node never mixes the profiles on one partition, and a reader (the
store serving FETCHes, the query server) knows how to read every blob.

Invariants every backend keeps (and ``tests/unit/test_storage_contract.py``
checks against each of them):

* A partition's batches are contiguous: a batch appended to an existing
  partition starts at ``head + 1``. A new partition may start at any offset;
  that offset becomes its tail. ``append`` refuses anything else with
  :class:`~dafka.errors.StorageError` before writing, so a core bug can never
  leave holes or overlaps on disk.
* ``append`` is all or nothing and durable when it returns. The caller ACKs
  only after it returns; if it raises, nothing of the call is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import DafkaError, StorageError
from ..frozen import quick_init
from .keys import MAX_OFFSET, partition_prefix

if TYPE_CHECKING:
    from .lmdb_values import BadBatch
    from .retention import BatchInfo

__all__ = ["PROFILE_IDS", "PROFILES", "HeadTail", "Storage", "StoredBatch", "plan_append"]

PROFILES = ("rfc46", "signed")
"""The wire profiles a partition can be pinned to."""
PROFILE_IDS = {"rfc46": 1, "signed": 2}
"""How a backend records a profile in one byte: the profile's wire version octet."""

HeadTail = tuple[int, int]
"""``(head, tail)``: the last and the first offset stored for a partition."""


@quick_init  # one per record under rfc46
@dataclass(frozen=True, slots=True)
class StoredBatch:
    """One stored batch: offsets ``first_offset..last_offset`` of one partition.

    ``profile`` says how to read ``blob``: ``"rfc46"``, one record whose value
    is the blob; ``"signed"``, the producer's signed batch blob, verbatim
    (``dafka.wire.profiles.records_of`` reads either).
    """

    topic: str
    partition: str
    first_offset: int
    last_offset: int
    blob: bytes
    profile: str = "rfc46"


@runtime_checkable
class Storage(Protocol):
    """A store's persistent state: batches by (topic, partition, offset), plus heads.

    Everything a store core uses of its storage is declared here, and every backend
    (:class:`~dafka.storage.lmdb_store.LmdbStorage`,
    :class:`~dafka.storage.memory.MemoryStorage`) implements all of it: retention
    (:meth:`batch_infos`, :meth:`trim`), topic deletions (:meth:`deletions`,
    :meth:`delete_topic`) and the corrupt batches found (:attr:`bad`)."""

    @property
    def bad(self) -> Mapping[tuple[str, str, int], BadBatch]:
        """The batches found corrupt, by ``(topic, partition, first offset)``: a live view,
        never served until replaced (a backend that cannot rot keeps it empty)."""
        ...

    def heads(self) -> dict[tuple[str, str], HeadTail]:
        """Every stored partition: ``(topic, partition) -> (head, tail)``.

        Cores call this once at start to rebuild their view; it is a copy.
        """
        ...

    def append(self, batches: Sequence[StoredBatch]) -> None:
        """Store ``batches`` in one transaction; durable (fsynced) when it returns.

        ``batches`` may mix partitions; within a partition they must be in
        offset order and continue the partition (see the module docstring).
        Raises a :class:`~dafka.errors.StorageError` subclass on any failure,
        in which case nothing of this call is stored.
        """
        ...

    def read(
        self,
        topic: str,
        partition: str,
        offset: int,
        max_batches: int,
        max_records: int | None = None,
        max_bytes: int | None = None,
    ) -> list[StoredBatch]:
        """Up to ``max_batches`` batches in order, starting with the one holding ``offset``;
        with ``max_records``, none after the batch that brings the records read (each
        batch's whole offset range) to it; with ``max_bytes``, none that would bring the
        blobs' total over it (the first batch is returned whatever its size). Each
        batch returned is a copy, so callers bound what one read costs with these.

        Empty if ``offset`` is not stored (below the tail, above the head, or
        an unknown partition): absence is an answer, not an error.
        """
        ...

    def partitions(self, topic: str) -> list[tuple[str, int]]:
        """``(partition, head)`` for every partition of exactly ``topic``, sorted."""
        ...

    def profiles(self) -> dict[tuple[str, str], str]:
        """Every stored partition: ``(topic, partition) -> profile`` it is pinned to (a copy)."""
        ...

    def truncate(self, topic: str, partition: str, first: int) -> int:
        """Delete a partition's batches from the one starting at ``first`` through the head
        (one transaction); the head moves to ``first - 1``, and a partition left empty is
        gone. Returns the batches deleted; StorageError if ``first`` does not start one."""
        ...

    def rewrite(self, batch: StoredBatch) -> int:
        """Replace the stored batches covering exactly ``batch``'s offsets by ``batch`` (one
        transaction); head and tail stay. Returns the batches replaced; StorageError if
        they do not line up with its first and last offsets."""
        ...

    def batch_infos(self, topic: str, partition: str) -> list[BatchInfo]:
        """Every stored batch of a partition, oldest first: offsets, size, the producer's
        timestamp (``signed``; None under rfc46). Empty for an unknown partition."""
        ...

    def trim(self, topic: str, partition: str, new_tail: int) -> int | None:
        """Delete the whole batches of a partition below ``new_tail`` (a batch's first
        offset) and move its tail there, in one transaction; the newest batch always
        stays. Returns the new tail, or None if nothing changed (retention)."""
        ...

    def deletions(self) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
        """The topic deletions applied (topic -> revision) and the fences they left
        (partition -> the last offset deleted), as :meth:`delete_topic` made them."""
        ...

    def delete_topic(self, topic: str, revision: int) -> tuple[int, dict[tuple[str, str], int]]:
        """Delete every batch and head of ``topic`` in one transaction, recording the
        deletion's ``revision`` and a fence per partition at its deleted head (at least the
        fence before). Returns ``(batches deleted, fences)``."""
        ...

    def close(self) -> None:
        """Release the backend; idempotent."""
        ...


def plan_append(
    current: Mapping[tuple[str, str], HeadTail],
    batches: Sequence[StoredBatch],
    profiles: Mapping[tuple[str, str], str] | None = None,
    new_profiles: dict[tuple[str, str], str] | None = None,
) -> dict[tuple[str, str], HeadTail]:
    """Check that ``batches`` continue their partitions; return the touched partitions' new heads.

    Shared by every backend so that they refuse exactly the same things, before
    writing anything. ``profiles`` are the stored partitions' pinned profiles:
    a batch of another profile is refused. The profiles of partitions this call
    creates are put in ``new_profiles``. Raises :class:`~dafka.errors.StorageError`.
    """
    new: dict[tuple[str, str], HeadTail] = {}
    pinned: dict[tuple[str, str], str] = {} if new_profiles is None else new_profiles
    seen: dict[tuple[str, str], str] = {}  # the profile of each partition this call touches
    for batch in batches:
        key = (batch.topic, batch.partition)
        first, last = batch.first_offset, batch.last_offset
        if not 0 <= first <= last <= MAX_OFFSET:
            raise StorageError(f"batch of {key} has offsets {first}..{last}")
        if not isinstance(batch.blob, bytes):
            raise StorageError(f"batch of {key} at {first} has a {type(batch.blob).__name__} blob")
        profile = batch.profile
        ht = new.get(key)
        if ht is None:
            if profile not in PROFILE_IDS:
                raise StorageError(f"batch of {key} has an unknown profile {profile!r}")
            ht = current.get(key)
            if ht is None:
                try:
                    partition_prefix(batch.topic, batch.partition)
                except (DafkaError, TypeError) as exc:
                    raise StorageError(f"cannot store {key}: {exc}") from exc
                new[key] = (last, first)
                pinned[key] = seen[key] = profile
                continue
            was = profiles.get(key) if profiles is not None else None
            seen[key] = was if was is not None else profile
        was = seen[key]
        if was != profile:
            raise StorageError(
                f"partition {key} holds {was} batches; refusing a {profile} batch "
                "(a partition never mixes the wire profiles)"
            )
        if first != ht[0] + 1:
            raise StorageError(
                f"batch of {key} starts at {first} but the partition's head is {ht[0]}"
            )
        new[key] = (last, ht[1])
    return new
