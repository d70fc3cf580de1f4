"""The metrics of issue 38 without sockets: the ``topic`` label's cap (an attack test: a
producer writing to fresh topics), its escaping, the store's commit and ACK histograms,
its disk gauges, the consumer's lag summed per topic, the tower's apply lag, and the
process/Python collectors on every node's registry."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from dafka.cli import metrics as cli_metrics
from dafka.core import messages as m
from dafka.core.topic_counts import DEFAULT_TOPIC_CAP, OTHER, TopicCounts, fold
from dafka.errors import ConfigError
from dafka.io.node_metrics import lag_per_topic, store_metrics
from dafka.query.server import QueryService
from dafka.storage.lmdb_store import LmdbStorage
from dafka.store import StoreCore
from dafka.store._facade import _StoreHandler
from dafka.wire.profiles import SignedProfile
from tests.procs import wait_until
from tests.signing import CONSUMER, STORE, P, record
from tests.unit.test_metrics import SyncLoop
from tower.metrics import tower_metrics

TOPIC_FAMILIES = (
    "dafka_store_topic_records_in",
    "dafka_store_topic_bytes_in",
    "dafka_store_topic_records_served",
    "dafka_store_topic_served_bytes",
)


def families(registry: CollectorRegistry) -> dict[str, list]:
    """Each family's samples, parsed back from the text exposition as Prometheus would."""
    text = generate_latest(registry).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def topic_series(got: dict[str, list], family: str) -> dict[str, float]:
    return {s.labels["topic"]: s.value for s in got[family] if s.name.endswith("_total")}


def store(tmp_path: Path, cap: int) -> tuple[LmdbStorage, StoreCore, _StoreHandler, object]:
    storage = LmdbStorage(tmp_path, node_id=STORE.node_id)
    core = StoreCore(STORE.node_id, storage, profile=SignedProfile(STORE), topic_cap=cap)
    handler = _StoreHandler(core, QueryService(storage, profile="signed"))
    metrics = store_metrics(
        SyncLoop(STORE.node_id),  # type: ignore[arg-type]
        core,
        storage,
        handler.query,
        "signed",
        handler.time_commits,
    )
    return storage, core, handler, metrics


def test_a_producer_writing_to_fresh_topics_gets_at_most_cap_plus_one_series(
    tmp_path: Path,
) -> None:
    """Attack: a producer picks the topic names, so a label per topic would let it grow the
    store's exposition without bound. 55 fresh topics against a cap of 5: each per-topic
    family holds the first 5 topics and ``_other``, whose count is the other 50's, and
    nothing is lost (the series sum to the totals)."""
    cap = 5
    storage, core, handler, metrics = store(tmp_path, cap)
    try:
        topics = [f"flood-{i:02d}" for i in range(cap + 50)]
        handler.on_messages([record(0, 2, topic=t) for t in topics], 1.0)
        for t in topics:  # each topic read back: served counts per topic too
            handler.on_messages([m.Fetch(P, CONSUMER, t, 0, 2)], 2.0)
        handler.on_tick(3.0)
        got = families(metrics.registry)  # type: ignore[attr-defined]
    finally:
        storage.close()
    for family in TOPIC_FAMILIES:
        series = topic_series(got, family)
        assert len(series) <= cap + 1, family
        assert set(series) == {*topics[:cap], OTHER}, family
    records_in = topic_series(got, "dafka_store_topic_records_in")
    assert records_in[OTHER] == 50 * 2 and records_in[topics[0]] == 2
    assert sum(records_in.values()) == core.stats.records_stored == 110
    served = topic_series(got, "dafka_store_topic_records_served")
    assert sum(served.values()) == core.stats.records_served > 2 * cap  # (rate-limited)
    assert served[OTHER] > 0
    served_bytes = topic_series(got, "dafka_store_topic_served_bytes")
    assert sum(served_bytes.values()) == core.stats.bytes_served > 0
    bytes_in = topic_series(got, "dafka_store_topic_bytes_in")
    assert bytes_in[topics[0]] == served_bytes[topics[0]] > 0  # the batch, as stored
    assert bytes_in[OTHER] == 50 * bytes_in[topics[0]]
    assert len(core.stats.topics.counts) == cap + 1  # the memory is bounded too


