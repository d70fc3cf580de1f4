"""A full disk is reported as such, rate-limited, and ACKs resume when room returns."""

from __future__ import annotations

import errno
import logging

import lmdb
import pytest

from dafka.core.messages import Ack
from dafka.errors import StorageDamagedError, StorageError, StoreFullError
from dafka.storage.lmdb_store import space_needed, translate_error
from tests.unit.test_store_core import P, content, make, msgs, of_type, recs, stored

FULL = StoreFullError(
    "append to /data failed: disk full", path="/data", need_bytes=40960, free_bytes=0
)


def test_a_full_disk_is_logged_as_such_once_per_period(caplog: pytest.LogCaptureFixture) -> None:
    core, s = make()
    core.handle_batch(recs(0, 2), 0.0)
    s.fail = FULL
    with caplog.at_level(logging.WARNING, logger="dafka.store"):
        for now in (1.0, 2.0, 3.0):  # within one period: one line
            assert of_type(core.handle_batch(recs(2, 3), now), Ack) == []
        lines = [r.getMessage() for r in caplog.records]
        assert lines == [
            "store.disk_full dir=/data need_bytes=40960 free_bytes=0 records=1 failures=1 "
            "acks=paused"
        ]
        core.handle_batch(recs(2, 3), 7.0)  # a period later: once more
        assert len(caplog.records) == 2 and "failures=4" in caplog.records[1].getMessage()
        s.fail = None
        out = core.handle_batch(recs(2, 5), 8.0)
        assert msgs(out) == [Ack(P, "t", 4)]
        assert caplog.records[-1].getMessage() == "store.disk_full.cleared after_s=7.0"
    assert stored(s) == [(i, content(i)) for i in range(5)]
    assert "Input/output" not in caplog.text


def test_other_storage_errors_keep_their_own_line(caplog: pytest.LogCaptureFixture) -> None:
    core, s = make()
    s.fail = StorageError("append to /data failed: MDB_CORRUPTED")
    with caplog.at_level(logging.WARNING, logger="dafka.store"):
        core.handle_batch(recs(0, 1), 0.0)
        s.fail = None
        core.handle_batch(recs(0, 1), 1.0)
    assert [r.getMessage() for r in caplog.records] == [
        "store.append_failed records=1 error=append to /data failed: MDB_CORRUPTED"
    ]


def test_eio_is_a_full_disk_only_when_the_filesystem_is_nearly_full(tmp_path) -> None:
    eio = lmdb.Error("mdb_txn_commit: Input/output error")
    eio.code = errno.EIO  # type: ignore[attr-defined]
    # plenty of room here: a real I/O error, not a full disk: the environment is damaged
    err = translate_error(eio, "append", path=tmp_path, need_bytes=4096)
    assert type(err) is StorageDamagedError and "Input/output" in str(err)
    # asking for more than the filesystem has: a full disk, with the figures
    err = translate_error(eio, "append", path=tmp_path, need_bytes=1 << 62)
    assert isinstance(err, StoreFullError)
    assert err.need_bytes == 1 << 62 and err.free_bytes is not None and err.path == str(tmp_path)
    assert str(err).startswith(f"append: disk full: the store at {tmp_path} needs about ")
    full = translate_error(OSError(errno.ENOSPC, "No space left"), "append", path=tmp_path)
    assert isinstance(full, StoreFullError) and full.free_bytes is not None


def test_space_needed_counts_pages() -> None:
    small = [(30, 100)] * 10  # (key length, value length)
    assert space_needed(small, 1, 4096) == (2 * 1 + 6) * 4096
    big = [(30, 10_000)]  # an overflow value: 3 pages of its own
    assert space_needed(big, 1, 4096) == (3 + 2 * 1 + 6) * 4096
