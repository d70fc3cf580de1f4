"""``dafka``: administer the cluster metadata held by the towers' Raft group.

::

    dafka topics create events --min-acks 2 --retention-ms 7d
    dafka topics list | describe events | alter events --retention-bytes 1G | delete events
    (describe: the settings as given, 7d / 1G / none / any, then each partition's low and
    high watermarks, Kafka's: the first offset held, the next offset to be written, and
    the store that holds it, asked on the stores' query endpoints)
    dafka stores trust <node ID or public key> | list | revoke <key>
    (list: every trusted or heard store with its trust, query address and holdings)
    dafka cluster status | set --no-auto-create | set --curve --curve-clients metadata
    dafka admins list | add <public key> | remove <public key>
    dafka topics create T --partitions 6   (a Kafka topic: numbered partitions, only grows)
    dafka listeners list | add <public key> | remove <public key>   (dafka-kafka keys)
    dafka query heads [TOPIC ...] | read TOPIC [--key-file FILE]   (dafka.cli.query)
    dafka groups list | describe GROUP   (dafka.cli.groups)
    dafka console [--bind HOST:PORT] [--admin-key FILE]   (dafka.cli.console, a web console)

Writes go through the Raft leader, signed with the admin key file ``--admin-key``
(default ``$DAFKA_ADMIN_KEY``, else ``.dafka/admin.key``, which ``dafka-local`` makes);
reads are linearizable and need no key. Errors (an unknown topic, a bad setting, no
admin key, a key that is not an admin, no reachable leader) are one line on stderr
and a non-zero exit (2 for a user mistake, 1 otherwise).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..config import parse_trusted_stores
from ..errors import ConfigError, DafkaTimeout
from ..ids import is_group_topic
from ..metadata.client import DEFAULT_CLUSTER, MetadataClient
from ..metadata.state import TOPIC_DEFAULTS
from .common import CONTEXT, SECONDS, Group, admin_key_option, common_options, run_cli
from .console import console
from .groups import groups
from .holdings import StoreView, below_min_acks, copies, human, survey
from .query import query

F = TypeVar("F", bound=Callable[..., Any])

_UNITS_MS = {"": 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_UNITS_BYTES = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_AMOUNT = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def _amount(text: str | None, what: str, units: dict[str, int]) -> int | None | str:
    """``none`` → None (keep forever / unset); ``7d``, ``1G``, ``500`` → an int."""
    if text is None:
        return "unset"
    if text.strip().lower() in ("none", "forever", "off"):
        return None
    m = _AMOUNT.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in units:
        raise ConfigError(
            f"bad {what} {text!r}: a number with an optional unit ({', '.join(u for u in units if u)})"
            " or none"
        )
    return int(m.group(1)) * units[unit]


_ACLS = ("producers", "consumers")


def _settings(
    retention_ms: str | None,
    retention_bytes: str | None,
    min_acks: int | None,
    profile: str | None,
    max_record_bytes: str | None,
    producers: str | None,
    consumers: str | None = None,
    compression: str | None = None,
    cleanup_policy: str | None = None,
    delete_retention_ms: str | None = None,
    max_future_ms: str | None = None,
    partitions: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if partitions is not None:
        out["partitions"] = partitions
    for name, value in (
        ("retention_ms", _amount(retention_ms, "--retention-ms", _UNITS_MS)),
        ("retention_bytes", _amount(retention_bytes, "--retention-bytes", _UNITS_BYTES)),
        ("max_record_bytes", _amount(max_record_bytes, "--max-record-bytes", _UNITS_BYTES)),
    ):
        if value != "unset":
            out[name] = value
    for name, text, flag in (
        ("delete_retention_ms", delete_retention_ms, "--delete-retention-ms"),
        ("max_future_ms", max_future_ms, "--max-future-ms"),
    ):
        amount = _amount(text, flag, _UNITS_MS)
        if amount is None:
            raise ConfigError(f"bad {flag} {text!r}: a duration (0 for none), not none")
        if amount != "unset":
            out[name] = amount
    if compression is not None:
        out["compression"] = None if compression == "none" else compression
    if cleanup_policy is not None:
        out["cleanup_policy"] = cleanup_policy
    if min_acks is not None:
        out["min_acks"] = min_acks
    if profile is not None:
        out["profile"] = profile
    for name, acl in (("producers", producers), ("consumers", consumers)):
        if acl is not None:
            text = acl.strip()
            if text.lower() in ("any", "open", "none", ""):
                out[name] = None
            else:
                out[name] = [p.strip().upper() for p in text.split(",") if p.strip()]
    return out


def _topic_options(f: F) -> F:
    for option in reversed(
        [
            click.option(
                "--retention-ms", default=None, help="Keep records this long (7d, 12h, none)."
            ),
            click.option(
                "--retention-bytes", default=None, help="Keep this much per partition (1G, none)."
            ),
            click.option(
                "--min-acks", type=int, default=None, help="Trusted store ACKs per record."
            ),
            click.option("--profile", type=click.Choice(["signed", "rfc46"]), default=None),
            click.option("--max-record-bytes", default=None, help="Largest record value (1M)."),
            click.option(
                "--producers",
                default=None,
                help="Producer node IDs allowed to write, comma-separated, or 'any' (open).",
            ),
            click.option(
                "--consumers",
                default=None,
                help="Node IDs allowed to read, comma-separated, or 'any' (open); "
                "a boundary only with --curve (docs/security.md).",
            ),
            click.option(
                "--compression",
                type=click.Choice(["none", "zstd", "lz4"]),
                default=None,
                help="What producers compress batches with unless told otherwise.",
            ),
            click.option(
                "--cleanup-policy",
                type=click.Choice(["delete", "compact", "compact,delete"]),
                default=None,
                help="delete (retention), compact (newest record of every key) or both.",
            ),
            click.option(
                "--delete-retention-ms",
                default=None,
                help="How long a compacted topic keeps tombstones (1d, 0).",
            ),
            click.option(
                "--max-future-ms",
                default=None,
                help="How far past arrival record times count for retention (1h).",
            ),
            click.option(
                "--partitions",
                type=int,
                default=None,
                help="Kafka-written partitions (1..1024): a topic for dafka-kafka; only grows.",
            ),
        ]
    ):
        f = option(f)
    return f


def _client_options(f: F) -> F:
    f = click.option(
        "--timeout", default=5.0, show_default=True, type=SECONDS, help="Seconds per request."
    )(f)
    f = click.option(
        "--cluster", default=DEFAULT_CLUSTER, envvar="DAFKA_CLUSTER", show_default=True
    )(f)
    f = click.option(
        "--tower",
        "-t",
        default="127.0.0.1:5556",
        envvar="DAFKA_TOWER",  # as every command: a subcommand's automatic name would differ
        show_default=True,
        help="Tower address(es), HOST:PORT of the beacon port, comma-separated.",
    )(f)
    f = common_options("admin", node=False)(f)
    return f


def _client(
    tower: str, cluster: str, timeout: float, admin_key: str | None = None
) -> MetadataClient:
    return MetadataClient(tower, cluster=cluster, timeout=timeout, admin=admin_key)


def _show(settings: dict[str, Any]) -> str:
    return " ".join(f"{k}={human(k, v)}" for k, v in settings.items())


@click.group(cls=Group, context_settings=CONTEXT)
def main() -> None:
    """Administer a Dafka cluster: topics, trusted stores, the metadata Raft group."""


@main.group()
def topics() -> None:
    """Create, list, describe, alter and delete topics."""


@topics.command("create")
@_client_options
@_topic_options
@click.argument("topic")
@admin_key_option
@run_cli
def topics_create(
    topic: str, tower: str, cluster: str, timeout: float, admin_key: str | None, **settings: Any
) -> None:
    """Create TOPIC with the given settings (defaults for the rest)."""
    with _client(tower, cluster, timeout, admin_key) as client:
        index = client.create_topic(topic, _settings(**settings))
    click.echo(f"created topic {topic} (log index {index})")


@topics.command("alter")
@_client_options
@_topic_options
@click.argument("topic")
@admin_key_option
@run_cli
def topics_alter(
    topic: str, tower: str, cluster: str, timeout: float, admin_key: str | None, **settings: Any
) -> None:
    """Change settings of TOPIC."""
    changes = _settings(**settings)
    if not changes:
        raise ConfigError("nothing to change: give at least one setting")
    with _client(tower, cluster, timeout, admin_key) as client:
        index = client.alter_topic(topic, changes)
    click.echo(f"altered topic {topic} (log index {index})")


@topics.command("delete")
@_client_options
@click.argument("topic")
@admin_key_option
@run_cli
def topics_delete(
    topic: str, tower: str, cluster: str, timeout: float, admin_key: str | None
) -> None:
    """Delete TOPIC from the metadata."""
    with _client(tower, cluster, timeout, admin_key) as client:
        index = client.delete_topic(topic)
    click.echo(f"deleted topic {topic} (log index {index})")


@topics.command("list")
@_client_options
@click.option("--json", "as_json", is_flag=True, help="JSON instead of lines.")
@click.option(
    "--internal",
    is_flag=True,
    help="Also the internal topics (__group.NAME: consumer groups, see 'dafka groups').",
)
@run_cli
def topics_list(tower: str, cluster: str, timeout: float, as_json: bool, internal: bool) -> None:
    """Every user topic with its settings."""
    with _client(tower, cluster, timeout) as client:
        found = client.topics()
    if not internal:
        found = {n: t for n, t in found.items() if not is_group_topic(n)}
    if as_json:
        click.echo(json.dumps(found, sort_keys=True))
        return
    for name in sorted(found):
        click.echo(f"{name} {_show(found[name])}")
    if not found:
        click.echo("no topics in the metadata", err=True)


@topics.command("describe")
@_client_options
@click.option("--json", "as_json", is_flag=True, help="JSON instead of lines.")
@click.argument("topic")
@run_cli
def topics_describe(topic: str, tower: str, cluster: str, timeout: float, as_json: bool) -> None:
    """The settings of TOPIC, and its partitions: low and high watermarks (the first offset
    held, the next to be written) and the stores that hold them."""
    with _client(tower, cluster, timeout) as client:
        settings = client.describe(topic)
        trusted = client.stores()
    stores = survey(tower, [topic], timeout)
    rows = sorted(
        (p.partition, p.tail, p.head, s.node_id)
        for s in stores
        for p in s.partitions or ()
        if p.topic == topic
    )
    held = copies(stores, trusted)
    below = below_min_acks(held, {topic: settings["min_acks"]})
    if as_json:
        parts = [
            {
                "partition": r[0],
                "low": r[1],
                "high": r[2] + 1,
                "store": r[3],
                "copies": len(held[(topic, r[0])].stores),
                "below_min_acks": (topic, r[0]) in below,
            }
            for r in rows
        ]
        short = sorted(k[1] for k in below)
        click.echo(
            json.dumps({**settings, "partitions": parts, "below_min_acks": short}, sort_keys=True)
        )
    else:
        click.echo(f"topic {topic}")
        for key in TOPIC_DEFAULTS:
            click.echo(f"  {key}: {human(key, settings[key])}")
        answered = [s for s in stores if s.partitions is not None]
        if not stores:
            click.echo("partitions: unknown (no store heard through the towers)")
        elif not rows:
            click.echo(f"partitions: none held by the {len(answered)} store(s) that answered")
        else:
            count = len({r[0] for r in rows})
            click.echo(
                f"partitions: {count} (from {len(answered)} store(s); low = first offset "
                "held, high = next offset to be written)"
            )
            for partition, tail, head, node_id in rows:
                flag = below.get((topic, partition))
                mark = f" BELOW min_acks ({flag[0]} of {flag[1]} copies)" if flag else ""
                click.echo(f"  {partition} low {tail} high {head + 1} on store {node_id}{mark}")
            if below:
                click.echo(
                    f"below min_acks: {len(below)} partition(s) have fewer stores holding "
                    f"their head than min_acks {settings['min_acks']}"
                )
    for s in stores:
        if s.error is not None:
            click.echo(f"warning: store {s.node_id} at {s.endpoint}: {s.error}", err=True)
    _warn_below(below)


@main.group()
def stores() -> None:
    """Trust, list and revoke store keys whose ACKs producers count."""


@stores.command("trust")
@_client_options
@click.argument("store")
@admin_key_option
@run_cli
def stores_trust(
    store: str, tower: str, cluster: str, timeout: float, admin_key: str | None
) -> None:
    """Trust STORE (node ID or public key, as dafka-keys show prints it)."""
    with _client(tower, cluster, timeout, admin_key) as client:
        client.trust_store(store)
    click.echo(f"trusted store {store}")


@stores.command("revoke")
@_client_options
@click.argument("store")
@admin_key_option
@run_cli
def stores_revoke(
    store: str, tower: str, cluster: str, timeout: float, admin_key: str | None
) -> None:
    """Stop trusting STORE."""
    with _client(tower, cluster, timeout, admin_key) as client:
        client.revoke_store(store)
    click.echo(f"revoked store {store}")


@stores.command("list")
@_client_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per store.")
@run_cli
def stores_list(tower: str, cluster: str, timeout: float, as_json: bool) -> None:
    """Each store: node ID, trusted or not, query address, what it holds.

    The stores the metadata trusts and those heard through the towers, one a line
    (node ID first); when there are none, a line on stderr says so.
    """
    with _client(tower, cluster, timeout) as client:
        trusted = client.stores()
        min_acks = {name: t["min_acks"] for name, t in client.topics().items()}
    heard = {s.node_id: s for s in survey(tower, None, timeout)}
    held = copies(list(heard.values()), trusted)
    below = below_min_acks(held, min_acks)
    ids = sorted(set(trusted) | set(heard))
    for node_id in ids:
        s = heard.get(node_id)
        trust = "trusted" if node_id in trusted else "untrusted"
        if as_json:
            row: dict[str, Any] = {"store": node_id, "trusted": node_id in trusted}
            if s is not None:
                row.update(query=s.endpoint, public_key=s.public_key, error=s.error)
                if s.partitions is not None:
                    row["holds"] = [
                        {
                            "topic": p.topic,
                            "partition": p.partition,
                            "low": p.tail,
                            "high": p.head + 1,
                            "copies": len(held[(p.topic, p.partition)].stores),
                            "below_min_acks": (p.topic, p.partition) in below,
                        }
                        for p in s.partitions
                    ]
            click.echo(json.dumps({k: v for k, v in row.items() if v is not None}, sort_keys=True))
        elif s is None:
            click.echo(f"{node_id} {trust}, not heard through the towers")
        else:
            key = f" public key {s.public_key}" if s.public_key else ""
            click.echo(
                f"{node_id} {trust}, query {s.endpoint}{key}, holds {_holds(s)}"
                f"{_below_of(s, below)}"
            )
    if not ids:
        click.echo(
            "no stores: the metadata trusts none and none is heard through the towers", err=True
        )
    _warn_below(below)


MAX_BELOW_SHOWN = 5


def _below_of(s: StoreView, below: dict[tuple[str, str], tuple[int, int]]) -> str:
    """``; BELOW min_acks: N of them (topic/partition c of m, ...)`` for a store holding
    partitions with fewer copies than promised; "" otherwise."""
    mine = sorted(
        (p.topic, p.partition) for p in s.partitions or () if (p.topic, p.partition) in below
    )
    if not mine:
        return ""
    shown = ", ".join(
        f"{t}/{p} {below[(t, p)][0]} of {below[(t, p)][1]}" for t, p in mine[:MAX_BELOW_SHOWN]
    )
    more = f", {len(mine) - MAX_BELOW_SHOWN} more" if len(mine) > MAX_BELOW_SHOWN else ""
    return f"; BELOW min_acks: {len(mine)} of them ({shown}{more})"


def _warn_below(below: dict[tuple[str, str], tuple[int, int]]) -> None:
    """One line on stderr when partitions have fewer copies than their min_acks."""
    if below:
        topics = sorted({t for t, _ in below})
        click.echo(
            f"warning: {len(below)} partition(s) of {len(topics)} topic(s) "
            f"({', '.join(topics[:MAX_BELOW_SHOWN])}) have fewer stores holding their head "
            "than the topic's min_acks",
            err=True,
        )


def _holds(s: StoreView) -> str:
    if s.partitions is None:
        return f"unknown ({s.error})"
    if not s.partitions:
        return "nothing"
    topics = sorted({p.topic for p in s.partitions})
    return (
        f"{len(s.partitions)} partition(s), {sum(p.head - p.tail + 1 for p in s.partitions)} "
        f"record(s) of {len(topics)} topic(s): {', '.join(topics)}"
    )


@main.group("cluster")
def cluster_group() -> None:
    """The metadata Raft group and cluster-wide settings."""


@cluster_group.command("status")
@_client_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per tower.")
@run_cli
def cluster_status(tower: str, cluster: str, timeout: float, as_json: bool) -> None:
    """Each tower's Raft peer (role, term, commit) and the cluster settings."""
    with _client(tower, cluster, timeout) as client:
        rows = client.status()
        up = [r for r in rows if r["state"] == "up"]
        settings = client.config()["cluster"] if up else None
    if as_json:
        click.echo(json.dumps({"peers": rows, "settings": settings}, sort_keys=True))
    else:
        for r in rows:
            if r["state"] != "up":
                click.echo(f"{r['url']} unreachable")
                continue
            role = "leader" if r["is_leader"] else "follower"
            click.echo(
                f"{r['url']} {role} leader={r['leader'] or 'none'} term={r['term']} "
                f"commit={r['commit']} applied={r['applied']}"
            )
        if settings is not None:
            click.echo(f"settings: {_show(settings)}")
    if not up:
        raise DafkaTimeout(f"no tower's metadata peer answered ({len(rows)} tried)")


