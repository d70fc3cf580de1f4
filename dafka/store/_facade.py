"""The public Store: persists records in LMDB, acknowledges, serves fetches.

A store is one node (one ID for what the C reference splits into a writer
and a reader). Besides its data sockets it serves pull reads on a query
endpoint (``docs/query.md``) from the same IO thread, and announces that
endpoint to the towers with a service beacon. Its identity is the Ed25519 key
in its data directory (``node.key``; the node ID is derived from it and kept in
LMDB's meta too), so a restarted store is the same store, and under the
``signed`` profile (the default) its ACKs are signed with that key. Every drained batch of records is one LMDB write
transaction, committed with fsync before any ACK goes out.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ..api.common import node_config
from ..config import NodeConfig, check_profile
from ..core import messages as m
from ..core.effects import Publish
from ..core.read_guard import ReadView
from ..core.topic_counts import DEFAULT_TOPIC_CAP, check_topic_cap
from ..errors import ConfigError, DafkaError, StorageError
from ..io.bounds import xpub_hwm
from ..io.metrics import DEFAULT_HOST, NodeMetrics, check_metrics_port
from ..io.node import MAX_DRAIN_BYTES, NodeHandler, NodeLoop
from ..io.node_metrics import disk_usage, store_metrics
from ..io.ready_shell import run_ready
from ..io.ready_writer import WriterThread
from ..metadata.client import tower_curve
from ..metadata.follower import MetadataView, require_transport
from ..metadata.state import topic_settings
from ..query.budget import QueryLimits
from ..query.server import QueryService
from ..security import identity as identity_module
from ..storage.base import Storage, StoredBatch
from ..storage.held_file import HeldFile
from ..storage.lmdb_store import LmdbStorage
from ..storage.scrub import DEFAULT_SCRUB_RATE, Scrubber
from ..storage.state_dir import lock_directory, make_data_dir, unlock_directory
from ..wire.profiles import make_profile
from . import StoreCore
from ._compaction import COMPACTION_PASS_SECONDS, DEFAULT_COMPACTION_RATE, Compactor
from ._credits import credits_for_hwm
from ._pipeline import StorePipeline
from ._replicate import REPLICATE_INTERVAL

log = logging.getLogger(__name__)

__all__ = ["Store"]


class _Appends:
    """The store's :class:`~dafka.core.ready.Persister` on the IO thread: a commit's
    records appended in one synced transaction (``Storage.append``)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self.observe: Callable[[float], None] | None = None
        """Given the seconds each commit took (``dafka_store_commit_seconds``), if set."""

    def persist(self, writes: Sequence[StoredBatch], sync: bool) -> None:
        observe = self.observe
        if observe is None:
            self._storage.append(writes)  # durable (fsynced) when it returns, always
            return
        start = time.perf_counter()
        self._storage.append(writes)
        observe(time.perf_counter() - start)


