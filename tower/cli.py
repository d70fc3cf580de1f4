"""``dafka-tower``: run a beacon relay until interrupted."""

from __future__ import annotations

import click

from dafka.cli.common import CONTEXT, common_options, run_cli, wait_for_signal
from dafka.config import TowerAddress, parse_endpoint

from .relay import Tower


@click.command(context_settings=CONTEXT)
@common_options("tower", node=False)
@click.option(
    "--bind",
    "-b",
    default="127.0.0.1:5556",
    show_default=True,
    help="HOST:PORT for the beacon port; the relay port is PORT+1.",
)
@run_cli
def main(bind: str) -> None:
    """Relay discovery beacons between Dafka nodes."""
    host, port = parse_endpoint(bind, "tower bind address", allow_zero=True)
    tower = Tower(TowerAddress(host, port)).start()
    click.echo(f"tower on {tower.address.sub} (beacons) and {tower.address.pub} (relay)", err=True)
    try:
        wait_for_signal()
    finally:
        tower.stop()
