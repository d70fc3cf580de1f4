"""Writes over batches already stored, each in one LMDB transaction: a corrupt batch
replaced by a verified copy (:meth:`LmdbRewrites.replace`, ``dafka.store._repair``),
and a run of batches replaced by one batch over exactly their offsets
(:meth:`LmdbRewrites.rewrite`, a producer's gap statement, ``dafka.store._ingest``).

Batches are keyed by partition prefix and last offset, and each value starts with the
batch's first offset (``dafka.storage.lmdb_values``). The batches replaced must start at
``first`` and end at ``last`` exactly; otherwise nothing is written and StorageError says
why. Head and tail do not move: the batches after ``last`` stay as they are.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lmdb

from ..errors import StorageError
from .base import StoredBatch
from .keys import partition_prefix
from .lmdb_heads import CachedHeads
from .lmdb_values import BadBatch, IntegrityStats, value_of

log = logging.getLogger(__name__)

_U64 = struct.Struct(">Q")


def rewrite_range(
    txn: Any, db: Any, prefix: bytes, first: int, last: int, value: bytes, what: str
) -> int:
    """Delete the batches of ``prefix`` that cover exactly ``first..last`` and put
    ``value`` (keyed at ``last``) in their place, inside ``txn``; how many were deleted.
    Raises StorageError (the caller aborts the transaction) if they do not line up."""
    cursor = txn.cursor(db=db)
    if not cursor.set_range(prefix + _U64.pack(first)) or cursor.key()[: len(prefix)] != prefix:
        raise StorageError(f"no batch of {what} holds offset {first}")
    (start,) = _U64.unpack_from(cursor.value())
    if start != first:
        raise StorageError(f"offset {first} of {what} is inside a batch")
    deleted = 0
    while True:
        key = cursor.key()
        if key[: len(prefix)] != prefix:
            raise StorageError(f"offset {last} of {what} is past its head")
        (end,) = _U64.unpack_from(key, len(prefix))
        if end > last:
            raise StorageError(f"offset {last} of {what} is inside a batch")
        deleted += 1
        if not cursor.delete():
            raise StorageError(f"offset {last} of {what} is past its head")
        if end == last:
            break
    txn.put(prefix + _U64.pack(last), value, db=db)
    return deleted


class LmdbRewrites:
    """:class:`~dafka.storage.lmdb_store.LmdbStorage`'s writes over stored batches."""

    if TYPE_CHECKING:
        _env: lmdb.Environment
        _batches: Any
        _path: Path
        _cache: CachedHeads
        bad: dict[tuple[str, str, int], BadBatch]
        integrity: IntegrityStats

        def _check_usable(self) -> None: ...

        def grow(self) -> None: ...

        def _failed(self, exc: BaseException, what: str, need_bytes: int = 0) -> StorageError: ...

    def replace(self, batch: StoredBatch) -> bool:
        """Write ``batch`` over the stored batch of the same offsets found bad (a copy from
        another store, verified by the caller); False if no such bad batch is held."""
        self._check_usable()
        bad = self.bad.get((batch.topic, batch.partition, batch.first_offset))
        if bad is None or bad.last != batch.last_offset:
            return False
        key = partition_prefix(batch.topic, batch.partition) + _U64.pack(batch.last_offset)
        since = self._cache.digests_from.get((batch.topic, batch.partition), 0)
        value = value_of(key, batch.first_offset, batch.blob, batch.first_offset >= since)
        while True:
            try:
                with self._env.begin(write=True, db=self._batches) as txn:
                    old = txn.get(key)
                    if old is None or _U64.unpack_from(old)[0] != batch.first_offset:
                        return False
                    txn.put(key, value)
                break
            except lmdb.MapFullError:
                self.grow()
            except (lmdb.Error, OSError) as exc:
                raise self._failed(exc, f"repair of {self._path} failed") from exc
        del self.bad[(batch.topic, batch.partition, batch.first_offset)]
        self.integrity.repaired += 1
        log.warning(
            "store.batch_repaired topic=%s partition=%s first=%d last=%d",
            batch.topic,
            batch.partition,
            batch.first_offset,
            batch.last_offset,
        )
        return True

    def rewrite(self, batch: StoredBatch) -> int:
        """Replace the stored batches that cover exactly ``batch``'s offsets by ``batch``,
        in one transaction (a producer's gap statement over batches it never got
        acknowledged, below batches of its later run: ``dafka.store._ingest``). Head
        and tail stay. Returns the batches replaced; StorageError if they do not line up."""
        self._check_usable()
        key = (batch.topic, batch.partition)
        ht = self._cache.heads.get(key)
        first, last = batch.first_offset, batch.last_offset
        if ht is None or not ht[1] <= first <= last <= ht[0]:
            raise StorageError(f"cannot rewrite {key} at {first}..{last}: not stored")
        prefix = partition_prefix(batch.topic, batch.partition)
        since = self._cache.digests_from.get(key, 0)
        value = value_of(prefix + _U64.pack(last), first, batch.blob, first >= since)
        while True:
            try:
                with self._env.begin(write=True) as txn:
                    replaced = rewrite_range(
                        txn, self._batches, prefix, first, last, value, f"{key} in {self._path}"
                    )
                for bad in [k for k in self.bad if k[:2] == key and first <= k[2] <= last]:
                    del self.bad[bad]  # replaced: nothing left to repair there
                return replaced
            except lmdb.MapFullError:
                self.grow()
            except (lmdb.Error, OSError) as exc:
                raise self._failed(exc, f"rewrite in {self._path} failed") from exc
