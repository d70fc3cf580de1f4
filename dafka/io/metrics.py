"""Prometheus metrics of one node: a registry of its own, a collector, an HTTP endpoint.

Every node (store, producer, consumer; towers in :mod:`tower.metrics`) that is given
a metrics port gets a :class:`~prometheus_client.CollectorRegistry` of its own, never
the library's global one, since a process may hold several nodes (a service with a
producer and a consumer, the tests). The values are the counters the cores and the
IO shell keep anyway (with the byte counts out of producers, consumers and stores,
one addition per batch); nothing on the hot path changes for metrics, except the ACK
latency histogram a producer observes (:class:`AckTimer`).

Threads. The IO thread owns the cores and mutates their counters; the HTTP server
answers on threads of its own. A scrape therefore never reads a core: it queues a
read on the node's one command channel (:meth:`NodeLoop.call`), which runs it on
the IO thread between two loop turns and hands back a plain dict (:class:`LoopReader`).
So every value of one scrape is from the same instant, no core is read while it
changes, and no attribute is handed between threads without the queue. One read is
in flight at a time (a lock): a flood of scrapes queues nothing on the loop. When
the IO thread does not answer within ``timeout`` (it stopped, or is stuck), the
scrape still answers, with ``dafka_node_running 0`` and no node values.

Names follow the Prometheus conventions (``docs/metrics.md`` lists them all):
``dafka_`` prefix, counters end in ``_total``, times in ``_seconds``, sizes in
``_bytes``. One label takes a value a peer controls, ``topic`` (a store's records and
bytes in and out per topic, a consumer's lag), and it is bounded: the first
``--metrics-topic-cap`` topics get series of their own, every other one is counted under
``topic="_other"`` (:mod:`dafka.core.topic_counts`). No partition or peer ID is a
label: the registry's size is bounded by this code, whatever the network sends
(``docs/security.md``, "Bounds"). Every registry also holds prometheus_client's
process, platform and GC collectors (``process_*``, ``python_*``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..errors import ConfigError
from .metrics_http import HttpLimits, MetricsHTTPServer, serve_metrics

if TYPE_CHECKING:
    from .node import NodeLoop

log = logging.getLogger(__name__)

__all__ = [
    "ACK_LATENCY_BUCKETS",
    "AckTimer",
    "Kind",
    "LoopReader",
    "MetricsServer",
    "NodeCollector",
    "Spec",
    "check_metrics_port",
]

DEFAULT_HOST = "127.0.0.1"
SNAPSHOT_TIMEOUT = 2.0
"""Seconds a scrape waits for the IO thread to read the node's values."""
ACK_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
MAX_TIMED_BATCHES = 65_536
"""Published batches an :class:`AckTimer` remembers; past it, new ones go untimed."""

Values = dict[str, Any]
"""What a node's reader returns: a number per :attr:`Spec.key`, or for a labelled
metric a mapping of label value to number."""


class Kind(Enum):
    COUNTER = "counter"
    GAUGE = "gauge"


@dataclass(frozen=True, slots=True)
class Spec:
    """One metric: where its value is in the node's values, and how it is exposed."""

    key: str
    name: str
    """Full name without the ``_total`` a counter gets on exposition."""
    kind: Kind
    help: str
    label: str | None = None
    """For a value that is a mapping: the label its keys go under (a fixed set)."""


def counter(key: str, name: str, help: str, label: str | None = None) -> Spec:
    return Spec(key, name, Kind.COUNTER, help, label)


def gauge(key: str, name: str, help: str) -> Spec:
    return Spec(key, name, Kind.GAUGE, help)


