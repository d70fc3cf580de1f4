"""Topics are created before a producer reports success, and deleted for real
(issue 9, point 5), with the CLIs as a user runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_admin_cli import admin
from tests.e2e.test_cli import producer
from tests.procs import StoreProc, Tower

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_short_lived_producers_create_their_topics_before_they_exit(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        topics = [f"hello{i}" for i in range(4)]
        for topic in topics:  # like `seq 3 | dafka-producer hello` with fresh topics
            p = producer(tower.address, topic, b"1\n2\n3\n")
            assert p.wait() == 0, p.stderr
        for topic in topics:  # at once: no waiting for a background creation
            d = admin(tower.address, "topics", "describe", topic)
            assert d.wait() == 0, f"{topic}: {d.stderr}"
    finally:
        store.kill()
        tower.stop()