def test_topic_label_values_are_escaped_and_other_is_never_doubled(tmp_path: Path) -> None:
    """The wire carries topic names with quotes, backslashes and newlines (``check_topic``;
    only names entering through the API or the metadata refuse control characters):
    prometheus_client escapes them, so the exposition parses back to the very names and
    no name forges a series. A topic named ``_other`` is counted under ``_other``, never
    as a second series with that label."""
    hostile = 'a"b\\c\nd} 1\nforged_total 9'
    storage, core, handler, metrics = store(tmp_path, 3)
    try:
        handler.on_messages(
            [record(0, 1, topic=hostile), record(0, 1, topic=OTHER), record(0, 1, topic="ok")],
            1.0,
        )
        text = generate_latest(metrics.registry).decode()  # type: ignore[attr-defined]
        got = families(metrics.registry)  # type: ignore[attr-defined]
    finally:
        storage.close()
    assert "forged" not in got
    series = [s for s in got["dafka_store_topic_records_in"] if s.name.endswith("_total")]
    assert sorted(s.labels["topic"] for s in series) == sorted([hostile, OTHER, "ok"])
    assert '\\"' in text and "\\\\" in text and "\\n" in text
    assert {s.labels["topic"]: s.value for s in series}[OTHER] == 1
    assert core.stats.topics.named == 2  # "_other" took no slot of its own


def test_a_deleted_topic_gives_its_slot_back() -> None:
    counts = TopicCounts(cap=2)
    counts.slot("a")[0] += 1
    counts.slot("b")[0] += 1
    counts.slot("c")[0] += 1  # past the cap
    assert counts.column(0) == {"a": 1, "b": 1, OTHER: 1}
    counts.forget("a")
    counts.forget(OTHER)  # not a topic: stays
    counts.slot("d")[0] += 5
    assert counts.column(0) == {"b": 1, "d": 5, OTHER: 1}


def test_fold_sums_per_topic_and_caps_the_rest() -> None:
    pairs = [("a", 1), ("b", 2), ("a", 3), ("c", 4), (OTHER, 5), ("d", 6)]
    assert fold(pairs, 2) == {"a": 4, "b": 2, OTHER: 15}
    assert fold(pairs, 0) == {OTHER: 21}
    assert fold([], 2) == {}


def test_consumer_lag_is_summed_per_topic_and_capped() -> None:
    lag = {("t", "P1"): 3, ("t", "P2"): 0, ("u", "P1"): 7, ("v", "P1"): 1, ("w", "P1"): 2}
    got = lag_per_topic(["t", "u", "v", "w", "x"], lag, 2)
    assert got == {"t": 3, "u": 7, OTHER: 3}  # v, w and x (subscribed, nothing known) folded
    assert lag_per_topic(["t", "x"], {("t", "P1"): 0}, 10) == {"t": 0, "x": 0}


def test_store_commits_and_acks_are_timed_once_per_drain(tmp_path: Path) -> None:
    storage, _, handler, metrics = store(tmp_path, DEFAULT_TOPIC_CAP)
    clock = [10.0]
    handler._clock = lambda: clock[0]
    try:
        clock[0] = 10.25  # the drain's ACKs leave 0.25 s after it was received (at 10.0)
        handler.on_messages([record(0, 3), record(3, 2), record(0, 1, topic="u")], 10.0)
        clock[0] = 11.0
        handler.on_messages([m.Fetch(P, CONSUMER, "t", 0, 5)], 11.0)  # no records: no ACK
        got = families(metrics.registry)  # type: ignore[attr-defined]
    finally:
        storage.close()
    commits = {s.name: s.value for s in got["dafka_store_commit_seconds"]}
    assert commits["dafka_store_commit_seconds_count"] == 1  # one transaction for the drain
    assert commits["dafka_store_commit_seconds_sum"] > 0
    acks = {s.name: s.value for s in got["dafka_store_ack_latency_seconds"]}
    assert acks["dafka_store_ack_latency_seconds_count"] == 1  # per drain, not per record
    assert acks["dafka_store_ack_latency_seconds_sum"] == pytest.approx(0.25)
    disk = {f: got[f][0].value for f in ("dafka_store_disk_free_bytes", "dafka_store_db_bytes")}
    total = got["dafka_store_disk_total_bytes"][0].value
    assert 0 < disk["dafka_store_disk_free_bytes"] <= total
    assert disk["dafka_store_db_bytes"] == (tmp_path / "data.mdb").stat().st_size > 0


