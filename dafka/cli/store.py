"""``dafka-store``: run a store node until interrupted."""

from __future__ import annotations

import gc

import click

from ..api.common import node_config
from ..errors import DafkaError
from ..io.collector import freeze_heap
from ..io.malloc import keep_freed_memory
from ..storage.scrub import DEFAULT_SCRUB_RATE
from ..store import (
    COMPACTION_PASS_SECONDS,
    DEFAULT_COMPACTION_RATE,
    DEFAULT_SERVE_RATE,
    MIN_SERVE_RATE,
    REPLICATE_INTERVAL,
    Store,
)
from .common import (
    CONTEXT,
    Command,
    common_options,
    curve_allowed,
    fanout_option,
    profile_option,
    run_cli,
    wait_for_signal,
)
from .metrics import announce, metrics_options, metrics_topic_cap_option

MIB = 1024 * 1024
GC_YOUNG_THRESHOLD = 10_000
"""Allocations between collections of the garbage collector's youngest generation in a
store process (CPython's default: 700)."""


def tune_gc() -> None:
    """Collect the youngest generation every ``GC_YOUNG_THRESHOLD`` allocations.

    A store reads up to 20,000 messages a loop turn, and under rfc46 each is a record
    whose decoded message, stored batch and LMDB item live until the turn's commit: at
    CPython's 700 the collector ran about 140 times a turn over these survivors and
    promoted them towards full collections, about 0.75 us of a store's 5.5 us a record
    (handle_batch on LMDB, batches of 20,000 decoded records: 2.0-2.3 us -> 1.5 us).
    Garbage is still freed by reference counting at once; only cycles wait longer, for
    at most this many allocations. The older generations keep their thresholds.
    """
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


@click.command(cls=Command, context_settings=CONTEXT)
@common_options("store")
@profile_option
@fanout_option
@click.option(
    "--data-dir",
    "-d",
    default="storedb",
    show_default=True,
    type=click.Path(file_okay=False),
    help="LMDB data directory.",
)
@click.option("--port", default=0, type=int, help="Data port (default: an ephemeral port).")
@click.option(
    "--query-port",
    default=0,
    type=int,
    help="Port of the query endpoint for pull reads (default: an ephemeral port).",
)
@click.option(
    "--map-size",
    default=64 * 1024 * 1024,
    show_default=True,
    type=int,
    help="Initial LMDB map size in bytes; it grows as needed.",
)
@click.option(
    "--serve-rate",
    "serve_rate_mib",
    default=DEFAULT_SERVE_RATE // MIB,
    show_default=True,
    type=click.FloatRange(MIN_SERVE_RATE / MIB, 1024 * 1024),
    help="MiB per second served to one reader's FETCHes (bursts of twice that, four "
    "times that over all readers): what readers may cost this store, and the speed of "
    "a catch-up past its burst.",
)
@click.option(
    "--commit-thread",
    is_flag=True,
    help="Commit each drain on a writer thread while the next is received and verified "
    '(docs/architecture.md, "The store\'s writer thread"; off: it did not pay where measured).',
)
@click.option(
    "--replicate-interval",
    default=REPLICATE_INTERVAL,
    show_default=True,
    type=click.FloatRange(0.05, 3600),
    help="Seconds between two rounds of asking the other stores what they hold, to fetch "
    "what this store lacks (re-replication after a lost disk; docs/wire.md).",
)
@click.option(
    "--scrub-rate",
    "scrub_rate_mib",
    default=DEFAULT_SCRUB_RATE / MIB,
    show_default=True,
    type=click.FloatRange(0, 1024 * 1024),
    help="MiB per second the background scrub reads to check every stored batch against "
    "its digest (0: no scrub; docs/storage.md).",
)
@click.option(
    "--compaction-rate",
    "compaction_rate_mib",
    default=DEFAULT_COMPACTION_RATE / MIB,
    show_default=True,
    type=click.FloatRange(0, 1024 * 1024),
    help="MiB per second the compaction of compacted topics (cleanup_policy compact) reads "
    'and writes (0: none; docs/storage.md, "Compacted topics").',
)
@click.option(
    "--compaction-pass",
    default=COMPACTION_PASS_SECONDS,
    show_default=True,
    type=click.FloatRange(0.1, 86400),
    help="Seconds from the start of one compaction pass to the start of the next.",
)
@metrics_options
@metrics_topic_cap_option
@run_cli
def main(
    tower: str,
    host: str,
    curve: bool,
    curve_allow: str | None,
    profile: str,
    tower_fanout: str,
    data_dir: str,
    port: int,
    query_port: int,
    map_size: int,
    serve_rate_mib: float,
    commit_thread: bool,
    replicate_interval: float,
    scrub_rate_mib: float,
    compaction_rate_mib: float,
    compaction_pass: float,
    metrics_port: int | None,
    metrics_host: str,
    metrics_topic_cap: int,
) -> None:
    """Persist the records of every topic, acknowledge them and serve fetches."""
    keep_freed_memory()  # see dafka.io.malloc
    tune_gc()
    store = Store(
        data_dir,
        node=node_config(
            tower,
            host,
            port,
            curve=curve,
            curve_allowed=curve_allowed(curve, curve_allow),
            tower_fanout=tower_fanout,
        ),
        map_size=map_size,
        query_port=query_port,
        profile=profile,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        metrics_topic_cap=metrics_topic_cap,
        serve_rate=serve_rate_mib * MIB,
        commit_thread=commit_thread,
        replicate_interval=replicate_interval,
        scrub_rate=scrub_rate_mib * MIB,
        compaction_rate=compaction_rate_mib * MIB,
        compaction_pass=compaction_pass,
    ).start()
    freeze_heap()  # the node has started: see dafka.io.collector
    click.echo(
        f"store {store.node_id} on {store.endpoint} query {store.query_endpoint}, "
        f"data in {store.path}, profile {store.profile}, "
        f"public key {store.identity.public_key.hex()}",
        err=True,
    )
    announce(store.metrics)

    def check() -> None:
        if store.damaged is not None:  # exit non-zero: a supervisor restarts it
            raise DafkaError(f"the store stopped: {store.damaged}")
        if not store.alive:  # a node nobody can reach must not look alive
            raise DafkaError("the store's IO thread stopped (see the log above)")

    try:
        wait_for_signal(check)
    finally:
        store.stop()


if __name__ == "__main__":
    main()
