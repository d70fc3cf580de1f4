"""A producer upgrade from batch format 1 to 3 against a real tower and store: the store
takes and serves both formats on one partition, and a consumer catching up from it
reads every record, verified (``docs/wire.md`` §9.3)."""

from __future__ import annotations

import subprocess
import time

from dafka.consumer._facade import Consumer
from dafka.producer._facade import Producer
from dafka.storage.lmdb_store import LmdbStorage
from tests.procs import ROOT, Tower, py

DEADLINE = 30.0
TOPIC = "formats"


def test_a_store_serves_both_formats_across_a_producer_upgrade(
    tower: Tower, start_store, tmp_path
) -> None:
    store = start_store()
    state = tmp_path / "producer"
    # before the upgrade: the CLI, told to write format 1
    done = subprocess.run(
        [
            *py("dafka.cli.producer", TOPIC, "--tower", tower.address, "--batch-format", "1"),
            "--state-dir",
            str(state),
        ],
        input=b"".join(b"before %d\n" % k for k in range(40)),
        capture_output=True,
        timeout=DEADLINE,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"40 records acknowledged, 0 failed" in done.stderr, done.stderr
    # after: the same partition (state dir), the library's default format
    with Producer(TOPIC, towers=tower.address, metadata=False, state_dir=str(state)) as p:
        futures = [p.send(b"after %d" % k) for k in range(40)]
        p.flush(timeout=DEADLINE)
        after = [f.result(timeout=DEADLINE) for f in futures]
        partition = p.node_id
    assert after == list(range(after[0], after[0] + 40)) and after[0] >= 40
    expected = [b"before %d" % k for k in range(40)] + [b"after %d" % k for k in range(40)]
    got = []
    with Consumer(TOPIC, towers=tower.address, offset_reset="earliest", metadata=False) as c:
        deadline = time.monotonic() + DEADLINE
        while len(got) < len(expected) and time.monotonic() < deadline:
            for run in c.poll_batches(timeout=0.5):
                got.extend(run.records())
    assert [r.value for r in got] == expected
    assert [r.offset for r in got] == list(range(40)) + after
    assert {r.partition for r in got} == {partition}
    store.kill()
    held = LmdbStorage(store.data_dir)
    try:
        formats = [b.blob[0] for b in held.read(TOPIC, partition, 0, 1000)]
    finally:
        held.close()
    assert 1 in formats and 3 in formats
    assert formats == sorted(formats)  # format 1, then (gap statements aside) format 3