def test_every_node_registry_has_the_process_and_python_collectors(tmp_path: Path) -> None:
    storage, _, _, metrics = store(tmp_path, DEFAULT_TOPIC_CAP)
    storage.close()
    got = families(metrics.registry)  # type: ignore[attr-defined]
    assert got["process_cpu_seconds"][0].value > 0
    assert got["process_resident_memory_bytes"][0].value > 0
    assert "python_info" in got and "python_gc_objects_collected" in got


def test_tower_reports_its_raft_apply_lag() -> None:
    info = SimpleNamespace(
        term=2,
        commit=17,
        applied=12,
        last_index=17,
        snapshot_index=0,
        role="leader",
        leader="A",
        config=("A",),
        leader_changes=1,
        refused=(),
    )
    relay = SimpleNamespace(
        relayed=0, malformed=0, replay=None, relayed_from_peers=0, malformed_from_peers=0
    )
    node = SimpleNamespace(
        raft=SimpleNamespace(info=lambda: info),
        relay=relay,
        running=True,
        peer_id="A",
        cluster="dafka",
    )
    got = families(tower_metrics(node).registry)  # type: ignore[arg-type]
    assert got["dafka_raft_apply_lag_entries"][0].value == 5


def test_topic_cap_is_checked_and_the_cli_default_matches() -> None:
    assert cli_metrics.DEFAULT_TOPIC_CAP == DEFAULT_TOPIC_CAP
    with pytest.raises(ConfigError, match="topic cap"):
        StoreCore(STORE.node_id, None, topic_cap=-1)  # type: ignore[arg-type]


def test_with_the_writer_thread_each_drain_is_timed_from_its_receipt(tmp_path: Path) -> None:
    """``commit_thread``: a drain arriving while the commit before it is written waits; its
    ACK latency runs from its own receipt (0.1), not from the report that started its
    commit, and each of the two commits is timed once."""
    storage, core, _, metrics = store(tmp_path, DEFAULT_TOPIC_CAP)
    handler = _StoreHandler(core, QueryService(storage, profile="signed"), storage=storage)
    clock = [0.0]
    calls: list = []
    loop = SimpleNamespace(clock=lambda: clock[0], call=calls.append)
    commit = Histogram("c_seconds", "c", registry=(registry := CollectorRegistry()))
    ack = Histogram("a_seconds", "a", registry=registry)
    handler.time_commits(commit.observe, ack.observe)
    handler.on_start(loop, 0.0)  # type: ignore[arg-type]
    try:
        assert handler.on_messages([record(0, 2)], 0.0) == []  # its commit is on the writer
        assert handler.on_messages([record(2, 2)], 0.1) == []  # waits for that commit
        wait_until(lambda: len(calls) == 1, 5.0)
        clock[0] = 1.0
        assert any(isinstance(e.msg, m.Ack) for e in calls.pop()(1.0))
        wait_until(lambda: len(calls) == 1, 5.0)  # the waiting drain's commit
        clock[0] = 2.0
        assert any(isinstance(e.msg, m.Ack) for e in calls.pop()(2.0))
    finally:
        handler.on_stop()
        storage.close()
    got = {s.name: s.value for f in families(registry).values() for s in f}
    assert got["c_seconds_count"] == 2 and got["c_seconds_sum"] > 0
    assert got["a_seconds_count"] == 2
    assert got["a_seconds_sum"] == pytest.approx(1.0 + 1.9)
