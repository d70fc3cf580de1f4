"""A producer whose state directory cannot be written: a full disk (a 2 MiB tmpfs of the
test's own, as root) under a producer embedded in this process, with a real tower and store.

Before, the first offset reservation that failed raised out of the producer's IO thread: the
thread died with a traceback, every later ``send`` and ``flush`` raised "producer IO thread
has stopped", and the producer stayed dead after the disk had room again (the application
had to make a new one). And ACKs whose offsets could not be recorded left their futures
pending until another ACK came, which never did once the application stopped sending; a
``flush`` timed out saying only how many were not acknowledged.

Now a turn whose offsets cannot be reserved is not sent and its records fail with why, the
producer goes on, and it sends again once there is room; ACKs that could not be recorded
are recorded on a later tick, and until then ``flush``'s timeout says why they wait.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from dafka import Producer
from dafka.errors import DafkaTimeout, DeliveryError, StorageError
from tests.procs import Tower, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _fill(directory: Path) -> Path:
    """A file that takes every free block of ``directory``'s filesystem."""
    path = directory / "fill"
    with open(path, "wb") as f:
        chunk = bytes(64 * 1024)
        for _ in range(10_000):  # 640 MB: far past the 2 MiB filesystem
            try:
                f.write(chunk)
                f.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                return path
    pytest.fail("the filesystem never filled")


def test_a_full_state_dir_fails_sends_with_why_and_the_producer_goes_on_with_room(
    small_fs: Path, tower: Tower, start_store
) -> None:
    start_store()
    state = small_fs / "producer"
    producer = Producer("full", towers=tower.address, metadata=False, state_dir=state)
    try:
        producer.send_many([b"before"] * 100)
        producer.flush(timeout=30)
        fill = _fill(small_fs)
        error: DeliveryError | None = None
        rounds = 0
        while error is None and rounds < 2000:  # each reserves offsets: one journal frame
            rounds += 1
            producer.send_many([b"full"] * 100)
            try:
                producer.flush(timeout=10)
            except DeliveryError as exc:
                error = exc
        assert error is not None, f"{rounds} reservations fit on a full filesystem"
        assert "not sent" in str(error) and "offsets.journal" in str(error), error
        assert producer.failed == 100
        acked = producer.acknowledged
        assert acked == 100 * rounds  # 100 before, then every round but the last

        os.unlink(fill)  # room again: the same producer sends on
        producer.send_many([b"after"] * 100)
        producer.flush(timeout=30)
        assert producer.acknowledged == acked + 100
    finally:
        result = producer.close()
    assert result.unacknowledged == 0 and result.failed == 100
    # the journal was cut back after each short write: a new producer on it starts
    with Producer("full", towers=tower.address, metadata=False, state_dir=state) as again:
        again.send(b"restarted").result(timeout=30)


def test_acks_that_cannot_be_recorded_wait_say_why_and_resolve_once_recorded(
    tmp_path: Path, tower: Tower, start_store, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_store()
    producer = Producer(
        "acked", towers=tower.address, metadata=False, state_dir=tmp_path / "producer"
    )
    try:
        producer.send(b"first").result(timeout=30)
        journal = producer._shared.acked_journal
        assert journal is not None

        def no_room(next_offsets: object) -> None:
            raise StorageError("cannot write offset journal acked.journal: short write")

        monkeypatch.setattr(journal, "reserve_many", no_room)
        future = producer.send_many([b"waits"] * 10)
        with pytest.raises(DafkaTimeout, match="cannot write its state directory"):
            producer.flush(timeout=2)  # the store acknowledged them; they are not recorded
        assert not future.done()
        monkeypatch.undo()  # room again: no new send, no new ACK
        wait_until(future.done, 10, what="the ACK recorded on a later tick")
        assert future.result(timeout=0) == range(1, 11)
        producer.flush(timeout=5)
    finally:
        result = producer.close()
    assert result.unacknowledged == 0 and result.failed == 0
