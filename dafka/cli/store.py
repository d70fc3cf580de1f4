"""``dafka-store``: run a store node until interrupted."""

from __future__ import annotations

import click

from ..store import Store
from .common import CONTEXT, common_options, run_cli, wait_for_signal


@click.command(context_settings=CONTEXT)
@common_options("store")
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
    "--map-size",
    default=64 * 1024 * 1024,
    show_default=True,
    type=int,
    help="Initial LMDB map size in bytes; it grows as needed.",
)
@run_cli
def main(tower: str, host: str, data_dir: str, port: int, map_size: int) -> None:
    """Persist the records of every topic, acknowledge them and serve fetches."""
    store = Store(data_dir, towers=tower, host=host, port=port, map_size=map_size).start()
    click.echo(f"store {store.node_id} on {store.endpoint}, data in {store.path}", err=True)
    try:
        wait_for_signal()
    finally:
        store.stop()


if __name__ == "__main__":
    main()
