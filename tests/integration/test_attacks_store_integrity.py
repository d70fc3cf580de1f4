"""A store checks what it holds (issue 33, point 3): rot in a stored value, a truncated
``data.mdb``, a zeroed meta page and a corrupt B-tree page, each done to the real file.

Each attack was seen to succeed before the defence: the flipped batch was served as
stored, the truncated file killed the opening process with SIGBUS, the zeroed meta page
made the open fail, and appends went on after a read had met a corrupt page.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from dafka import Producer
from dafka.errors import StorageDamagedError
from dafka.storage.base import StoredBatch
from dafka.storage.integrity import read_meta
from dafka.storage.lmdb_store import LmdbStorage
from tests.attack_mutants import mutated
from tests.procs import StoreProc, Tower, stored_head, wait_until

P1 = "0123456789ABCDEF0123456789ABCDEF"
P2 = "FEDCBA9876543210FEDCBA9876543210"
PAGE = 4096


def blob(i: int, partition: str = P1, size: int = 200) -> bytes:
    """A recognisable blob: its partition, its index, filler."""
    head = f"<{partition[:4]}-{i:06d}>".encode()
    return head + bytes([i % 251]) * (size - len(head))


def fill(path: Path, count: int, partitions: tuple[str, ...] = (P1,), size: int = 200) -> None:
    storage = LmdbStorage(path)
    try:
        for i in range(count):
            storage.append(
                [StoredBatch("t", p, i, i, blob(i, p, size), "signed") for p in partitions]
            )
    finally:
        storage.close()


def flip_in_file(path: Path, needle: bytes, delta: int = 20) -> None:
    """Flip one bit ``delta`` bytes into every copy of ``needle`` in the file (LMDB copies
    pages on write: older copies of the live page stay in free pages)."""
    data = (path / "data.mdb").read_bytes()
    at = data.find(needle)
    assert at >= 0
    fd = os.open(path / "data.mdb", os.O_WRONLY)
    try:
        while at >= 0:
            os.pwrite(fd, bytes([data[at + delta] ^ 0x10]), at + delta)
            at = data.find(needle, at + 1)
    finally:
        os.close(fd)


def test_a_flipped_bit_in_a_stored_value_is_never_served(tmp_path: Path) -> None:
    fill(tmp_path, 20)
    flip_in_file(tmp_path, blob(7)[:12])
    storage = LmdbStorage(tmp_path)
    try:
        got = storage.read("t", P1, 0, 100)
        # served up to the bad batch, not past it, and never the bad copy
        assert [b.first_offset for b in got] == list(range(7))
        assert storage.read("t", P1, 7, 100) == []
        assert [b.first_offset for b in storage.read("t", P1, 8, 100)] == list(range(8, 20))
        assert list(storage.bad) == [("t", P1, 7)]
        assert storage.integrity.bad_found == 1
    finally:
        storage.close()


def test_the_scrub_finds_rot_nobody_read_and_a_good_copy_replaces_it(tmp_path: Path) -> None:
    fill(tmp_path, 50, (P1, P2))
    flip_in_file(tmp_path, blob(31, P2)[:12], delta=150)
    storage = LmdbStorage(tmp_path)
    try:
        after, total = b"", 0
        while True:  # in steps of about 2 KiB, as the store's tick does
            next_key, read = storage.scrub(after, 2048)
            total += read
            if next_key is None:
                break
            after = next_key
        assert list(storage.bad) == [("t", P2, 31)]
        assert storage.integrity.scrub_passes == 1 and total >= 100 * 200
        assert storage.read("t", P2, 31, 1) == []
        good = StoredBatch("t", P2, 31, 31, blob(31, P2), "signed")
        assert storage.replace(good)
        assert storage.read("t", P2, 31, 1) == [good]
        assert not storage.bad and storage.integrity.repaired == 1
        # a batch that is not bad is never overwritten
        assert not storage.replace(StoredBatch("t", P2, 32, 32, b"other", "signed"))
    finally:
        storage.close()


def test_an_old_environment_without_digests_still_opens_and_serves(tmp_path: Path) -> None:
    """A schema 2 store (values ``first | blob``, heads without ``digests from``) opens;
    its old batches are served unverified, new ones get digests."""
    import lmdb

    env = lmdb.open(str(tmp_path), max_dbs=3, subdir=True)
    with env.begin(write=True) as txn:
        batches = env.open_db(b"batches", txn=txn)
        heads = env.open_db(b"heads", txn=txn)
        meta = env.open_db(b"meta", txn=txn)
        txn.put(b"schema_version", b"2", db=meta)
        prefix = b"t\0" + bytes.fromhex(P1)
        for i in range(3):
            txn.put(prefix + struct.pack(">Q", i), struct.pack(">Q", i) + blob(i), db=batches)
        txn.put(prefix, struct.pack(">QQB", 2, 0, 2), db=heads)
    env.close()
    storage = LmdbStorage(tmp_path)
    try:
        storage.append([StoredBatch("t", P1, 3, 3, blob(3), "signed")])
        assert [b.blob for b in storage.read("t", P1, 0, 10)] == [blob(i) for i in range(4)]
    finally:
        storage.close()
    flip_in_file(tmp_path, blob(3)[:12])  # the new batch has a digest
    storage = LmdbStorage(tmp_path)
    try:
        assert [b.first_offset for b in storage.read("t", P1, 0, 10)] == [0, 1, 2]
    finally:
        storage.close()


def open_in_child(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        mutated([sys.executable, "-m", "tests.integration.open_store", str(path)]),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_truncated_data_mdb_is_one_line_and_exit_1_not_sigbus(tmp_path: Path) -> None:
    fill(tmp_path, 400, size=3000)  # overflow pages: ~400 pages, the tree's near the end
    data = tmp_path / "data.mdb"
    size = data.stat().st_size
    os.truncate(data, size // 3)
    done = open_in_child(tmp_path)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and "is truncated" in lines[0] and "other stores refill" in lines[0]
    # and dafka-store itself: one line, exit 1, before it reaches for a tower
    cli = subprocess.run(
        mutated(
            [sys.executable, "-m", "dafka.cli.store", "-d", str(tmp_path), "--tower", "127.0.0.1:1"]
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 1, (cli.returncode, cli.stderr)
    assert [line for line in cli.stderr.splitlines() if line.startswith("error:")] == [
        cli.stderr.strip().splitlines()[-1]
    ]
    assert "is truncated" in cli.stderr


def newest_meta_slot(path: Path) -> tuple[int, int]:
    raw = (path / "data.mdb").read_bytes()[: 2 * PAGE]
    metas = [read_meta(raw[s * PAGE : (s + 1) * PAGE], s) for s in (0, 1)]
    assert all(metas)
    newest = max(metas, key=lambda m: m.txnid)  # type: ignore[union-attr]
    return newest.slot, newest.txnid  # type: ignore[union-attr]


def test_a_zeroed_newest_meta_page_opens_from_the_other(tmp_path: Path) -> None:
    fill(tmp_path, 10)
    slot, _ = newest_meta_slot(tmp_path)
    fd = os.open(tmp_path / "data.mdb", os.O_WRONLY)
    try:
        os.pwrite(fd, bytes(PAGE), slot * PAGE)
    finally:
        os.close(fd)
    done = open_in_child(tmp_path)
    assert done.returncode == 0, (done.stdout, done.stderr)
    # the commit before the last: offsets 0..8 of the ten appends
    assert f"('t', '{P1}'): (8, 0)" in done.stdout
    assert (tmp_path / f"data.mdb.meta{slot}.damaged").read_bytes() == bytes(PAGE)
    assert "lmdb.meta_restored" in done.stderr


def test_both_meta_pages_zeroed_is_one_line_and_exit_1(tmp_path: Path) -> None:
    fill(tmp_path, 3)
    fd = os.open(tmp_path / "data.mdb", os.O_WRONLY)
    try:
        os.pwrite(fd, bytes(2 * PAGE), 0)
    finally:
        os.close(fd)
    done = open_in_child(tmp_path)
    assert done.returncode == 1
    assert "neither of LMDB's meta pages is valid" in done.stdout


def pages_holding(path: Path, needle: bytes) -> set[int]:
    """The pages of the file holding ``needle`` (the live leaf and stale copies of it)."""
    data = (path / "data.mdb").read_bytes()
    pages, at = set(), data.find(needle)
    while at >= 0:
        pages.add(at // PAGE)
        at = data.find(needle, at + 1)
    assert pages
    return pages


def test_after_a_corrupt_page_is_met_nothing_more_is_stored(tmp_path: Path) -> None:
    """Two partitions on separate leaves; the leaf of one is zeroed while the store runs.
    Reading it says the environment is damaged; from then on the other partition's
    appends are refused too (they would have gone on, and been acknowledged, on a tree
    known to be corrupt)."""
    storage = LmdbStorage(tmp_path)
    try:
        for i in range(60):
            storage.append([StoredBatch("t", p, i, i, blob(i, p, 300), "signed") for p in (P1, P2)])
        pages = pages_holding(tmp_path, blob(5, P1, 300)[:12])
        assert not pages & pages_holding(tmp_path, blob(59, P2, 300)[:12])
        fd = os.open(tmp_path / "data.mdb", os.O_WRONLY)
        try:
            for page in pages:
                os.pwrite(fd, bytes(PAGE), page * PAGE)
        finally:
            os.close(fd)
        with pytest.raises(StorageDamagedError):
            storage.read("t", P1, 5, 10)
        assert storage.damaged is not None
        with pytest.raises(StorageDamagedError):
            storage.append([StoredBatch("t", P2, 60, 60, blob(60, P2), "signed")])
    finally:
        storage.close()


def test_a_store_repairs_a_rotten_batch_from_another_store(tmp_path: Path, tower: Tower) -> None:
    """Two stores hold a producer's records; one batch rots in store A's file while A is
    down. At its start A's scrub finds it, A asks the other store for exactly those
    offsets and writes the verified copy over it: A holds every batch intact again."""
    a = StoreProc(tmp_path / "a", tower.address)
    b = StoreProc(tmp_path / "b", tower.address)
    try:
        with Producer("rot", towers=tower.address, metadata=False) as producer:
            for i in range(20):
                producer.send(f"value-{i:04d}-".encode() * 20)
                producer.flush(timeout=30)  # a batch each
            wait_until(
                lambda: (
                    stored_head(tmp_path / "a", "rot", producer.partition) == 19
                    and stored_head(tmp_path / "b", "rot", producer.partition) == 19
                ),
                30,
                what="both stores at 19",
            )
            assert a.stop() == 0
            flip_in_file(tmp_path / "a", b"value-0011-value-0011", delta=30)
            a = StoreProc(tmp_path / "a", tower.address, "--scrub-rate", "64")
            a.proc.wait_line(r"store\.batch_corrupt .*first=11 .*found_by=scrub", 30)
            a.proc.wait_line(r"store\.batch_repaired .*first=11 last=11", 60)
            partition = producer.partition
    finally:
        a.stop()
        b.stop()
    storage = LmdbStorage(tmp_path / "a")
    try:
        held = storage.read("rot", partition, 0, 100)
        assert [x.first_offset for x in held] == list(range(20))
        assert f"value-{11:04d}-".encode() in held[11].blob and not storage.bad
    finally:
        storage.close()


@pytest.mark.parametrize(("at", "bit"), [(17, 0x80), (7, 0x40), (7, 0x10)])
def test_a_flipped_bit_in_a_heads_entry_is_damage_not_a_new_truth(
    tmp_path: Path, at: int, bit: int
) -> None:
    """Attack (a red-team pass): one flipped bit in a partition's heads entry. In
    "digests from" (byte 17) it switched the digest check off for the partition, and the
    store served every value with its 4 digest bytes in front as record bytes; in the
    head (bytes 0..7) the store waited for, or equivocated over, offsets it never held.
    The entry's checksum now says it is damaged: the store refuses to open (one line)."""
    import lmdb

    fill(tmp_path, 20)
    env = lmdb.open(str(tmp_path), max_dbs=3, subdir=True)
    with env.begin(write=True) as txn:
        heads = env.open_db(b"heads", txn=txn)
        ((key, value),) = list(txn.cursor(db=heads))
        damaged = bytearray(value)
        damaged[at] ^= bit
        txn.put(key, bytes(damaged), db=heads)
    env.close()
    with pytest.raises(StorageDamagedError, match="heads entry .* is damaged"):
        LmdbStorage(tmp_path)


