"""``dafka-raft``: run a Raft peer, show a cluster's state, change its membership.

::

    dafka-raft peer --id p1 --bind tcp://127.0.0.1:7001 \\
        --peer p2=tcp://127.0.0.1:7002 --peer p3=tcp://127.0.0.1:7003 \\
        --data-dir data/p1 --cluster meta
    dafka-raft status --peer tcp://127.0.0.1:7001 --peer tcp://127.0.0.1:7002 --cluster meta
    dafka-raft members list|add|remove|set ... --peer URL --cluster meta

``peer`` binds its ROUTER at ``--bind`` only (plus ``--broadcast`` if given) and runs
until SIGINT/SIGTERM.

Peers authenticate each other: a peer over NULL (the default, as the reference server)
has no other peers, so it refuses every peer RPC and ConfigUpdate, and will not start
with ``--peer`` or ``--join`` unless ``--raft-insecure-null`` (a compatibility flag for
ØMQ RAFT reference peers: anyone who can reach the port can then rewrite the log).

``--raft-curve`` puts CURVE on every Raft
port (:mod:`dafka.raft.peer._curve`): ``--key-file`` is the peer's Ed25519 key (made if
missing), and every peer is given with its public key, ``--peer ID=URL@PUBHEX``
(``--peer-key ID=PUBHEX`` for peers that may join later). Peer RPCs are accepted only
from the key of the peer they name; ConfigUpdate only from a peer or ``--admin-key``.
The client commands take ``--raft-curve`` too, the peers as ``URL@PUBHEX``, and
``--key-file`` (an admin key for ``members`` changes; an ephemeral key otherwise). ``--peer ID=URL`` names the other voters (giving our own id too
is fine); ``--join`` starts a peer outside the configuration, to be added with
``members add``. The state machine is the key/value test machine
(:class:`dafka.raft.peer.KvStateMachine`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import ConfigError, DafkaError, RaftError
from ..raft import (
    DEFAULT_MAX_ENTRY_BYTES,
    INSECURE_NULL_COST,
    ClientCurve,
    KvStateMachine,
    Peer,
    PeerOptions,
    RaftClient,
    RaftCurve,
    RaftPeer,
    curve_public_key,
    parse_public_hex,
    split_key,
)
from ..raft import codec as w
from ..security import identity as ident
from .common import CONTEXT, SECONDS, Group, common_options, run_cli, wait_for_signal

F = TypeVar("F", bound=Callable[..., Any])


def _keyed_peer_spec(spec: str) -> tuple[Peer, bytes | None]:
    """``ID=URL`` or ``ID=URL@PUBHEX`` → the peer and its Z85 CURVE key (or None)."""
    peer_id, sep, rest = spec.partition("=")
    url, key = split_key(rest, f"--peer {spec!r}")
    if not sep or not peer_id or not url:
        raise ConfigError(f"--peer wants ID=URL (or ID=URL@PUBHEX), got {spec!r}")
    return Peer(peer_id, url), key


def _peer_spec(spec: str) -> Peer:
    return _keyed_peer_spec(spec)[0]


def _keyed_urls(specs: Sequence[str]) -> tuple[list[str], dict[str, bytes]]:
    """``URL`` or ``ID=URL`` (as in ``peer``), each optionally ``@PUBHEX`` → URLs, keys."""
    urls = []
    keys: dict[str, bytes] = {}
    for spec in specs:
        for item in spec.split(","):
            item = item.strip()
            if item:
                item, key = split_key(item, f"--peer {item!r}")
                url = item.partition("=")[2] if "=" in item.split("://")[0] else item
                urls.append(url)
                if key is not None:
                    keys[url] = key
    if not urls:
        raise ConfigError("give at least one --peer URL")
    return urls, keys


def _urls(specs: Sequence[str]) -> list[str]:
    return _keyed_urls(specs)[0]


def _key_file(path: str) -> ident.Identity:
    """The Ed25519 identity in ``path``; made (mode 0600) if the file does not exist."""
    file = Path(path)
    if file.exists():
        return ident.load_file(file)
    return ident.create_file(file)


def _server_curve(
    me: str,
    members: Sequence[tuple[Peer, bytes | None]],
    key_file: str | None,
    peer_keys: Sequence[str],
    admin_keys: Sequence[str],
) -> tuple[RaftCurve, ident.Identity]:
    if key_file is None:
        raise ConfigError("--raft-curve needs --key-file (this peer's key; made if missing)")
    identity = _key_file(key_file)
    keys = {peer.id: key for peer, key in members if key is not None}
    for spec in peer_keys:
        peer_id, sep, hexkey = spec.partition("=")
        if not sep or not peer_id:
            raise ConfigError(f"--peer-key wants ID=PUBHEX, got {spec!r}")
        keys[peer_id] = parse_public_hex(hexkey, f"--peer-key {peer_id}")
    missing = sorted(peer.id for peer, _ in members if peer.id != me and peer.id not in keys)
    if missing:
        raise ConfigError(f"--raft-curve: give --peer ID=URL@PUBHEX for {', '.join(missing)}")
    own = curve_public_key(identity.public_key)
    if keys.setdefault(me, own) != own:
        raise ConfigError(f"--peer {me}: the key given is not the one in {key_file}")
    admins = [parse_public_hex(k, "--admin-key") for k in admin_keys]
    return RaftCurve.for_identity(identity, keys, admins), identity


def _client(
    peers: Sequence[str], cluster: str, timeout: float, curve: bool, key_file: str | None
) -> RaftClient:
    urls, keys = _keyed_urls(peers)
    settings = None
    if curve:
        missing = [u for u in urls if u not in keys]
        if missing:
            raise ConfigError(f"--raft-curve: give --peer URL@PUBHEX for {', '.join(missing)}")
        if key_file is None:
            settings = ClientCurve.ephemeral(keys)
        else:
            settings = ClientCurve.for_identity(ident.load_file(Path(key_file)), keys)
    return RaftClient(urls, cluster, timeout=timeout, curve=settings)


@click.group(cls=Group, context_settings=CONTEXT)
def main() -> None:
    """Raft peers of the Dafka metadata cluster (the ØMQ RAFT protocol)."""


@main.command()
@common_options("raft", node=False)
@click.option("--id", "peer_id", required=True, help="This peer's PEER ID.")
@click.option("--bind", required=True, help="ROUTER endpoint to bind, e.g. tcp://127.0.0.1:7001.")
@click.option("--url", default=None, help="URL the other peers reach us at (default: --bind).")
@click.option(
    "--peer",
    "peers",
    multiple=True,
    help="Another voter as ID=URL (repeat the option for each).",
)
@click.option(
    "--data-dir", "-d", required=True, type=click.Path(file_okay=False), help="Raft data dir."
)
@click.option("--cluster", required=True, help="Cluster ident (frame 3 of every request).")
@click.option("--join", is_flag=True, help="Start outside the configuration; wait to be added.")
@click.option("--broadcast", default=None, help="Bind a StateBroadcast PUB socket here.")
@click.option("--tick-ms", default=5.0, show_default=True, help="Milliseconds per Raft tick.")
@click.option(
    "--election-ticks", default=30, show_default=True, help="Election timeout in ticks (x1-x2)."
)
@click.option(
    "--heartbeat-ticks", default=9, show_default=True, help="Heartbeat interval in ticks."
)
@click.option(
    "--snapshot-every",
    default=10_000,
    show_default=True,
    help="Snapshot and compact the log every N applied entries (0: never).",
)
@click.option(
    "--keep-entries",
    default=1000,
    show_default=True,
    help="Entries kept behind a snapshot for lagging followers.",
)
@click.option(
    "--fsync/--no-fsync", default=True, show_default=True, help="fdatasync the log (group commit)."
)
@click.option(
    "--fsync-thread/--no-fsync-thread",
    default=False,
    show_default=True,
    help="fdatasync appends on a thread of their own, overlapping replication (docs/raft.md §7).",
)
@click.option(
    "--max-entry-bytes",
    default=DEFAULT_MAX_ENTRY_BYTES,
    show_default=True,
    help="Largest RequestUpdate data accepted (larger ones are refused); same on every peer.",
)
@click.option(
    "--raft-curve", is_flag=True, help="CURVE on every port; peers given as ID=URL@PUBHEX."
)
@click.option(
    "--key-file",
    default=None,
    allow_from_autoenv=False,
    type=click.Path(dir_okay=False),
    help="This peer's Ed25519 key file (--raft-curve; made if missing).",
)
@click.option(
    "--peer-key",
    "peer_keys",
    multiple=True,
    allow_from_autoenv=False,
    help="ID=PUBHEX of a peer that may join later (--raft-curve); repeatable.",
)
@click.option(
    "--admin-key",
    "admin_keys",
    multiple=True,
    allow_from_autoenv=False,
    help="PUBHEX of a key that may send ConfigUpdate (--raft-curve); repeatable.",
)
@click.option(
    "--raft-insecure-null",
    is_flag=True,
    help="Compatibility (ØMQ RAFT reference peers): other peers over NULL, every claimed "
    f"peer ID believed, so {INSECURE_NULL_COST}.",
)
@click.option(
    "--accept-log-loss",
    is_flag=True,
    help="Start even though records of the Raft log that were fsynced (and may have been "
    "acknowledged) are damaged: drop them, with an error line. Without it a lone peer "
    "refuses to start and a peer of a group recovers them from the others before it "
    "votes (docs/raft.md, 'Rot and torn writes').",
)
@run_cli
def peer(
    peer_id: str,
    bind: str,
    url: str | None,
    peers: tuple[str, ...],
    data_dir: str,
    cluster: str,
    join: bool,
    broadcast: str | None,
    tick_ms: float,
    election_ticks: int,
    heartbeat_ticks: int,
    snapshot_every: int,
    keep_entries: int,
    fsync: bool,
    fsync_thread: bool,
    max_entry_bytes: int,
    raft_curve: bool,
    key_file: str | None,
    peer_keys: tuple[str, ...],
    admin_keys: tuple[str, ...],
    raft_insecure_null: bool,
    accept_log_loss: bool,
) -> None:
    """Run one Raft peer until interrupted."""
    if tick_ms <= 0:
        raise ConfigError("--tick-ms must be positive")
    options = PeerOptions(
        tick=tick_ms / 1000.0,
        election_tick=election_ticks,
        heartbeat_tick=heartbeat_ticks,
        fsync=fsync,
        fsync_thread=fsync_thread,
        snapshot_every=snapshot_every,
        keep_entries=keep_entries,
        max_entry_bytes=max_entry_bytes,
        accept_log_loss=accept_log_loss,
    )
    if accept_log_loss:
        click.echo("warning: --accept-log-loss: damaged Raft log records are dropped", err=True)
    keyed = [_keyed_peer_spec(p.strip()) for spec in peers for p in spec.split(",") if p.strip()]
    curve = None
    if raft_curve and raft_insecure_null:
        raise ConfigError("--raft-insecure-null and --raft-curve: choose one")
    if raft_curve:
        curve, identity = _server_curve(peer_id, keyed, key_file, peer_keys, admin_keys)
        click.echo(f"raft peer {peer_id} CURVE key {identity.public_key.hex()}", err=True)
    elif key_file or peer_keys or admin_keys or any(k is not None for _, k in keyed):
        raise ConfigError("keys are given but --raft-curve is not: add it, or drop the keys")
    node = RaftPeer(
        peer_id,
        bind,
        [p for p, _ in keyed],
        data_dir,
        cluster,
        KvStateMachine(),
        url=url,
        join=join,
        broadcast=broadcast,
        options=options,
        curve=curve,
        insecure_null=raft_insecure_null,
    ).start()
    if node.insecure_null:
        click.echo(f"warning: --raft-insecure-null: {INSECURE_NULL_COST}", err=True)
    click.echo(
        f"raft peer {peer_id} on {node.url} (bind {bind}), cluster {cluster}, data in {data_dir}",
        err=True,
    )

    def check() -> None:
        if not node.running:
            raise RaftError(f"peer {peer_id} stopped: {node.failure()}")

    try:
        wait_for_signal(check)  # its handler takes no lock: dafka.cli.common
    finally:
        node.stop()


def _client_options(f: F) -> F:
    f = click.option(
        "--key-file",
        default=None,
        allow_from_autoenv=False,
        type=click.Path(dir_okay=False, exists=True),
        help="With --raft-curve: an admin key file (members changes); default an ephemeral key.",
    )(f)
    f = click.option("--raft-curve", is_flag=True, help="CURVE to the peers, given as URL@PUBHEX.")(
        f
    )
    f = click.option(
        "--timeout", default=10.0, show_default=True, type=SECONDS, help="Seconds per request."
    )(f)
    f = click.option("--cluster", required=True, help="Cluster ident.")(f)
    f = click.option(
        "--peer", "peers", multiple=True, required=True, help="A peer URL (or ID=URL); repeat."
    )(f)
    return f


@main.command()
@common_options("raft", node=False)
@_client_options
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per peer instead of a table."
)
@run_cli
def status(
    peers: tuple[str, ...],
    cluster: str,
    timeout: float,
    raft_curve: bool,
    key_file: str | None,
    as_json: bool,
) -> None:
    """RequestConfig and RequestLogInfo of every given peer, as a table."""
    urls = _urls(peers)
    rows: list[dict[str, Any]] = []
    with _client(peers, cluster, timeout, raft_curve, key_file) as client:
        ids: dict[str, str] = {}
        answers: dict[
            str, DafkaError | tuple[w.RequestConfigResponse, w.RequestLogInfoResponse]
        ] = {}
        for url in urls:
            try:
                config = client.peer_config(url, timeout=timeout)
                info = client.log_info(url, timeout=timeout)
            except DafkaError as exc:
                answers[url] = exc
                continue
            answers[url] = (config, info)
            for p in config.peers or ():
                ids.setdefault(p.url, p.id)
        for url in urls:
            got = answers[url]
            if isinstance(got, Exception):
                rows.append({"peer": ids.get(url, "?"), "url": url, "state": "unreachable"})
                continue
            config, info = got
            rows.append(
                {
                    "peer": ids.get(url, "?"),
                    "url": url,
                    "state": "leader" if info.is_leader else "follower",
                    "leader": info.leader,
                    "term": info.term,
                    "first": info.first_index,
                    "applied": info.last_applied,
                    "commit": info.commit_index,
                    "last": info.last_index,
                    "snapshot": info.snapshot_size,
                    "prune": info.prune_index,
                    "members": sorted(p.id for p in config.peers or ()),
                }
            )
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    columns = ["peer", "url", "state", "leader", "term", "first", "applied", "commit", "last"]
    columns += ["snapshot"]
    table = [columns] + [
        ["-" if row.get(c) is None else str(row[c]) for c in columns] for row in rows
    ]
    widths = [max(len(line[k]) for line in table) for k in range(len(columns))]
    for line in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
    if not any(row["state"] != "unreachable" for row in rows):
        sys.exit(1)


@main.group()
def members() -> None:
    """Show or change the cluster's voters (ConfigUpdate, joint consensus)."""


