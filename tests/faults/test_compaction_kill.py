"""A store killed (SIGKILL) in the middle of a compaction pass loses nothing the policy
keeps (issue 36, point 5).

A real store process, a real tower holding the topic's ``cleanup_policy compact``, and
a data directory filled beforehand with a producer's format-5 batches (keyed records,
many versions of each key, and tombstones). The store compacts at a low byte rate; the
test kills it as soon as a concurrent read-only LMDB reader sees compacted batches, then
opens the data directory and checks that every record the policy keeps (the newest of
every key, the tombstones not expired) is there and verifies, and that every batch
still verifies against the producer's key; then lets the pass finish after a restart.
"""

from __future__ import annotations

import time
from pathlib import Path

import lmdb
import pytest

from dafka.metadata import MetadataClient
from dafka.security import identity as identity_module
from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_store import LmdbStorage
from dafka.wire import signed
from dafka.wire.signed_rich import RichRecord, seal_rich
from tests.procs import Proc, Tower, py, wait_until
from tests.signing import PRODUCER, P

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "ct"
KEYS = 10
BATCHES = 60
PER_BATCH = 4
T0 = 1_800_000_000_000


def _records() -> list[tuple[bytes, bytes | None]]:
    out: list[tuple[bytes, bytes | None]] = []
    for i in range(BATCHES * PER_BATCH):
        key = b"key%d" % (i % KEYS)
        # the last version of key0 and key1 is a tombstone
        last = i >= BATCHES * PER_BATCH - KEYS
        value = None if last and i % KEYS in (0, 1) else (b"%06d" % i) * 160
        out.append((key, value))
    return out


def _fill(data_dir: Path) -> dict[bytes, tuple[int, bytes | None]]:
    """The producer's batches, stored as a store would have; returns what the policy
    keeps: key -> (offset, value) of its newest record."""
    ident = identity_module.load_or_create(data_dir)
    storage = LmdbStorage(data_dir, map_size=1 << 26, node_id=ident.node_id)
    records = _records()
    batches = []
    for b in range(BATCHES):
        first = b * PER_BATCH
        recs = [RichRecord(k, v, T0 + first) for k, v in records[first : first + PER_BATCH]]
        blob = seal_rich(PRODUCER, TOPIC.encode(), first, recs, T0 + first)
        batches.append(StoredBatch(TOPIC, P, first, first + PER_BATCH - 1, blob, "signed"))
    storage.append(batches)
    storage.close()
    keep: dict[bytes, tuple[int, bytes | None]] = {}
    for offset, (k, v) in enumerate(records):
        keep[k] = (offset, v)
    return keep


def _compacted(data_dir: Path) -> int:
    """Batches held in their compacted form, read by a concurrent read-only reader."""
    env = lmdb.open(str(data_dir), readonly=True, max_dbs=3, lock=True)
    try:
        with env.begin() as txn:
            db = env.open_db(b"batches", txn=txn, create=False)
            n = 0
            for value in txn.cursor(db=db).iternext(keys=False, values=True):
                blob = bytes(value[12:])
                at = 2 + blob[1] + 36
                n += blob[0] == 5 and blob[at + 1] == 1
            return n
    except lmdb.Error:
        return 0
    finally:
        env.close()


def _check(data_dir: Path, keep: dict[bytes, tuple[int, bytes | None]]) -> int:
    """Every batch verifies, and every record the policy keeps is there; returns the
    batches held compacted."""
    storage = LmdbStorage(data_dir, map_size=1 << 26)
    try:
        held = storage.read(TOPIC, P, 0, 10_000)
        assert storage.bad == {}
    finally:
        storage.close()
    assert [b.first_offset for b in held] == list(range(0, BATCHES * PER_BATCH, PER_BATCH))
    found: dict[int, tuple[bytes | None, bytes | None]] = {}
    compacted = 0
    for b in held:
        batch = signed.verify_batch(b.blob, topic=TOPIC, partition=P)  # the producer's key
        recs = signed.open_batch(batch)
        compacted += bool(recs.dropped)
        for o, k, v in zip(recs.offsets, recs.keys, recs.values, strict=True):
            found[o] = (k, v)
        for d in recs.dropped:  # only ever a record with a later one of its key
            assert d.key is not None and keep[d.key][0] > d.offset, d
    for key, (offset, value) in keep.items():
        assert found.get(offset) == (key, value), (key, offset)
    return compacted


def test_a_store_killed_mid_compaction_keeps_every_record_the_policy_keeps(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "s"
    data_dir.mkdir(mode=0o700)
    keep = _fill(data_dir)
    tower = Tower()
    args = py(
        "dafka.cli.store",
        "--data-dir",
        str(data_dir),
        "--tower",
        tower.address,
        "--compaction-rate",
        "0.15",
        "--compaction-pass",
        "0.5",
        "--scrub-rate",
        "0",
    )
    store = None
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic(TOPIC, {"cleanup_policy": "compact"})
        store = Proc(args)
        store.wait_line(r"store ([0-9A-F]{32}) on ", 60)
        wait_until(lambda: _compacted(data_dir) > 0, 30, 0.01, "compaction to start")
        store.p.kill()  # SIGKILL, mid-pass
        store.wait(10)
        store = None
        assert 0 < _check(data_dir, keep) < BATCHES - 3  # in the middle of the pass
        store = Proc(args)  # then the pass finishes
        store.wait_line(r"store ([0-9A-F]{32}) on ", 60)
        wait_until(lambda: _compacted(data_dir) >= BATCHES - 3, 30, 0.05, "the pass to finish")
        time.sleep(0.2)
        store.terminate()
        store = None
        assert _check(data_dir, keep) >= BATCHES - 3
    finally:
        if store is not None:
            store.kill()
        tower.stop()
