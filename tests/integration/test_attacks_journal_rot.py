"""Issue 33, point 4: one flipped bit in the last record of a producer's offset journal,
long after it was synced, must not make the restarted producer number records again
below what stores acknowledged (the stores would see equivocation for ever and the
partition would be wedged). Real tower and store processes, a real state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import StoreProc, Tower, stored_head, wait_until

pytestmark = pytest.mark.integration

WAIT = 1.5


def test_a_rotten_last_journal_record_never_reuses_an_acknowledged_offset(
    tower: Tower, tmp_path: Path
) -> None:
    store = StoreProc(tmp_path / "store", tower.address)
    state = tmp_path / "producer"
    try:
        with Producer("rot", towers=tower.address, state_dir=state, metadata=False) as p:
            partition = p.partition
            for i in range(10):  # one reservation per record: the last one reserves 10
                p.send(f"v{i}".encode()).result(timeout=30)
        journal = state / "offsets.journal"
        data = bytearray(journal.read_bytes())
        data[-10] ^= 0x04  # rot at rest in the last record, synced long ago
        journal.write_bytes(bytes(data))
        with Producer(
            "rot", towers=tower.address, state_dir=state, metadata=False, recovery_wait=WAIT
        ) as p:
            assert p.partition == partition
            offset = p.send(b"after the rot").result(timeout=30)  # acknowledged: not wedged
        assert offset >= 10  # offsets 0..9 were acknowledged
        assert stored_head(store.data_dir, "rot", partition) == offset
    finally:
        store.kill()


def test_a_journal_bound_in_doubt_is_settled_by_asking_the_stores(
    tower: Tower, tmp_path: Path
) -> None:
    """Both copies of the last record rotted (not a torn write: in doubt), and what it
    reserved was published and stored but never acknowledged (min_acks 2, one store). The
    restarted producer asks the store before numbering and goes on after what it holds."""
    store = StoreProc(tmp_path / "store", tower.address)
    state = tmp_path / "producer"
    try:
        with Producer(
            "doubt", towers=tower.address, state_dir=state, metadata=False, min_acks=2
        ) as p:
            partition = p.partition
            p.send(b"first")
            wait_until(lambda: stored_head(store.data_dir, "doubt", partition) == 0, 30)
            p.send_many([b"v%d" % i for i in range(1, 5)])  # its own reservation: 5
            wait_until(lambda: stored_head(store.data_dir, "doubt", partition) == 4, 30)
            p.close(timeout=0)
        journal = state / "offsets.journal"
        data = bytearray(journal.read_bytes())
        half = 5 + 4 + 1 + len("doubt") + 8 + 4  # one copy of the last record
        data[-3] ^= 0x01
        data[-3 - half] ^= 0x01
        journal.write_bytes(bytes(data))
        with Producer(
            "doubt", towers=tower.address, state_dir=state, metadata=False, recovery_wait=WAIT
        ) as p:
            offset = p.send(b"after the rot").result(timeout=30)
        assert offset == 5  # 0..4 are on the store: never numbered again
        assert stored_head(store.data_dir, "doubt", partition) == 5
    finally:
        store.kill()