def _current(client: RaftClient, timeout: float) -> list[Peer]:
    state = client.request_config(timeout)
    config = client.peer_config(state.leader_url or "", timeout=timeout)
    return list(config.peers or ())


def _change(client: RaftClient, new: list[Peer], timeout: float) -> None:
    index = client.config_update(new, timeout=timeout)
    listing = ", ".join(f"{p.id}={p.url}" for p in new)
    click.echo(f"members: {listing} (config log index {index})")


@members.command("list")
@common_options("raft", node=False)
@_client_options
@run_cli
def members_list(
    peers: tuple[str, ...], cluster: str, timeout: float, raft_curve: bool, key_file: str | None
) -> None:
    """The current voters, leader first."""
    with _client(peers, cluster, timeout, raft_curve, key_file) as client:
        state = client.request_config(timeout)
        current = _current(client, timeout)
    for p in sorted(current, key=lambda p: (p.id != state.leader, p.id)):
        mark = "  leader" if p.id == state.leader else ""
        click.echo(f"{p.id}  {p.url}{mark}")


@members.command("add")
@common_options("raft", node=False)
@_client_options
@click.argument("new_peers", nargs=-1, required=True)
@run_cli
def members_add(
    peers: tuple[str, ...],
    cluster: str,
    timeout: float,
    raft_curve: bool,
    key_file: str | None,
    new_peers: tuple[str, ...],
) -> None:
    """Add voters, each given as ID=URL."""
    added = [_peer_spec(spec) for spec in new_peers]
    with _client(peers, cluster, timeout, raft_curve, key_file) as client:
        current = _current(client, timeout)
        known = {p.id for p in current}
        _change(client, current + [p for p in added if p.id not in known], timeout)