class _StoreHandler(NodeHandler):
    def __init__(
        self,
        core: StoreCore,
        query: QueryService,
        retention_interval: float = 5.0,
        frame_bytes: int = 16 * 1024 * 1024,
        storage: LmdbStorage | None = None,
        held_file: HeldFile | None = None,
        env: LmdbStorage | None = None,
        scrub_rate: float = DEFAULT_SCRUB_RATE,
        compaction_rate: float = DEFAULT_COMPACTION_RATE,
        compaction_pass: float = COMPACTION_PASS_SECONDS,
    ) -> None:
        self.core = core
        self._appends = _Appends(core.storage)
        self.held_file = held_file  # saves core.held (dafka.storage.held_file)
        # the environment whose damage stops the store, and its background scrub
        self._env = env
        self.scrubber = Scrubber(env, scrub_rate) if env is not None else None
        stats = core.stats
        # the background compaction of compacted topics (dafka.store._compaction)
        self.compactor = Compactor(
            core.storage,
            core.policy.compacted,
            stats,
            held=lambda: core.held,
            generation=lambda: (stats.superseded, stats.retention_skips),
            rate=compaction_rate,
            min_pass=compaction_pass,
        )
        self._loop: NodeLoop | None = None
        self.damaged: StorageError | None = None
        """Why the store stopped: its environment said it is damaged."""
        self.query = query
        # given: commits on a writer thread (dafka.store._pipeline), made in on_start
        # (it reports through the loop's call()); None: each drain committed on the IO thread
        self._storage = storage
        self.pipeline: StorePipeline | None = None
        self._writer: WriterThread | None = None
        self._out: list[Publish] = []  # what a settle() in a command produced (ACKs)
        self.retention_interval = retention_interval
        self._next_retention = 0.0
        self._retry_deletions: tuple[dict[str, int], dict] | None = None
        self._clock = time.monotonic
        # signed: the data XPUB keeps a byte-safe count of the largest frame a peer can
        # make it send, and the core paces each requester to it (dafka.store._credits,
        # dafka.io.bounds)
        self.xpub_frame_bytes = frame_bytes if core.paces_requesters else None
        self.observe_ack: Callable[[float], None] | None = None
        """Given, as a drain's ACKs leave, the seconds since it was received
        (``dafka_store_ack_latency_seconds``; set with :meth:`time_commits`)."""

    def time_commits(self, commit: Callable[[float], None], ack: Callable[[float], None]) -> None:
        """Time each commit (its LMDB write transaction and fsync) and each drain from
        its receipt to its ACKs (metrics on; before the loop starts)."""
        self._appends.observe = commit
        self.observe_ack = ack

    def _acks_timed(self, out: list[Publish]) -> list[Publish]:
        """``out``, about to be sent; the ACK latency of the drains whose ACKs it holds is
        observed now (one observation per drain, not per record)."""
        self._observe_acks()
        return out

    def _observe_acks(self) -> None:
        observe = self.observe_ack
        if observe is not None and self.core.ack_receipts:
            now = self._clock()
            for received in self.core.take_ack_receipts():
                observe(max(0.0, now - received))

    def services(self) -> list[QueryService]:
        return [self.query]

    def subscriptions(self) -> list[bytes]:
        return self.core.subscriptions()

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        self._clock = loop.clock
        self._loop = loop
        if self._storage is not None:
            self._writer = WriterThread(f"{threading.current_thread().name}-writer")
            call = loop.call
            if self.observe_ack is not None:  # a commit's report sends its ACKs: timed

                def call(fn: Callable[[float], list[Any]]) -> None:
                    def timed(now: float) -> list[Any]:
                        out = fn(now)
                        self._observe_acks()
                        return out

                    loop.call(timed)

            self.pipeline = StorePipeline(
                self.core, self._storage, self._writer.submit, call, self._appends.observe
            )
        return []

    def _settle(self, now: float) -> list[Publish]:
        """Before the IO thread writes the environment: no commit in flight."""
        return self.pipeline.settle(now) if self.pipeline is not None else []

    def has_pending(self) -> bool:
        return self.core.has_pending(self._clock())

    def command_deadline(self) -> float | None:
        """When fetches waiting for a requester's credit, or head answers waiting for the
        DIRECT-HEAD budget, can go on, or queries waiting for the query replies' byte rate
        (None: nothing waits)."""
        due = self.core.serve_at
        fetches = due if due != math.inf and self.core.has_pending() else None
        queries = self.query.due()
        if fetches is None or queries is None:
            return fetches if queries is None else queries
        return min(fetches, queries)

    def accepting(self) -> bool:
        return self.pipeline is None or self.pipeline.accepting()

    def drain_budget(self) -> int:
        return self.pipeline.drain_budget() if self.pipeline is not None else MAX_DRAIN_BYTES

    def on_commands(self, now: float) -> list[Publish]:
        if self.query.waiting:
            self.query.on_tick(now)  # each turn while queries wait (dafka.query.budget)
        out, self._out = self._out, []
        return self._acks_timed(out)

    def set_policy(
        self, topics: dict, deleted: dict[str, int], stores: tuple[str, ...] = ()
    ) -> None:
        """On the IO thread (queued with NodeLoop.call): topic settings, deletions and the
        trusted stores from the metadata."""
        self._out.extend(self._settle(self._clock()))  # sent by on_commands, this turn
        self.core.set_policy(topics, stores)
        self._next_retention = 0.0
        self._apply_deletions(deleted, topics)

    def _apply_deletions(self, deleted: dict[str, int], topics: dict) -> None:
        self._retry_deletions = None
        try:
            self.core.apply_deletions(deleted, topics)
        except DafkaError as exc:  # retried at the next retention check
            log.warning("store.topic_delete.failed error=%s", exc)
            self._retry_deletions = deleted, topics

    def on_messages(
        self, msgs: list[m.Message], now: float, sources: Sequence[str] = ()
    ) -> list[Publish]:
        if self.pipeline is not None:
            out = self.pipeline.on_messages(msgs, now, sources)
        else:  # persist, then publish (the ACKs after their commit), on this thread
            self.core.step(msgs, now, sources)
            out = []
            run_ready(self.core, self._appends, out.extend)  # type: ignore[arg-type]  # Publish only
        return self._unless_damaged(out)

    def _unless_damaged(self, out: list[Publish]) -> list[Publish]:
        """``out``, or nothing and a stopping loop once the environment said it is damaged:
        a store must not go on acknowledging (or announcing itself) from it. The process
        then exits non-zero (``dafka.cli.store``) for a supervisor to restart it, which
        checks the file again before opening it (``dafka.storage.integrity``)."""
        env = self._env
        # guard: store-stops-acknowledges-nothing
        if env is None or env.damaged is None:
            return self._acks_timed(out)
        if self.damaged is None:
            self.damaged = env.damaged
            log.critical(
                "store.stopping reason=damaged-environment error=%s "
                "hint=restart it; if it fails again, wipe the data directory (keep node.key) "
                "and the other stores refill it",
                env.damaged,
            )
            if self._loop is not None:
                self._loop.stop()  # on the loop thread: only flags it
        return []  # no ACK (nor anything else) from a damaged environment

    def _run(self, publish: Sequence[Publish] = ()) -> list[Publish]:
        """``publish`` (what the core made outside a drain) through the core's Readies:
        at once, even with a commit in flight (:meth:`StorePipeline.run`)."""
        core = self.core
        core.push(publish)
        if self.pipeline is not None:
            return self.pipeline.run()
        out: list[Publish] = []
        run_ready(core, self._appends, out.extend)  # type: ignore[arg-type]  # Publish only
        return out

    def on_subscription(self, sub: m.Subscription, now: float) -> list[Publish]:
        return self._acks_timed(self._run(self.core.on_subscription(sub, now)))

    def on_tick(self, now: float) -> list[Publish]:
        self.query.on_tick(now)  # queries waiting for their bytes (dafka.query.budget)
        out: list[Publish] = []
        if now >= self._next_retention:
            out = self._settle(now)  # retention and deletions write: no commit in flight
            self._next_retention = now + self.retention_interval
            if self._retry_deletions is not None:
                self._apply_deletions(*self._retry_deletions)
            try:
                self.core.apply_retention(time.time_ns() // 1_000_000, time.monotonic_ns() // 10**6)
            except DafkaError as exc:
                log.warning("store.retention.failed error=%s", exc)
            if self.held_file is not None and self.core.held is not None:
                self.held_file.save(self.core.held, now)
        pipeline, core = self.pipeline, self.core
        core.push(core.replicate(now))  # asks the other stores what they hold
        core.push(core.tick(now, gaps=pipeline is None or not pipeline.in_flight))
        out.extend(self._run())
        env = self._env
        # writes: only while no commit is in flight (never waits for one)
        if (env is None or env.damaged is None) and (pipeline is None or not pipeline.in_flight):
            try:
                self.compactor.step(now, time.time_ns() // 1_000_000)
            except StorageError as exc:  # damage is acted on below; anything else waits
                log.warning("store.compaction.failed error=%s", exc)
        if self.scrubber is not None and env is not None and env.damaged is None:
            try:
                self.scrubber.step(now)
                out.extend(self._repair(env, now))
            except StorageError as exc:  # damage is acted on below; anything else waits
                log.warning("store.scrub.failed error=%s", exc)
        return self._unless_damaged(out)

    def _repair(self, env: LmdbStorage, now: float) -> list[Publish]:
        """Write the verified copies that came over the corrupt batches, and ask the other
        stores for the rest (``dafka.store._repair``)."""
        repair = self.core.repair
        out: list[Publish] = []
        ready = repair.take()
        if ready:
            out.extend(self._settle(now))  # replace() writes: no commit in flight
            for batch in ready:
                env.replace(batch)
        if env.bad:
            out.extend(self._run(repair.ask(list(env.bad.values()), now)))
        return out

    def on_stop(self) -> None:
        """Wait for the commit in flight (its ACKs are not sent: the loop is stopping), so
        that LMDB is closed with no transaction open."""
        if self.pipeline is not None:
            self.pipeline.settle(self._clock(), timeout=10.0)
        if self._writer is not None:
            self._writer.stop()
        if self.held_file is not None and self.core.held is not None:
            self.held_file.save(self.core.held, self._clock(), force=True)


def open_data_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) if needed and check it is a writable directory; warn if
    others may read it."""
    make_data_dir(path)
    if path.stat().st_mode & 0o077:
        log.warning("store.permissions dir=%s hint=chmod 700", path)
    return path


DEFAULT_SERVE_RATE = 512 * 1024 * 1024
"""Bytes per second a store serves one requester by default (``docs/wire.md`` §11.6): a
catch-up of up to 1 GiB (twice the rate) at the speed of the store and the reader, past it
about 5M records of 100 B a second. 64 MiB until the data XPUB's queue per connection and
the store's pacing of it (:mod:`dafka.store._credits`) bounded what a reader that never
reads piles up: the rate no longer has to, and 3M records caught up at 0.9M a second."""
MIN_SERVE_RATE = 1024 * 1024


class Store:
    """A running store node. ``start()`` binds and joins; ``stop()`` closes LMDB."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        towers: str | Iterable[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        map_size: int = 64 * 1024 * 1024,
        node: NodeConfig | None = None,
        query_port: int = 0,
        profile: str = "signed",
        metadata: bool | None = None,
        cluster: str = "dafka",
        retention_interval: float = 5.0,
        metrics_port: int | None = None,
        metrics_host: str = DEFAULT_HOST,
        serve_rate: float = DEFAULT_SERVE_RATE,
        commit_thread: bool = False,
        query_limits: QueryLimits | None = None,
        replicate_interval: float = REPLICATE_INTERVAL,
        scrub_rate: float = DEFAULT_SCRUB_RATE,
        compaction_rate: float = DEFAULT_COMPACTION_RATE,
        compaction_pass: float = COMPACTION_PASS_SECONDS,
        metrics_topic_cap: int = DEFAULT_TOPIC_CAP,
    ) -> None:
        """``metrics_port``: serve Prometheus metrics on ``metrics_host:metrics_port``
        (0: a free port, see :attr:`metrics`; None: none; ``docs/metrics.md``);
        ``metrics_topic_cap``: topics with per-topic series of their own, the rest counted
        under ``topic="_other"``.
        ``serve_rate``: bytes per second one requester is served in answer to its FETCHes
        (bursts of twice that), four times that over all requesters (``docs/wire.md``
        §11.6): what readers may cost this store each second, and what a catch-up from
        this store runs at past its first burst.
        ``commit_thread``: commit each drain on a writer thread while the IO thread receives
        and verifies the next (``dafka.store._pipeline``); off by default, since on the
        2-core machine it was measured on it gained nothing and cost CPU
        (``docs/architecture.md``, "The store's writer thread").
        ``query_limits``: what the query endpoint's replies may cost (bytes queued per
        connection and in all, bytes per second; ``docs/query.md``, "Bounds").
        ``replicate_interval``: seconds between two rounds of asking the other stores what
        they hold, to fetch what this store lacks (``dafka.store._replicate``).
        ``scrub_rate``: bytes per second the background scrub reads and checks (0: no
        scrub; ``docs/storage.md``).
        ``compaction_rate``: bytes per second the compaction of compacted topics reads
        and writes (0: none); ``compaction_pass``: seconds from the start of one pass to
        the next (``docs/storage.md``, "Compacted topics")."""
        if not MIN_SERVE_RATE <= serve_rate < math.inf:
            raise ConfigError(
                f"serve_rate must be at least {MIN_SERVE_RATE} bytes per second, not {serve_rate}"
            )
        self.profile = check_profile(profile)
        self._metrics_at = (metrics_host, check_metrics_port(metrics_port))
        self.metrics: NodeMetrics | None = None
        self.path = open_data_dir(Path(path))
        self._nconf = node_config(towers, host, port, config=node)
        if not 0 <= query_port < 65536:
            raise ConfigError(f"bad query port {query_port}")
        # One store per directory: a second one would ACK with the same identity
        # from heads it does not share. Held until stop().
        self._lock_fd: int | None = lock_directory(self.path, "data directory", "another store")
        self._storage: LmdbStorage | None = None
        try:
            self.identity = identity_module.load_or_create(self.path)
            self._storage = LmdbStorage(
                self.path, map_size=map_size, node_id=self.identity.node_id, probe=True
            )
            self.node_id = self._storage.node_id()
            wire = make_profile(self.profile, self.identity)
            nconf = self._nconf
            self.core = StoreCore(
                self.node_id,
                self._storage,
                profile=wire,
                send_credits=credits_for_hwm(xpub_hwm(nconf, nconf.max_message_size)),
                serve_rate=serve_rate,
                serve_total_rate=4 * serve_rate,
                replicate_interval=replicate_interval,
                topic_cap=check_topic_cap(metrics_topic_cap),
            )
            held_file = HeldFile(self.path)
            self.core.held = held_file.load()
            self.query = QueryService(
                self._storage,
                port=query_port,
                profile=self.profile,
                readers=self.core.readers_of,
                limits=query_limits,
                disk=partial(disk_usage, self.path),
            )
            self._handler = _StoreHandler(
                self.core,
                self.query,
                retention_interval,
                nconf.max_message_size,
                self._storage if commit_thread else None,
                held_file,
                env=self._storage,
                scrub_rate=scrub_rate,
                compaction_rate=compaction_rate,
                compaction_pass=compaction_pass,
            )
            self._loop = NodeLoop(
                self.node_id,
                self._nconf,
                self._handler,
                name=f"dafka-store-{self.node_id[:8]}",
                profile=wire,
                identity=self.identity,
                read_view=None if metadata is not False else ReadView(),
            )
            if metrics_port is not None:
                self.metrics = store_metrics(
                    self._loop,
                    self.core,
                    self._storage,
                    self.query,
                    self.profile,
                    self._handler.time_commits,
                )
        except BaseException:
            self._close_storage()
            raise
        self._started = False
        self._follow = metadata
        self._cluster = cluster
        self.metadata: MetadataView | None = None
        """The cluster metadata this store follows (topic ACLs and retention)."""

    def _follow_metadata(self) -> None:
        handler = self._handler
        nconf = self._nconf
        curve = tower_curve(nconf.towers, self.identity)  # towers given with @KEY
        view = MetadataView([str(t) for t in nconf.towers], cluster=self._cluster, curve=curve)
        self.metadata = view
        if not view.start(wait=5.0 if self._follow else 1.0) and self._follow:
            raise ConfigError("no tower's metadata peer answered")
        require_transport(view, nconf.curve)
        self._loop.gate.follow(view)

        def on_change(config: dict) -> None:
            topics = {n: topic_settings(t) for n, t in config["topics"].items()}
            deleted = dict(config.get("deleted", {}))
            stores = tuple(config.get("stores", ()))

            def apply(now: float) -> list[Publish]:
                handler.set_policy(topics, deleted, stores)
                self._loop.set_read_view(ReadView.of(topics, stores))
                return []

            self._loop.call(apply)  # in order, never overwritten by the next change

        view.subscribe(on_change)

    @property
    def endpoint(self) -> str:
        return self._loop.endpoint

    @property
    def query_endpoint(self) -> str:
        """Where the store answers pull reads (HEADS, READ): ``tcp://host:port``."""
        return self.query.endpoint

    def start(self) -> Store:
        try:
            host, port = self._metrics_at
            if self.metrics is not None and port is not None:
                self.metrics.serve(host, port)  # first: a busy port fails before anything
            if self._follow is not False:
                # before the loop reads any data: the first configuration (topic deletions
                # included) is the first command the loop runs
                self._follow_metadata()
            self._loop.start()
        except BaseException:
            if self.metrics is not None:
                self.metrics.close()
            if self.metadata is not None:
                self.metadata.stop()
            if self._loop.alive:
                self._loop.stop()
            self._close_storage()
            raise
        self._started = True
        log.info(
            "store.start id=%s path=%s endpoint=%s query=%s",
            self.node_id,
            self.path,
            self.endpoint,
            self.query_endpoint,
        )
        return self

    def stop(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
        if self.metadata is not None:
            self.metadata.stop()
        if self._started:
            self._loop.stop()
            self._started = False
        self._close_storage()

    def _close_storage(self) -> None:
        """Close LMDB, then release the directory (idempotent)."""
        if self._storage is not None:
            self._storage.close()
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            unlock_directory(fd)

    @property
    def alive(self) -> bool:
        return self._loop.alive

    @property
    def damaged(self) -> StorageError | None:
        """Why the store stopped on its own: its environment said it is damaged."""
        return self._handler.damaged

    def __enter__(self) -> Store:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
