"""What a store, a producer and a consumer expose as Prometheus metrics.

Each ``*_metrics`` function builds a node's :class:`~dafka.io.metrics.NodeMetrics`
from the objects its facade holds: the values are read on the IO thread
(:class:`~dafka.io.metrics.LoopReader`), from the counters the cores already keep
(``StoreStats``, ``ProducerStats``, ``ConsumerStats``) and the IO shell's own.
``docs/metrics.md`` lists every metric; a test checks that it lists these.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import Histogram

from ..core.topic_counts import (
    BYTES_IN,
    BYTES_SERVED,
    DEFAULT_TOPIC_CAP,
    RECORDS_IN,
    RECORDS_SERVED,
    fold,
)
from .metrics import (
    ACK_LATENCY_BUCKETS,
    LOOP_SPECS,
    AckTimer,
    Kind,
    LoopReader,
    NodeCollector,
    NodeMetrics,
    Spec,
    Values,
    counter,
    gauge,
    loop_values,
)

if TYPE_CHECKING:
    from ..consumer import ConsumerCore
    from ..producer import ProducerCore
    from ..query.server import QueryService
    from ..storage.lmdb_store import LmdbStorage
    from ..store import StoreCore
    from .node import NodeLoop

__all__ = [
    "ACK_LATENCY",
    "CONSUMER_SPECS",
    "PRODUCER_SPECS",
    "STORE_SPECS",
    "consumer_metrics",
    "producer_metrics",
    "store_metrics",
]

ACK_LATENCY = "dafka_producer_ack_latency_seconds"
STORE_COMMIT = "dafka_store_commit_seconds"
STORE_ACK_LATENCY = "dafka_store_ack_latency_seconds"
HISTOGRAMS = (ACK_LATENCY, STORE_COMMIT, STORE_ACK_LATENCY)
"""Every histogram a node registers besides its collector's families."""
COMMIT_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    10,
)
"""A commit: 100 us (no fsync to speak of, tmpfs) to 10 s (a stuck disk)."""

# (stats field, metric name, help): counters read from a core's stats dataclass
_Fields = tuple[tuple[str, str, str], ...]

