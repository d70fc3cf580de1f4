"""Prometheus metrics without sockets: exact values from cores with known counts, names
that parse and follow the conventions, the ACK timer, and the IO-thread reader."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from dafka.config import NodeConfig
from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.errors import ConfigError
from dafka.io.metrics import (
    AckTimer,
    Kind,
    LoopReader,
    NodeCollector,
    NodeMetrics,
    check_metrics_port,
)
from dafka.io.node import NodeHandler, NodeLoop
from dafka.io.node_metrics import (
    ACK_LATENCY,
    CONSUMER_SPECS,
    HISTOGRAMS,
    PRODUCER_SPECS,
    STORE_SPECS,
    consumer_metrics,
    producer_metrics,
    store_metrics,
)
from dafka.producer._core import ProducerCore
from dafka.query.server import QueryService
from dafka.raft.peer._guard import BadInput
from dafka.storage.lmdb_store import LmdbStorage
from dafka.store import StoreCore
from dafka.store._facade import _StoreHandler
from dafka.wire.profiles import SignedProfile
from tests.signing import CONSUMER, PRODUCER, STORE, WIRE, P, ack, record
from tower.metrics import TOWER_SPECS

ROOT = Path(__file__).resolve().parents[2]


class SyncLoop:
    """A NodeLoop that was never started, whose ``call`` runs at once on this thread:
    what the IO thread does for a scrape, without the thread."""

    def __init__(self, node_id: str) -> None:
        self.real = NodeLoop(node_id, NodeConfig(), NodeHandler())
        self.alive = True
        self.calls = 0

    def call(self, fn: Callable[[float], list[Any]]) -> None:
        self.calls += 1
        fn(0.0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def scrape(registry: CollectorRegistry) -> dict[str, float]:
    """Every sample by name (with labels when it has any), parsed as Prometheus would."""
    text = generate_latest(registry).decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


def test_store_metrics_are_the_cores_counts(tmp_path: Path) -> None:
    storage = LmdbStorage(tmp_path, node_id=STORE.node_id)
    try:
        core = StoreCore(STORE.node_id, storage, profile=SignedProfile(STORE))
        core.handle_batch([record(0, 4), record(4, 3)], 0.0)
        core.handle_batch([record(0, 4)], 1.0)  # a replay: a duplicate, ACKed again
        query = QueryService(storage, profile="signed")
        handler = _StoreHandler(core, query)  # what the IO thread runs
        sent = handler.on_messages([m.Fetch(P, CONSUMER, "t", 0, 7)], 2.0)
        sent += handler.on_tick(3.0)
        answers = [e.msg for e in sent if type(e.msg) is m.DirectRecord]
        held = sum(len(b.blob) for b in storage.read("t", P, 0, 10))
        loop = SyncLoop(STORE.node_id)
        loop.stats["received"] = 4
        loop.stats["received_bytes"] = 1234
        loop.malformed.count = 2
        metrics = store_metrics(loop, core, storage, query, "signed")  # type: ignore[arg-type]
        got = scrape(metrics.registry)
    finally:
        storage.close()
    assert loop.calls == 1  # one read on the IO thread per scrape
    assert got["dafka_node_running"] == 1
    info = f"dafka_node_info{{node_id={STORE.node_id},profile=signed,role=store}}"
    assert got[info] == 1
    assert got["dafka_store_records_in_total"] == 7 == core.stats.records_stored
    assert got["dafka_store_duplicates_total"] == core.stats.duplicates == 1
    assert got["dafka_store_acks_sent_total"] == core.stats.acks_sent > 0
    assert got["dafka_store_fetches_received_total"] == core.stats.fetches_queued == 1
    assert got["dafka_store_records_served_total"] == core.stats.records_served == 7
    assert sum(a.count for a in answers) == 7  # the two batches, as stored
    assert got["dafka_store_served_bytes_total"] == sum(len(a.content) for a in answers) == held
    assert got["dafka_messages_received_total"] == 4
    assert got["dafka_received_bytes_total"] == 1234
    assert got["dafka_frames_malformed_total"] == 2
    assert got["dafka_equivocations_total"] == 0
    assert got["dafka_store_partitions"] == 1 and got["dafka_store_topics"] == 1
    assert 0 < got["dafka_store_lmdb_bytes"] <= got["dafka_store_lmdb_map_bytes"]


def test_producer_and_consumer_metrics_are_the_cores_counts() -> None:
    trusted = [STORE.node_id]
    pcore = ProducerCore(P, profile=SignedProfile(PRODUCER), trusted_stores=trusted)
    pcore.publish("t", [b"a", b"b", b"c"], 0.0, None, 1)
    pcore.handle(ack(2), 0.5)
    pcore.handle(ack(9), 0.6)  # above what was published: bogus
    loop = SyncLoop(P)
    sent = lambda: (4, 40)  # noqa: E731
    pm, timer = producer_metrics(loop, pcore, lambda: (3, 1, 2, 10), "signed", sent)  # type: ignore[arg-type]
    timer.published("t", 2)
    timer.acked("t", 2)
    got = scrape(pm.registry)
    assert got["dafka_producer_acks_bogus_total"] == pcore.stats.bogus_acks == 1
    assert got["dafka_producer_records_acked_total"] == 3
    assert got["dafka_producer_records_failed_total"] == 1
    assert got["dafka_producer_records_unacked"] == 2
    assert got["dafka_producer_unacked_bytes"] == 10
    assert got[f"{ACK_LATENCY}_count"] == 1
    assert got["dafka_producer_records_sent_total"] == 4
    assert got["dafka_producer_sent_bytes_total"] == 40

    ccore = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    ccore.subscribe("t", 0.0)
    ccore.handle(record(0, 3), 0.0)
    ccore.handle(record(0, 3), 0.1)  # again: a duplicate
    cm = consumer_metrics(SyncLoop(CONSUMER), ccore, lambda: 3, "signed", lambda: 30)  # type: ignore[arg-type]
    got = scrape(cm.registry)
    assert got["dafka_consumer_records_delivered_total"] == ccore.stats.delivered == 3
    assert got["dafka_consumer_duplicates_total"] == ccore.stats.duplicates == 1
    assert got["dafka_consumer_backlog_records"] == 3
    assert got["dafka_consumer_delivered_bytes_total"] == 30


def test_two_nodes_in_one_process_keep_their_own_registries() -> None:
    a = NodeMetrics(NodeCollector("store", {"node_id": "A"}, lambda: {"x": 1}, ()))
    b = NodeMetrics(NodeCollector("store", {"node_id": "B"}, lambda: {"x": 2}, ()))
    assert a.registry is not b.registry
    assert "node_id=A" in str(scrape(a.registry)) and "node_id=B" not in str(scrape(a.registry))
    # nothing went into prometheus_client's global registry
    from prometheus_client import REGISTRY

    assert not [n for n in REGISTRY._names_to_collectors if n.startswith("dafka_")]


@pytest.mark.parametrize(
    "specs",
    [STORE_SPECS, PRODUCER_SPECS, CONSUMER_SPECS, TOWER_SPECS],
    ids=["store", "producer", "consumer", "tower"],
)
def test_names_follow_the_prometheus_conventions(specs: tuple) -> None:
    names = [s.name for s in specs]
    assert len(names) == len(set(names)), "two metrics of one node share a name"
    for spec in specs:
        assert re.fullmatch(r"dafka_[a-z_]+[a-z]", spec.name), spec.name
        assert not spec.name.endswith("_total"), "counters get _total on exposition"
        if spec.kind is Kind.GAUGE:
            assert not spec.name.endswith(("_seconds_total", "_count")), spec.name
        assert spec.help.endswith("."), spec.name


def test_docs_list_every_metric() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    specs = {*STORE_SPECS, *PRODUCER_SPECS, *CONSUMER_SPECS, *TOWER_SPECS}
    names = {s.name + ("_total" if s.kind is Kind.COUNTER else "") for s in specs}
    names |= {*HISTOGRAMS, "dafka_node_info", "dafka_node_running"}
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"docs/metrics.md does not list {missing}"


def test_a_stopped_or_silent_loop_answers_not_running() -> None:
    loop = SyncLoop("N")
    loop.alive = False
    read = LoopReader(loop, lambda: {"x": 1})  # type: ignore[arg-type]
    assert read() is None and loop.calls == 0  # nothing queued on a dead loop

    class Silent(SyncLoop):
        def call(self, fn: Callable[[float], list[Any]]) -> None:
            self.calls += 1  # queued, never run: the IO thread is stuck

    silent = Silent("N")
    read = LoopReader(silent, lambda: {"x": 1}, timeout=0.01)  # type: ignore[arg-type]
    assert read() is None and read.timeouts == 1
    metrics = NodeMetrics(NodeCollector("store", {}, read, STORE_SPECS))
    got = scrape(metrics.registry)
    assert got["dafka_node_running"] == 0
    assert not any(k.startswith("dafka_store_") for k in got)


def test_a_reader_that_fails_does_not_stop_the_loop() -> None:
    def boom() -> dict:
        raise RuntimeError("a bug in a reader")

    loop = SyncLoop("N")
    read = LoopReader(loop, boom)  # type: ignore[arg-type]
    assert read() is None  # the call returned: the loop goes on


def test_one_read_in_flight_at_a_time() -> None:
    inside = threading.Event()
    release = threading.Event()
    loop = SyncLoop("N")

    def slow() -> dict:
        inside.set()
        release.wait(5)
        return {}

    read = LoopReader(loop, slow, timeout=0.05)  # type: ignore[arg-type]
    first = threading.Thread(target=read)
    first.start()
    assert inside.wait(5)
    assert read() is None  # the lock is held: nothing more queued on the loop
    assert loop.calls == 1
    release.set()
    first.join(5)


def test_ack_timer_observes_each_batch_once_with_the_clock() -> None:
    registry = CollectorRegistry()
    hist = Histogram("h_seconds", "h", registry=registry, buckets=(0.1, 1.0))
    now = [10.0]
    timer = AckTimer(hist, clock=lambda: now[0], cap=3)
    timer.published("t", 3)  # offsets 0..3 at 10.0
    now[0] = 10.5
    timer.published("t", 7)  # 4..7 at 10.5
    timer.published("u", 0)
    timer.published("t", 9)  # the cap (3 held): not timed
    assert timer.untimed == 1
    now[0] = 11.0
    timer.acked("t", 5)  # the first batch only: 4..7 is not all durable
    now[0] = 11.25
    timer.acked("t", 9)
    timer.acked("t", 9)  # again: nothing left to observe
    timer.forget("u")
    got = scrape(registry)
    assert got["h_seconds_count"] == 2
    assert got["h_seconds_sum"] == pytest.approx(1.0 + 0.75)
    assert got["h_seconds_bucket{le=1.0}"] == 2
    assert timer._held == 0


def test_raft_refusals_are_snapshotted_for_other_threads() -> None:
    bad = BadInput("t1")
    first = bad.snapshot()
    assert first == ()
    bad("malformed", "x")
    bad("malformed", "y")
    bad("peer-key", "z")
    snap = bad.snapshot()
    assert snap == (("malformed", 2), ("peer-key", 1))
    assert bad.snapshot() is snap  # rebuilt only after a change


@pytest.mark.parametrize("port", [-1, 65536])
def test_bad_metrics_port_is_a_config_error(port: int) -> None:
    with pytest.raises(ConfigError, match="metrics port"):
        check_metrics_port(port)
