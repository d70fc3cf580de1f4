"""Durable Raft storage: hard state, the log, and the snapshot.

:class:`FileStorage` keeps one directory::

    LOCK       held (flock) while a FileStorage is open
    state      hard state (term, voted_for, commit): two slots written in turn
               (one write + one fdatasync a save; :mod:`dafka.raft.peer._hardstate`)
    log        header + append-only records
    snapshot   snapshot meta + data, replaced atomically
    recovering "DAFKRRC1" | index u64 | crc32: entries up to index were lost to rot and
               are being refilled from a leader (absent normally)

Atomic replacement is: write ``NAME.tmp``, fsync it, rename over ``NAME``, fsync the
directory. :class:`~dafka.raft.peer.MemoryStorage` has the same API and keeps
everything in memory (tests and simulation).

Log file format (integers little-endian)::

    header   "DAFKRLG1" | base index u64 | crc32 u32 (of the 16 bytes before it)
    record   magic "\\xd5RL\\x01" | crc32 u32 | length u32 | index u64 | batch u64 | entry
             crc32 covers length, index, batch and entry; ``entry`` (``length`` bytes)
             is the wire ``entry`` frame (reqid, type, term, data)

``base`` is the index the log starts at (it stays meaningful when the log is empty).
Records are consecutive from ``base``. ``batch`` is the index of the first record
written by the same :meth:`FileStorage.append` call (a rewrite from entries stamps all
its records with the new base; a compaction copies the kept records as they are, stamps
included): it is how recovery tells a torn last write from real corruption.

Recovery (at open), the rules
-----------------------------
A torn write (one whose ``fdatasync`` never returned) leaves each of its bytes as
written or as zero, or the file short; it never leaves a nonzero byte that differs from
what was written. Rot does (:mod:`dafka.raft.codec._rot`, docs/raft.md §9).

* A bad record (short, bad magic, bad crc) followed by no valid record up to the end
  of the file is a torn tail: it is truncated, with a warning, unless it is *rotten*.
* A bad record followed by valid records *of the same batch* is also a torn write (the
  disk may persist the sectors of one unsynced write in any order): truncated, warning;
  unless it is rotten.
* A bad record is rotten when it was complete on disk and correcting one byte that
  reads nonzero makes it valid (its magic, its crc, its length, or a byte its crc
  covers, the one the crc's syndrome points at): no torn write made it, it was fsynced.
* A rotten record, or a bad record followed by a valid record of a *later* batch (data
  that was fsynced before a later append), lost entries the peer may have acknowledged
  (dropping them silently could break Raft's safety): :class:`StorageError`, the peer
  refuses to start. ``FileStorage(path, recover=True)`` (the peer's way) instead reports
  them in :attr:`FileStorage.lost` and writes nothing: the peer then either refuses to
  start (:mod:`dafka.raft.peer._recovery`), or calls :meth:`~FileStorage.begin_recovery` (a
  durable ``recovering`` file holds the last index the log held, then the log is cut;
  the peer votes again once a leader refilled it, :meth:`~FileStorage.end_recovery`),
  or :meth:`~FileStorage.accept_loss`. ``FileStorage(path, repair=True)`` truncates at
  the bad record at once (the operator takes responsibility; with ``recover=True`` too,
  the log is left to the peer as above and ``repair`` only lets a rotten hard state
  fall back to its older slot, :mod:`dafka.raft.peer._hardstate`).
* Damage that zeroes bytes or spans several bytes of the last batch stays
  indistinguishable from a torn write (no marker is written after each fsync: that
  would cost a second fsync an append) and is truncated as one.
* A valid record that does not continue the index sequence, or whose entry does not
  decode, is corruption too (:class:`StorageError`).
* A damaged ``snapshot`` or log header is :class:`StorageError`: they are only ever
  replaced atomically, so damage is not a crash artefact. In ``state`` a torn newer
  slot falls back to the other one (the last durable state); both damaged is
  :class:`StorageError`.
* The log is reconciled with the snapshot (a crash may fall between saving a snapshot
  and rewriting the log): if the log does not reach the snapshot index, or holds a
  different term there, it is discarded (Raft §7).

Durability
----------
``append(entries, sync=True)`` is one write and one ``fdatasync``. Term and vote are
always written durably. A commit-index-only change with ``sync=False`` is kept in
memory and written with the next durable hard-state write (or at :meth:`close`);
a stale commit index on disk is harmless, Raft recomputes it.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import struct
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Self

import msgpack

from ...errors import StorageError
from ...security.private_dirs import make_private_dirs
from ..codec import (
    REC_MAGIC,
    Entry,
    HardState,
    LostEntries,
    RaftWireError,
    SnapshotMeta,
    decode_config,
    decode_entry,
    encode_config,
    encode_records,
    parse_record,
    rotten_record,
)
from ._files import (
    atomic_write,
    fsync_dir,
    read_all,
    split_crc,
    with_crc,
    write_all,
    write_synced,
)
from ._hardstate import StateFile
from ._storageapi import LoadedState, RaftStorage, check_batch

__all__ = ["FileStorage", "LoadedState", "LostEntries", "RaftStorage", "check_batch"]

log = logging.getLogger(__name__)

_LOG_MAGIC = b"DAFKRLG1"
_LOG_HEADER = struct.Struct("<8sQ")  # magic, base
_LOG_HEADER_SIZE = _LOG_HEADER.size + 4

_SNAP_MAGIC = b"DAFKRSN1"
_RECOVERING_MAGIC = b"DAFKRRC1"
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

_fdatasync = getattr(os, "fdatasync", os.fsync)


def _pack_meta(meta: SnapshotMeta) -> bytes:
    return bytes(
        msgpack.packb([meta.index, meta.term, encode_config(meta.config)], use_bin_type=True)
    )


def _unpack_meta(data: bytes) -> SnapshotMeta:
    index, term, config = msgpack.unpackb(data, raw=False)
    if not isinstance(index, int) or not isinstance(term, int) or not isinstance(config, bytes):
        raise TypeError("bad snapshot meta types")
    return SnapshotMeta(index, term, decode_config(config))


# -- FileStorage ------------------------------------------------------------------------------


def _snapshot_chunks(meta: SnapshotMeta, data: bytes) -> list[bytes]:
    meta_blob = _pack_meta(meta)
    head = _SNAP_MAGIC + _U32.pack(len(meta_blob)) + meta_blob + _U64.pack(len(data))
    return [head, bytes(data), _U32.pack(zlib.crc32(data, zlib.crc32(head)))]


def _index_array() -> array[int]:
    return array("Q")


def _log_header(base: int) -> bytes:
    return with_crc(_LOG_HEADER.pack(_LOG_MAGIC, base))


class FileStorage:
    """Durable storage in the directory ``path`` (created if missing). See the module doc.

    One process at a time (an exclusive ``flock`` on ``LOCK``) and one thread at a time:
    the Raft shell that owns it calls it from its own loop.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, repair: bool = False, recover: bool = False
    ) -> None:
        self.path = Path(path)
        self._repair = repair
        self._recover = recover
        self._lost: LostEntries | None = None
        self._lock_fd = -1
        self._fd = -1
        try:
            make_private_dirs(self.path)
            self._lock()
            for name in ("state", "log", "snapshot", "snapshot.bg", "recovering"):
                (self.path / f"{name}.tmp").unlink(missing_ok=True)
            self._state = StateFile(
                self.path / "state",
                lambda name, chunks: atomic_write(self.path, name, chunks),
                repair=repair,
            )
            self._hard = self._state.state
            self._pending_commit: int | None = None
            self._meta, self._has_snapshot = self._read_snapshot_meta()
            self._recovering_to = self._read_recovering()
            self._open_log()
            self._reconcile_with_snapshot()
            if self._lost is not None and self._lost.last <= self._meta.index:
                self._lost = None  # the snapshot holds what the damaged records held
        except OSError as exc:
            self.close()
            raise StorageError(f"cannot open Raft storage at {self.path}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    # .. opening .....................................................................

    def _lock(self) -> None:
        self._lock_fd = os.open(self.path / "LOCK", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StorageError(
                    f"Raft storage {self.path} is in use by another process"
                ) from exc
            raise

    def _read_snapshot_blob(self) -> tuple[SnapshotMeta, bytes] | None:
        try:
            blob = (self.path / "snapshot").read_bytes()
        except FileNotFoundError:
            return None
        body = split_crc(blob, _SNAP_MAGIC, f"{self.path}/snapshot")
        try:
            (meta_size,) = _U32.unpack_from(body, 0)
            meta = _unpack_meta(body[4 : 4 + meta_size])
            (data_size,) = _U64.unpack_from(body, 4 + meta_size)
            data = body[12 + meta_size :]
        except Exception as exc:
            raise StorageError(f"{self.path}/snapshot does not decode: {exc}") from exc
        if len(data) != data_size:
            raise StorageError(f"{self.path}/snapshot has a wrong data size")
        return meta, data

    def _read_snapshot_meta(self) -> tuple[SnapshotMeta, bool]:
        found = self._read_snapshot_blob()
        return (SnapshotMeta(), False) if found is None else (found[0], True)

    def _open_log(self) -> None:
        log_path = self.path / "log"
        if not log_path.exists():
            if (self.path / "state").exists() or self._has_snapshot:
                raise StorageError(f"{log_path} is missing while state/snapshot exist")
            atomic_write(self.path, "log", [_log_header(self._meta.index + 1)])
        self._fd = os.open(log_path, os.O_RDWR)
        buf = read_all(self._fd)
        header = split_crc(buf[:_LOG_HEADER_SIZE], _LOG_MAGIC, f"{log_path} header")
        self._base: int = _U64.unpack(header)[0]
        self._offsets = _index_array()
        self._terms = _index_array()
        pos = _LOG_HEADER_SIZE
        batch_of_last = 0
        while pos < len(buf):
            record = parse_record(buf, pos)
            if record is None:
                self._recover_tail(buf, pos, batch_of_last)
                break
            expected = self._base + len(self._offsets)
            if record.log_index != expected:
                raise StorageError(
                    f"{log_path}: record at offset {pos} has index {record.log_index},"
                    f" expected {expected}: the log is corrupt"
                )
            try:
                entry = decode_entry(record.entry, record.log_index)
            except RaftWireError as exc:
                raise StorageError(f"{log_path}: entry {record.log_index} does not decode") from exc
            self._offsets.append(pos)
            self._terms.append(entry.term)
            batch_of_last = record.batch
            pos = record.end
        self._end = pos

    def _recover_tail(self, buf: bytes, bad: int, batch_of_last: int) -> None:
        log_path = self.path / "log"
        if self._offsets:
            torn_batches = {batch_of_last, self._base + len(self._offsets)}
        else:
            torn_batches = {self._base}
        expected = self._base + len(self._offsets)
        later = []  # valid records of later appends: the damage was fsynced before them
        after = [expected]  # indexes of every valid record past the damage
        at = buf.find(REC_MAGIC, bad + 1)
        while at != -1:
            record = parse_record(buf, at)
            if record is not None and record.log_index >= expected:
                after.append(record.log_index)
                if record.batch <= record.log_index and record.batch not in torn_batches:
                    later.append(record.log_index)
            at = buf.find(REC_MAGIC, at + 1)
        # guard: raft-log-complete-record-rotten
        rotten = rotten_record(buf, bad)
        if not later and not rotten:
            log.warning(
                "raft.storage.truncate path=%s offset=%d dropped_bytes=%d reason=torn-tail",
                log_path,
                bad,
                len(buf) - bad,
            )
            self._cut(bad)
            return
        # complete records that were fsynced are damaged: entries this peer may have
        # acknowledged are lost (docs/raft.md "Rot and torn writes")
        lost = LostEntries(expected, max(after), bad, len(buf) - bad)
        why = "rot in a complete record" if rotten else "followed by records of later appends"
        if self._recover:
            self._lost, self._end = lost, bad  # cut by begin_recovery or accept_loss
        elif self._repair:
            log.error(
                "raft.storage.truncate path=%s offset=%d dropped_bytes=%d reason=repair"
                " lost=%d..%d",
                log_path,
                bad,
                lost.dropped_bytes,
                lost.first,
                lost.last,
            )
            self._cut(bad)
        else:
            raise StorageError(
                f"{log_path}: damaged record at offset {bad} (index {expected}, {why});"
                f" refusing to drop entries {lost.first}..{lost.last} that were fsynced."
                " Wipe the directory and rejoin the cluster, or open with repair=True to"
                " truncate at the damage."
            )

    def _cut(self, offset: int) -> None:
        os.ftruncate(self._fd, offset)
        _fdatasync(self._fd)

    def _read_recovering(self) -> int | None:
        try:
            blob = (self.path / "recovering").read_bytes()
        except FileNotFoundError:
            return None
        body = split_crc(blob, _RECOVERING_MAGIC, f"{self.path}/recovering")
        if len(body) != _U64.size:
            raise StorageError(f"{self.path}/recovering has a wrong size")
        return int(_U64.unpack(body)[0])

    def _reconcile_with_snapshot(self) -> None:
        snap = self._meta.index
        if self._base > snap + 1:
            raise StorageError(
                f"{self.path}: the log starts at {self._base} but the snapshot ends at {snap}"
            )
        if self.last_index < snap or (self._base <= snap and self.term(snap) != self._meta.term):
            if len(self._offsets):
                log.warning(
                    "raft.storage.discard_log path=%s reason=conflicts-with-snapshot"
                    " log=%d..%d snapshot=%d",
                    self.path,
                    self._base,
                    self.last_index,
                    snap,
                )
            self._rewrite_log(snap + 1, [])

    # .. queries .....................................................................

    @property
    def hard_state(self) -> HardState:
        if self._pending_commit is not None:
            return HardState(self._hard.term, self._hard.voted_for, self._pending_commit)
        return self._hard

    @property
    def snapshot_meta(self) -> SnapshotMeta:
        return self._meta

    @property
    def lost(self) -> LostEntries | None:
        """Damaged fsynced records found at open with ``recover=True``, until
        :meth:`begin_recovery` or :meth:`accept_loss` (nothing is written before)."""
        return self._lost

    @property
    def recovering_to(self) -> int | None:
        """The last index this peer may have acknowledged and no longer holds: it must
        not vote until its log reaches it from a leader (:meth:`end_recovery`)."""
        if self._lost is not None:
            return max(self._lost.last, self._recovering_to or 0)
        return self._recovering_to

    @property
    def first_index(self) -> int:
        """The first index stored in the log (``last_index + 1`` when it is empty)."""
        return self._base

    @property
    def last_index(self) -> int:
        """The last index stored in the log (the snapshot index when it is empty)."""
        return self._base + len(self._offsets) - 1

    def term(self, index: int) -> int | None:
        """The term of ``index`` if the log or the snapshot knows it."""
        if self._base <= index <= self.last_index:
            return self._terms[index - self._base]
        if index == self._meta.index:
            return self._meta.term
        return None

    def read_entries(self, lo: int, hi: int) -> list[Entry]:
        """Entries ``lo <= index < hi`` (clipped to what is stored), read from disk."""
        self._check_open()
        lo, hi = max(lo, self._base), min(hi, self.last_index + 1)
        if lo >= hi:
            return []
        start = self._offsets[lo - self._base]
        end = self._offsets[hi - self._base] if hi <= self.last_index else self._end
        buf = os.pread(self._fd, end - start, start)
        entries = []
        pos = 0
        for index in range(lo, hi):
            record = parse_record(buf, pos)
            if record is None or record.log_index != index:
                raise StorageError(f"{self.path}/log: entry {index} is damaged on disk")
            entries.append(decode_entry(record.entry, index))
            pos = record.end
        return entries

    def load(self) -> LoadedState:
        """Hard state, snapshot meta, the entries after the snapshot, the snapshot data."""
        self._check_open()
        entries = self.read_entries(self._meta.index + 1, self.last_index + 1)
        return LoadedState(self.hard_state, self._meta, entries, self.snapshot_data())

    def snapshot_data(self) -> bytes | None:
        self._check_open()
        if not self._has_snapshot:
            return None
        found = self._read_snapshot_blob()
        return None if found is None else found[1]

    # .. writes ......................................................................

    def save_hard_state(self, state: HardState, sync: bool = True) -> None:
        """Persist term, vote and commit. Term/vote changes are always durable on return;
        with ``sync=False`` a commit-only change is deferred (see the module doc)."""
        self._check_open()
        if not sync and (state.term, state.voted_for) == (self._hard.term, self._hard.voted_for):
            self._pending_commit = state.commit
            return
        try:
            self._state.save(state)
        except OSError as exc:
            raise StorageError(f"cannot save the Raft state in {self.path}: {exc}") from exc
        self._hard, self._pending_commit = state, None

    def append(self, entries: Sequence[Entry], sync: bool = True) -> None:
        """Append consecutive entries continuing the log: one write, one fdatasync."""
        self._check_writable()
        if not entries:
            return
        first = entries[0].index
        if first != self.last_index + 1 or first <= self._meta.index:
            check_batch(entries, self.last_index + 1, self._meta.index)  # raises, and why
        data, offsets = encode_records(entries, first, self._end)  # checks the rest
        try:
            write_all(self._fd, data, self._end)
            if sync:
                _fdatasync(self._fd)
        except OSError as exc:
            # leave the file as it was: a partial record must not be followed by new ones
            try:
                os.ftruncate(self._fd, self._end)
            except OSError:
                pass
            raise StorageError(f"cannot append to {self.path}/log: {exc}") from exc
        self._offsets.extend(offsets)
        self._terms.extend([entry.term for entry in entries])
        self._end += len(data)

    def sync_log(self) -> None:
        """``fdatasync`` the log: every :meth:`append` made before the call is durable on
        return. The one call another thread may make while the owner appends (the
        leader's fsync off its loop, :mod:`dafka.raft.peer._logsync`); the owner waits for it
        before :meth:`truncate_from`, a snapshot install, :meth:`compact` or :meth:`close`
        (they replace or cut the file)."""
        fd = self._fd
        if fd < 0:
            raise StorageError(f"Raft storage {self.path} is closed")
        try:
            _fdatasync(fd)
        except OSError as exc:
            raise StorageError(f"cannot fsync {self.path}/log: {exc}") from exc

    def truncate_from(self, index: int) -> None:
        """Drop entries ``>= index`` (a follower resolving a conflict). Always durable."""
        self._check_writable()
        if index <= self._meta.index:
            raise StorageError(f"cannot truncate at {index}: covered by the snapshot")
        if index > self.last_index:
            return
        cut = self._offsets[index - self._base]
        os.ftruncate(self._fd, cut)
        _fdatasync(self._fd)
        del self._offsets[index - self._base :]
        del self._terms[index - self._base :]
        self._end = cut

    def save_snapshot(self, meta: SnapshotMeta, data: bytes) -> None:
        """Store a snapshot atomically. If the log holds ``meta.index`` with ``meta.term``
        it is kept (compact it later); otherwise the whole log is discarded (Raft §7)."""
        self._check_writable()
        if meta.index < self._meta.index:
            raise StorageError("snapshot is older than the one stored")
        write_synced(self.path / "snapshot.tmp", _snapshot_chunks(meta, data))
        self._install(meta, self.path / "snapshot.tmp")

    def stage_snapshot(self, meta: SnapshotMeta, data: bytes) -> Path:
        """Write a snapshot of this peer's own state durably *beside* the stored one, for
        :meth:`install_staged`. Touches nothing else: another thread may run it while
        the owner keeps using the storage (the slow part of a snapshot off the loop)."""
        staged = self.path / "snapshot.bg.tmp"
        write_synced(staged, _snapshot_chunks(meta, data))
        return staged

    def install_staged(self, meta: SnapshotMeta, staged: Path) -> bool:
        """Make a :meth:`stage_snapshot` file the stored snapshot (one rename, one directory
        fsync); False (and the file dropped) when a newer snapshot was stored meanwhile."""
        self._check_writable()
        if meta.index <= self._meta.index:
            staged.unlink(missing_ok=True)
            return False
        self._install(meta, staged)
        return True

    def _install(self, meta: SnapshotMeta, tmp: Path) -> None:
        keep = meta.index <= self.last_index and self.term(meta.index) == meta.term
        os.replace(tmp, self.path / "snapshot")
        fsync_dir(self.path)
        self._meta, self._has_snapshot = meta, True
        if not keep:
            self._rewrite_log(meta.index + 1, [])

    def compact(self, upto_index: int) -> None:
        """Rewrite the log without entries ``<= upto_index`` (atomically). The snapshot
        must cover them."""
        self._check_writable()
        if upto_index > self._meta.index:
            raise StorageError("cannot compact past the snapshot index")
        if upto_index < self._base:
            return
        # the kept records are copied as they are on disk (no decoding into entries and
        # encoding again), each one checked first as read_entries checks it: their batch
        # stamps stay, so recovery judges damage in them as it would have before
        keep, first = upto_index + 1, upto_index + 1 - self._base
        start = self._offsets[first] if keep <= self.last_index else self._end
        kept = os.pread(self._fd, self._end - start, start)
        pos = 0
        for index in range(keep, self.last_index + 1):
            record = parse_record(kept, pos)
            if record is None or record.log_index != index:
                raise StorageError(f"{self.path}/log: entry {index} is damaged on disk")
            pos = record.end
        if pos != len(kept):
            raise StorageError(f"{self.path}/log: bytes past entry {self.last_index}")
        atomic_write(self.path, "log", [_log_header(keep), kept])
        os.close(self._fd)
        self._fd = os.open(self.path / "log", os.O_RDWR)
        shift = _LOG_HEADER_SIZE - start
        self._offsets = array("Q", [offset + shift for offset in self._offsets[first:]])
        self._terms = self._terms[first:]
        self._base, self._end = keep, _LOG_HEADER_SIZE + len(kept)

    def _rewrite_log(self, base: int, entries: list[Entry]) -> None:
        header = _log_header(base)
        data, offsets = encode_records(entries, base, _LOG_HEADER_SIZE)
        atomic_write(self.path, "log", [header, data])
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = os.open(self.path / "log", os.O_RDWR)
        self._base = base
        self._offsets, self._terms = _index_array(), _index_array()
        self._offsets.extend(offsets)
        self._terms.extend([entry.term for entry in entries])
        self._end = _LOG_HEADER_SIZE + len(data)

    # .. recovery after rot (docs/raft.md "Rot and torn writes") ...................

    def begin_recovery(self) -> int:
        """Record durably that entries up to :attr:`recovering_to` were lost (the file
        ``recovering``), then cut the log at the damage. Returns that index."""
        lost, to = self._lost, self.recovering_to
        if lost is None or to is None:
            raise StorageError("no lost entries to recover")
        # guard: raft-log-recovery-mark-written
        atomic_write(self.path, "recovering", [with_crc(_RECOVERING_MAGIC + _U64.pack(to))])
        self._recovering_to, self._lost = to, None
        self._cut(self._end)
        log.error(
            "raft.storage.recovering path=%s/log offset=%d dropped_bytes=%d lost=%d..%d"
            " recovering_to=%d",
            self.path,
            lost.offset,
            lost.dropped_bytes,
            lost.first,
            lost.last,
            to,
        )
        return to

    def end_recovery(self) -> None:
        """The log reached :attr:`recovering_to` again from a leader: fsync it, then drop
        the ``recovering`` file."""
        if self._recovering_to is None:
            return
        self.sync_log()
        (self.path / "recovering").unlink(missing_ok=True)
        fsync_dir(self.path)
        log.warning(
            "raft.storage.recovered path=%s recovered_to=%d last=%d",
            self.path,
            self._recovering_to,
            self.last_index,
        )
        self._recovering_to = None

    def accept_loss(self) -> None:
        """The operator accepts losing the damaged entries (``--accept-log-loss``): cut
        the log at the damage and forget any recovery, with an error line."""
        lost = self._lost
        if lost is not None:
            self._cut(self._end)
            self._lost = None
        to = self._recovering_to
        (self.path / "recovering").unlink(missing_ok=True)
        fsync_dir(self.path)
        self._recovering_to = None
        log.error(
            "raft.storage.accept_log_loss path=%s/log lost=%s recovering_to=%s last=%d",
            self.path,
            "none" if lost is None else f"{lost.first}..{lost.last}",
            to,
            self.last_index,
        )

    # .. lifecycle ...................................................................

    def _check_open(self) -> None:
        if self._fd < 0:
            raise StorageError(f"Raft storage {self.path} is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self._lost is not None:  # the damaged bytes are still past self._end
            raise StorageError(f"{self.path}/log: begin_recovery or accept_loss first")

    def close(self) -> None:
        """Write any deferred commit index, then release the files and the lock."""
        if self._fd >= 0 and getattr(self, "_pending_commit", None) is not None:
            self.save_hard_state(self.hard_state)
        if getattr(self, "_state", None) is not None:
            self._state.close()
        for name in ("_fd", "_lock_fd"):
            fd = getattr(self, name, -1)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
