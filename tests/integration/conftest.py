from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka import Producer
from tests.procs import StoreProc, Tower


@pytest.fixture
def tower() -> Iterator[Tower]:
    t = Tower()
    yield t
    t.stop()


@pytest.fixture
def nowhere() -> str:
    """A tower address with nobody behind it: records are never acknowledged."""
    probe = Tower()
    address = probe.address
    probe.stop()
    return address


@pytest.fixture
def lonely(nowhere: str) -> Iterator[Producer]:
    """A producer that never finds a store: what it sends stays unacknowledged."""
    p = Producer("lonely", towers=nowhere, metadata=False)
    yield p
    p.close(timeout=0)


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


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs of our own, to fill up (needs root: skipped otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
