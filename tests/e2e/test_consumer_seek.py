"""Seeking and positions with real processes: ``dafka-consumer -o -N``, ``-o s@MS``,
``--watermarks``, and ``Consumer.seek`` / ``positions`` / ``watermarks`` in this process."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from dafka import Consumer
from tests.procs import Proc, StoreProc, Tower, py, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def platform(tmp_path: Path):
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    yield tower
    store.kill()
    tower.stop()


def produce(towers: str, topic: str, lines: list[str], *extra: str) -> None:
    data = "".join(f"{line}\n" for line in lines).encode()
    p = Proc(py("dafka.cli.producer", topic, "--tower", towers, "-q", *extra), stdin=data)
    assert p.wait() == 0, p.stderr


def consume(towers: str, *args: str) -> list[tuple[str, int, str]]:
    """``dafka-consumer ARGS -e``: (partition, offset, value) of every record printed."""
    c = Proc(
        py("dafka.cli.consumer", *args, "-e", "--timeout", "30", "-f", "%p %o %s\\n")
        + ["--tower", towers]
    )
    assert c.wait() == 0, c.stderr
    rows = [line.split(" ", 2) for line in bytes(c.stdout).decode().splitlines()]
    return [(p, int(o), v) for p, o, v in rows]


def test_minus_n_prints_exactly_the_last_n_records_of_every_partition(platform: Tower) -> None:
    for name in ("a", "b"):  # two producer processes: two partitions
        produce(platform.address, "last", [f"{name}{i}" for i in range(25)])
    rows = consume(platform.address, "last", "-o", "-10")
    by_partition: dict[str, list[int]] = defaultdict(list)
    for partition, offset, _ in rows:
        by_partition[partition].append(offset)
    assert len(by_partition) == 2, rows
    assert all(offsets == list(range(15, 25)) for offsets in by_partition.values()), rows


def test_a_timestamp_start_begins_at_the_first_batch_at_or_after_it(
    platform: Tower, tmp_path: Path
) -> None:
    state = str(tmp_path / "producer")  # one partition over both runs
    produce(platform.address, "times", ["old0", "old1"], "--state-dir", state)
    between = int(time.time() * 1000)
    wait_until(lambda: int(time.time() * 1000) > between, what="the clock to move on")
    produce(platform.address, "times", ["new0", "new1"], "--state-dir", state)
    rows = consume(platform.address, "times", "-o", f"s@{between}")
    assert [(o, v) for _, o, v in rows] == [(2, "new0"), (3, "new1")]
    everything = consume(platform.address, "times", "-o", "s@0")
    assert [v for _, _, v in everything] == ["old0", "old1", "new0", "new1"]


def test_watermarks_command_prints_low_and_high_per_partition(platform: Tower) -> None:
    produce(platform.address, "marks", [str(i) for i in range(7)])
    c = Proc(py("dafka.cli.consumer", "marks", "--watermarks", "--tower", platform.address))
    assert c.wait() == 0, c.stderr
    (line,) = bytes(c.stdout).decode().splitlines()
    topic, partition, low, high = line.split()
    assert (topic, len(partition), low, high) == ("marks", 32, "0", "7")


def test_watermarks_of_a_topic_with_no_partition_say_so(platform: Tower) -> None:
    produce(platform.address, "other", ["x"])  # a store that answers, holding another topic
    c = Proc(py("dafka.cli.consumer", "void", "--watermarks", "--tower", platform.address))
    assert c.wait() == 0, c.stderr
    assert bytes(c.stdout) == b""  # stdout stays data
    assert "no partitions of void on the stores" in c.stderr, c.stderr


def test_seek_back_redelivers_and_positions_follow_polls(platform: Tower) -> None:
    produce(platform.address, "seek", [f"v{i}" for i in range(20)])
    with Consumer("seek", towers=platform.address, offset_reset="earliest") as c:
        got: list = []
        wait_until(lambda: got.extend(c.poll_batch(100, 0.2)) or len(got) >= 20, 30.0, what="20")
        partition = got[0].partition
        assert [r.offset for r in got] == list(range(20))
        assert c.positions() == {("seek", partition): 20}
        assert c.watermarks() == {("seek", partition): (0, 20)}

        c.seek("seek", partition, 5)
        again: list = []
        wait_until(lambda: again.extend(c.poll_batch(100, 0.2)) or len(again) >= 15, 30.0)
        assert [r.offset for r in again] == list(range(5, 20))
        assert [r.value for r in again] == [f"v{i}".encode() for i in range(5, 20)]

        c.seek("seek", partition, 18)  # forward, and a poll sees nothing below it
        tail: list = []
        wait_until(lambda: tail.extend(c.poll_batch(100, 0.2)) or len(tail) >= 2, 30.0)
        assert [r.offset for r in tail] == [18, 19]
        c.seek_to_beginning("seek")
        first = wait_until(lambda: c.poll(0.2), 30.0, what="a record")
        assert first.offset == 0
        assert c.position("seek", partition) == 1
        c.seek_to_end("seek", partition)
        assert c.poll(0.5) is None
        assert c.positions() == {("seek", partition): 20}
        assert Counter(r.offset for r in got + again + tail)[19] == 3


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["-o", "stored"], "-o stored needs a group"),
        (["-o", "s@soon"], "bad offset"),
        (["-o", "-0"], "bad offset"),
        (["-o", "s@1700000000000", "--profile", "rfc46"], "rfc46 records carry no timestamp"),
    ],
)
def test_offset_mistakes_are_one_line(args: list[str], fragment: str) -> None:
    c = Proc(py("dafka.cli.consumer", "t", *args, "--tower", "127.0.0.1:1"))
    assert c.wait() == 2, c.stderr
    lines = [line for line in c.stderr_lines if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], lines
