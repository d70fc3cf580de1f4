"""``dafka console``: the web console (docs/console.md).

::

    dafka console --tower 127.0.0.1:5556                 # read-only, http://127.0.0.1:8480/
    dafka console --bind 127.0.0.1:0 --admin-key admin.key   # changes signed with the key

Prints ``console on http://HOST:PORT/`` on stderr once it serves, and serves until
SIGINT or SIGTERM. Without ``--admin-key`` it is read-only: the key is never taken from
the environment or ``.dafka/admin.key`` as the other ``dafka`` commands take it, so a
console signs changes only when it was started to.
"""

from __future__ import annotations

import click

from ..metadata.client import DEFAULT_CLUSTER
from .common import SECONDS, Command, common_options, run_cli, wait_for_signal

DEFAULT_BIND = "127.0.0.1:8480"
"""As :data:`dafka.console.serve.DEFAULT_BIND` (not imported here: every ``dafka`` command
imports this module, and only ``dafka console`` needs tornado and the console)."""


@click.command("console", cls=Command)
@common_options("console", node=False)
@click.option(
    "--tower",
    "-t",
    "towers",
    default="127.0.0.1:5556",
    envvar="DAFKA_TOWER",
    show_default=True,
    help="Tower address(es), HOST:PORT of the beacon port, comma-separated.",
)
@click.option(
    "--bind",
    default=DEFAULT_BIND,
    show_default=True,
    help="HOST:PORT the web server listens on (port 0: a free one). Only loopback by "
    "default: anyone who reaches it reads the cluster (docs/console.md).",
)
@click.option(
    "--admin-key",
    "admin_key",
    default=None,
    type=click.Path(dir_okay=False),
    help="Admin key file the console signs changes with (create/alter/delete a topic, "
    "trust a store). Without it the console is read-only.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    help="Another name the Host header may give, NAME (any port) or NAME:PORT (repeatable): "
    "the DNS name a console bound elsewhere is reached by, or a tunnel's local port. "
    "Besides localhost, 127.0.0.1, [::1] and the bound host, on the bound port.",
)
@click.option("--cluster", default=DEFAULT_CLUSTER, envvar="DAFKA_CLUSTER", show_default=True)
@click.option(
    "--timeout",
    default=5.0,
    show_default=True,
    type=SECONDS,
    help="Seconds per cluster request.",
)
@click.option(
    "--series-cap",
    default=1000,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Most series of each of dafka_group_lag_records, dafka_partition_stores and "
    "dafka_partitions_under_min_acks on /metrics, the overflow series included: past it "
    'the rest are folded into one series labelled "_other".',
)
@run_cli
def console(
    towers: str,
    bind: str,
    admin_key: str | None,
    cluster: str,
    timeout: float,
    series_cap: int,
    allow_hosts: tuple[str, ...],
) -> None:
    """Serve a web console of the cluster: towers and Raft, topics and partitions, stores,
    consumer groups and lag, a record browser and live tail, and /metrics."""
    from ..console.serve import Server, parse_bind
    from ..console.web import ConsoleConfig
    from ..metadata.signing import load_admin_key

    host, port = parse_bind(bind)
    if admin_key is not None:
        load_admin_key(admin_key)  # a missing or unreadable key: one line now, not at a change
    server = Server(
        ConsoleConfig(
            towers, host, port, cluster, timeout, admin_key, series_cap, tuple(allow_hosts)
        )
    )
    server.start()
    mode = "read-only" if admin_key is None else "changes signed with the admin key"
    click.echo(f"console on {server.url} ({mode})", err=True)
    try:
        wait_for_signal()
    finally:
        server.stop()
