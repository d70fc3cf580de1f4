"""A producer restarted on its state directory after records went unacknowledged:
its partition goes on, every acknowledged record stays, nobody waits for ever.
Real tower and store processes; producers through the API or as a child process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dafka import Consumer, DafkaTimeout, Producer
from dafka.core.effects import ConsumedRecord
from tests.procs import Proc, StoreProc, Tower, stored_head, wait_until

pytestmark = pytest.mark.integration

WAIT = 1.5  # recovery_wait in these tests: stores are up and connected quickly here


def read_until(
    towers: str, topic: str, partition: str, last: int, profile: str = "signed"
) -> list[ConsumedRecord]:
    """Every record of ``partition`` from the beginning up to offset ``last``."""
    got: list[ConsumedRecord] = []
    with Consumer(topic, towers=towers, offset_reset="earliest", profile=profile) as c:  # type: ignore[arg-type]

        def reached() -> bool:
            got.extend(r for r in c.poll_batch(10_000, timeout=0.1) if r.partition == partition)
            return bool(got) and got[-1].offset >= last

        wait_until(reached, 30, what=f"{topic} to be delivered up to offset {last}")
    return got


@pytest.mark.parametrize("profile", ["signed", "rfc46"])
def test_unacknowledged_records_of_an_earlier_run_do_not_block_the_partition(
    tower: Tower, tmp_path: Path, profile: str
) -> None:
    state = tmp_path / "producer"
    with Producer(
        "held", towers=tower.address, state_dir=state, profile=profile, metadata=False
    ) as p:  # type: ignore[arg-type]
        for i in range(5):
            p.send(f"lost {i}".encode())
        with pytest.raises(DafkaTimeout):
            p.flush(timeout=1.0)  # no store is up
        partition = p.partition
        p.close(timeout=0)
    store = StoreProc(tmp_path / "store", tower.address, "--profile", profile)
    try:
        with Producer(
            "held",
            towers=tower.address,
            state_dir=state,
            profile=profile,  # type: ignore[arg-type]
            metadata=False,
            recovery_wait=WAIT,
        ) as p:
            assert p.partition == partition
            futures = [p.send(f"new {i}".encode()) for i in range(3)]
            p.flush(timeout=30)  # acknowledged: the hole left by the last run is closed
            offsets = [f.result(0) for f in futures]
        if profile == "signed":
            assert offsets == [5, 6, 7]  # offsets are never reused
        else:
            assert offsets == [0, 1, 2]  # rfc46 cannot sign a gap: it numbers again
        records = read_until(tower.address, "held", partition, offsets[-1], profile)
        assert [r.value for r in records] == [b"new 0", b"new 1", b"new 2"]
        assert [r.offset for r in records] == offsets
        assert stored_head(store.data_dir, "held", partition) == offsets[-1]
    finally:
        store.kill()


CHILD = r"""
import sys, threading
from dafka import Producer
state, towers = sys.argv[1], sys.argv[2]
out = sys.stdout
lock = threading.Lock()
def acked(fut):
    with lock:
        out.write(f"acked {fut.result()}\n"); out.flush()
with Producer("crash", towers=towers, state_dir=state, metadata=False) as p:
    print("partition", p.partition, flush=True)
    i = 0
    while True:
        p.send(f"v{i}".encode()).add_done_callback(acked)
        i += 1
"""


def test_producer_sigkilled_mid_stream_restarts_without_losing_what_was_acknowledged(
    tower: Tower, tmp_path: Path
) -> None:
    store = StoreProc(tmp_path / "store", tower.address)
    state = tmp_path / "producer"
    child = Proc([sys.executable, "-c", CHILD, str(state), tower.address])
    try:
        child.wait_line_stdout(r"acked 2000\n", timeout=60)
        child.kill()  # SIGKILL mid-stream: records in flight are never acknowledged
        text = bytes(child.stdout).decode()
        partition = text.split("partition ", 1)[1].split()[0]
        acked = [int(line.split()[1]) for line in text.splitlines() if line.startswith("acked")]
        with Producer(
            "crash", towers=tower.address, state_dir=state, metadata=False, recovery_wait=WAIT
        ) as p:
            last = p.send(b"after the crash").result(timeout=30)
        records = read_until(tower.address, "crash", partition, last)
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets))  # in order, no duplicates
        delivered = set(offsets)
        assert not [a for a in acked if a not in delivered]  # every acknowledged record
        by_offset = {r.offset: r.value for r in records}
        assert all(by_offset[o] == f"v{o}".encode() for o in offsets if o < last)
        assert records[-1].value == b"after the crash"
    finally:
        child.kill()
        store.kill()


DURABLE_CHILD = r"""
import sys
from dafka import Producer
state, towers = sys.argv[1], sys.argv[2]
with Producer("wal", towers=towers, state_dir=state, durable=True, metadata=False) as p:
    print("partition", p.partition, flush=True)
    for i in range(50):
        p.send_many([f"d{i}-{j}".encode() for j in range(20)])
        print("sent", i, flush=True)  # send_many returned: the records are in the log
    sys.stdin.read()  # wait to be killed
"""


def test_durable_producer_republishes_what_send_accepted_before_a_crash(
    tower: Tower, tmp_path: Path
) -> None:
    state = tmp_path / "producer"
    child = Proc([sys.executable, "-c", DURABLE_CHILD, str(state), tower.address], stdin=b"")
    try:
        child.wait_line_stdout(r"sent 49\n", timeout=60)
    finally:
        child.kill()  # SIGKILL, with no store ever up: nothing was acknowledged
    partition = bytes(child.stdout).decode().split("partition ", 1)[1].split()[0]
    assert (state / "producer.wal").stat().st_size > 0
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        with Producer(
            "wal",
            towers=tower.address,
            state_dir=state,
            durable=True,
            metadata=False,
            recovery_wait=WAIT,
        ) as p:
            last = p.send(b"after").result(timeout=30)
            assert last == 1000
            wait_until(lambda: (state / "producer.wal").stat().st_size == 0, 30, what="log")
        records = read_until(tower.address, "wal", partition, last)
        expected = [f"d{i}-{j}".encode() for i in range(50) for j in range(20)] + [b"after"]
        assert [r.value for r in records] == expected
        assert [r.offset for r in records] == list(range(1001))
    finally:
        store.kill()


def test_durable_send_raises_when_its_records_cannot_be_logged(
    tower: Tower, small_fs: Path
) -> None:
    """A full disk under the state directory: send() says the record is not in the log."""
    from dafka.errors import StorageError

    with Producer(
        "full", towers=tower.address, state_dir=small_fs / "p", durable=True, metadata=False
    ) as p:
        p.send_many([b"x" * 1000] * 10)  # fits
        with pytest.raises(StorageError, match="not in the producer log"):
            for _ in range(10):
                p.send_many([b"y" * 100_000] * 10)  # 1 MB a call: the 2 MiB disk fills
        p.close(timeout=0)


def test_a_consumer_whose_io_thread_died_raises_instead_of_waiting(tower: Tower) -> None:
    from dafka.errors import ClosedError

    with Consumer("anything", towers=tower.address, metadata=False) as c:
        assert c.poll(0.1) is None  # alive: nothing yet
        c._loop.stop()  # the IO thread ends, as if it had died
        with pytest.raises(ClosedError, match="IO thread"):
            c.poll(5.0)
