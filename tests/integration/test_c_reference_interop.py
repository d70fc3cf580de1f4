"""Our processes beside stand-ins for the C reference nodes (issue 11, points 6 and 7).

The stand-ins (``tests/integration/c_fakes.py``) are separate processes that frame
rfc46 themselves and copy the reference behaviours at issue: a store that answers
GET-HEADS by topic prefix, a producer with no record size cap. See docs/wire.md §13.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import Consumer, Producer
from dafka.errors import DataLossError
from tests.procs import Proc, StoreProc, Tower, py, stored_head, wait_until

pytestmark = pytest.mark.integration


def fake(role: str, tower: Tower, *args: str) -> tuple[Proc, str]:
    proc = Proc(py("tests.integration.c_fakes", role, "--tower", tower.address, *args))
    m = proc.wait_line(rf"{role} ready ([0-9A-F]{{32}}) on ")
    return proc, m.group(1)


def test_consumer_exits_at_the_end_of_its_topic_beside_a_prefix_matching_c_store(
    tower: Tower,
) -> None:
    """The C store also sends the heads of `hello2` to a `hello` reader; `-e` used to wait
    for the end of `hello2`'s partition for ever ("end not reached")."""
    store, _ = fake("store", tower, "--hold", "hello:40", "--hold", "hello2:25")
    try:
        consumer = Proc(
            py(
                "dafka.cli.consumer",
                "hello",
                "--from-beginning",
                "-e",
                "--profile",
                "rfc46",
                "--timeout",
                "20",
                "-f",
                "%t %o %s\\n",
                "--tower",
                tower.address,
            )
        )
        assert consumer.wait(40) == 0, consumer.stderr
        lines = bytes(consumer.stdout).decode().splitlines()
        assert lines == [f"hello {i} hello {i}" for i in range(40)]
    finally:
        store.kill()


def test_a_c_consumer_catching_up_from_our_store_gets_past_its_first_fetch_window(
    tower: Tower, tmp_path: Path
) -> None:
    """The C consumer asks for windows up to the next multiple of 100,000 (100 here) and
    for the next one only when told of more; with no live producer it stopped after the
    first. Our store tells it the head after each window it answers in full."""
    store = StoreProc(tmp_path / "s", tower.address, "--profile", "rfc46")
    try:
        with Producer("late", towers=tower.address, profile="rfc46") as p:
            p.send_many([b"r%d" % i for i in range(350)])
            p.flush(30)
        consumer, _ = fake("consumer", tower, "--topic", "late", "--window", "100")
        try:
            consumer.wait_line(r"^got 350$", 30)
        finally:
            consumer.kill()
    finally:
        store.kill()


SIZES = [10] * 3 + [17 * 1024 * 1024] + [10] * 5  # offsets 0-2, 3 too big (17 MiB), 4-8


def test_an_oversized_record_from_a_c_producer_does_not_cut_it_off_from_our_store(
    tower: Tower, tmp_path: Path
) -> None:
    """A C producer has no size cap: 17 MiB once, between small records. Before, libzmq
    dropped the connection (ZMQ_MAXMSGSIZE) and the small records after it were never
    stored nor acknowledged; now the store refuses that one offset, says so, and stores
    and ACKs the rest. A live consumer is told of the refused record (a data loss) and
    gets the rest; a late one, which never saw it, skips it once nobody serves it."""
    store = StoreProc(tmp_path / "s", tower.address, "--profile", "rfc46")
    with Consumer("big", towers=tower.address, offset_reset="earliest", profile="rfc46") as live:
        producer, partition = fake(
            "producer",
            tower,
            "--topic",
            "big",
            "--sizes",
            ",".join(map(str, SIZES)),
            "--wait-for",
            "M",
            "--wait-for",
            "Mbig\\0",
        )
        try:
            producer.wait_line("published 9", 30)
            producer.wait_line(r"^acked 8$", 30)
            wait_until(
                lambda: stored_head(store.data_dir, "big", partition) == 8, 10, what="head 8"
            )
            line = store.proc.wait_line(r"store\.oversized topic=big .* offset=3 .* total=(\d+)")
            assert line.group(1) == "1"
            got: list[int] = []
            losses: list[str] = []

            def all_live() -> bool:
                try:
                    got.extend(r.offset for r in live.poll_batch(100, timeout=0.1))
                except DataLossError as exc:
                    losses.append(str(exc))
                return len(got) >= 8

            wait_until(all_live, 20, what="the live consumer's 8 records")
            assert got == [0, 1, 2, 4, 5, 6, 7, 8]
            assert (
                len(losses) == 1
                and "offsets 3..3 hold a record over max_message_size" in (losses[0])
            )
        finally:
            producer.kill()
    late = Proc(
        py(
            "dafka.cli.consumer",
            "big",
            "--from-beginning",
            "-e",
            "--profile",
            "rfc46",
            "--timeout",
            "40",
            "-f",
            "%o\\n",
            "--tower",
            tower.address,
        )
    )
    try:
        assert late.wait(60) == 1, late.stderr
        assert bytes(late.stdout).decode().split() == ["0", "1", "2"]
        errors = [line for line in late.stderr_lines if line.startswith("error: ")]
        assert len(errors) == 1 and "offsets 3..3 were never served" in errors[0], late.stderr
    finally:
        store.kill()
