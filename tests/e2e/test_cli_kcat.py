"""kcat's flags on the command-line tools (issue 34 point 10), run as a user runs them:
``dafka-consumer -J``, ``-L``, ``-Q``; ``dafka-producer -k`` and ``-Z``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.test_cli import consumer, producer
from tests.procs import StoreProc, Tower

pytestmark = pytest.mark.e2e


@pytest.fixture
def platform(tmp_path: Path):
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    yield tower, store
    store.kill()
    tower.stop()


def test_fixed_key_null_empty_and_kcat_json(platform: tuple[Tower, StoreProc]) -> None:
    tower, _ = platform
    p = producer(tower.address, "kj", b"own=a\nb\n=c\n", "-q", "-K", "=", "-k", "fixed", "-Z")
    assert p.wait() == 0, p.stderr
    c = consumer(tower.address, "kj", "-o", "beginning", "-e", "-J", "--timeout", "30")
    assert c.wait() == 0, c.stderr
    rows = [json.loads(line) for line in bytes(c.stdout).splitlines()]
    # -K's own key wins over -k; -k for a line without one; -Z: an empty key is no key
    assert [(r["key"], r["payload"]) for r in rows] == [("own", "a"), ("fixed", "b"), (None, "c")]
    for r in rows:
        assert set(r) == {
            "topic",
            "partition",
            "offset",
            "tstype",
            "ts",
            "broker",
            "key",
            "payload",
        }
        assert r["topic"] == "kj" and r["tstype"] == "create" and r["ts"] > 1_600_000_000_000
        assert r["broker"] == -1 and re.fullmatch(r"[0-9A-F]{32}", r["partition"])
    assert [r["offset"] for r in rows] == [0, 1, 2]
    bad = consumer(tower.address, "kj", "-J", "--json")
    assert bad.wait() == 2 and "-J writes JSON lines" in bad.stderr


def test_list_and_query_times(platform: tuple[Tower, StoreProc]) -> None:
    tower, store = platform
    assert producer(tower.address, "lq", b"a\nb\nc\n", "-q").wait() == 0
    j = consumer(tower.address, "lq", "-o", "beginning", "-e", "-J", "--timeout", "30")
    assert j.wait() == 0, j.stderr
    rows = [json.loads(line) for line in bytes(j.stdout).splitlines()]
    part, ts = rows[0]["partition"], rows[0]["ts"]
    listing = consumer(tower.address, "-L")
    assert listing.wait() == 0, listing.stderr
    text = bytes(listing.stdout).decode()
    assert f"store {store.node_id} at tcp://" in text
    assert 'topic "lq" with 1 partitions:' in text
    assert f"partition {part}, low 0, high 3, stores: {store.node_id}" in text
    as_json = consumer(tower.address, "-L", "-J", "lq")
    assert as_json.wait() == 0, as_json.stderr
    doc = json.loads(bytes(as_json.stdout))
    assert doc["topics"] == [
        {
            "topic": "lq",
            "partitions": [{"partition": part, "low": 0, "high": 3, "stores": [store.node_id]}],
        }
    ]
    q = consumer(tower.address, "-Q", f"lq:{part}:{ts}", f"lq:{part}:{ts + 3_600_000}".lower())
    assert q.wait() == 2, "a partition named twice is refused, as kcat does"
    q = consumer(tower.address, "-Q", f"lq:{part}:{ts}")
    assert q.wait() == 0, q.stderr
    assert bytes(q.stdout).decode() == f"lq [{part}] offset 0\n"
    later = consumer(tower.address, "-Q", f"lq:{part}:{ts + 3_600_000}")
    assert later.wait() == 0, later.stderr
    assert bytes(later.stdout).decode() == f"lq [{part}] offset -1\n"  # none that new