STORE_FIELDS: _Fields = (
    ("records_stored", "dafka_store_records_in", "Records written to LMDB (duplicates not)."),
    ("duplicates", "dafka_store_duplicates", "Records or batches already held, dropped."),
    ("acks_sent", "dafka_store_acks_sent", "ACKs sent (each after its LMDB commit)."),
    ("records_served", "dafka_store_records_served", "Records sent to answer FETCHes."),
    ("bytes_served", "dafka_store_served_bytes", "Bytes of the batches sent to answer FETCHes."),
    ("fetches_queued", "dafka_store_fetches_received", "FETCHes from peers taken to serve."),
    ("fetches_sent", "dafka_store_fetches_sent", "FETCHes this store sent to fill gaps."),
    ("fetches_refused", "dafka_store_fetches_refused", "FETCHes refused (bounds)."),
    ("fetches_limited", "dafka_store_fetches_limited", "FETCHes and head requests rate-limited."),
    (
        "fetches_paced",
        "dafka_store_fetches_paced",
        "Serving turns a pending FETCH waited for its requester's byte rate.",
    ),
    ("heads_sent", "dafka_store_heads_sent", "HEADs and DIRECT-HEADs sent."),
    (
        "heads_deferred",
        "dafka_store_heads_deferred",
        "Topics of head requests that waited for the DIRECT-HEAD budget.",
    ),
    (
        "heads_limited",
        "dafka_store_heads_limited",
        "Topics left out of head answers (bounds of those waiting, age, held heads).",
    ),
    ("malformed", "dafka_store_messages_malformed", "Messages that decoded but made no sense."),
    ("rejected", "dafka_store_batches_rejected", "Batches that failed signature checks."),
    ("rejected_heads", "dafka_store_heads_rejected", "HEADs that failed signature checks."),
    ("equivocations", "dafka_equivocations", "Two signed batches for one offset (first kept)."),
    ("unauthorized", "dafka_store_batches_unauthorized", "Batches the topic's ACL refused."),
    ("read_refused", "dafka_store_reads_refused", "Reads the topic's read ACL refused."),
    (
        "retention_skips",
        "dafka_store_retention_skips",
        "Partitions continued from another store's signed tail (the rest trimmed there).",
    ),
    (
        "claims_dropped",
        "dafka_store_claims_dropped",
        "Other stores' unsigned heads followed for rounds in vain, then dropped.",
    ),
    ("requests_forged", "dafka_store_requests_forged", "Requests naming another node."),
    ("requests_proxied", "dafka_store_requests_proxied", "Requests from unknown connections."),
    ("partitions_refused", "dafka_store_partitions_refused", "New partitions refused (caps)."),
    ("append_failures", "dafka_store_append_failures", "LMDB writes that failed (not ACKed)."),
    ("retention_trims", "dafka_store_retention_trims", "Partition tails moved by retention."),
    (
        "retention_paused",
        "dafka_store_retention_paused",
        "Retention checks without age trims: the wall clock ran ahead.",
    ),
    ("oversized", "dafka_store_records_oversized", "Records over max_message_size."),
    (
        "compact_refused",
        "dafka_store_compact_refused",
        "Producers' batches refused on a compacted topic (format, no key).",
    ),
    ("compaction_batches", "dafka_store_compaction_batches", "Batches rewritten compacted."),
    (
        "compaction_reclaimed_bytes",
        "dafka_store_compaction_reclaimed_bytes",
        "Bytes compaction returned (old size minus new).",
    ),
    ("compaction_passes", "dafka_store_compaction_passes", "Compaction passes completed."),
    (
        "compaction_skipped",
        "dafka_store_compaction_skipped",
        "Partitions a compaction pass left alone (unreadable batch, too many keys).",
    ),
    (
        "compaction_unjustified",
        "dafka_store_compaction_unjustified",
        "Compacted batches held that dropped the newest record of a key.",
    ),
)
PRODUCER_FIELDS: _Fields = (
    ("fetches_served", "dafka_producer_fetches_served", "FETCHes answered from memory."),
    ("records_resent", "dafka_producer_records_resent", "Records sent again for FETCHes."),
    ("fetches_limited", "dafka_producer_fetches_limited", "FETCHes rate-limited."),
    ("fetches_paced", "dafka_producer_fetches_paced", "FETCHes that waited for their bytes."),
    ("stale_acks", "dafka_producer_acks_stale", "ACKs at or below what that store acked."),
    ("bogus_acks", "dafka_producer_acks_bogus", "ACKs above the last published offset."),
    ("untrusted_acks", "dafka_producer_acks_untrusted", "Signed ACKs from untrusted stores."),
    ("forged_acks", "dafka_producer_acks_forged", "ACKs whose signature did not verify."),
    ("recovered", "dafka_producer_offsets_recovered", "Offsets of an earlier run recovered."),
    ("gap_offsets", "dafka_producer_gap_offsets", "Offsets of an earlier run closed as gaps."),
    ("read_refused", "dafka_producer_reads_refused", "FETCHes the topic's read ACL refused."),
    ("requests_forged", "dafka_producer_requests_forged", "FETCHes naming another node."),
    ("fetches_proxied", "dafka_producer_fetches_proxied", "FETCHes from unknown connections."),
)
CONSUMER_FIELDS: _Fields = (
    ("delivered", "dafka_consumer_records_delivered", "Records delivered in order."),
    ("duplicates", "dafka_consumer_duplicates", "Batches already delivered or buffered."),
    ("fetches_sent", "dafka_consumer_fetches_sent", "FETCHes sent to fill gaps."),
    ("limited_fetches", "dafka_consumer_fetches_limited", "FETCHes held back by the bound."),
    ("gap_offsets", "dafka_consumer_gap_offsets", "Offsets passed by signed gap statements."),
    ("data_lost", "dafka_consumer_records_lost", "Records skipped: retention deleted them."),
    ("unserved", "dafka_consumer_records_unserved", "rfc46 offsets nobody served in time."),
    ("tail_claims", "dafka_consumer_tail_claims", "Store tails heard as claims, not at once."),
    ("tail_waits", "dafka_consumer_tail_waits", "Waits on a tail no store backs or serves."),
    ("rejected", "dafka_consumer_batches_rejected", "Batches that failed signature checks."),
    ("rejected_heads", "dafka_consumer_heads_rejected", "HEADs that failed signature checks."),
    ("unauthorized", "dafka_consumer_batches_unauthorized", "Batches the topic's ACL refused."),
    ("equivocations", "dafka_equivocations", "Two signed batches for one offset (first kept)."),
    ("refused_partitions", "dafka_consumer_partitions_refused", "New partitions refused."),
    ("oversized", "dafka_consumer_records_oversized", "Records over max_message_size."),
    (
        "compacted",
        "dafka_consumer_compacted_offsets",
        "Offsets passed because a store's compaction dropped their records.",
    ),
)


