"""Issue 33, point 4: one flipped bit in the last record of a producer's offset journal,
long after it was synced, must not make the restarted producer number records again
below what stores acknowledged (the stores would see equivocation for ever and the
partition would be wedged). Real tower and store processes, a real state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import StoreProc, Tower, stored_head

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
