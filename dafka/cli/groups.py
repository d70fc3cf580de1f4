"""``dafka groups list|describe``: consumer groups, their members and lag
(``kafka-consumer-groups --list / --describe``)."""

from __future__ import annotations

import json

import click

from ..groups.admin import describe, list_groups
from .common import CONTEXT, Group, common_options, run_cli

_TOWER = click.option(
    "--tower",
    "-t",
    default="127.0.0.1:5556",
    envvar="DAFKA_TOWER",  # as every command: a subcommand's automatic name would differ
    show_default=True,
    help="Tower address(es), HOST:PORT of the beacon port, comma-separated.",
)
_TIMEOUT = click.option("--timeout", default=10.0, show_default=True, help="Seconds to wait.")
_COMMON = common_options("admin", node=False)  # --config, --log-level as every dafka command


@click.group(cls=Group, context_settings=CONTEXT)
def groups() -> None:
    """Consumer groups: members, assignments, committed offsets and lag."""


@groups.command("list")
@_COMMON
@_TOWER
@_TIMEOUT
@run_cli
def groups_list(tower: str, timeout: float) -> None:
    """The groups some store holds offsets of."""
    names = list_groups(tower, timeout)
    if not names:
        click.echo("no consumer groups", err=True)
    for name in names:
        click.echo(name)


@groups.command("describe")
@click.argument("group")
@_COMMON
@_TOWER
@_TIMEOUT
@click.option(
    "--session-timeout",
    default=10.0,
    show_default=True,
    help="A member whose last heartbeat is older than this is shown as gone.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
@run_cli
def groups_describe(
    group: str, tower: str, timeout: float, session_timeout: float, as_json: bool
) -> None:
    """Members, and per partition: committed offset, log-end offset, lag, member."""
    info = describe(tower, group, session_timeout=session_timeout, timeout=timeout)
    if as_json:
        body = {
            "group": group,
            "members": [
                {"id": s.member, "client": s.client, "topics": list(s.topics)} for s in info.members
            ],
            "partitions": [
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "current_offset": r.committed,
                    "log_end_offset": r.end,
                    "lag": r.lag,
                    "consumer_id": r.member,
                }
                for r in info.rows
            ],
        }
        click.echo(json.dumps(body))
        return
    if not info.records:
        click.echo(f"group {group} has no members and no committed offsets", err=True)
        return
    click.echo(f"GROUP {group}: {len(info.members)} member(s) alive")
    for s in info.members:
        click.echo(f"  MEMBER {s.member} {s.client} topics={','.join(s.topics)}")
    click.echo(
        f"{'TOPIC':<20} {'PARTITION':<32} {'CURRENT-OFFSET':>14} {'LOG-END-OFFSET':>14} "
        f"{'LAG':>8} CONSUMER-ID"
    )

    def show(n: int | None) -> str:
        return "-" if n is None else str(n)

    for r in info.rows:
        click.echo(
            f"{r.topic:<20} {r.partition:<32} {show(r.committed):>14} {show(r.end):>14} "
            f"{show(r.lag):>8} {r.member or '-'}"
        )