def _specs(fields: _Fields) -> tuple[Spec, ...]:
    return tuple(counter(f"core.{field}", name, help) for field, name, help in fields)


def _core_values(stats: object, fields: _Fields) -> Values:
    return {f"core.{field}": getattr(stats, field) for field, _, _ in fields}


STORE_SPECS = (
    *LOOP_SPECS,
    *_specs(STORE_FIELDS),
    gauge("lmdb_used", "dafka_store_lmdb_bytes", "Bytes of the LMDB map in use."),
    gauge("lmdb_map", "dafka_store_lmdb_map_bytes", "Size of the LMDB map (it grows)."),
    gauge("partitions", "dafka_store_partitions", "Partitions held."),
    gauge("topics", "dafka_store_topics", "Topics held."),
    gauge(
        "under_partitions",
        "dafka_store_under_replicated_partitions",
        "Partitions held by fewer stores than min_acks, as far as this store heard.",
    ),
    gauge(
        "under_records",
        "dafka_store_under_replicated_records",
        "Records held by fewer stores than min_acks, as far as this store heard.",
    ),
    counter(
        "verified", "dafka_store_batches_verified", "Stored batches checked against their digest."
    ),
    counter(
        "bad_found", "dafka_store_batches_corrupt", "Stored batches found corrupt (not served)."
    ),
    gauge("bad_held", "dafka_store_batches_corrupt_held", "Corrupt batches not yet repaired."),
    counter(
        "repaired", "dafka_store_batches_repaired", "Corrupt batches replaced from other stores."
    ),
    counter(
        "scrub_bytes", "dafka_store_scrub_bytes", "Bytes the background scrub read and checked."
    ),
    counter("scrub_passes", "dafka_store_scrub_passes", "Scrub passes over everything held."),
    gauge(
        "compaction_pass_seconds",
        "dafka_store_compaction_pass_seconds",
        "How long the last compaction pass took (paced by its byte rate).",
    ),
    counter("query.requests", "dafka_store_query_requests", "Pull reads (HEADS, READ) served."),
    counter(
        "query.malformed", "dafka_store_query_malformed", "Query requests that did not decode."
    ),
    counter(
        "query.forbidden", "dafka_store_query_forbidden", "Query requests the read ACL refused."
    ),
    counter(
        "topic.records_in",
        "dafka_store_topic_records_in",
        "Records written to LMDB per topic (past the topic cap: _other).",
        label="topic",
    ),
    counter(
        "topic.bytes_in",
        "dafka_store_topic_bytes_in",
        "Bytes of the batches written to LMDB per topic, as stored (past the cap: _other).",
        label="topic",
    ),
    counter(
        "topic.records_served",
        "dafka_store_topic_records_served",
        "Records sent to answer FETCHes per topic (past the topic cap: _other).",
        label="topic",
    ),
    counter(
        "topic.served_bytes",
        "dafka_store_topic_served_bytes",
        "Bytes of the batches sent to answer FETCHes per topic (past the cap: _other).",
        label="topic",
    ),
    gauge(
        "disk_free",
        "dafka_store_disk_free_bytes",
        "Bytes free for the store on the filesystem of its data directory.",
    ),
    gauge(
        "disk_total",
        "dafka_store_disk_total_bytes",
        "Size in bytes of the filesystem of the data directory.",
    ),
    gauge("db_bytes", "dafka_store_db_bytes", "Size in bytes of the LMDB file (data.mdb)."),
)
PRODUCER_SPECS = (
    *LOOP_SPECS,
    *_specs(PRODUCER_FIELDS),
    counter("sent", "dafka_producer_records_sent", "Records published (resends not counted)."),
    counter("sent_bytes", "dafka_producer_sent_bytes", "Value bytes of the records published."),
    counter("acked", "dafka_producer_records_acked", "Records acknowledged (durable)."),
    counter("failed", "dafka_producer_records_failed", "Records that failed after send()."),
    gauge("unacked", "dafka_producer_records_unacked", "Records sent, not yet acknowledged."),
    gauge("unacked_bytes", "dafka_producer_unacked_bytes", "Bytes of those records."),
)
CONSUMER_SPECS = (
    *LOOP_SPECS,
    *_specs(CONSUMER_FIELDS),
    counter(
        "delivered_bytes",
        "dafka_consumer_delivered_bytes",
        "Value bytes of the records delivered in order.",
    ),
    gauge("backlog", "dafka_consumer_backlog_records", "Records delivered, not yet polled."),
    Spec(
        "lag",
        "dafka_consumer_lag_records",
        Kind.GAUGE,
        "Offsets known to exist (heads heard) not yet polled, per topic (past the cap: _other).",
        "topic",
    ),
    counter(
        "unopened",
        "dafka_consumer_batches_unopened",
        "Signed batches whose records were refused: bomb, root or payload.",
        label="reason",
    ),
)


