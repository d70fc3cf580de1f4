"""A timestamp start goes by the records' own times (format 5), not their batches' seal
times: the first record delivered is the earliest at or after the start, even when record
times are out of order within and across batches (issue 36, point 3)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dafka import Consumer
from tests.integration.test_record_times import T0, fill
from tests.procs import StoreProc, Tower

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("start_ms", "first"), [(T0 + 6, 2), (T0 + 32, 7)])
def test_start_timestamp_goes_by_record_times(
    tmp_path: Path, tower: Tower, start_ms: int, first: int
) -> None:
    times = fill(tmp_path / "store")
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        with Consumer(
            "rt", towers=tower.address, metadata=False, start_timestamp=start_ms / 1000.0
        ) as c:
            got: list[int] = []
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and (not got or got[-1] < len(times) - 1):
                r = c.poll(0.2)
                if r is not None:
                    got.append(r.offset)
        assert got, "nothing delivered before the deadline"
        assert got[0] == first
        assert got == list(range(first, len(times)))  # then every later record, in order
    finally:
        store.kill()
