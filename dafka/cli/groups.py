"""``dafka groups list|describe|reset``: consumer groups, their members and lag, and an
admin's reset of their offsets (``kafka-consumer-groups --list / --describe /
--reset-offsets``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from ..errors import ConfigError
from ..groups.admin import describe, list_groups
from ..groups.reset_admin import check_spec, reset_offsets
from ..metadata.client import DEFAULT_CLUSTER
from .common import CONTEXT, SECONDS, Group, admin_key_option, common_options, run_cli

_TOWER = click.option(
    "--tower",
    "-t",
    default="127.0.0.1:5556",
    envvar="DAFKA_TOWER",  # as every command: a subcommand's automatic name would differ
    show_default=True,
    help="Tower address(es), HOST:PORT of the beacon port, comma-separated.",
)
_TIMEOUT = click.option(
    "--timeout", default=10.0, show_default=True, type=SECONDS, help="Seconds to wait."
)
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


@groups.command("reset")
@click.argument("group")
@_COMMON
@_TOWER
@_TIMEOUT
@click.option(
    "--cluster",
    default=DEFAULT_CLUSTER,
    envvar="DAFKA_CLUSTER",
    show_default=True,
    help="The cluster name the admin's signature is bound to.",
)
@admin_key_option
@click.option(
    "--topic",
    "topics",
    multiple=True,
    help="A topic whose partitions to reset (repeatable; default: every topic of the group).",
)
@click.option("--to-earliest", "to", flag_value="earliest", help="To the first stored offset.")
@click.option("--to-latest", "to", flag_value="latest", help="To the log end.")
@click.option("--to-offset", type=int, default=None, help="To this offset (clamped).")
@click.option("--shift-by", type=int, default=None, help="By N records (negative: back).")
@click.option(
    "--to-datetime",
    default=None,
    help="To the first record at or after this time (ISO 8601, e.g. 2026-12-03T09:00:00Z).",
)
@click.option("--execute", is_flag=True, help="Write the reset (without it: show the plan only).")
@run_cli
def groups_reset(
    group: str,
    tower: str,
    timeout: float,
    cluster: str,
    admin_key: str | None,
    topics: tuple[str, ...],
    to: str | None,
    to_offset: int | None,
    shift_by: int | None,
    to_datetime: str | None,
    execute: bool,
) -> None:
    """Reset GROUP's committed offsets (kafka-consumer-groups --reset-offsets): signed with
    the admin key into the metadata, honoured by every member, live ones too (they seek).
    Shows the plan; writes it only with --execute."""
    chosen = [
        (kind, value)
        for kind, value in (
            (to, None),
            ("offset", to_offset),
            ("shift", shift_by),
            ("datetime", to_datetime),
        )
        if (value is not None if kind in ("offset", "shift", "datetime") else kind is not None)
    ]
    if len(chosen) != 1:
        raise ConfigError(
            "give exactly one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime"
        )
    kind, value = chosen[0]
    assert kind is not None
    if kind == "datetime":
        value = str(_parse_datetime_ms(str(value)))
    spec = check_spec(kind, None if value is None else str(value))
    plan = reset_offsets(
        tower,
        group,
        spec,
        topics=topics,
        cluster=cluster,
        admin_key=admin_key,
        execute=execute,
        timeout=timeout,
    )
    click.echo(f"{'TOPIC':<20} {'PARTITION':<32} {'CURRENT-OFFSET':>14} {'NEW-OFFSET':>10}")
    for r in plan.rows:
        current = "-" if r.current is None else str(r.current)
        click.echo(f"{r.topic:<20} {r.partition:<32} {current:>14} {r.new:>10}")
    if plan.index is None:
        click.echo(f"% plan only: run again with --execute to reset group {group}", err=True)
    else:
        live = f"; {plan.members} live member(s) seek to it" if plan.members else ""
        click.echo(
            f"% reset group {group}: {len(plan.rows)} partition(s), metadata log index "
            f"{plan.index}{live}",
            err=True,
        )


def _parse_datetime_ms(text: str) -> int:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"bad --to-datetime {text[:40]!r}: ISO 8601, e.g. 2026-12-03T09:00:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
