"""``Consumer.table()`` over a store that compacts (issue 36 point 4): an honest store's
compacted batches read as the full log did; a store whose compaction drops the newest
record of a key (its planner replaced in this process) is caught by the reader."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from dafka import Consumer, Producer
from dafka.consumer import CompactionError
from dafka.metadata.client import MetadataClient
from dafka.store._facade import Store
from tests.integration.test_consumer_table import seal_format5, tombstone
from tests.procs import Tower, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

if "compaction_pass" not in inspect.signature(Store).parameters:
    pytest.skip("needs the stores' compaction (i36-compact)", allow_module_level=True)


def passes(store: Store) -> int:
    return store.core.stats.compaction_passes  # type: ignore[attr-defined,no-any-return]


def write_and_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    seal_format5(monkeypatch)
    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True, compaction_pass=0.2)  # type: ignore[call-arg]
    store.start()
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("kv", {"cleanup_policy": "compact", "delete_retention_ms": 0})
        with Producer("kv", towers=tower.address, metadata=True) as p:
            p.send_many([b"1", b"x", b"2"], keys=[b"a", b"b", b"a"]).result(30)
            p.send(b"3", key=b"a").result(30)
            tombstone(p, b"b")
            p.send(b"z", key=b"c").result(30)
            p.flush(30)
        wait_until(lambda: passes(store) >= 2, 30, what="two compaction passes")
        assert store.core.stats.compaction_batches >= 1  # type: ignore[attr-defined]
        with Consumer(towers=tower.address) as c:
            return c.table("kv", timeout=60)
    finally:
        store.stop()
        tower.stop()


def test_a_compacting_store_serves_what_the_table_reads_as_the_full_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = write_and_read(tmp_path, monkeypatch)
    assert {k: r.value for k, r in table.items()} == {b"a": b"3", b"c": b"z"}


def test_a_store_that_compacts_away_the_newest_record_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dafka.store import _compaction

    honest = _compaction.plan_drops

    def evil(metas, newest, expired):
        return honest(metas, newest, expired) | {r.offset for r in metas if r.key == b"c"}

    monkeypatch.setattr(_compaction, "plan_drops", evil)
    with pytest.raises(CompactionError, match="key 'c'"):
        write_and_read(tmp_path, monkeypatch)