@pytest.mark.parametrize("how", ["zeroed", "pointer"])
def test_a_damaged_leaf_page_is_one_line_and_exit_1_not_an_lmdb_abort(
    tmp_path: Path, how: str
) -> None:
    """Attack (a red-team pass): a zeroed leaf page made LMDB abort on an assertion
    (rc -6), a node pointer past the page a SIGBUS (rc -7), at every start, with no line
    of ours. The store walks its B-trees in a child first: one 'error:' line, exit 1."""
    fill(tmp_path, 400)
    fd = os.open(tmp_path / "data.mdb", os.O_WRONLY)
    try:
        for page in pages_holding(tmp_path, blob(200)[:12]):
            if how == "zeroed":
                os.pwrite(fd, bytes(PAGE), page * PAGE)
            else:  # the first node pointer of the page (after its 16-byte header)
                os.pwrite(fd, struct.pack("<H", 0xFFF0), page * PAGE + 16)
    finally:
        os.close(fd)
    cli = subprocess.run(
        mutated(
            [sys.executable, "-m", "dafka.cli.store", "-d", str(tmp_path), "--tower", "127.0.0.1:1"]
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 1, (cli.returncode, cli.stderr)
    errors = [line for line in cli.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "is damaged" in errors[0], cli.stderr
    assert "move data.mdb" in errors[0]
