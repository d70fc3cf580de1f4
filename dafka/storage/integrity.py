"""What a store checks of what it holds: a digest per stored batch, and its LMDB file
before it maps it (``docs/storage.md``).

**Digests.** Every batch written is stored as ``first offset u64 | digest 4 | blob``, the
digest being the CRC-32 (zlib's) of the batch's key and ``first | blob``: a flipped bit
anywhere in the value (or a value found under another batch's key) no longer matches.
A CRC-32 catches every error of one burst up to 32 bits (a single flipped bit, a
byte) and lets random garbage pass with a chance of 2**-32 a batch, as Kafka's record
batch CRC does. It was chosen over BLAKE3 (a dependency already) for its cost, since every
read is checked before it is served: for a 100 B batch (rfc46: one record) CRC-32 took
0.2 us where BLAKE3 took 3.0 us (blake3-py's per-call setup), more than the rest of the
read; for 64 KiB, 20 us against 37 us (2-core host, loaded). Nobody forges these values
(only the store writes its file): the digest is against rot, not against an attacker.
The producer's signature (under ``signed``) covers the records too, but an Ed25519
verification costs ~50 us a batch and rfc46 has none; signatures are checked where a
copy is taken from another store (:mod:`dafka.store._repair`).

Batches written before digests existed (schema 2) stay as they are: a partition records
the offset its digests start from (:func:`dafka.storage.lmdb_store` heads), and batches
below it are served unverified, as before (consumers still verify signed batches).

**The file.** LMDB trusts its file: a ``data.mdb`` shorter than its meta page says is a
SIGBUS at the first read of a missing page, and a zeroed meta page makes ``mdb_env_open``
refuse the environment although the other meta page (the commit before) is intact: LMDB
0.9 keeps the previous commit's pages until the commit after it (``MDB_PREVSNAPSHOT``
exists only from LMDB 0.9.70/1.0 and py-lmdb does not expose it). So before opening,
:func:`check_file` reads both meta pages: a newest page that is not a valid meta page is
rewritten as a copy of the other one (the store then holds what it held one commit
earlier; the other stores refill the rest), and a file shorter than the meta page it
opens from says so in one line, instead of a SIGBUS.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import StorageDamagedError

__all__ = ["DIGEST_SIZE", "MetaPage", "check_file", "digest_of", "read_meta"]

log = logging.getLogger(__name__)

DIGEST_SIZE = 4

RECOVER_HINT = (
    "move data.mdb and lock.mdb out of the data directory (node.key keeps the store's "
    "identity) and start the store again: the other stores refill it"
)

# LMDB 0.9 on a 64-bit host (lmdb.h, mdb.c): a page header of 16 bytes (pgno u64, pad u16,
# flags u16, lower/upper u16), then MDB_meta: magic u32, version u32, address u64, mapsize
# u64, two MDB_db of 48 bytes (pad u32 - the page size in the free DB's -, flags u16,
# depth u16, branch/leaf/overflow pages, entries, root: u64 each), last page u64, txnid u64.
_MAGIC = 0xBEEFC0DE
_DATA_VERSION = 1
_P_META = 0x08
_P_INVALID = (1 << 64) - 1
_HEADER = struct.Struct("<QHH")
_META = struct.Struct("<IIQQ")  # at 16
_DB = struct.Struct("<IHHQQQQQ")  # at 40 and 88
_TAIL = struct.Struct("<QQ")  # at 136
_META_END = 152


def digest_of(key: bytes | memoryview, value: bytes | memoryview) -> bytes:
    """The digest of a stored batch: ``key`` and its value without the digest
    (``first u64 | blob``)."""
    return zlib.crc32(value, zlib.crc32(key)).to_bytes(DIGEST_SIZE, "big")


@dataclass(frozen=True, slots=True)
class MetaPage:
    """One of LMDB's two meta pages, as far as :func:`check_file` needs it."""

    slot: int
    page_size: int
    map_size: int
    last_page: int
    txnid: int
    roots: tuple[int, int]

    @property
    def file_bytes(self) -> int:
        """How long the file must be for this meta page's tree."""
        return (self.last_page + 1) * self.page_size


