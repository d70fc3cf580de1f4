"""A store reads (and so copies) only the batches it serves.

One serving step sends about ``serve_chunk`` records, whole batches, so a signed batch
larger than that goes out alone. Reading a few batches ahead then copied out of storage
batches the step did not send, to be read again by the next one: catching up from a store
in 8,192-record batches, four reads for every batch served.
"""

from __future__ import annotations

import pytest

from dafka.core import messages as m
from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.counting_storage import CountingStorage
from tests.signing import CONSUMER, STORE, P, blob, from_blob, sent


def test_serving_batches_larger_than_a_step_reads_each_once() -> None:
    storage = CountingStorage()
    core = StoreCore(STORE.node_id, storage, profile=SignedProfile(STORE), serve_chunk=3)
    core.handle_batch([from_blob(blob(i * 5, 5)) for i in range(12)], 0.0)
    storage.returned = 0
    offset, now, got = 0, 1.0, []
    for _ in range(100):  # an honest reader: FETCHes on from where each answer ended
        if offset == 60:
            break
        out = core.handle_batch([m.Fetch(P, CONSUMER, "t", offset, 2**32 - 1)], now)
        while core.has_pending(now):
            now = max(now, core.serve_at)
            out += core.tick(now)
        answer = [x for x in sent(out) if isinstance(x, m.DirectRecord)]
        assert answer, "nothing was served"
        got += answer
        offset = answer[-1].offset + answer[-1].count
    assert [(x.offset, x.count) for x in got] == [(i * 5, 5) for i in range(12)]
    assert storage.returned == 12


@pytest.mark.parametrize("make", ["memory", "lmdb"])
def test_a_read_stops_after_the_batch_that_reaches_max_records(make, tmp_path) -> None:  # type: ignore[no-untyped-def]
    storage = MemoryStorage() if make == "memory" else LmdbStorage(tmp_path / "db")
    try:
        storage.append(
            [StoredBatch("t", P, i * 5, i * 5 + 4, b"b%d" % i, "signed") for i in range(6)]
        )
        firsts = lambda **kw: [b.first_offset for b in storage.read("t", P, 7, 4, **kw)]  # noqa: E731
        assert firsts() == [5, 10, 15, 20]
        assert firsts(max_records=1) == [5]  # one batch at least
        assert firsts(max_records=5) == [5]
        assert firsts(max_records=6) == [5, 10]
        assert firsts(max_records=10) == [5, 10]
        assert firsts(max_records=100) == [5, 10, 15, 20]
    finally:
        storage.close()