@cluster_group.command("set")
@_client_options
@click.option(
    "--auto-create/--no-auto-create",
    default=None,
    help="Producing to an unknown topic creates it with defaults (or fails).",
)
@click.option(
    "--curve/--no-curve",
    "curve",
    default=None,
    help="Nodes refuse to run without CURVE (docs/security.md).",
)
@click.option(
    "--curve-clients",
    type=click.Choice(["open", "metadata"]),
    default=None,
    help="open: any CURVE key may connect to a node; metadata: only keys the metadata names.",
)
@click.option(
    "--clients",
    default=None,
    help="Node IDs or public keys (comma-separated) a node admits besides those the "
    "metadata names; none to clear.",
)
@click.option(
    "--listeners",
    default=None,
    help="Public keys (64 hex, comma-separated) of the dafka-kafka listeners; none to clear.",
)
@admin_key_option
@run_cli
def cluster_set(
    tower: str,
    cluster: str,
    timeout: float,
    admin_key: str | None,
    auto_create: bool | None,
    curve: bool | None,
    curve_clients: str | None,
    clients: str | None,
    listeners: str | None,
) -> None:
    """Change cluster-wide settings."""
    settings: dict[str, Any] = {}
    if listeners is not None:
        keys = [k.strip() for k in listeners.split(",") if k.strip()]
        none = listeners.strip().lower() in ("none", "")
        settings["listeners"] = None if none else keys
    if auto_create is not None:
        settings["auto_create"] = auto_create
    if curve is not None:
        settings["curve"] = curve
    if curve_clients is not None:
        settings["curve_clients"] = curve_clients
    if clients is not None:
        none = clients.strip().lower() in ("none", "")
        try:
            settings["clients"] = None if none else list(parse_trusted_stores(clients))
        except ConfigError as exc:
            text = (
                str(exc)
                .replace("trusted store", "client")
                .replace("a store's node ID", "a node ID")
            )
            raise ConfigError(f"--clients: {text}") from None
    if not settings:
        raise ConfigError("nothing to change: give at least one setting")
    with _client(tower, cluster, timeout, admin_key) as client:
        client.set_cluster(settings)
    click.echo(f"cluster settings: {_show(settings)}")


