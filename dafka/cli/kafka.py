"""``dafka-kafka``: the Kafka-protocol listener (docs/kafka.md), until interrupted.

It prints ``% kafka listening on HOST:PORT`` on stderr once it listens (with ``--port 0``,
the port it was given), so scripts and tests can find it. ``--memory`` serves topics kept
in the process's memory instead of a Dafka cluster: for trying Kafka clients.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from pathlib import Path
from typing import Any

import click

from ..api.common import node_config
from ..errors import ConfigError
from .common import CONTEXT, Command, common_options, curve_allowed, fanout_option, run_cli

log = logging.getLogger(__name__)

MIB = 1024 * 1024


@click.command(cls=Command, context_settings=CONTEXT)
@common_options("kafka")
@fanout_option
@click.option(
    "--port",
    default=9092,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: a free one).",
)
@click.option(
    "--advertised-host",
    default=None,
    help="The host Kafka clients are told to connect to (default: --host).",
)
@click.option(
    "--advertised-port",
    default=None,
    type=click.IntRange(1, 65535),
    help="The port Kafka clients are told (default: the bound port).",
)
@click.option(
    "--node-id",
    default=None,
    type=click.IntRange(0, 2**31 - 1),
    help="This listener's broker id (default: from its state).",
)
@click.option(
    "--state-dir",
    default=".dafka/kafka",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The listener's own state (its producer keys, its broker id).",
)
@click.option(
    "--admin-key",
    "admin_key_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Admin key to sign topic changes made through the admin APIs.",
)
@click.option(
    "--partition-secret",
    "secret_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="The partition secret every listener of the cluster shares (default: "
    "STATE_DIR/kafka-partitions.secret, made on first start; copy it to the others).",
)
@click.option(
    "--lease-seconds",
    default=10.0,
    show_default=True,
    type=click.FloatRange(1.0, 600.0),
    help="How long a listener's partition and group leases last unrenewed: a listener that "
    "dies is replaced after about this long (its margin is a tenth of it).",
)
@click.option(
    "--memory",
    is_flag=True,
    help="Serve topics kept in memory, not a Dafka cluster (for trying clients).",
)
@click.option(
    "--partitions",
    "default_partitions",
    default=1,
    show_default=True,
    type=click.IntRange(0, 1000),
    help="Partitions of a topic created by a Metadata request that asks for it (0: none is).",
)
@click.option(
    "--max-connections", default=1000, show_default=True, type=click.IntRange(1, 1_000_000)
)
@click.option(
    "--max-connections-per-host",
    default=100,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Connections one client address may hold at once.",
)
@click.option(
    "--max-request-mib",
    default=100,
    show_default=True,
    type=click.IntRange(1, 2047),
    help="Largest request in MiB (Kafka's socket.request.max.bytes).",
)
@click.option(
    "--threads",
    default=32,
    show_default=True,
    type=click.IntRange(1, 1024),
    help="Threads calling the backend.",
)
@click.option(
    "--print-key",
    is_flag=True,
    help="Make the listener's key in --state-dir if it has none, print its public key (what "
    "`dafka listeners add` lists) and exit.",
)
@run_cli
def main(
    tower: str,
    host: str,
    curve: bool,
    curve_allow: str | None,
    tower_fanout: str,
    port: int,
    advertised_host: str | None,
    advertised_port: int | None,
    node_id: int | None,
    state_dir: str,
    admin_key_file: str | None,
    secret_file: str | None,
    lease_seconds: float,
    memory: bool,
    default_partitions: int,
    max_connections: int,
    max_connections_per_host: int,
    max_request_mib: int,
    threads: int,
    print_key: bool,
) -> None:
    """Speak the Kafka protocol on HOST:PORT over the Dafka cluster at --tower."""
    if print_key:
        from ..kafka.lease_leadership import listener_key

        state = Path(state_dir)
        state.mkdir(parents=True, exist_ok=True, mode=0o700)
        click.echo(f"public_key {listener_key(state).public_key.hex()}")
        return
    from ..kafka.server import ServerLimits

    limits = ServerLimits(
        max_connections=max_connections,
        max_connections_per_host=max_connections_per_host,
        max_request_bytes=max_request_mib * MIB,
        pool_threads=threads,
    )
    options = dict(
        tower=tower,
        host=host,
        curve=curve,
        curve_allow=curve_allow,
        tower_fanout=tower_fanout,
        port=port,
        advertised_host=advertised_host or host,
        advertised_port=advertised_port,
        node_id=node_id,
        state_dir=state_dir,
        admin_key_file=admin_key_file,
        secret_file=secret_file,
        lease_seconds=lease_seconds,
        memory=memory,
        default_partitions=default_partitions,
    )
    asyncio.run(_run(limits, options))


async def _run(limits: Any, o: dict[str, Any]) -> None:
    from ..kafka.handlers import Handlers
    from ..kafka.model import Broker
    from ..kafka.server import KafkaServer

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    sock = _bind(o["host"], o["port"])
    bound = int(sock.getsockname()[1])
    node_id = o["node_id"]
    if node_id is None:
        node_id = 0 if o["memory"] else _broker_id(Path(o["state_dir"]))
    broker = Broker(node_id, o["advertised_host"], o["advertised_port"] or bound)
    try:
        backend, groups, group_versions, leadership = _backend(o, broker)
    except BaseException:
        sock.close()
        raise
    server = KafkaServer(Handlers(backend), groups, o["host"], bound, limits, group_versions)
    port = await server.start(sock)
    click.echo(f"% kafka listening on {o['host']}:{port}", err=True)
    try:
        await stop.wait()
    finally:
        if leadership is not None:
            leadership.stop()  # no more renews: the partitions' writes end within the margin
        await server.close()
        close = getattr(backend, "close", None)
        if close is not None:
            close()
        if leadership is not None:
            await asyncio.to_thread(leadership.release)  # others take over at once


def _broker_id(state: Path) -> int:
    from ..kafka.lease_leadership import broker_id

    state.mkdir(parents=True, exist_ok=True)
    return broker_id(state)


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: a free port), bound before the backend is
    made, since the broker address it advertises in Metadata must name the port."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def _backend(o: dict[str, Any], broker: Any) -> tuple[Any, Any, Any, Any]:
    """The backend, the group API, its versions and the leases: in memory, or over the Dafka
    cluster, where the listener holds leases in the metadata (several listeners share the
    partitions; its key is listed in the cluster setting ``listeners``, by this listener
    itself when it has the admin key)."""
    from ..kafka.group_api import VERSIONS, KafkaGroups

    if o["memory"]:
        from ..kafka.memory_backend import MemoryBackend

        memory = MemoryBackend(broker, auto_create_partitions=o["default_partitions"])
        return memory, KafkaGroups(memory, node_id=broker.node_id), VERSIONS, None
    from ..kafka.commits import GroupCommits
    from ..kafka.dafka_backend import DafkaBackend
    from ..kafka.lease_leadership import LeaseLeadership, listener_key, register_listener
    from ..kafka.partition_keys import SECRET_FILE, load_or_create_secret, secret_fingerprint

    state = Path(o["state_dir"])
    state.mkdir(parents=True, exist_ok=True)
    key = listener_key(state)
    secret_file = Path(o["secret_file"]) if o["secret_file"] else state / SECRET_FILE
    secret_id = secret_fingerprint(load_or_create_secret(secret_file))
    register_listener(o["tower"], o["admin_key_file"], key.public_key.hex(), secret_id)
    # the listener's own Dafka nodes (partition writers, group commits) as every node of the
    # cluster: reachable at --host (stores connect to a producer), CURVE when --curve
    node = node_config(
        o["tower"],
        o["host"],
        curve=o["curve"],
        curve_allowed=curve_allowed(o["curve"], o["curve_allow"]),
        tower_fanout=o["tower_fanout"],
    )
    commits = GroupCommits(towers=o["tower"], state_dir=str(state / "groups"), node=node)
    try:
        backend = DafkaBackend(
            towers=o["tower"],
            me=broker,
            state_dir=state,
            secret_file=secret_file,
            admin_key=o["admin_key_file"],
            commits=commits,
            producer_options={"node": node},
        )
    except BaseException:
        commits.close()
        raise
    assert backend.view is not None
    lease_s = o["lease_seconds"]
    leadership = LeaseLeadership(
        towers=o["tower"],
        me=broker,
        key=key,
        view=backend.view,
        lease_s=lease_s,
        margin=lease_s / 10,
        secret_id=secret_id,
    )
    groups = KafkaGroups(backend, node_id=broker.node_id)
    leadership.on_change = backend.release
    leadership.on_group = lambda group, held: groups.won(group) if held else groups.lost(group)
    backend.leadership = leadership
    leadership.start()
    return backend, groups, VERSIONS, leadership


if __name__ == "__main__":
    main()
