"""``dafka-consumer -e`` beside a store that hears it late (issue 34, point 2).

A store greets the consumer (STORE-HELLO) as soon as the consumer's SUB connects to it,
which is when the store's beacon reaches the consumer; the store connects back when the
consumer's beacon reaches it, which can be later. A CONSUMER-HELLO sent in between is
lost, and the store's silence used to be taken as "holds nothing": ``-e`` exited 0 having
printed none of the records (3 runs of 3 in the issue, rfc46, beside a C store). The
deterministic tests are in ``tests/unit/test_attacks_consumer_end.py``; these run the
processes: a stand-in for the C store that connects back 1.5 s late, and our own store
started after the consumer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import Proc, StoreProc, Tower, py, stored_head

pytestmark = pytest.mark.integration

RECORDS = 2_000


def read_to_end(tower: Tower, topic: str, profile: str) -> Proc:
    return Proc(
        py(
            "dafka.cli.consumer",
            topic,
            "--from-beginning",
            "-e",
            "--profile",
            profile,
            "--wait",
            "60",
            "--timeout",
            "120",
            "-f",
            "%o\\n",
            "--tower",
            tower.address,
        )
    )


def test_a_c_store_that_hears_the_consumer_late_is_read_to_its_end(tower: Tower) -> None:
    """It greets the consumer at once and connects back 1.5 s later: ``-e`` printed 0 of
    2,000 records and exited 0."""
    store = Proc(
        py(
            "tests.integration.c_fakes",
            "store",
            "--tower",
            tower.address,
            "--hold",
            f"late:{RECORDS}",
            "--hear-late",
            "1.5",
        )
    )
    try:
        store.wait_line(r"store ready ([0-9A-F]{32}) on ")
        consumer = read_to_end(tower, "late", "rfc46")
        try:
            assert consumer.wait(120) == 0, consumer.stderr
            offsets = bytes(consumer.stdout).decode().split()
            assert offsets == [str(i) for i in range(RECORDS)], (len(offsets), consumer.stderr)
        finally:
            consumer.kill()
    finally:
        store.kill()


def test_our_store_started_after_the_consumer_is_read_to_its_end(
    tower: Tower, tmp_path: Path
) -> None:
    profile = "signed"
    data = tmp_path / "store"
    store = StoreProc(data, tower.address, "--profile", profile)
    try:
        with Producer("late", towers=tower.address, profile=profile) as p:  # type: ignore[arg-type]
            partition = p.node_id
            p.send_many([b"r%d" % i for i in range(RECORDS)])
            p.flush(60)
    finally:
        assert store.stop() == 0
    assert stored_head(data, "late", partition) == RECORDS - 1
    consumer = read_to_end(tower, "late", profile)
    late = None
    try:
        # the consumer is up and has no store: then the store comes (with what it holds)
        consumer.wait_line(r"^warning: no store answered; still trying", 30)
        late = StoreProc(data, tower.address, "--profile", profile)
        assert consumer.wait(120) == 0, consumer.stderr
        offsets = bytes(consumer.stdout).decode().split()
        assert offsets == [str(i) for i in range(RECORDS)], (len(offsets), consumer.stderr)
    finally:
        consumer.kill()
        if late is not None:
            late.kill()


def fake_store(tower: Tower, *args: str) -> tuple[Proc, str]:
    store = Proc(py("tests.integration.c_fakes", "store", "--tower", tower.address, *args))
    return store, store.wait_line(r"store ready ([0-9A-F]{32}) on ").group(1)


def test_the_end_waits_for_a_store_that_greeted_the_consumer_and_says_when_it_gives_up(
    tower: Tower,
) -> None:
    """Two stores, each with a partition; one greets the consumer and never connects back.
    ``-e`` printed the other's records and exited 0 as if the second held nothing; now it
    prints them, says which store did not connect back, and exits 1 after ``--wait``."""
    answering, _ = fake_store(tower, "--hold", "late:100")
    silent, silent_id = fake_store(tower, "--hold", "late:50", "--hear-late", "1000")
    try:
        consumer = Proc(
            py(
                "dafka.cli.consumer",
                "late",
                "--from-beginning",
                "-e",
                "--profile",
                "rfc46",
                "--wait",
                "5",
                "-f",
                "%o\\n",
                "--tower",
                tower.address,
            )
        )
        try:
            assert consumer.wait(60) == 1, consumer.stderr
            assert bytes(consumer.stdout).decode().split() == [str(i) for i in range(100)]
            errors = [line for line in consumer.stderr_lines if line.startswith("error:")]
            assert errors == [
                f"error: store {silent_id} greeted this consumer and did not connect back "
                "within 5 s; can it reach this consumer's --host?"
            ], consumer.stderr
        finally:
            consumer.kill()
    finally:
        answering.kill()
        silent.kill()


def test_a_lone_store_that_never_connects_back_is_said_and_not_taken_as_empty(
    tower: Tower,
) -> None:
    """It greets the consumer and never subscribes to it (it cannot reach the consumer's
    host): ``-e`` printed nothing and exited 0; now it says so and exits 1."""
    silent, _ = fake_store(tower, "--hold", "late:50", "--hear-late", "1000")
    try:
        consumer = Proc(
            py(
                "dafka.cli.consumer",
                "late",
                "--from-beginning",
                "-e",
                "--profile",
                "rfc46",
                "--wait",
                "4",
                "--tower",
                tower.address,
            )
        )
        try:
            assert consumer.wait(60) == 1, consumer.stderr
            assert bytes(consumer.stdout) == b""
            errors = [line for line in consumer.stderr_lines if line.startswith("error:")]
            assert errors == [
                "error: no store answered within 4 s; a store greeted this consumer but did "
                "not connect back: can it reach --host?"
            ], consumer.stderr
        finally:
            consumer.kill()
    finally:
        silent.kill()