@main.group()
def admins() -> None:
    """The admin keys that may change the metadata (dafka-keys create-admin makes one)."""


@admins.command("list")
@_client_options
@run_cli
def admins_list(tower: str, cluster: str, timeout: float) -> None:
    """The admin public keys, one a line."""
    with _client(tower, cluster, timeout) as client:
        keys = client.admins()
    for key in keys:
        click.echo(key)
    if not keys:
        click.echo("no admins: nobody can change the metadata", err=True)


@admins.command("add")
@_client_options
@admin_key_option
@click.argument("key")
@run_cli
def admins_add(key: str, tower: str, cluster: str, timeout: float, admin_key: str | None) -> None:
    """Make public KEY (64 hex, as dafka-keys show-admin prints it) an admin too."""
    with _client(tower, cluster, timeout, admin_key) as client:
        client.add_admin(key)
    click.echo(f"added admin {key}")


@admins.command("remove")
@_client_options
@admin_key_option
@click.argument("key")
@run_cli
def admins_remove(
    key: str, tower: str, cluster: str, timeout: float, admin_key: str | None
) -> None:
    """Stop trusting admin KEY (the last admin cannot be removed)."""
    with _client(tower, cluster, timeout, admin_key) as client:
        client.remove_admin(key)
    click.echo(f"removed admin {key}")