def _metrics(
    role: str, node_id: str, profile: str, loop: NodeLoop, read: Callable[[], Values], specs: Any
) -> NodeMetrics:
    reader = LoopReader(loop, read)
    return NodeMetrics(NodeCollector(role, {"node_id": node_id, "profile": profile}, reader, specs))


def disk_values(path: str | os.PathLike[str], values: Values) -> None:
    """The filesystem's free and total bytes under ``path`` and the size of its LMDB file
    (three system calls: scrape time only). A call that fails leaves its values out."""
    try:
        fs = os.statvfs(path)
        values["disk_free"] = fs.f_bavail * fs.f_frsize  # what an unprivileged writer gets
        values["disk_total"] = fs.f_blocks * fs.f_frsize
        values["db_bytes"] = os.stat(os.path.join(path, "data.mdb")).st_size
    except OSError:
        pass


def disk_usage(path: str | os.PathLike[str]) -> tuple[int | None, int | None, int | None]:
    """(free, total, LMDB file bytes) of a store's data directory, as its metrics say them
    (None where a system call failed): the query endpoint's STATUS answer."""
    values: Values = {}
    disk_values(path, values)
    got = (values.get("disk_free"), values.get("disk_total"), values.get("db_bytes"))
    return tuple(None if v is None else int(v) for v in got)  # type: ignore[return-value]


