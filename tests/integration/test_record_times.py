"""Record times against a real store (issue 36, point 3): ``offsets_for_times`` answers by
the records' own times of format-5 batches, out of order inside batches, served by a
store process over its query endpoint (each batch verified, the one found opened).

The batches are sealed here with the producer's key and taken in by a store core over the
store's own data directory (verified as a live RECORD is), then the store process starts
on that directory: the producer's ``send(timestamp=)`` is not needed to test the lookup.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import AdminClient, Consumer
from dafka.security import identity as identity_module
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.state_dir import make_data_dir
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed_rich import Codec, RichRecord, seal_rich
from tests.procs import StoreProc, Tower
from tests.signing import PRODUCER, P, from_blob

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000
BATCHES = [  # record times, out of order inside each batch; newest times in order
    [T0 + 5, T0 + 1, T0 + 9],
    [T0 + 30, T0 + 12, T0 + 20],
    [T0 + 31, T0 + 50, T0 + 40],
    [T0 + 60, T0 + 55],
]


def fill(data_dir: Path) -> list[int]:
    """The batches taken into the store's data directory; every record's time by offset."""
    make_data_dir(data_dir)
    identity = identity_module.load_or_create(data_dir)
    storage = LmdbStorage(data_dir, map_size=1 << 24, node_id=identity.node_id)
    core = StoreCore(identity.node_id, storage, profile=SignedProfile(identity))
    times: list[int] = []
    for times_of in BATCHES:
        recs = [RichRecord(None, f"r{len(times) + i}".encode(), t) for i, t in enumerate(times_of)]
        data = seal_rich(PRODUCER, b"rt", len(times), recs, T0 + 1_000, Codec.ZSTD)
        core.handle_batch([from_blob(data)], 0.0)
        times.extend(times_of)
    assert storage.heads()[("rt", P)][0] == len(times) - 1
    storage.close()
    return times


def test_offsets_for_times_by_the_records_own_times(tmp_path: Path, tower: Tower) -> None:
    times = fill(tmp_path / "store")
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        asks = sorted({0, *times, *(t + 1 for t in times), T0 + 999, T0 + 1_000})
        want = {t: next((o for o, x in enumerate(times) if x >= t), None) for t in asks}
        assert want[T0 + 6] == 2 and want[T0 + 32] == 7  # inside batches, not their first
        with Consumer("rt", towers=tower.address, metadata=False) as c:
            assert c.offsets_for_times({("rt", P): T0 + 32}) == {("rt", P): 7}
            with c.store_queries() as q:  # one locator for the rest
                got = {t: q.offsets_for_times({("rt", P): t})[("rt", P)] for t in asks}
        assert got == want
        with AdminClient(tower.address) as admin:  # the seal time is not what is searched
            assert admin.offsets_for_times({("rt", P): T0 + 61}) == {("rt", P): None}
    finally:
        store.kill()