def read_meta(raw: bytes, slot: int) -> MetaPage | None:
    """The meta page at ``raw`` (one page's bytes), or None if it is not a valid one."""
    if len(raw) < _META_END:
        return None
    pgno, _, flags = _HEADER.unpack_from(raw, 0)
    magic, version, _, map_size = _META.unpack_from(raw, 16)
    page_size = _DB.unpack_from(raw, 40)[0]
    roots = (_DB.unpack_from(raw, 40)[7], _DB.unpack_from(raw, 88)[7])
    last_page, txnid = _TAIL.unpack_from(raw, 136)
    if magic != _MAGIC or version != _DATA_VERSION or not flags & _P_META or pgno != slot:
        return None
    if not 512 <= page_size <= 65536 or page_size & (page_size - 1):
        return None
    if last_page < 1 or any(r != _P_INVALID and not 2 <= r <= last_page for r in roots):
        return None
    if map_size < (last_page + 1) * page_size:
        return None
    return MetaPage(slot, page_size, map_size, last_page, txnid, roots)


def check_file(directory: Path) -> None:
    """Check ``directory/data.mdb`` before LMDB maps it (absent or empty: a new store).

    Repairs a newest meta page that is not one from the other; raises
    :class:`StorageDamagedError` (one line, with how to recover) if no meta page is
    valid or the file is shorter than the tree it describes."""
    path = directory / "data.mdb"
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageDamagedError(f"cannot read {path}: {exc}") from exc
    if size == 0:
        return
    try:
        with open(path, "rb") as f:
            first = f.read(65536 * 2)
    except OSError as exc:
        raise StorageDamagedError(f"cannot read {path}: {exc}; {RECOVER_HINT}") from exc
    meta0 = read_meta(first, 0)
    page = meta0.page_size if meta0 is not None else _page_size_guess(first)
    meta1 = read_meta(first[page : 2 * page], 1) if len(first) >= 2 * page else None
    metas = [m for m in (meta0, meta1) if m is not None]
    if not metas:
        raise StorageDamagedError(
            f"{path} is damaged: neither of LMDB's meta pages is valid "
            f"(file of {size} bytes); {RECOVER_HINT}"
        )
    best = max(metas, key=lambda m: m.txnid)
    # guard: store-refuses-data-mdb-shorter
    if size < best.file_bytes:
        raise StorageDamagedError(
            f"{path} is truncated: {size} bytes, but its meta page (commit {best.txnid}) "
            f"needs {best.file_bytes}; {RECOVER_HINT}"
        )
    # guard: store-restores-invalid-meta-page
    if len(metas) == 1:
        _restore_meta(path, first, best, 1 - best.slot)


def _page_size_guess(raw: bytes) -> int:
    """The page size when meta page 0 is unreadable: the first power of two at which a
    valid meta page 1 starts (LMDB's default is the OS page size)."""
    for page in (4096, 8192, 16384, 32768, 65536, 512, 1024, 2048):
        if read_meta(raw[page : 2 * page], 1) is not None:
            return page
    return os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _restore_meta(path: Path, raw: bytes, good: MetaPage, bad_slot: int) -> None:
    """Overwrite meta page ``bad_slot`` with a copy of ``good`` (its own page number),
    keeping the damaged page beside the file; LMDB then opens ``good``'s commit."""
    page = good.page_size
    damaged = raw[bad_slot * page : (bad_slot + 1) * page]
    copy = bytearray(raw[good.slot * page : (good.slot + 1) * page])
    _HEADER.pack_into(copy, 0, bad_slot, *_HEADER.unpack_from(copy, 0)[1:])
    keep = path.with_name(f"data.mdb.meta{bad_slot}.damaged")
    try:
        keep.write_bytes(damaged)
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, bytes(copy), bad_slot * page)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StorageDamagedError(
            f"{path}: meta page {bad_slot} is damaged and could not be rewritten ({exc}); "
            f"{RECOVER_HINT}"
        ) from exc
    log.error(
        "lmdb.meta_restored path=%s damaged_slot=%d from_commit=%d kept=%s "
        "hint=the newest commit may be lost here; the other stores refill it",
        path,
        bad_slot,
        good.txnid,
        keep.name,
    )