@main.group("listeners")
def listeners_group() -> None:
    """The dafka-kafka listener keys, which may sign lease commands only."""


@listeners_group.command("list")
@_client_options
@run_cli
def listeners_list(tower: str, cluster: str, timeout: float) -> None:
    """The listener public keys, one a line, with the leases each holds."""
    with _client(tower, cluster, timeout) as client:
        keys = client.listeners()
        leases = client.leases()
    for key in keys:
        held = sorted(r for r, lease in leases.items() if lease.get("holder") == key)
        click.echo(f"{key} holds {len(held)} lease(s){': ' if held else ''}{' '.join(held[:20])}")
    if not keys:
        click.echo("no listeners: no dafka-kafka may hold a lease", err=True)


@listeners_group.command("add")
@_client_options
@admin_key_option
@click.argument("key")
@run_cli
def listeners_add(
    key: str, tower: str, cluster: str, timeout: float, admin_key: str | None
) -> None:
    """List public KEY (64 hex, the listener's node key) among the listeners."""
    with _client(tower, cluster, timeout, admin_key) as client:
        client.add_listener(key)
    click.echo(f"added listener {key}")


@listeners_group.command("remove")
@_client_options
@admin_key_option
@click.argument("key")
@run_cli
def listeners_remove(
    key: str, tower: str, cluster: str, timeout: float, admin_key: str | None
) -> None:
    """Stop listing KEY: it renews nothing more, its leases are taken over once stale."""
    with _client(tower, cluster, timeout, admin_key) as client:
        client.remove_listener(key)
    click.echo(f"removed listener {key}")


main.add_command(query)
main.add_command(groups)
main.add_command(console)

if __name__ == "__main__":
    main()