LOOP_SPECS = (
    counter("received", "dafka_messages_received", "Data messages read and decoded."),
    counter("received_bytes", "dafka_received_bytes", "Bytes of data messages read."),
    counter("sent", "dafka_messages_sent", "Data messages (rfc46: records) sent."),
    counter(
        "malformed",
        "dafka_frames_malformed",
        "Frames dropped because they did not decode (data, beacons) or could not be sent.",
    ),
    counter("oversized", "dafka_frames_oversized", "Data frames over max_message_size dropped."),
    counter(
        "other_profile", "dafka_frames_other_profile", "Data messages of the other wire profile."
    ),
    counter(
        "subscriptions_refused",
        "dafka_subscriptions_refused",
        "Subscriptions the read ACL refused (CURVE).",
    ),
    gauge("peers", "dafka_peers", "Peers this node is connected to (from tower beacons)."),
    counter(
        "peers_expired",
        "dafka_peers_expired",
        "Peers expired: silent (no beacon, no data, no heartbeat) for beacon_timeout.",
    ),
    counter(
        "peers_returned",
        "dafka_peers_returned",
        "Expired peers heard again within the grace period: kept, not reconnected.",
    ),
    counter(
        "peers_refused",
        "dafka_peers_refused",
        "New peers not admitted: the peer table full (see dafka_peers_refused_full) or new "
        "peers arriving faster than the admission rate (admitted at a later beacon).",
    ),
    counter(
        "peers_refused_full",
        "dafka_peers_refused_full",
        "New peers not admitted because this node holds its maximum of peers: no records, "
        "ACKs or fetches flow with them.",
    ),
    counter(
        "peers_replaced",
        "dafka_peers_replaced",
        "Endpoints taken by another node ID once theirs fell silent (a node restarted with "
        "a new identity on the same port).",
    ),
    counter("heartbeats", "dafka_heartbeats_received", "Peers' heartbeats read (signed profile)."),
    gauge("welcomed", "dafka_tower_welcomed", "1 once a tower has welcomed this node."),
)


def loop_values(loop: NodeLoop) -> Values:
    """The IO shell's own counters (IO thread only)."""
    stats = loop.stats
    return {
        "received": stats["received"],
        "received_bytes": stats.get("received_bytes", 0),
        "sent": stats["sent"],
        "malformed": loop.malformed.count,
        "oversized": stats["oversized"],
        "other_profile": stats["other_profile"],
        "subscriptions_refused": stats["subscriptions_refused"],
        "peers": len(loop.discovery.peers),
        "peers_expired": loop.discovery.expired,
        "peers_returned": loop.discovery.returned,
        "peers_refused": loop.discovery.refused,
        "peers_refused_full": loop.discovery.refused_full,
        "peers_replaced": loop.discovery.replaced,
        "heartbeats": loop.liveness.heartbeats,
        "welcomed": 1 if loop.welcomed else 0,
    }


class LoopReader:
    """Reads a node's values on its IO thread, for the HTTP server's threads.

    ``read`` runs on the IO thread (queued with :meth:`NodeLoop.call`); the caller
    waits up to ``timeout`` s for it. Returns None when the loop is not running or
    did not answer in time; one read is in flight at a time.
    """

    def __init__(
        self, loop: NodeLoop, read: Callable[[], Values], timeout: float = SNAPSHOT_TIMEOUT
    ) -> None:
        self._loop = loop
        self._read = read
        self._timeout = timeout
        self._lock = threading.Lock()
        self.timeouts = 0

    def __call__(self) -> Values | None:
        if not self._lock.acquire(timeout=self._timeout):
            return None
        try:
            if not self._loop.alive:
                return None
            done = threading.Event()
            box: list[Values | None] = [None]

            def run(now: float) -> list[Any]:
                try:
                    box[0] = self._read()
                except Exception:  # a reader's bug must not stop the node
                    log.exception("metrics.read_failed id=%s", self._loop.node_id)
                done.set()
                return []

            self._loop.call(run)
            if not done.wait(self._timeout):
                self.timeouts += 1
                log.warning(
                    "metrics.snapshot_timeout id=%s timeout=%s", self._loop.node_id, self._timeout
                )
                return None
            return box[0]
        finally:
            self._lock.release()


class NodeCollector(Collector):
    """Turns a node's values into metric families at scrape time.

    ``read`` returns the values (None: the node is not running); ``specs`` say which
    metric each value is. ``info`` labels ``dafka_node_info`` (the node's identity).
    """

    def __init__(
        self,
        role: str,
        info: Mapping[str, str],
        read: Callable[[], Values | None],
        specs: tuple[Spec, ...],
    ) -> None:
        self.role = role
        self._info = {"role": role, **info}
        self._read = read
        self._specs = specs

    def collect(self) -> Iterator[Metric]:
        node = InfoMetricFamily("dafka_node", "The node this endpoint reports on.")
        node.add_metric([], self._info)
        yield node
        values = self._read()
        running = GaugeMetricFamily(
            "dafka_node_running", "1 while the node's IO thread runs and answers scrapes."
        )
        running.add_metric([], 0 if values is None else 1)
        yield running
        if values is None:
            return
        yield from families(self._specs, values)


