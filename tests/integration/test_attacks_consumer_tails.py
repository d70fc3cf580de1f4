"""A default consumer is not left waiting in silence after retention (issue 33, point 10),
with real nodes: no trusted stores (the README's default), a producer gone, its partition
trimmed to the newest batch, the store restarted (so it has no producer HEAD to pass on).
The consumer used to fetch offset 0 for ever and raise nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.consumer._facade import Consumer
from dafka.errors import DataLossError
from dafka.metadata import MetadataClient
from dafka.producer._facade import Producer
from dafka.query.client import QueryClient
from dafka.store._facade import Store
from tests.procs import Tower, wait_until

pytestmark = [pytest.mark.timeout(180)]


def test_a_default_consumer_reports_the_trimmed_range_and_reads_the_rest(tmp_path: Path) -> None:
    tower = Tower()
    store = Store(tmp_path / "s", towers=tower.address, metadata=True, retention_interval=0.2)
    store.start()
    try:
        with MetadataClient(tower.address) as admin:
            admin.create_topic("gone", {"retention_ms": 1_000})
        producer = Producer("gone", towers=tower.address, metadata=True)
        try:
            for i in range(5):  # five batches of two
                producer.send_many([b"a%d" % i, b"b%d" % i]).result(30)
        finally:
            producer.close(5)
        with QueryClient(store.query_endpoint, timeout=10) as query:

            def tail() -> int:
                (part,) = query.heads(["gone"])
                return part.tail

            assert wait_until(lambda: tail() == 8, 30, what="retention to trim to the newest")
        store.stop()
        store = Store(tmp_path / "s", towers=tower.address, metadata=True, retention_interval=0.2)
        store.start()
        with Consumer("gone", towers=tower.address, offset_reset="earliest") as consumer:
            with pytest.raises(DataLossError, match=r"offsets 0\.\.7 were deleted"):
                consumer.poll(60)
            got = consumer.poll_batch(10, timeout=30)
            assert [r.offset for r in got] == [8, 9]
            assert consumer._core.stats.tail_claims >= 1
    finally:
        store.stop()
        tower.stop()
