"""``dafka query``: read a topic from the stores' query endpoints (pull reads).

::

    dafka query heads [TOPIC ...] --tower HOST:PORT[@KEY]   (endpoint topic partition low high)
    dafka query read TOPIC --tower HOST:PORT[@KEY] [--key-file FILE]

Stores are found through the towers' service beacons; ``--store ENDPOINT`` names one
instead. With towers given as ``HOST:PORT@KEY`` (a ``--curve`` cluster) everything is
CURVE: the client's key is ``--key-file`` (a ``dafka-keys`` node key file, or a directory
holding ``node.key``; a fresh key when not given) and each store's key comes from its
beacon, or ``--store-key``. ``read`` prints every record value of the topic, one per line,
partition by partition, each batch checked against its producer's signature. A store that
refuses (a read ACL that does not name the key: ``forbidden``; a key it does not admit at
all: no answer) is one line on stderr and exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import ConfigError, DafkaError
from ..query.client import QueryClient, load_client_key, records
from ..query.locator import StoreLocator
from ..security import identity
from ..security.curve_keys import parse_public_key
from .common import CONTEXT, SECONDS, Group, common_options, run_cli

F = TypeVar("F", bound=Callable[..., Any])


def _key(key_file: str | None) -> identity.Identity | None:
    return None if key_file is None else load_client_key(key_file)


def _clients(
    tower: str,
    store: str | None,
    store_key: str | None,
    key_file: str | None,
    timeout: float,
) -> list[QueryClient]:
    """A client of each store to ask (the one named, or every store the towers relay)."""
    me = _key(key_file)
    if store is not None:
        server = parse_public_key(store_key) if store_key else None
        if server is None and me is not None:
            raise ConfigError("--store with --key-file needs --store-key (the store's public key)")
        endpoint = store if store.startswith("tcp://") else f"tcp://{store}"
        return [QueryClient(endpoint, timeout=timeout, key=me, server_key=server)]
    with StoreLocator(tower, key=me) as locator:
        stores = locator.stores()
        keys = locator.keys()
        curve = locator.curve
        me = locator.key
    if not stores:
        hint = (
            # a refused handshake looks like silence to the client
            " (or the cluster does not admit this client's key: curve_clients, clients)"
            if curve
            else " (towers that run --curve need --tower HOST:PORT@KEY)"
        )
        raise DafkaError(f"no store heard through the towers ({tower}) in a beacon interval{hint}")
    out = []
    for node_id, endpoint in stores.items():
        server = keys.get(node_id) if curve else None
        if curve and server is None:
            continue  # its node beacon (and key) not heard yet
        out.append(QueryClient(endpoint, timeout=timeout, key=me, server_key=server))
    if not out:
        raise DafkaError("no store's public key heard through the towers yet: try again")
    return out


_OPTIONS = [
    click.option(
        "--tower",
        "-t",
        default="127.0.0.1:5556",
        envvar="DAFKA_TOWER",  # as every command: a subcommand's automatic name would differ
        show_default=True,
        help="Tower address(es), HOST:PORT (HOST:PORT@KEY under CURVE), comma-separated.",
    ),
    click.option("--store", default=None, help="A store's query endpoint HOST:PORT instead."),
    click.option("--store-key", default=None, help="That store's public key (64 hex), CURVE."),
    click.option(
        "--key-file",
        default=None,
        type=click.Path(),
        help="This client's CURVE key: a dafka-keys node key file (or its directory).",
    ),
    click.option(
        "--timeout", default=5.0, show_default=True, type=SECONDS, help="Seconds per request."
    ),
]


def _query_options(f: F) -> F:
    for option in reversed(_OPTIONS):
        f = option(f)
    return common_options("admin", node=False)(f)  # --config, --log-level as every dafka command


@click.group(cls=Group, context_settings=CONTEXT)
def query() -> None:
    """Pull reads from the stores' query endpoints."""


@query.command("heads")
@click.argument("topics", nargs=-1)
@_query_options
@run_cli
def heads(
    topics: tuple[str, ...],
    tower: str,
    store: str | None,
    store_key: str | None,
    key_file: str | None,
    timeout: float,
) -> None:
    """What each store holds of each partition (of TOPICS, or of all), one line each:
    ``endpoint topic partition low high``, Kafka's watermarks: ``low`` the first offset the
    store holds, ``high`` the next offset to be written (one past its newest)."""
    found = 0
    for client in _clients(tower, store, store_key, key_file, timeout):
        with client:
            for p in client.heads(list(topics) or None):
                high = p.head + 1  # the wire's head is the newest offset held (inclusive)
                click.echo(f"{client.endpoint} {p.topic} {p.partition} {p.tail} {high}")
                found += 1
    if not found:
        what = f"of {', '.join(topics)}" if topics else "at all"
        click.echo(f"no partitions: the stores hold nothing {what}", err=True)


@query.command("read")
@click.argument("topic")
@_query_options
@run_cli
def read(
    topic: str,
    tower: str,
    store: str | None,
    store_key: str | None,
    key_file: str | None,
    timeout: float,
) -> None:
    """Print every record value of TOPIC held by the first store that holds it."""
    out = sys.stdout.buffer
    for client in _clients(tower, store, store_key, key_file, timeout):
        with client:
            parts = client.heads([topic])
            if not parts:
                continue
            for p in parts:
                for reply in client.read_range(topic, p.partition, p.tail, p.head + 1):
                    for rec in records(reply, p.tail, p.head + 1):
                        out.write((rec.value or b"") + b"\n")  # a tombstone: empty, as kcat
            out.flush()
            return
    raise DafkaError(f"no store holds topic {topic!r}")