@members.command("remove")
@common_options("raft", node=False)
@_client_options
@click.argument("peer_ids", nargs=-1, required=True)
@run_cli
def members_remove(
    peers: tuple[str, ...],
    cluster: str,
    timeout: float,
    raft_curve: bool,
    key_file: str | None,
    peer_ids: tuple[str, ...],
) -> None:
    """Remove voters by PEER ID."""
    with _client(peers, cluster, timeout, raft_curve, key_file) as client:
        current = _current(client, timeout)
        unknown = set(peer_ids) - {p.id for p in current}
        if unknown:
            raise ConfigError(f"not members: {', '.join(sorted(unknown))}")
        _change(client, [p for p in current if p.id not in peer_ids], timeout)


@members.command("set")
@common_options("raft", node=False)
@_client_options
@click.argument("new_peers", nargs=-1, required=True)
@run_cli
def members_set(
    peers: tuple[str, ...],
    cluster: str,
    timeout: float,
    raft_curve: bool,
    key_file: str | None,
    new_peers: tuple[str, ...],
) -> None:
    """Replace the voters by exactly these ID=URL peers."""
    with _client(peers, cluster, timeout, raft_curve, key_file) as client:
        _change(client, [_peer_spec(spec) for spec in new_peers], timeout)


if __name__ == "__main__":
    main()
