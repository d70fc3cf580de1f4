"""Prometheus endpoints of real processes: a dafka-store and a dafka-tower run with
``--metrics-port 0``, records go through, and the counts are scraped over HTTP."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dafka import Consumer, Producer
from dafka.query import StoreLocator
from tests.admin import tower_args
from tests.procs import Proc, StoreProc, py, wait_until

pytestmark = pytest.mark.integration

N = 300
VALUE_BYTES = sum(len(f"record {i}") for i in range(N))


def scrape(url: str) -> dict[str, float]:
    """Every unlabelled sample by name, and labelled ones as ``name{k=v}``."""
    with urllib.request.urlopen(url, timeout=5) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


def metrics_url(proc: Proc) -> str:
    return proc.wait_line(r"metrics on (http://127\.0\.0\.1:\d+/metrics)").group(1)


@pytest.fixture
def tower() -> object:
    proc = Proc(py("tower", "--bind", "127.0.0.1:0", *tower_args(), "--metrics-port", "0"))
    address = "127.0.0.1:" + proc.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)").group(1)
    yield address, metrics_url(proc)
    proc.kill()


def test_store_tower_and_producer_count_what_went_through(tmp_path: Path, tower: object) -> None:
    address, tower_url = tower  # type: ignore[misc]
    # cap 1: "metered" has series of its own, the next topic written is counted as _other
    store = StoreProc(
        tmp_path / "store", address, "--metrics-port", "0", "--metrics-topic-cap", "1"
    )
    try:
        store_url = metrics_url(store.proc)
        with Producer("metered", towers=address, metrics_port=0) as producer:
            assert producer.metrics is not None and producer.metrics.url is not None
            producer_url = producer.metrics.url
            for i in range(N):
                producer.send(f"record {i}")
            producer.flush(timeout=30)
            got = scrape(producer_url)
            assert got["dafka_producer_records_sent_total"] == N
            assert got["dafka_producer_sent_bytes_total"] == VALUE_BYTES
            assert got["dafka_producer_records_acked_total"] == N
            assert got["dafka_producer_records_unacked"] == 0
            assert got["dafka_producer_ack_latency_seconds_count"] >= 1
            assert got["dafka_node_running"] == 1

        def stored() -> dict[str, float] | None:
            values = scrape(store_url)
            return values if values["dafka_store_records_in_total"] == N else None

        got = wait_until(stored, 20, what=f"{N} records in the store's metrics")
        assert isinstance(got, dict)
        assert got["dafka_store_acks_sent_total"] >= 1
        assert got["dafka_store_partitions"] == 1 and got["dafka_store_topics"] == 1
        assert got["dafka_store_lmdb_bytes"] > 0
        assert got["dafka_received_bytes_total"] > 0
        assert got["dafka_frames_malformed_total"] == 0
        assert got["dafka_tower_welcomed"] == 1
        assert got["dafka_store_records_served_total"] == 0  # nobody has FETCHed yet
        assert got["dafka_store_topic_records_in_total{topic=metered}"] == N
        assert got["dafka_store_topic_bytes_in_total{topic=metered}"] > VALUE_BYTES
        assert got["dafka_store_commit_seconds_count"] >= 1
        assert got["dafka_store_ack_latency_seconds_count"] >= 1
        assert 0 < got["dafka_store_disk_free_bytes"] <= got["dafka_store_disk_total_bytes"]
        assert got["dafka_store_db_bytes"] > 0
        assert got["process_resident_memory_bytes"] > 0 and got["process_cpu_seconds_total"] > 0

        with Producer("second", towers=address) as second:  # past the cap of 1: _other
            second.send("x")
            second.flush(timeout=30)
        wait_until(
            lambda: scrape(store_url).get("dafka_store_topic_records_in_total{topic=_other}") == 1,
            20,
            what="the second topic counted under _other",
        )

        # the producer is gone: a consumer from the beginning is served by the store's FETCH
        # answers; what went out of the store and into the consumer is counted
        with Consumer("metered", towers=address, offset_reset="earliest", metrics_port=0) as c:
            assert c.metrics is not None and c.metrics.url is not None
            # before it polls: every record the store said it holds is lag (delivered to
            # the poll queue counts as not read)
            lag = "dafka_consumer_lag_records{topic=metered}"
            url = c.metrics.url
            wait_until(lambda: scrape(url)[lag] == N, 20, what=f"a lag of {N} before reading")
            values = [r.value for r in c.poll_batch(N, timeout=1.0)]
            deadline = time.monotonic() + 30
            while len(values) < N and time.monotonic() < deadline:
                values += [r.value for r in c.poll_batch(N, timeout=1.0)]
            assert len(values) == N
            read = scrape(c.metrics.url)
            assert read[lag] == 0  # drained: caught up
        with Consumer("metered", towers=address, offset_reset="earliest", metrics_port=0) as c:
            url = c.metrics.url  # type: ignore[union-attr]
            wait_until(lambda: scrape(url)[lag] == N, 20, what=f"a lag of {N} before reading")
            polled = len(c.poll_batch(100, timeout=5.0))
            (key,) = c.positions()
            c.pause([key])  # paused: the lag runs from where it resumes, whatever arrives
            assert 0 < polled and scrape(url)[lag] == N - polled
        assert read["dafka_consumer_records_delivered_total"] == N
        assert read["dafka_consumer_delivered_bytes_total"] == VALUE_BYTES == sum(map(len, values))
        served = scrape(store_url)
        assert served["dafka_store_records_served_total"] >= N
        # batches as stored: signed, so more than the values they hold
        assert served["dafka_store_served_bytes_total"] > VALUE_BYTES

        raft = scrape(tower_url)
        assert raft["dafka_raft_term"] >= 1
        assert raft["dafka_raft_is_leader"] == 1 and raft["dafka_raft_has_leader"] == 1
        assert raft["dafka_raft_commit_index"] >= 1  # the admins, the topic
        assert raft["dafka_raft_applied_index"] == raft["dafka_raft_commit_index"]
        assert raft["dafka_raft_apply_lag_entries"] == 0
        assert raft["process_open_fds"] > 0  # the tower's registry has them too
        assert raft["dafka_raft_leader_changes_total"] == 1
        assert raft["dafka_tower_beacons_relayed_total"] > 0
        with StoreLocator(address) as locator:  # a new subscriber of the stores' beacons
            assert list(locator.stores()) == [store.node_id]
        raft = scrape(tower_url)
        assert raft["dafka_tower_service_beacons_kept"] == 1  # the store's query endpoint
        assert raft["dafka_tower_service_replays_total"] >= 1
        assert raft["dafka_tower_service_beacons_not_kept_total"] == 0
    finally:
        assert store.stop() == 0


def test_closing_a_node_closes_its_endpoint(tower: object) -> None:
    address, _ = tower  # type: ignore[misc]
    producer = Producer("closing", towers=address, metrics_port=0)
    consumer = Consumer("closing", towers=address, metrics_port=0)
    urls = [producer.metrics.url, consumer.metrics.url]  # type: ignore[union-attr]
    assert len(set(urls)) == 2  # two nodes in one process: two endpoints, two registries
    for url in urls:
        assert scrape(url)["dafka_node_running"] == 1  # type: ignore[arg-type]
    consumer.close()
    producer.close(timeout=0)
    for url in urls:
        with pytest.raises(urllib.error.URLError):
            scrape(url)  # type: ignore[arg-type]