def store_metrics(
    loop: NodeLoop,
    core: StoreCore,
    storage: LmdbStorage,
    query: QueryService,
    profile: str,
    time_commits: Callable[[Callable[[float], None], Callable[[float], None]], None] | None = None,
) -> NodeMetrics:
    """A store's metrics (nothing served until :meth:`NodeMetrics.serve`); ``time_commits``
    is handed the observers of its two histograms (commit, ACK latency)."""

    def read() -> Values:  # IO thread
        values = loop_values(loop)
        values.update(_core_values(core.stats, STORE_FIELDS))
        values["lmdb_used"], values["lmdb_map"] = storage.usage()
        checks = storage.integrity
        values["verified"], values["bad_found"] = checks.verified, checks.bad_found
        values["bad_held"], values["repaired"] = len(storage.bad), checks.repaired
        values["scrub_bytes"], values["scrub_passes"] = checks.scrub_bytes, checks.scrub_passes
        values["compaction_pass_seconds"] = core.stats.compaction_pass_ms / 1000
        heads = storage.heads()
        values["partitions"] = len(heads)
        values["topics"] = len({topic for topic, _ in heads})
        under = core.under_replicated
        values["under_partitions"], values["under_records"] = under.partitions, under.records
        for key in ("requests", "malformed", "forbidden"):
            values[f"query.{key}"] = query.stats[key]
        topics = core.stats.topics  # at most cap + 1 topics (dafka.core.topic_counts)
        values["topic.records_in"] = topics.column(RECORDS_IN)
        values["topic.bytes_in"] = topics.column(BYTES_IN)
        values["topic.records_served"] = topics.column(RECORDS_SERVED)
        values["topic.served_bytes"] = topics.column(BYTES_SERVED)
        disk_values(storage.path, values)
        return values

    metrics = _metrics("store", loop.node_id, profile, loop, read, STORE_SPECS)
    commit = Histogram(
        STORE_COMMIT,
        "Seconds one LMDB write transaction of a drain's records took, fsync included.",
        buckets=COMMIT_BUCKETS,
        registry=metrics.registry,
    )
    ack = Histogram(
        STORE_ACK_LATENCY,
        "Seconds from receiving a drain of records to sending its ACKs (one per drain).",
        buckets=ACK_LATENCY_BUCKETS,
        registry=metrics.registry,
    )
    if time_commits is not None:
        time_commits(commit.observe, ack.observe)
    return metrics


def producer_metrics(
    loop: NodeLoop,
    core: ProducerCore,
    counts: Callable[[], tuple[int, int, int, int]],
    profile: str,
    sent: Callable[[], tuple[int, int]],
) -> tuple[NodeMetrics, AckTimer]:
    """A producer's metrics and the timer its handler feeds (publication to ACK).

    ``counts`` returns (acknowledged, failed, unacked, unacked bytes); ``sent``
    (records published, their value bytes)."""

    def read() -> Values:  # IO thread
        values = loop_values(loop)
        values.update(_core_values(core.stats, PRODUCER_FIELDS))
        values["acked"], values["failed"], values["unacked"], values["unacked_bytes"] = counts()
        values["sent"], values["sent_bytes"] = sent()
        return values

    metrics = _metrics("producer", loop.node_id, profile, loop, read, PRODUCER_SPECS)
    histogram = Histogram(
        ACK_LATENCY,
        "Seconds from publishing a batch to its acknowledgement by min_acks stores.",
        buckets=ACK_LATENCY_BUCKETS,
        registry=metrics.registry,
    )
    return metrics, AckTimer(histogram)


def consumer_metrics(
    loop: NodeLoop,
    core: ConsumerCore,
    backlog: Callable[[], int],
    profile: str,
    delivered_bytes: Callable[[], int],
    lag: Callable[[], Mapping[tuple[str, str], int]] | None = None,
    topic_cap: int = DEFAULT_TOPIC_CAP,
) -> NodeMetrics:
    """A consumer's metrics; ``delivered_bytes`` returns the value bytes of the records
    its core delivered (counted by its IO-side handler), ``lag`` each partition's lag
    (summed per topic here, the topics past ``topic_cap`` folded into ``_other``)."""

    def read() -> Values:  # IO thread
        values = loop_values(loop)
        stats = core.stats
        values.update(_core_values(stats, CONSUMER_FIELDS))
        values["delivered_bytes"] = delivered_bytes()
        values["backlog"] = backlog()
        values["unopened"] = dict(stats.unopened)
        if lag is not None:
            values["lag"] = lag_per_topic(core.topics(), lag(), topic_cap)
        return values

    return _metrics("consumer", loop.node_id, profile, loop, read, CONSUMER_SPECS)


def lag_per_topic(
    topics: Iterable[str], lag: Mapping[tuple[str, str], int], cap: int
) -> Mapping[str, int]:
    """Each partition's lag summed per topic (0 for a topic read and caught up, or of
    which nothing is known yet), the topics past the first ``cap`` by name folded."""
    per_topic: defaultdict[str, int] = defaultdict(int)
    for topic in topics:
        per_topic[topic] += 0
    for (topic, _), behind in lag.items():
        per_topic[topic] += behind
    return fold(sorted(per_topic.items()), cap)
