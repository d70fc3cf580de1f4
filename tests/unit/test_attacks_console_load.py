"""The console under load and outage, driven in-process with a fake cluster reader.

* Slow per-request work (record pages of huge records, groups whose topic cannot be read)
  cannot stall the overview pages nor ``/metrics``: those show the last background reading,
  and the per-request lanes are bounded, with a share per client address, answering 503 at
  once beyond (dafka/console/lanes.py).
* While the metadata is unreachable the console shows the last good reading with a banner
  saying since when and how old, and ``/metrics`` keeps its series and says it is blind
  (dafka/console/reading.py).

The fake reader's calls block on an event the test releases: no timing races, a stuck call
stays stuck until the test says so.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from dafka.cli.holdings import StoreView
from dafka.console.lanes import ConsoleBusy, Lane
from dafka.console.metrics import ReadingCollector, cluster_families
from dafka.console.reader import RecordPage
from dafka.console.reading import Reading, next_reading
from dafka.console.serve import Server
from dafka.console.web import LANES, ConsoleConfig
from dafka.groups.admin import GroupInfo
from dafka.query.protocol import PartitionInfo
from tests.procs import wait_until

pytestmark = pytest.mark.timeout(60)

A = "A" * 32
P1 = "1" * 32
CONFIG = {"revision": 3, "topics": {"ev": {"min_acks": 2}}, "stores": [A], "cluster": {}}
UP = [{"url": "tcp://h:1", "state": "up", "is_leader": True, "term": 1, "commit": 5}]
DOWN = [{"url": "tcp://h:1", "state": "unreachable"}]
VIEWS = [StoreView(A, "tcp://a", None, (PartitionInfo("ev", P1, 0, 9),))]


@dataclass
class FakeReader:
    """Stands for :class:`~dafka.console.reader.ClusterReader`: readings from ``up`` (the
    metadata answers or not); records and group calls block until :attr:`release` is set."""

    up: bool = True
    started: float = 0.0
    release: threading.Event = field(default_factory=threading.Event)
    entered: list[str] = field(default_factory=list)

    def read(self, prev: Reading | None) -> Reading:
        if self.up:
            return next_reading(prev, UP, CONFIG, VIEWS)
        return next_reading(prev, DOWN, None, [], ["no tower's metadata peer answered"])

    def _block(self, what: str) -> None:
        self.entered.append(what)
        assert self.release.wait(30)

    def records(self, snap: Any, topic: str, partition: str, start: int, limit: int) -> Any:
        self._block("records")
        return RecordPage(topic, partition, start, (), A, 0, 9, start)

    def group(self, name: str, timeout: float | None = None) -> GroupInfo:
        self._block("group")
        return GroupInfo(name, (), (), 0)

    def groups(self) -> list[str]:
        return []

    def close(self) -> None:
        pass


@pytest.fixture
def served() -> Iterator[tuple[Server, FakeReader]]:
    reader = FakeReader()
    config = ConsoleConfig("fake", "127.0.0.1", 0, refresh=3600.0)  # the test steps readings
    server = Server(config, reader)  # type: ignore[arg-type]
    server.start()
    try:
        assert server.console._first.result(10) is not None
        yield server, reader
    finally:
        reader.release.set()
        server.stop()


def get(server: Server, path: str, source: str = "127.0.0.1", timeout: float = 5.0) -> Any:
    conn = http.client.HTTPConnection(
        "127.0.0.1", server.port, timeout=timeout, source_address=(source, 0)
    )
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def test_a_lane_admits_its_slots_and_a_share_per_client() -> None:
    lane = Lane("t", workers=1, slots=3, per_client=2)
    try:
        lane.admit("a")
        lane.admit("a")
        with pytest.raises(ConsoleBusy, match="2 of your requests"):
            lane.admit("a")
        lane.admit("b")
        with pytest.raises(ConsoleBusy, match="lane full"):
            lane.admit("c")
        lane.release("a")
        lane.admit("c")
        assert lane.admitted == 3 and lane.refused == 2
    finally:
        lane.close()


def test_stuck_requests_neither_stall_the_pages_nor_queue_without_bound(
    served: tuple[Server, FakeReader],
) -> None:
    """B1: the lanes fill with calls that never end (a group topic that cannot be read,
    records of 1 MB); /metrics and the overview pages still answer at once, and a request
    beyond a lane's slots, or beyond a client's share, is 503 at once."""
    server, reader = served
    console = server.console
    _, slots, share = LANES["reads"]
    records = "/records.json?topic=ev&partition=" + P1 + "&offset=0"
    sources = [f"127.0.0.{2 + i // share}" for i in range(slots)]  # each client its share
    with ThreadPoolExecutor(slots + 1) as pool:
        stuck = [pool.submit(get, server, records, src, 30) for src in sources[:share]]
        group = pool.submit(get, server, "/group?name=zz1", "127.0.0.1", 30)
        try:
            wait_until(lambda: console.lanes["reads"].admitted == share, 10)
            status, body = get(server, records, sources[0])  # a client past its share
            assert status == 503 and "console busy, try again" in body and "of your" in body
            stuck += [pool.submit(get, server, records, src, 30) for src in sources[share:]]
            wait_until(lambda: console.lanes["reads"].admitted == slots, 10)
            wait_until(lambda: console.lanes["groups"].admitted == 1, 10)
            for path in ("/metrics", "/stores", "/topics", "/", "/topic?name=ev"):
                status, body = get(server, path)
                assert status == 200, (path, body[-300:])
            status, body = get(server, "/metrics")
            assert 'dafka_partition_stores{partition="' + P1 + '",topic="ev"} 1.0' in body
            status, body = get(server, records, "127.0.0.200")  # a new client: lane full
            assert status == 503 and "lane full" in body
            status, body = get(server, "/group?name=zz2")  # the group lane: one per client
            assert status == 503 and "console busy" in body
            assert not any(f.done() for f in stuck) and not group.done()
        finally:
            reader.release.set()
        assert [f.result()[0] for f in stuck] == [200] * slots and group.result()[0] == 200
    assert console.lanes["reads"].admitted == 0 and reader.entered.count("records") == slots


def test_an_unreachable_metadata_shows_the_last_reading_and_says_so(
    served: tuple[Server, FakeReader],
) -> None:
    """B3: towers and store stopped. The topic stays known, the trusted store trusted, the
    series kept, and every page and /metrics say the metadata is unreachable since when."""
    server, reader = served
    reader.up = False
    reading = server.console.refresh_once()
    assert not reading.metadata_up and reading.known
    assert (reading.banner() or "").startswith("metadata unreachable since ")
    for path in ("/topic?name=ev", "/stores", "/topics", "/"):
        status, body = get(server, path)
        assert status == 200, (path, body[-300:])
        assert "metadata unreachable since" in body and "showing data" in body, path
    assert "untrusted" not in get(server, "/stores")[1]
    assert "No topics" not in get(server, "/topics")[1]
    status, body = get(server, "/metrics")
    assert "dafka_console_metadata_up 0.0" in body
    assert 'dafka_partitions_under_min_acks{topic="ev"} 1.0' in body
    assert 'dafka_partition_stores{partition="' + P1 + '",topic="ev"} 1.0' in body
    assert "dafka_console_reading_age_seconds" in body
    reader.up = True
    server.console.refresh_once()
    assert "metadata unreachable" not in get(server, "/stores")[1]
    assert "dafka_console_metadata_up 1.0" in get(server, "/metrics")[1]


def test_a_reading_without_metadata_keeps_the_last_good_one() -> None:
    good = next_reading(None, UP, CONFIG, VIEWS, now=100.0, started=90.0)
    down = next_reading(good, DOWN, None, [], ["x"], now=130.0)
    later = next_reading(down, DOWN, None, [], ["x"], now=160.0)
    assert later.down_since == 130.0 and later.good_at == 100.0 and later.age(170.0) == 70.0
    assert "ev" in later.snapshot.topics and later.snapshot.stores[0].trusted
    assert [t.role for t in later.snapshot.towers] == ["unreachable"]  # the towers of now
    assert later.snapshot.errors == ("x",)
    families = {f.name: f for f in cluster_families(later.snapshot, {})}
    assert [s.value for s in families["dafka_partitions_under_min_acks"].samples] == [1]
    assert families["dafka_partition_stores"].samples
    (up, age) = ReadingCollector(lambda: later, 90.0).collect()
    assert up.samples[0].value == 0 and age.samples[0].value > 0
    never = next_reading(None, DOWN, None, [], [], now=100.0, started=90.0)
    assert not never.known and "nothing read yet" in (never.banner() or "")
    assert never.age(100.0) == 10.0


def test_a_store_that_stops_answering_keeps_its_partitions_listed_at_zero_copies() -> None:
    """The metadata answers but the only store holding a partition does not (stopped), or
    is not heard any more: the partition stays, with 0 copies, below min_acks, its series
    at 0 rather than gone (an under-min_acks alert does not clear because the store died)."""
    good = next_reading(None, UP, CONFIG, VIEWS, now=100.0)
    silent = [StoreView(A, "tcp://a", None, None, "timed out")]
    for views in (silent, []):  # not answering; not heard through the towers at all
        later = next_reading(good, UP, CONFIG, views, now=110.0)
        (part,) = later.snapshot.topics["ev"].partitions
        assert part.copies == 0 and part.below_min_acks
        assert [(h.store, h.answering) for h in part.holdings] == [(A, False)]
        families = {f.name: f for f in cluster_families(later.snapshot, {})}
        assert [s.value for s in families["dafka_partition_stores"].samples] == [0]
        assert [s.value for s in families["dafka_partitions_under_min_acks"].samples] == [1]
        again = next_reading(later, UP, CONFIG, VIEWS, now=120.0)  # it answers again
        assert [h.answering for h in again.snapshot.topics["ev"].partitions[0].holdings] == [True]
    forgotten = next_reading(good, UP, {**CONFIG, "stores": []}, [], now=110.0)
    assert forgotten.held == {} and not forgotten.snapshot.topics["ev"].partitions
