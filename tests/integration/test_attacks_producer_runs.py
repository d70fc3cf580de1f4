"""Issue 33, point 8, with real processes: a store that was stopped while a restarted
producer closed its earlier run's unacknowledged batch with a gap statement meets that
gap statement when it comes back, and replaces the batch with it (before, it kept the old
records for ever: it held the whole range, so it had nothing to FETCH)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import StoreProc, Tower, stored_head, wait_until

pytestmark = pytest.mark.integration


def stored(data_dir: Path, topic: str, partition: str) -> list[tuple[int, int, int]]:
    """``(first, last, format byte)`` of every batch a running store holds of a partition,
    read by a concurrent read-only LMDB reader."""
    import lmdb

    from dafka.storage.integrity import DIGEST_SIZE
    from dafka.storage.keys import partition_prefix

    prefix = partition_prefix(topic, partition)
    out = []
    env = lmdb.open(str(data_dir), readonly=True, max_dbs=3, lock=True)
    try:
        with env.begin() as txn:
            batches = env.open_db(b"batches", txn=txn, create=False)
            cursor = txn.cursor(db=batches)
            if cursor.set_range(prefix):
                for key, value in cursor:
                    if not key.startswith(prefix):
                        break
                    last = int.from_bytes(key[len(prefix) :], "big")
                    # first u64 | digest | blob (a fresh store digests every value)
                    blob = value[8 + DIGEST_SIZE :]
                    out.append((int.from_bytes(value[:8], "big"), last, blob[0]))
    except lmdb.Error:
        return []
    finally:
        env.close()
    return out


def test_a_store_away_during_a_recovery_meets_its_gap_statement(
    tower: Tower, tmp_path: Path
) -> None:
    a = StoreProc(tmp_path / "a", tower.address)
    b: StoreProc | None = None
    state = tmp_path / "producer"
    stopped = False
    try:
        # run 1: five records in one batch, stored by a alone: never durable (min_acks 2)
        with Producer(
            "runs", towers=tower.address, state_dir=state, metadata=False, min_acks=2
        ) as p:
            partition = p.partition
            p.send_many([b"old %d" % i for i in range(5)])
            wait_until(
                lambda: stored_head(a.data_dir, "runs", partition) == 4,
                30,
                what="store a to hold run 1's batch",
            )
            p.close(timeout=0)
        os.kill(a.proc.p.pid, signal.SIGSTOP)
        stopped = True
        b = StoreProc(tmp_path / "b", tower.address)
        # run 2: no store answers for 0..4 (a is stopped, b never had it): a gap statement
        with Producer(
            "runs",
            towers=tower.address,
            state_dir=state,
            metadata=False,
            min_acks=2,
            recovery_wait=1.5,
            head_interval=0.5,
        ) as p:
            bb = b
            wait_until(
                lambda: stored(bb.data_dir, "runs", partition) == [(0, 4, 4)],
                30,
                what="store b to hold run 2's gap statement",
            )
            os.kill(a.proc.p.pid, signal.SIGCONT)
            stopped = False
            wait_until(
                lambda: stored(a.data_dir, "runs", partition) == [(0, 4, 4)],
                30,
                what="store a to replace run 1's batch with the gap statement",
            )
            assert p.send(b"new").result(timeout=30) == 5  # both stores hold all before it
        assert stored(a.data_dir, "runs", partition) == stored(b.data_dir, "runs", partition)
    finally:
        if stopped:
            os.kill(a.proc.p.pid, signal.SIGCONT)
        a.kill()
        if b is not None:
            b.kill()
