"""``dafka-tower``: run a beacon relay and a metadata Raft peer until interrupted."""

from __future__ import annotations

import click

from dafka.cli.common import CONTEXT, Command, common_options, run_cli, wait_for_signal
from dafka.cli.metrics import announce, metrics_options
from dafka.config import TowerAddress, parse_endpoint, parse_towers
from dafka.errors import ConfigError
from dafka.io.metrics import check_metrics_port
from dafka.raft import INSECURE_NULL_COST
from dafka.security import identity
from dafka.security.curve_policy import ClientGate
from dafka.storage.state_dir import make_data_dir

from .metadata import (
    TowerNode,
    admin_public_keys,
    default_data_dir,
    local_admin_key,
    parse_raft_peer_keys,
    parse_raft_peers,
    relay_peers_of,
)
from .metrics import tower_metrics


@click.command(cls=Command, context_settings=CONTEXT)
@common_options("tower", node=False)
@click.option(
    "--bind",
    "-b",
    default="127.0.0.1:5556",
    show_default=True,
    help="HOST:PORT for the beacon port; relay PORT+1, Raft PORT+2, broadcasts PORT+3.",
)
@click.option(
    "--raft-peers",
    default=None,
    help="Every tower of the metadata group as ID=HOST:PORT@PUBHEX (beacon ports, each "
    "tower's node key), comma-separated, this one included. Default: a one-tower group.",
)
@click.option(
    "--peer",
    "relay_peers",
    multiple=True,
    help="A peer tower's beacon address HOST:PORT (@KEY under --curve) to share the beacon "
    "load with: each relays its own nodes' beacons to the other's nodes that want them, so "
    "a signed node beacons to one tower (docs/wire.md §6.4). Repeatable. Default: the other "
    "towers of --raft-peers; --peer none: no peer.",
)
@click.option("--id", "peer_id", default=None, help="This tower's Raft peer ID.")
@click.option(
    "--data-dir",
    "-d",
    default=None,
    type=click.Path(file_okay=False),
    help="Raft data directory (default: .dafka/tower-PORT; port 0: a temporary one).",
)
@click.option("--cluster", default="dafka", show_default=True, help="Metadata cluster ident.")
@click.option(
    "--admin-key",
    multiple=True,
    allow_from_autoenv=False,  # $DAFKA_ADMIN_KEY names the dafka command's key file
    help="Public key (64 hex) of a first admin of a new metadata group; repeatable.",
)
@click.option(
    "--admin-key-file",
    multiple=True,
    allow_from_autoenv=False,
    type=click.Path(dir_okay=False),
    help="An admin key file whose public key is a first admin; repeatable. A one-tower "
    "group given no admin key makes DATA_DIR/admin.key.",
)
@click.option(
    "--curve/--no-curve",
    default=False,
    show_default=True,
    help="ZMTP CURVE on the beacon relay and the Raft ports (so --raft-curve too) under the "
    "tower's key (DATA_DIR/node.key); every node of the cluster then needs --curve and "
    "--tower HOST:PORT@KEY.",
)
@click.option(
    "--raft-curve",
    is_flag=True,
    help="CURVE on the Raft ports (this tower's node key in DATA_DIR, made if missing; "
    "`dafka-keys create -s DATA_DIR` makes it ahead and prints it); every tower of "
    "--raft-peers given as ID=HOST:PORT@PUBHEX. On whenever --raft-peers gives keys: "
    "a group of several towers needs it (or --raft-insecure-null).",
)
@click.option(
    "--raft-insecure-null",
    is_flag=True,
    help="Compatibility: let a group of several towers speak NULL on the Raft ports (for "
    f"ØMQ RAFT reference peers). It gives up peer authentication, so {INSECURE_NULL_COST}.",
)
@click.option(
    "--accept-log-loss",
    is_flag=True,
    help="Start even though records of the Raft log that were fsynced (and may have been "
    "acknowledged) are damaged: drop them, with an error line. Without it a lone tower "
    "refuses to start and a tower of a group recovers them from the others before it "
    "votes (docs/raft.md, 'Rot and torn writes').",
)
@metrics_options
@run_cli
def main(
    bind: str,
    raft_peers: str | None,
    relay_peers: tuple[str, ...],
    peer_id: str | None,
    data_dir: str | None,
    cluster: str,
    admin_key: tuple[str, ...],
    admin_key_file: tuple[str, ...],
    curve: bool,
    raft_curve: bool,
    raft_insecure_null: bool,
    accept_log_loss: bool,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Relay discovery beacons between Dafka nodes and host the cluster metadata."""
    host, port = parse_endpoint(bind, "tower bind address", allow_zero=True)
    check_metrics_port(metrics_port)
    peers = parse_raft_peers(raft_peers)
    peer_keys = parse_raft_peer_keys(raft_peers)
    # CURVE on every socket (--curve): nodes follow the metadata over it; keys: a keyed group
    raft_curve = raft_curve or curve or bool(peer_keys)
    check_raft_auth(peers, raft_curve, raft_insecure_null)
    data_dir = data_dir or default_data_dir(port)
    make_data_dir(data_dir, "tower data directory")  # one line, not the Raft thread's traceback
    keys = admin_public_keys(admin_key, admin_key_file)
    peer_towers = _relay_peers(relay_peers, raft_peers, TowerAddress(host, port))
    if curve and any(p.key is None for p in peer_towers):
        raise ConfigError(
            "--curve: give each peer tower with its key, --peer HOST:PORT@KEY (or its "
            "--raft-peers item ID=HOST:PORT@PUBHEX)"
        )
    node = TowerNode(
        TowerAddress(host, port),
        data_dir=data_dir,
        raft_peers=peers,
        peer_id=peer_id,
        cluster=cluster,
        admin_keys=keys,
        raft_curve=raft_curve,
        raft_peer_keys=peer_keys,
        insecure_null=raft_insecure_null,
        accept_log_loss=accept_log_loss,
        relay_peers=peer_towers,
    )
    if accept_log_loss:
        click.echo("warning: --accept-log-loss: damaged Raft log records are dropped", err=True)
    gate = None
    if curve:
        tower_key = identity.load_or_create(data_dir)
        # the relay admits the client keys the metadata names (curve_clients = metadata) or
        # any (open); closed but for its own key until this replica has read the metadata
        # and its peer towers' keys: their links read its relay (docs/wire.md §6.4)
        gate = ClientGate([tower_key.public_key, *(p.key for p in peer_towers if p.key)])
        gate.hold()
        node.relay.enable_curve(tower_key, provider=gate)
    if raft_curve:
        click.echo(f"tower Raft CURVE key {node.public_key} (give it in --raft-peers)", err=True)
    elif raft_insecure_null:
        click.echo(
            f"warning: --raft-insecure-null: the Raft peers speak NULL: {INSECURE_NULL_COST}",
            err=True,
        )
    node.start()
    if gate is not None:
        node.follow_metadata(gate.update)
    if not keys and not peers:
        key, made = local_admin_key(data_dir)
        node.bootstrap([key])
        click.echo(f"admin key {made} (dafka ... --admin-key {made})", err=True)
    elif not keys:
        click.echo("no --admin-key: this tower proposes no first admin of the group", err=True)
    address = node.address
    click.echo(
        f"tower on {address.sub} (beacons) and {address.pub} (relay), "
        f"metadata peer {node.peer_id} on {node.raft_url} (cluster {cluster})",
        err=True,
    )
    if curve:
        click.echo(
            f"tower CURVE key {tower_key.public_key.hex()} "
            f"(nodes: --curve --tower {address}@{tower_key.public_key.hex()})",
            err=True,
        )
    metrics = None
    try:
        if metrics_port is not None:
            metrics = tower_metrics(node).serve(metrics_host, metrics_port)
            announce(metrics)
        wait_for_signal(lambda: None if node.running else _crashed(node))
    finally:
        if metrics is not None:
            metrics.close()
        node.stop()


def check_raft_auth(
    peers: list[tuple[str, TowerAddress]], raft_curve: bool, insecure_null: bool
) -> None:
    """A group of several towers needs authenticated Raft peers: CURVE (keys in
    --raft-peers) or, knowingly, --raft-insecure-null. One tower has no peers to trust."""
    if insecure_null and raft_curve:
        raise ConfigError("--raft-insecure-null and CURVE on the Raft ports: choose one")
    # guard: dafka-tower-refuses-group-towers
    if len(peers) > 1 and not raft_curve and not insecure_null:
        raise ConfigError(
            f"--raft-peers names {len(peers)} towers, and a group's towers must authenticate "
            "each other: give each as ID=HOST:PORT@PUBHEX (a tower's key: `dafka-keys create "
            "-s DATA_DIR`), or pass --raft-insecure-null for reference peers, under which "
            f"{INSECURE_NULL_COST}"
        )


def _relay_peers(
    given: tuple[str, ...], raft_peers: str | None, me: TowerAddress
) -> list[TowerAddress]:
    """The towers the relay shares the beacon load with: ``--peer`` (``none``: no peer),
    else the other towers of the metadata group."""
    if given == ("none",):
        return []
    peers = list(parse_towers(given)) if given else relay_peers_of(raft_peers)
    return [p for p in peers if (p.host, p.port) != (me.host, me.port)]


def _crashed(node: TowerNode) -> None:
    raise node.failure()
