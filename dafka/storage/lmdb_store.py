"""The LMDB storage backend: one environment per store, fsync on every commit.

Layout (DESIGN §5): named databases in one environment,

* ``batches``: :func:`~dafka.storage.keys.batch_key` -> first offset (u64 BE), digest
  (8 bytes, :func:`~dafka.storage.integrity.digest_of`) and blob. The first offset is
  stored explicitly so the layer stays profile-agnostic (a signed batch covers many
  offsets); it costs 8 bytes per batch, the digest 8 more. Batches written by schema 2
  (below their partition's ``digests from``) have no digest and are served unverified.
* ``heads``: :func:`~dafka.storage.keys.partition_prefix` -> head, tail (2 x u64 BE),
  the partition's wire profile (1 octet: its version octet, 1 rfc46, 2 signed) and the
  offset its digests start from (u64 BE; absent in schema 2: its head + 1).
  Updated in the same transaction as the batches, so they never disagree.
* ``meta``: ``schema_version`` and the store's persistent ``node_id``; for every topic
  deletion applied, ``deleted 0x00 topic`` -> the metadata revision of the deletion
  (u64 BE), and per partition of it ``fence 0x00`` + partition key -> the last offset
  deleted (u64 BE): records at or below it are the deleted topic's, never stored again.

Schema version 2 added the profile octet; a version 1 environment (only rfc46
existed) is read as rfc46 throughout. Version 3 added the digests; older environments
are marked version 3 on open and keep their old batches as they are.

Integrity (``dafka.storage.integrity``): the file is checked before LMDB maps it, every
batch read is checked against its digest (a bad one is never returned: it is counted in
:attr:`LmdbStorage.bad` until :meth:`LmdbStorage.replace` writes a good copy over it), and
an error saying the environment is damaged (a corrupt page, an I/O error on a write)
marks the storage :attr:`~LmdbStorage.damaged`: every later call raises it, so nothing
more is acknowledged from it.

Durability: LMDB defaults ``sync=True, metasync=True, writemap=False``, so a
commit returns only after the data and the meta page are fsynced; that is what
lets the store ACK right after :meth:`LmdbStorage.append` returns (DESIGN §4).

Processes: open the environment in the process that uses it, after any
``fork`` (an LMDB environment must not cross a fork; the storage refuses to be
used from a process other than the one that opened it). One process owns a
store directory: the heads are cached in memory and only this process's
commits update them, and LMDB must not be opened twice in one process.

Errors: ``dafka.storage.lmdb_errors`` (a full disk, the space a write needs).
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Sequence
from pathlib import Path

import lmdb

from ..errors import (
    ClosedError,
    ConfigError,
    DafkaError,
    StorageDamagedError,
    StorageError,
)
from ..ids import is_node_id, new_node_id
from ..security.private_dirs import make_private_dirs
from .base import PROFILE_IDS, HeadTail, StoredBatch
from .integrity import DIGEST_SIZE, check_file
from .keys import MAX_OFFSET, decode_partition_key, partition_prefix, topic_prefix
from .lmdb_errors import free_bytes, space_needed, translate_error
from .lmdb_heads import CachedHeads, PlannedAppend
from .lmdb_rewrite import LmdbRewrites
from .lmdb_values import (
    BadBatch,
    IntegrityStats,
    batch_items,
    batch_record_time,
    batch_timestamp,
    checked_blob,
    head_entry,
)
from .probe import probe_environment
from .retention import BatchInfo
from .state_dir import fsync_dir

__all__ = [
    "SCHEMA_VERSION",
    "CachedHeads",
    "LmdbStorage",
    "PlannedAppend",
    "free_bytes",
    "space_needed",
    "translate_error",
]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
_OLD_SCHEMAS = (b"1", b"2")
DEFAULT_MAP_SIZE = 64 * 1024 * 1024

_META_SCHEMA = b"schema_version"
_META_NODE_ID = b"node_id"
_META_DELETED = b"deleted\0"
_META_FENCE = b"fence\0"
_U64 = struct.Struct(">Q")
_OVERHEAD = 8 + DIGEST_SIZE  # first offset and digest before a blob


class LmdbStorage(LmdbRewrites):
    """A :class:`~dafka.storage.base.Storage` on an LMDB environment at ``path``.

    ``map_size`` is the initial map; it doubles whenever a write does not fit,
    up to ``max_map_size`` (``None``: no cap but what the OS can map).
    ``node_id`` is the store's identity when the caller owns one (derived from
    the store's key, ``dafka.security.identity``): it is recorded in ``meta``, replacing
    an older random one. Without it, a random ID is made once and kept.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int | None = None,
        *,
        node_id: str | None = None,
        probe: bool = False,
    ) -> None:
        """``probe``: walk the B-trees in a child process before mapping the file
        (``dafka.storage.probe``: damaged pages give one line, not LMDB's abort); the
        store does, at its start."""
        if map_size <= 0:
            raise ConfigError(f"map_size must be positive, not {map_size}")
        if max_map_size is not None and max_map_size < map_size:
            raise ConfigError(f"max_map_size {max_map_size} is below map_size {map_size}")
        self._path = Path(path)
        self._max_map_size = max_map_size
        self._pid = os.getpid()
        self._closed = False
        if node_id is not None and not is_node_id(node_id):
            raise ConfigError(f"store node ID {node_id!r} is not 32 upper-case hex characters")
        self._given_node_id = node_id
        self.damaged: StorageDamagedError | None = None
        """Set when an error said the environment is damaged; every later call raises it."""
        self.integrity = IntegrityStats()
        self.bad: dict[tuple[str, str, int], BadBatch] = {}
        """Batches whose digest failed, by ``(topic, partition, first offset)``: never
        served, until :meth:`replace` writes a good copy."""
        try:
            make_private_dirs(self._path)
            check_file(self._path)  # a bad newest meta page is restored before the walk
            # guard: store-walks-b-trees-child
            if probe:
                probe_environment(self._path)
            self._env = lmdb.open(
                str(self._path),
                mode=0o600,  # data.mdb and lock.mdb: records are for this store only
                map_size=map_size,
                subdir=True,
                max_dbs=3,
                sync=True,
                metasync=True,
                writemap=False,
                lock=True,
            )
        except (lmdb.Error, OSError) as exc:
            raise translate_error(
                exc, f"cannot open store at {self._path}", path=self._path
            ) from exc
        try:
            # guard: store-lmdb-files-have-their
            fsync_dir(self._path)  # data.mdb and lock.mdb, if just made, survive a power cut
            self._node_id = self._open_dbs()
            self._cache = self._load_heads()
        except BaseException:
            self._env.close()
            self._closed = True
            raise
        self._map_size: int = self._env.info()["map_size"]
        self._page_size: int = self._env.stat()["psize"]
        log.debug(
            "lmdb.opened path=%s map_size=%d partitions=%d",
            self._path,
            self._map_size,
            len(self._cache.heads),
        )

    # ------------------------------------------------------------------ setup

    def _open_dbs(self) -> str:
        """Create or check the named DBs and the meta entries; return the node ID."""
        try:
            with self._env.begin(write=True) as txn:
                self._batches = self._env.open_db(b"batches", txn=txn)
                self._heads_db = self._env.open_db(b"heads", txn=txn)
                meta = self._meta = self._env.open_db(b"meta", txn=txn)
                version = txn.get(_META_SCHEMA, db=meta)
                if version is None or version in _OLD_SCHEMAS:
                    txn.put(_META_SCHEMA, str(SCHEMA_VERSION).encode(), db=meta)
                elif version != str(SCHEMA_VERSION).encode():
                    raise StorageError(
                        f"store at {self._path} has schema version {version!r}; this Dafka "
                        f"reads version {SCHEMA_VERSION} only: use a matching Dafka release"
                    )
                raw = txn.get(_META_NODE_ID, db=meta)
                given = self._given_node_id
                if given is not None and raw != given.encode():
                    if raw is not None:
                        log.warning(
                            "lmdb.node_id.replaced path=%s old=%s new=%s",
                            self._path,
                            raw.decode("ascii", "replace"),
                            given,
                        )
                    txn.put(_META_NODE_ID, given.encode(), db=meta)
                    node_id = given
                elif raw is None:
                    node_id = new_node_id()
                    txn.put(_META_NODE_ID, node_id.encode(), db=meta)
                else:
                    node_id = raw.decode("ascii", "replace")
                    if not is_node_id(node_id):
                        raise StorageError(f"store at {self._path} has a bad node ID {raw!r}")
        except lmdb.Error as exc:
            raise translate_error(
                exc, f"cannot initialise store at {self._path}", path=self._path
            ) from exc
        return node_id

    def _load_heads(self) -> CachedHeads:
        try:
            with self._env.begin(db=self._heads_db) as txn:
                return CachedHeads.read(txn.cursor(), self._path)
        except lmdb.Error as exc:
            raise self._failed(exc, f"cannot read the heads of {self._path}") from exc
        except StorageDamagedError:
            raise
        except (DafkaError, struct.error) as exc:
            raise StorageError(f"store at {self._path} has unreadable heads: {exc}") from exc

    # ------------------------------------------------------------------ API

    @property
    def path(self) -> Path:
        return self._path

    @property
    def map_size(self) -> int:
        """The current LMDB map size in bytes (grows on demand)."""
        return self._map_size

    def node_id(self) -> str:
        """The store's identity: made on first open, the same on every reopen."""
        return self._node_id

    def heads(self) -> dict[tuple[str, str], HeadTail]:
        self._check_usable()
        return dict(self._cache.heads)

    def append(self, batches: Sequence[StoredBatch]) -> None:
        planned = self.plan_append(batches)
        if planned is None:
            return
        while not self.write(planned):
            self.grow()  # the transaction was aborted: nothing is stored; retried
        self.applied(planned)

    def plan_append(self, batches: Sequence[StoredBatch]) -> PlannedAppend | None:
        """What :meth:`append` writes for ``batches`` (None: nothing), planned on the cached
        heads without touching the environment: :meth:`write` it (on any one thread), then
        report it with :meth:`applied` (on the thread that reads the heads)."""
        self._check_usable()
        if not batches:
            return None
        return self._cache.plan(batches)

    def write(self, planned: PlannedAppend) -> bool:
        """Write ``planned`` in one synced transaction; False if the map is full (nothing
        stored: :meth:`grow` it with no read open, then write again). Touches nothing
        cached, so it may run on a writer thread while another reads (``dafka.api.
        store_pipeline``); only one thread writes the environment at a time."""
        self._check_usable()
        try:
            with self._env.begin(write=True) as txn:
                # the values are made anew for each attempt (one at a time, see _batch_items)
                txn.cursor(db=self._batches).putmulti(batch_items(planned.keyed), dupdata=False)
                txn.cursor(db=self._heads_db).putmulti(planned.head_items, dupdata=False)
        except lmdb.MapFullError:
            return False  # aborted by the context manager
        except (lmdb.Error, OSError) as exc:
            sizes = [(len(key), _OVERHEAD + len(batch.blob)) for key, batch in planned.keyed]
            sizes += [(len(key), len(value)) for key, value in planned.head_items]
            need = space_needed(sizes, len(planned.head_items), self._page_size)
            raise self._failed(exc, f"append to {self._path} failed", need) from exc
        return True

    def applied(self, planned: PlannedAppend) -> None:
        """``planned`` was written: move the cached heads and profiles to it."""
        self._cache.applied(planned)

    def read(
        self,
        topic: str,
        partition: str,
        offset: int,
        max_batches: int,
        max_records: int | None = None,
        max_bytes: int | None = None,
    ) -> list[StoredBatch]:
        self._check_usable()
        if max_batches <= 0 or not 0 <= offset <= MAX_OFFSET:
            return []
        profile = self._cache.profiles.get((topic, partition))
        if profile is None:
            return []
        prefix = partition_prefix(topic, partition)
        plen = len(prefix)
        since = self._cache.digests_from.get((topic, partition), 0)
        out: list[StoredBatch] = []
        records = 0
        enough = max_records if max_records is not None else MAX_OFFSET + 1
        budget = max_bytes if max_bytes is not None else MAX_OFFSET
        size = 0
        try:
            with self._env.begin(db=self._batches, buffers=True) as txn:
                cursor = txn.cursor()
                if not cursor.set_range(prefix + _U64.pack(offset)):
                    return []
                for key, value in cursor.iternext():
                    if key[:plen] != prefix:
                        break
                    (first,) = _U64.unpack_from(value)
                    if not out and first > offset:
                        return []  # below the tail: the partition does not hold offset
                    digested = first >= since
                    # the blob's size, known before it is copied
                    size += len(value) - (_OVERHEAD if digested else 8)
                    if out and size > budget:
                        break
                    (last,) = _U64.unpack_from(key, plen)
                    blob = checked_blob(key, value, digested, self.integrity)
                    if blob is None:  # never served: what came before it is
                        self._found_bad(topic, partition, first, last, "read")
                        break
                    out.append(StoredBatch(topic, partition, first, last, bytes(blob), profile))
                    records += last - first + 1
                    if len(out) >= max_batches or records >= enough:
                        break
        except lmdb.Error as exc:
            raise self._failed(exc, f"read from {self._path} failed") from exc
        return out

    def scrub(self, after: bytes, budget: int) -> tuple[bytes | None, int]:
        """Check the digests of the batches after key ``after`` (b"": from the first) until
        about ``budget`` bytes were read; returns the last key checked (None: the end was
        reached) and the bytes read. A bad batch is noted in :attr:`bad` and logged."""
        self._check_usable()
        read = 0
        last_key: bytes | None = None
        since_of: dict[bytes, tuple[str, str, int]] = {}
        try:
            with self._env.begin(db=self._batches, buffers=True) as txn:
                cursor = txn.cursor()
                found = cursor.set_range(after)
                if found and after and bytes(cursor.key()) == after:
                    found = cursor.next()
                while found and read < budget:
                    key, value = cursor.item()
                    prefix = bytes(key[:-8])
                    part = since_of.get(prefix)
                    if part is None:
                        topic, partition = decode_partition_key(prefix)
                        since = self._cache.digests_from.get((topic, partition), 0)
                        part = since_of[prefix] = (topic, partition, since)
                    (first,) = _U64.unpack_from(value)
                    read += len(value)
                    if checked_blob(key, value, first >= part[2], self.integrity) is None:
                        (last,) = _U64.unpack_from(key, len(key) - 8)
                        self._found_bad(part[0], part[1], first, last, "scrub")
                    last_key = bytes(key)
                    found = cursor.next()
                end = not found
        except lmdb.Error as exc:
            raise self._failed(exc, f"scrub of {self._path} failed") from exc
        except (DafkaError, struct.error) as exc:  # a key that is no batch key: rot too
            raise self._failed(
                StorageDamagedError(f"unreadable key after {after!r}: {exc}"),
                f"scrub of {self._path} failed",
            ) from exc
        self.integrity.scrub_bytes += read
        if end:
            self.integrity.scrub_passes += 1
            return None, read
        return last_key, read

    def batch_infos(self, topic: str, partition: str) -> list[BatchInfo]:
        """Every stored batch of a partition, oldest first: offsets, size, timestamp."""
        self._check_usable()
        profile = self._cache.profiles.get((topic, partition))
        if profile is None:
            return []
        prefix = partition_prefix(topic, partition)
        plen = len(prefix)
        since = self._cache.digests_from.get((topic, partition), 0)
        out: list[BatchInfo] = []
        try:
            with self._env.begin(db=self._batches, buffers=True) as txn:
                cursor = txn.cursor()
                if not cursor.set_range(prefix):
                    return []
                for key, value in cursor.iternext():
                    if key[:plen] != prefix:
                        break
                    (first,) = _U64.unpack_from(value)
                    (last,) = _U64.unpack_from(key, plen)
                    at = _OVERHEAD if first >= since else 8
                    if profile == "signed":
                        stamp = batch_timestamp(value, at)
                        when = batch_record_time(value, at)
                    else:
                        stamp = when = None
                    out.append(BatchInfo(first, last, len(value) - at, stamp, when))
        except lmdb.Error as exc:
            raise self._failed(exc, f"read from {self._path} failed") from exc
        return out

    def trim(self, topic: str, partition: str, new_tail: int) -> int | None:
        """Delete the whole batches of a partition below ``new_tail`` (a batch's first
        offset) and move its tail there; the newest batch always stays. Returns the new
        tail, or None if nothing changed."""
        self._check_usable()
        key = (topic, partition)
        ht = self._cache.heads.get(key)
        if ht is None or new_tail <= ht[1]:
            return None
        head, _ = ht
        prefix = partition_prefix(topic, partition)
        plen = len(prefix)
        profile = self._cache.profiles[key]
        try:
            with self._env.begin(write=True) as txn:
                cursor = txn.cursor(db=self._batches)
                tail = None
                if cursor.set_range(prefix):
                    while cursor.key()[:plen] == prefix:
                        (last,) = _U64.unpack_from(cursor.key(), plen)
                        (first,) = _U64.unpack_from(cursor.value())
                        if first >= new_tail or last >= head:
                            tail = first
                            break
                        if not cursor.delete():
                            break
                if tail is None:
                    return None
                txn.put(
                    prefix,
                    head_entry(
                        prefix,
                        head,
                        tail,
                        PROFILE_IDS[profile],
                        self._cache.digests_from.get(key, 0),
                    ),
                    db=self._heads_db,
                )
        except (lmdb.Error, OSError) as exc:
            raise self._failed(exc, f"trim of {self._path} failed") from exc
        self._cache.heads[key] = (head, tail)
        return tail

    def truncate(self, topic: str, partition: str, first: int) -> int:
        """Delete the batches of a partition from the one starting at ``first`` to the head,
        in one transaction; the head moves to ``first - 1`` (the partition is gone when
        nothing is left). For a producer's gap statement that supersedes batches it never
        got acknowledged. Returns how many batches were deleted; raises StorageError when
        ``first`` is not a stored batch's first offset at or above the tail."""
        self._check_usable()
        key = (topic, partition)
        ht = self._cache.heads.get(key)
        if ht is None or not ht[1] <= first <= ht[0]:
            raise StorageError(f"cannot truncate {key} at {first}: not within what is stored")
        head, tail = ht
        prefix = partition_prefix(topic, partition)
        profile = self._cache.profiles[key]
        deleted = 0
        try:
            with self._env.begin(write=True) as txn:
                cursor = txn.cursor(db=self._batches)
                if not cursor.set_range(prefix + _U64.pack(first)):
                    raise StorageError(f"no batch of {key} holds offset {first}")
                (start,) = _U64.unpack_from(cursor.value())
                if start != first:
                    raise StorageError(f"offset {first} of {key} is inside a batch")
                while cursor.key()[: len(prefix)] == prefix:
                    deleted += 1
                    if not cursor.delete():
                        break
                if first > tail:
                    since = min(self._cache.digests_from.get(key, 0), first)
                    txn.put(
                        prefix,
                        head_entry(prefix, first - 1, tail, PROFILE_IDS[profile], since),
                        db=self._heads_db,
                    )
                else:
                    txn.delete(prefix, db=self._heads_db)
        except (lmdb.Error, OSError) as exc:
            raise self._failed(exc, f"truncate of {self._path} failed") from exc
        if first > tail:
            self._cache.heads[key] = (first - 1, tail)
            if self._cache.digests_from.get(key, 0) > first:
                self._cache.digests_from[key] = first  # what is written from first on has one
        else:
            self._cache.forget(key)
        log.warning(
            "lmdb.truncated topic=%s partition=%s from=%d old_head=%d batches=%d",
            topic,
            partition,
            first,
            head,
            deleted,
        )
        return deleted

    def deletions(self) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
        """Topic deletions applied (topic -> metadata revision) and the fences they left
        (``(topic, partition)`` -> last offset deleted)."""
        self._check_usable()
        deleted: dict[str, int] = {}
        fences: dict[tuple[str, str], int] = {}
        try:
            with self._env.begin(db=self._meta) as txn:
                cursor = txn.cursor()
                for prefix in (_META_DELETED, _META_FENCE):
                    if not cursor.set_range(prefix):
                        continue
                    for key, value in cursor.iternext():
                        if not key.startswith(prefix):
                            break
                        (number,) = _U64.unpack(value)
                        if prefix == _META_DELETED:
                            deleted[key[len(prefix) :].decode()] = number
                        else:
                            fences[decode_partition_key(key[len(prefix) :])] = number
        except (lmdb.Error, DafkaError, struct.error, UnicodeDecodeError) as exc:
            raise StorageError(f"store at {self._path} has unreadable deletions: {exc}") from exc
        return deleted, fences

    def delete_topic(self, topic: str, revision: int) -> tuple[int, dict[tuple[str, str], int]]:
        """Delete every batch and head of ``topic`` in one transaction, with the record that
        the deletion at metadata ``revision`` was applied and each partition's fence.
        Returns the number of batches deleted and the fences ``(topic, partition) -> last
        offset deleted``."""
        self._check_usable()
        prefix = topic_prefix(topic)
        parts = sorted(self._cache.by_topic.get(topic, ()))
        old_fences = self.deletions()[1]
        fences = {
            (topic, p): max(self._cache.heads[(topic, p)][0], old_fences.get((topic, p), -1))
            for p in parts
        }
        while True:
            deleted = 0
            try:
                with self._env.begin(write=True) as txn:
                    for db in (self._batches, self._heads_db):
                        cursor = txn.cursor(db=db)
                        if cursor.set_range(prefix):
                            while cursor.key()[: len(prefix)] == prefix:
                                deleted += db is self._batches
                                if not cursor.delete():
                                    break
                    txn.put(_META_DELETED + topic.encode(), _U64.pack(revision), db=self._meta)
                    for (t, p), fence in fences.items():
                        key = _META_FENCE + partition_prefix(t, p)
                        txn.put(key, _U64.pack(fence), db=self._meta)
                break
            except lmdb.MapFullError:
                self.grow()
            except (lmdb.Error, OSError) as exc:
                raise self._failed(exc, f"deleting topic {topic!r} in {self._path} failed") from exc
        for p in parts:
            self._cache.forget((topic, p))
        self._cache.by_topic.pop(topic, None)
        return deleted, fences

    def partitions(self, topic: str) -> list[tuple[str, int]]:
        self._check_usable()
        names = self._cache.by_topic.get(topic, ())
        return [(name, self._cache.heads[(topic, name)][0]) for name in sorted(names)]

    def usage(self) -> tuple[int, int]:
        """(bytes of the map in use, map size in bytes), for metrics."""
        self._check_usable()
        info = self._env.info()
        return (info["last_pgno"] + 1) * self._page_size, info["map_size"]

    def profiles(self) -> dict[tuple[str, str], str]:
        self._check_usable()
        return dict(self._cache.profiles)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if os.getpid() == self._pid:
                self._env.close()

    # ------------------------------------------------------------------ helpers

    def _failed(self, exc: BaseException, what: str, need_bytes: int = 0) -> StorageError:
        """``exc`` in Dafka's tree; one that says the environment is damaged marks it so
        (every later call raises it, and the store stops: ``dafka.store._facade``)."""
        err = translate_error(exc, what, path=self._path, need_bytes=need_bytes)
        if isinstance(err, StorageDamagedError) and self.damaged is None:
            self.damaged = err
            log.error("lmdb.damaged path=%s error=%s", self._path, err)
        return err

    def _found_bad(self, topic: str, partition: str, first: int, last: int, how: str) -> None:
        """A batch failed its digest: keep it out of what is served until it is replaced."""
        key = (topic, partition, first)
        if key in self.bad:
            return
        self.bad[key] = BadBatch(topic, partition, first, last, how)
        self.integrity.bad_found += 1
        self.integrity.log_bad(self._path, self.bad[key])

    def _check_usable(self) -> None:
        # guard: store-refuses-call-environment-said
        if self.damaged is not None:
            raise self.damaged
        if self._closed:
            raise ClosedError(f"store at {self._path} is closed")
        if os.getpid() != self._pid:
            raise StorageError(
                f"store at {self._path} was opened in process {self._pid} and used in "
                f"{os.getpid()}: open LmdbStorage in the process that uses it, after fork"
            )

    def grow(self) -> None:
        """Double the map (bounded by ``max_map_size``) so the aborted batch can be retried.

        ``Environment.set_mapsize`` invalidates every transaction, cursor and buffer open
        on the environment: call it with no read open and no write in flight."""
        old = self._map_size
        new = old * 2
        if self._max_map_size is not None:
            if old >= self._max_map_size:
                raise StorageError(
                    f"store at {self._path} reached max_map_size={self._max_map_size} bytes; "
                    "raise it or free space with retention"
                )
            new = min(new, self._max_map_size)
        try:
            self._env.set_mapsize(new)
        except (lmdb.Error, OSError) as exc:
            raise translate_error(exc, f"cannot grow the map of {self._path} to {new}") from exc
        self._map_size = self._env.info()["map_size"]
        log.info("lmdb.map_grown path=%s old=%d new=%d", self._path, old, self._map_size)
