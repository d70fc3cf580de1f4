"""An I/O error on a store's write (issue 33, point 9), injected into a real store process
with libfiu (``fiu-run -x``, then ``fiu-ctrl`` turns ``fdatasync`` into EIO; Debian's
``fiu-utils``, installed by ``make install``; skipped with the reason where it is missing).

Before, the store logged the failed commit, acknowledged nothing of it, and stayed up:
beaconing, announcing itself as a store and taking records it could not store (after a
failed meta page write LMDB fails every later write, ``MDB_PANIC``), until restarted by
hand. Now the first such error stops it: no ACK for anything the failed sync covered, one
line saying why, exit status 1 for a supervisor to restart it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dafka import Producer
from dafka.errors import DafkaTimeout
from tests.attack_mutants import mutated
from tests.procs import Proc, Tower, py, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

_PRELOAD = Path("/usr/lib/fiu/fiu_posix_preload.so")


def _fiu_missing() -> str | None:
    if shutil.which("fiu-run") is None or shutil.which("fiu-ctrl") is None:
        return "fiu-run/fiu-ctrl missing (Debian package fiu-utils)"
    if not _PRELOAD.exists():
        return f"{_PRELOAD} missing (Debian package libfiu0)"
    return None


@pytest.mark.skipif(_fiu_missing() is not None, reason=str(_fiu_missing()))
def test_eio_on_a_commit_stops_the_store_with_no_ack_and_exit_1(
    tmp_path: Path, tower: Tower
) -> None:
    store = Proc(
        [
            "fiu-run",
            "-x",
            *mutated(
                py("dafka.cli.store", "--data-dir", str(tmp_path / "s"), "--tower", tower.address)
            ),
        ]
    )
    producer = None
    try:
        store.wait_line(r"store ([0-9A-F]{32}) on")
        producer = Producer("eio", towers=tower.address, metadata=False)
        producer.send_many([b"before"] * 50)
        producer.flush(timeout=30)
        acked = producer.acknowledged
        assert acked == 50
        subprocess.run(
            ["fiu-ctrl", "-c", "enable name=posix/io/sync/fdatasync,failinfo=5", str(store.p.pid)],
            check=True,
            timeout=10,
        )
        producer.send_many([b"after"] * 50)
        with pytest.raises(DafkaTimeout):
            producer.flush(timeout=5)
        assert producer.acknowledged == acked  # nothing the failed sync covered
        rc = store.wait(30)
        assert rc == 1, store.stderr
        assert "store.stopping reason=damaged-environment" in store.stderr
        assert "error: the store stopped" in store.stderr
        wait_until(lambda: store.p.poll() is not None, 5, what="the store's exit")
    finally:
        if producer is not None:
            producer.close(timeout=1)
        store.kill()