def families(specs: tuple[Spec, ...], values: Values) -> Iterator[Metric]:
    """One family per spec whose key is in ``values``."""
    for spec in specs:
        value = values.get(spec.key)
        if value is None:
            continue
        family: CounterMetricFamily | GaugeMetricFamily
        labels = [spec.label] if spec.label is not None else None
        if spec.kind is Kind.COUNTER:
            family = CounterMetricFamily(spec.name, spec.help, labels=labels)
        else:
            family = GaugeMetricFamily(spec.name, spec.help, labels=labels)
        if spec.label is not None:
            for label_value, number in sorted(value.items()):
                family.add_metric([label_value], number)
        else:
            family.add_metric([], value)
        yield family


class AckTimer:
    """Times each published batch from its publication to its acknowledgement.

    IO thread only (a producer's handler calls it); the histogram it observes is
    thread-safe, so the HTTP threads read it directly. One observation per batch
    the IO loop published (a batch is what one loop turn sealed for one topic),
    not per record. At most ``cap`` batches are remembered; past it, new batches
    are not timed (no memory grows with the backlog of a producer with no store).
    """

    def __init__(
        self, histogram: Histogram, clock: Callable[[], float] = time.monotonic, cap: int = 0
    ) -> None:
        self.histogram = histogram
        self.clock = clock
        self.cap = cap or MAX_TIMED_BATCHES
        self._sent: dict[str, deque[tuple[int, float]]] = {}
        self._held = 0
        self.untimed = 0

    def published(self, topic: str, last_offset: int) -> None:
        if self._held >= self.cap:
            self.untimed += 1
            return
        sent = self._sent.get(topic)
        if sent is None:
            sent = self._sent[topic] = deque()
        sent.append((last_offset, self.clock()))
        self._held += 1

    def acked(self, topic: str, offset: int) -> None:
        """Everything of ``topic`` up to ``offset`` is durable."""
        sent = self._sent.get(topic)
        if not sent:
            return
        now = self.clock()
        observe = self.histogram.observe
        while sent and sent[0][0] <= offset:
            observe(max(0.0, now - sent.popleft()[1]))
            self._held -= 1

    def forget(self, topic: str) -> None:
        """The topic was deleted: what was not acknowledged never will be."""
        self._held -= len(self._sent.pop(topic, ()))


def check_metrics_port(port: int | None) -> int | None:
    if port is not None and not 0 <= port < 65536:
        raise ConfigError(f"bad metrics port {port}: give 0 (any free port) to 65535")
    return port


class MetricsServer:
    """The HTTP server of one registry (:mod:`dafka.io.metrics_http`: prometheus_client's
    exposition on tornado, each connection bounded in time and in number per peer), bound
    to ``host:port``; ``limits``: those bounds (:class:`HttpLimits`).

    ``port`` 0 binds a free port (see :attr:`url`). :meth:`close` stops it and frees
    the port. The server answers every path with the metrics (``/metrics`` is the
    one to scrape).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        limits: HttpLimits | None = None,
    ) -> None:
        check_metrics_port(port)
        try:
            server, thread = serve_metrics(registry, host, port, limits)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConfigError(f"cannot serve metrics on {host}:{port}: {reason}") from None
        self._server: MetricsHTTPServer | None = server
        self._thread = thread
        self.host = host
        self.port: int = server.server_address[1]
        self.registry = registry

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        self._thread.join(2.0)


class NodeMetrics:
    """A node's registry, its collector and (once :meth:`serve` ran) its HTTP server."""

    def __init__(self, collector: NodeCollector) -> None:
        self.registry = CollectorRegistry()
        self.collector = collector
        self.registry.register(collector)
        # the standard process_* and python_* families, on this node's own registry
        # (read at scrape time on the HTTP thread: /proc, gc.get_stats)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.server: MetricsServer | None = None

    def serve(self, host: str, port: int) -> NodeMetrics:
        self.server = MetricsServer(self.registry, host, port)
        log.info("metrics.serving role=%s url=%s", self.collector.role, self.server.url)
        return self

    @property
    def url(self) -> str | None:
        """Where the metrics are served (``http://host:port/metrics``), or None."""
        return self.server.url if self.server is not None else None

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
