"""``dafka-keys``: show or create a node's Ed25519 identity in its state directory.

Under the ``signed`` profile a node's ID, and so a producer's partition, is
derived from its public key (``dafka.security.identity``). Operators use ``show`` to learn
a store's ID and key (to add it to producers' trusted stores) and ``create`` to
make keys ahead of the first start. ``create-admin FILE`` makes an admin key file (what
the ``dafka`` command signs metadata changes with) and ``show-admin FILE`` prints its
public key (what ``dafka-tower --admin-key`` and ``dafka admins add`` take).
"""

from __future__ import annotations

import json

import click

from ..metadata.signing import create_admin_key, load_admin_key
from ..security import identity
from ..storage.state_dir import StateDir
from .common import CONTEXT, Group, run_cli

_STATE_DIR = click.option(
    "--state-dir",
    "-s",
    required=True,
    envvar="DAFKA_STATE_DIR",
    type=click.Path(file_okay=False),
    help="The node's state directory (holds node.key). [env: DAFKA_STATE_DIR]",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead.")


def _print(ident: identity.Identity, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"node_id": ident.node_id, "public_key": ident.public_key.hex()}))
    else:
        click.echo(f"node_id     {ident.node_id}")
        click.echo(f"public_key  {ident.public_key.hex()}")


@click.group(cls=Group, context_settings=CONTEXT)
def main() -> None:
    """Show or create a Dafka node's key pair, and the node ID it owns."""


@main.command(context_settings=CONTEXT)
@_STATE_DIR
@_JSON
@run_cli
def show(state_dir: str, as_json: bool) -> None:
    """Print the node ID and public key kept in --state-dir (works while the node runs)."""
    _print(identity.load(state_dir), as_json)


@main.command(context_settings=CONTEXT)
@_STATE_DIR
@_JSON
@run_cli
def create(state_dir: str, as_json: bool) -> None:
    """Make a new key pair in --state-dir; fails if one exists or the node is running."""
    with StateDir(state_dir) as state:
        ident = identity.create(state.path)
    _print(ident, as_json)


_ADMIN_FILE = click.argument("file", type=click.Path(dir_okay=False))


def _print_admin(ident: identity.Identity, file: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"file": file, "public_key": ident.public_key.hex()}))
    else:
        click.echo(f"admin_key   {file}")
        click.echo(f"public_key  {ident.public_key.hex()}")


@main.command("create-admin", context_settings=CONTEXT)
@_ADMIN_FILE
@_JSON
@run_cli
def create_admin(file: str, as_json: bool) -> None:
    """Make a new admin key in FILE (mode 0600); fails if FILE exists."""
    _print_admin(create_admin_key(file), file, as_json)


@main.command("show-admin", context_settings=CONTEXT)
@_ADMIN_FILE
@_JSON
@run_cli
def show_admin(file: str, as_json: bool) -> None:
    """Print the public key of the admin key in FILE."""
    _print_admin(load_admin_key(file), file, as_json)


if __name__ == "__main__":
    main()
