"""Our processes beside stand-ins for the C reference nodes (issue 11, points 6 and 7).

The stand-ins (``tests/integration/c_fakes.py``) are separate processes that frame
rfc46 themselves and copy the reference behaviours at issue: a store that answers
GET-HEADS by topic prefix, a producer with no record size cap. See docs/wire.md §14.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


LIMIT = 16 * 1024 * 1024  # our nodes' default max_message_size


def test_an_oversized_record_from_a_c_producer_does_not_cut_it_off_from_our_store(
    tower: Tower, tmp_path: Path
) -> None:
    """A C producer has no size cap: 17 MiB once, between small records. Before, libzmq
    dropped the connection (ZMQ_MAXMSGSIZE) and the small records after it were never
    stored nor acknowledged; now the store refuses that one offset, says so, and stores
    and ACKs the rest."""
    store = StoreProc(tmp_path / "s", tower.address, "--profile", "rfc46")
    sizes = [10] * 3 + [17 * 1024 * 1024] + [10] * 5  # offsets 0-2, 3 too big, 4-8
    producer, partition = fake(
        "producer", tower, "--topic", "big", "--sizes", ",".join(map(str, sizes))
    )
    try:
        producer.wait_line("published 9", 30)
        producer.wait_line(r"^acked 8$", 30)
        wait_until(
            lambda: stored_head(store.data_dir, "big", partition) == 8, 10, what="head 8 stored"
        )
        line = store.proc.wait_line(r"store\.oversized topic=big .* offset=3 .* total=(\d+)", 10)
        assert line.group(1) == "1"
    finally:
        producer.kill()
        store.kill()
