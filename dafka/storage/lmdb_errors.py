"""LMDB's and the OS's errors in Dafka's tree (a full disk is :class:`StoreFullError`), and
the space a write transaction needs, for the "disk full" report (``dafka.storage.lmdb_store``)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable

import lmdb

from ..errors import StorageDamagedError, StorageError, StoreFullError

__all__ = ["free_bytes", "space_needed", "translate_error"]

_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# Errors after which the environment cannot be trusted: LMDB found a page that is not
# what its tree says (MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID on a file that is no
# longer an environment), or gave up on it after a failed write of a meta page
# (MDB_PANIC: "Update of meta page failed or environment had fatal error"; every later
# write transaction fails with it), or the OS failed a read or write (EIO not explained
# by a full disk: a bad disk, a failed fsync, whose pages may be lost).
_DAMAGED = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.PanicError, lmdb.InvalidError)
_DAMAGED_ERRNOS = frozenset({errno.EIO, errno.EROFS})
# An EIO with less than what the write needed plus this free is a full disk.
_EIO_FULL_MARGIN = 1024 * 1024


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """Bytes this process may still write on the filesystem holding ``path`` (None if unknown)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail  # root may use the reserve
    return blocks * st.f_frsize


def translate_error(
    exc: BaseException,
    what: str,
    *,
    path: str | os.PathLike[str] | None = None,
    need_bytes: int = 0,
) -> StorageError:
    """Map an LMDB or OS error to our tree: a full disk is :class:`StoreFullError`.

    LMDB reports a full disk as ``ENOSPC`` (``lmdb.DiskError``) when a write
    fails outright, but as a bare ``EIO`` ("mdb_txn_commit: Input/output
    error") when the write came up short, which is what a full filesystem
    usually does first. So with ``path`` given (the store's directory), an
    ``EIO`` while the filesystem has less than ``need_bytes`` plus a margin
    free counts as a full disk too; the error then carries ``need_bytes`` and
    the free bytes. A full disk is retriable (space may be freed). A corrupt page,
    LMDB's panic after a failed meta page write, or any other ``EIO`` is
    :class:`StorageDamagedError`: the store must stop acknowledging from this
    environment. Everything else is a plain :class:`StorageError` carrying the
    original as its cause.
    """
    code = getattr(exc, "code", None) if isinstance(exc, lmdb.Error) else None
    if isinstance(exc, OSError):
        code = exc.errno
    full = isinstance(exc, lmdb.DiskError) or code in _DISK_FULL_ERRNOS
    free = free_bytes(path) if path is not None and (full or code == errno.EIO) else None
    if not full and code == errno.EIO and free is not None:
        full = free < need_bytes + _EIO_FULL_MARGIN
    # guard: store-takes-corrupt-page-eio
    if not full and (isinstance(exc, _DAMAGED) or code in _DAMAGED_ERRNOS):
        err: StorageError = StorageDamagedError(f"{what}: the environment is damaged: {exc}")
    elif full:
        where = f" at {path}" if path is not None else ""
        room = f"; {free} bytes free" if free is not None else ""
        need = f"needs about {need_bytes} bytes more" if need_bytes else "needs more space"
        err = StoreFullError(
            f"{what}: disk full: the store{where} {need}{room}",
            path=None if path is None else str(path),
            need_bytes=need_bytes or None,
            free_bytes=free,
        )
    else:
        err = StorageError(f"{what}: {exc}")
    err.__cause__ = exc
    return err


def space_needed(sizes: Iterable[tuple[int, int]], partitions: int, page: int) -> int:
    """About how many bytes of new pages a write transaction takes, from the ``(key
    length, value length)`` of each item it puts.

    LMDB copies every page it touches: values over about half a page go to
    overflow pages of their own; small entries fill leaf pages (counted half
    full, as after splits); and each partition touched rewrites a leaf and
    its branch pages in the ``batches`` and ``heads`` trees. An estimate for
    the "disk full" report, not a promise.
    """
    overflow = 0
    leaf_bytes = 0
    for klen, vlen in sizes:
        node = 16 + klen + vlen
        if node > page // 2:
            overflow += -(-(vlen + 16) // page)
            leaf_bytes += 16 + klen + 8
        else:
            leaf_bytes += node
    pages = overflow + 2 * -(-leaf_bytes // page) + 2 * 3 * max(1, partitions)
    return pages * page
