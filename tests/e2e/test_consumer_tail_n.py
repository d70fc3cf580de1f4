"""``dafka-consumer -o -N`` prints exactly the last ``N`` records of a partition written in many
batches: 1,000,000 records under the signed profile, 200,000 under rfc46 (issue 34, point 3).

A store passes on the newest HEAD the producer signed (signed profile), which a producer sends
once a second: one writing 100,000 records in its last second leaves it that far short of the
end, and ``-o -3`` printed 52,135 records of 1,000,000 before the fix. Here a partition is
written by two runs of one producer (one state directory): the first sends HEADs often and
stops once one at its end has gone out, the second sends none, so the stores' signed HEAD is a
tenth of the records short, whatever the timing. ``rfc46`` has no signed HEAD on a store's
answer (the store's head names the record fetched to prove the end); it keeps the same
promise. Batches hold up to 8,192 records (``max_batch_records``), so every ``N`` below cuts
inside one; ``N`` above a partition's size prints all of it (``test_consumer_seek``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import Proc, StoreProc, Tower, py

pytestmark = pytest.mark.e2e

UNSIGNED = 0.1  # the share of records written after the producer's last signed HEAD


def produce(tower: str, state: Path, profile: str, first: int, end: int, heads: float) -> None:
    values = [b"%d" % i for i in range(first, end)]
    with Producer(
        "tail",
        towers=tower,
        state_dir=state,
        profile=profile,  # type: ignore[arg-type]
        head_interval=heads,
        trust_any_store=True,
        recovery_wait=0.5,
    ) as producer:
        step = 100_000
        futures = [producer.send_many(values[i : i + step]) for i in range(0, len(values), step)]
        for future in futures:
            future.result(timeout=120)
        if heads < 1.0:
            time.sleep(heads * 6)  # a HEAD at the last offset goes out


# rfc46 sends a message per record (five times the work of a signed batch of many): a
# fifth of the records there, where no batch boundary can fall inside the last N
@pytest.mark.parametrize(("profile", "records"), [("signed", 1_000_000), ("rfc46", 200_000)])
def test_minus_n_prints_exactly_the_last_n_records_of_a_long_partition(
    tmp_path: Path, profile: str, records: int
) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address, "--profile", profile)
    try:
        state = tmp_path / "producer"
        signed_end = int(records * (1 - UNSIGNED))
        produce(tower.address, state, profile, 0, signed_end, heads=0.05)
        produce(tower.address, state, profile, signed_end, records, heads=3600.0)
        for n in (1, 3, 1_000, 54_321):
            consumer = Proc(
                py("dafka.cli.consumer", "tail", "-o", f"-{n}", "-e", "--timeout", "60")
                + ["--profile", profile, "-f", "%o %s\\n", "--tower", tower.address]
            )
            assert consumer.wait(90) == 0, consumer.stderr
            rows = bytes(consumer.stdout).decode().splitlines()
            assert len(rows) == n, (n, len(rows), rows[:2])
            assert rows == [f"{o} {o}" for o in range(records - n, records)], (rows[:2], rows[-2:])
    finally:
        store.kill()
        tower.stop()
