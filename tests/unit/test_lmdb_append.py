"""LmdbStorage.append: what it writes (the layout ``first offset u64 | digest | blob``) and
what it holds while writing (one value made at a time, not a copy of the whole drain)."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import lmdb

from dafka.storage.base import StoredBatch
from dafka.storage.integrity import digest_of
from dafka.storage.keys import partition_prefix
from dafka.storage.lmdb_store import LmdbStorage

P1 = "0123456789ABCDEF0123456789ABCDEF"
P2 = "FEDCBA9876543210FEDCBA9876543210"
MIB = 1024 * 1024


def big_batches(count: int, size: int, partitions: tuple[str, ...] = (P1,)) -> list[StoredBatch]:
    """``count`` batches of ``size`` bytes per partition, ten records each, interleaved."""
    out = []
    for i in range(count):
        for n, partition in enumerate(partitions):
            blob = bytes([i % 251, n]) * (size // 2)
            out.append(StoredBatch("t", partition, 10 * i, 10 * i + 9, blob, "signed"))
    return out


def test_append_makes_one_value_at_a_time(tmp_path: Path) -> None:
    """A drain of 16 batches of 1 MiB: the values LMDB is given (each a copy of its blob
    behind the first offset) are made one at a time, so the append holds about one more
    MiB, not 16 (which it did when it made a list of every value first)."""
    storage = LmdbStorage(tmp_path / "db", map_size=256 * MIB)
    batches = big_batches(16, MIB)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        storage.append(batches)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        storage.close()
    assert peak - before < 4 * MIB, f"append held {(peak - before) / MIB:.1f} MiB"


def test_append_keeps_the_layout_first_offset_digest_blob(tmp_path: Path) -> None:
    """What is on disk: key = partition prefix | last offset, value = first offset (u64
    BE) | digest of key and first | blob (schema 3), for interleaved partitions in one
    append."""
    batches = big_batches(3, 64 * 1024, (P2, P1))
    storage = LmdbStorage(tmp_path / "db")
    storage.append(batches)
    storage.close()
    env = lmdb.open(str(tmp_path / "db"), max_dbs=3, readonly=True, lock=False)
    try:
        db = env.open_db(b"batches", create=False)
        with env.begin(db=db) as txn:
            stored = {bytes(k): bytes(v) for k, v in txn.cursor()}
    finally:
        env.close()
    expected = {}
    for b in batches:
        key = partition_prefix(b.topic, b.partition) + struct.pack(">Q", b.last_offset)
        first = struct.pack(">Q", b.first_offset)
        expected[key] = first + digest_of(key, first + b.blob) + b.blob
    assert stored == expected


def test_an_append_retried_after_the_map_grew_stores_every_batch(tmp_path: Path) -> None:
    """The values are made again for the retry after a full map (a one-shot iterator
    would have been used up by the aborted attempt, and the retry would store nothing)."""
    storage = LmdbStorage(tmp_path / "db", map_size=2 * MIB)
    batches = big_batches(6, MIB, (P1, P2))
    try:
        storage.append(batches)
        assert storage.map_size > 2 * MIB
        assert storage.heads() == {("t", P1): (59, 0), ("t", P2): (59, 0)}
        for partition in (P1, P2):
            got = storage.read("t", partition, 0, 100)
            assert got == [b for b in batches if b.partition == partition]
    finally:
        storage.close()
