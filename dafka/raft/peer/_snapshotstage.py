"""The snapshot stage of :class:`~dafka.raft.peer.RaftPeer`: staging, serving, taking snapshots.

* Received: a follower writes the chunks of an InstallSnapshot (the core hands them over
  in ``Ready.snapshot_chunks``) to ``<data dir>/snapshot.incoming``, checks the complete
  stream and tells the core to restore it; the Ready loop in :mod:`dafka.raft.peer._peer` then
  saves it to storage and restores the state machine from it. A state machine with a
  ``check_snapshot(data)`` method (the cluster metadata's verifies every item's signed proof)
  is asked first: a snapshot it refuses (a :class:`~dafka.errors.DafkaError`) is counted in
  the peer's bad input as ``snapshot-refused`` (one log line per period) and never reaches
  the core, which keeps its log and state; this follower stays behind until a leader
  sends a snapshot that passes.
* Served: the bytes of our snapshot for InstallSnapshot (the core reads them through
  ``read_snapshot``) and for RequestEntries status 3 (:mod:`dafka.raft.peer._clientservice`).
  The stream is ``b"DAFKRSX1" | u32 meta length | meta | state machine data | u32 crc32``,
  meta being MessagePack ``[index, term, config entry data]`` (:mod:`dafka.raft.codec._snapstream`).
* Taken: with ``snapshot_every`` > 0, once that many entries were applied since the last
  snapshot the state machine is snapshotted (on the loop thread; the file is written on
  another: :mod:`dafka.raft.peer._snapshotter`), saved, and the log is compacted up to
  ``keep_entries`` entries behind it.

The peer owns one (``RaftPeer.snapshots``); its state is its own, what it reads of the
peer's is :class:`~dafka.raft.peer._peerstate.PeerShared`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

from ...errors import DafkaError, StorageError
from ..codec import SnapshotMeta, pack_snapshot, unpack_snapshot
from ..core import Ready
from ._peerstate import PeerShared
from ._snapshotter import BackgroundSnapshot

__all__ = ["SnapshotStage"]

log = logging.getLogger(__name__)


class SnapshotStage:
    """Snapshots in and out, owned by :class:`~dafka.raft.peer.RaftPeer` (see the module
    docstring). ``drain_log`` waits for the log fsyncs handed to the peer's thread
    (installing a snapshot may rewrite the log file)."""

    def __init__(
        self,
        shared: PeerShared,
        data_dir: Path,
        snapshot_size: int,
        drain_log: Callable[[], None],
    ) -> None:
        self.id = shared.id
        self.options = shared.options
        self.sm = shared.sm
        self.storage = shared.storage
        self.core = shared.core
        self._bad = shared.bad
        self._drain_log = drain_log
        self.snapshot_size = snapshot_size
        """Bytes of the state machine snapshot in storage (RequestLogInfo reports it)."""
        self._snap_cache: tuple[int, bytes, bytes | None] | None = None
        self.snapper = BackgroundSnapshot()
        """Writes a snapshot we take off the loop (joined at teardown)."""
        self._staging: Path = data_dir / "snapshot.incoming"
        self._staging_fd = -1
        self._staged: tuple[SnapshotMeta, bytes] | None = None

    def close(self) -> None:
        if self._staging_fd >= 0:
            os.close(self._staging_fd)
            self._staging_fd = -1

    # -- received: InstallSnapshot -----------------------------------------------------------

    def save_staged(self, snapshot: SnapshotMeta) -> None:
        """Write the staged snapshot the core installs to storage (the Ready's persist)."""
        staged = self._staged
        if staged is None or staged[0].index != snapshot.index:
            raise StorageError(f"snapshot {snapshot.index} to install was not staged")
        self.storage.save_snapshot(snapshot, staged[1])
        self.snapshot_size = len(staged[1])
        self._snap_cache = None

    def stage_chunks(self, rd: Ready, sync: bool) -> SnapshotMeta | None:
        completed = None
        for chunk in rd.snapshot_chunks:
            if chunk.offset == 0 or self._staging_fd < 0:
                if self._staging_fd >= 0:
                    os.close(self._staging_fd)
                flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
                self._staging_fd = os.open(self._staging, flags, 0o600)
            os.pwrite(self._staging_fd, chunk.data, chunk.offset)
            if chunk.last:
                os.ftruncate(self._staging_fd, chunk.total_size)
                completed = SnapshotMeta(chunk.index, chunk.term)
        if sync and self._staging_fd >= 0:
            os.fsync(self._staging_fd)
        return completed

    def restore_staged(self, expected: SnapshotMeta) -> None:
        blob = self._staging.read_bytes()
        try:
            meta, data = unpack_snapshot(blob)
        except StorageError as exc:
            log.error("raft.peer.bad_snapshot id=%s error=%s", self.id, exc)
            return
        if (meta.index, meta.term) != (expected.index, expected.term):
            log.error("raft.peer.bad_snapshot id=%s reason=meta-mismatch", self.id)
            return
        check = getattr(self.sm, "check_snapshot", None)
        # guard: raft-peer-checks-snapshot-before
        if check is not None:
            # before the core installs it and moves its log: a refused snapshot leaves the
            # state, the log and the core as they were (the core answers no leader for it,
            # so this follower stays behind until a leader sends another one)
            try:
                check(data)
            except DafkaError as exc:
                self._bad("snapshot-refused", f"index={meta.index} {exc}")
                return
        self._staged = (meta, data)
        if self.core.restore(meta):
            log.info("raft.peer.install_snapshot id=%s index=%d", self.id, meta.index)
        else:
            self._staged = None

    def apply_staged(self) -> None:
        """Restore the state machine from the staged snapshot, then drop the staging file."""
        assert self._staged is not None
        self.sm.restore(self._staged[1])
        self._staged = None
        with contextlib.suppress(OSError):
            self._staging.unlink()
        if self._staging_fd >= 0:
            os.close(self._staging_fd)
            self._staging_fd = -1

    # -- served: InstallSnapshot and RequestEntries ------------------------------------------

    def snapshot_data(self) -> tuple[int, bytes]:
        meta = self.storage.snapshot_meta
        cache = self._snap_cache
        if cache is None or cache[0] != meta.index:
            data = self.storage.snapshot_data() or b""
            cache = self._snap_cache = (meta.index, data, None)
        return cache[0], cache[1]

    def read_snapshot(self, index: int, offset: int, limit: int) -> tuple[bytes, int] | None:
        meta = self.storage.snapshot_meta
        if meta.index != index or index == 0:
            return None
        self.snapshot_data()
        assert self._snap_cache is not None
        cached_index, data, blob = self._snap_cache
        if blob is None:
            blob = pack_snapshot(meta, data)
            self._snap_cache = (cached_index, data, blob)
        return blob[offset : offset + limit], len(blob)

    # -- taken: every snapshot_every entries -------------------------------------------------

    def maybe_snapshot(self) -> None:
        core, job = self.core, self.snapper
        if job.busy:  # written off the loop (dafka.raft.peer._snapshotter): install when done
            if job.done():
                meta, data, staged = job.take()
                self._drain_log()  # installing may rewrite the log file: no fsync on it
                if self.storage.install_staged(meta, staged):
                    self.snapshot_size = len(data)
                    self._snap_cache = (meta.index, data, None)
                    upto = max(meta.index - self.options.keep_entries, core.first_index - 1)
                    if upto >= self.storage.first_index:
                        self.storage.compact(upto)
                    core.compact(upto, meta)
                    log.info(
                        "raft.peer.snapshot id=%s index=%d compacted=%d", self.id, meta.index, upto
                    )
            return
        every = self.options.snapshot_every
        if every <= 0 or core.applied - self.storage.snapshot_meta.index < every:
            return
        job.start(self.storage, core.snapshot_meta(core.applied), self.sm.snapshot())
