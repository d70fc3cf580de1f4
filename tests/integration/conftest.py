from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.procs import StoreProc, Tower


@pytest.fixture
def tower() -> Iterator[Tower]:
    t = Tower()
    yield t
    t.stop()


@pytest.fixture
def start_store(tmp_path: Path, tower: Tower) -> Iterator[object]:
    started: list[StoreProc] = []

    def start(name: str = "store") -> StoreProc:
        s = StoreProc(tmp_path / name, tower.address)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()
