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

from ..errors import ConfigError
from .common import CONTEXT, Command, common_options, run_cli

log = logging.getLogger(__name__)

MIB = 1024 * 1024


@click.command(cls=Command, context_settings=CONTEXT)
@common_options("kafka")
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
@run_cli
def main(
    tower: str,
    host: str,
    curve: bool,
    curve_allow: str | None,
    port: int,
    advertised_host: str | None,
    advertised_port: int | None,
    node_id: int | None,
    state_dir: str,
    admin_key_file: str | None,
    memory: bool,
    default_partitions: int,
    max_connections: int,
    max_request_mib: int,
    threads: int,
) -> None:
    """Speak the Kafka protocol on HOST:PORT over the Dafka cluster at --tower."""
    from ..kafka.server import ServerLimits

    limits = ServerLimits(
        max_connections=max_connections,
        max_request_bytes=max_request_mib * MIB,
        pool_threads=threads,
    )
    options = dict(
        tower=tower,
        host=host,
        curve=curve,
        curve_allow=curve_allow,
        port=port,
        advertised_host=advertised_host or host,
        advertised_port=advertised_port,
        node_id=node_id,
        state_dir=state_dir,
        admin_key_file=admin_key_file,
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
    node_id = o["node_id"] if o["node_id"] is not None else 0
    broker = Broker(node_id, o["advertised_host"], o["advertised_port"] or bound)
    try:
        backend, groups, group_versions = _backend(o, broker)
    except BaseException:
        sock.close()
        raise
    server = KafkaServer(Handlers(backend), groups, o["host"], bound, limits, group_versions)
    port = await server.start(sock)
    click.echo(f"% kafka listening on {o['host']}:{port}", err=True)
    try:
        await stop.wait()
    finally:
        await server.close()
        close = getattr(backend, "close", None)
        if close is not None:
            close()


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


def _backend(o: dict[str, Any], broker: Any) -> tuple[Any, Any, Any]:
    """The backend, the group API and its versions: in memory, or over the Dafka cluster.
    The Dafka backend and the group API are other modules of the front door, imported
    here only (a build without them refuses with one line, or serves no groups)."""
    if o["memory"]:
        from ..kafka.memory_backend import MemoryBackend

        backend: Any = MemoryBackend(broker, auto_create_partitions=o["default_partitions"])
    else:
        try:
            from ..kafka.commits import GroupCommits  # type: ignore[import-not-found,unused-ignore]
            from ..kafka.dafka_backend import DafkaBackend  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise ConfigError(
                "this build has no Dafka backend for the Kafka listener: use --memory"
            ) from None
        state = Path(o["state_dir"])
        state.mkdir(parents=True, exist_ok=True)
        commits = GroupCommits(towers=o["tower"], state_dir=str(state / "groups"))
        backend = DafkaBackend(
            towers=o["tower"],
            me=broker,
            state_dir=state,
            admin_key=o["admin_key_file"],
            commits=commits,
        )
    try:
        from ..kafka.group_api import VERSIONS, KafkaGroups  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        log.warning("this build has no consumer-group API: groups are not served")
        return backend, None, None
    return backend, KafkaGroups(backend), VERSIONS


if __name__ == "__main__":
    main()
