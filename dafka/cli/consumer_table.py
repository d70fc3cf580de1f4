"""``dafka-consumer --table TOPIC``: print the newest value of every key of a topic.

The topic is read from its beginning to the end the stores report, as
:meth:`dafka.consumer.Consumer.table` reads it (``docs/consumer.md``, the table view),
then each key's newest record is printed, in key order: by default the key, a tab and
the value (kcat's ``-K '\\t'``), or as ``-f`` / ``-K`` / ``-D`` / ``--json`` say. A status
line on stderr while it reads (a terminal only); a store that dropped a record compaction
must keep is one error line and exit status 1, before anything is printed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..errors import ConfigError
from .common import curve_allowed
from .progress import Progress

if TYPE_CHECKING:
    from ..core.effects import ConsumedRecord

__all__ = [
    "DEFAULT_TABLE_TIMEOUT",
    "NOT_WITH_TABLE",
    "print_table",
    "refuse_with_table",
    "run_table",
]

DEFAULT_TABLE_TIMEOUT = 300.0
"""Seconds ``--table`` reads for at most, unless ``--timeout`` says otherwise."""

NOT_WITH_TABLE = {
    "offset": "-o",
    "from_beginning": "--from-beginning",
    "exit_at_end": "-e",
    "count": "-c",
    "group": "-G",
    "watermarks": "--watermarks",
    "json_envelope": "-J",
}
"""Options that shape where a read starts or stops: --table reads it all, once."""


def refuse_with_table(topics: tuple[str, ...]) -> None:
    """--table TOPIC names its topic and reads it whole: TOPICS and the options that would
    start or stop it elsewhere are refused, not ignored."""
    if topics:
        raise click.UsageError("--table TOPIC reads one topic: give no other TOPICS")
    ctx = click.get_current_context()
    given = [
        flag
        for name, flag in NOT_WITH_TABLE.items()
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    ]
    if given:
        raise click.UsageError(
            f"--table reads the topic from its beginning to its end: it takes no {', '.join(given)}"
        )


def print_table(
    topic: str,
    make: Callable[[], Any],
    render: Callable[[ConsumedRecord], bytes],
    *,
    timeout: float,
    wait: float,
    progress: bool,
) -> int:
    """Read ``topic`` with the consumer ``make()`` returns and print its table; the number
    of keys printed."""
    from ..consumer import read_table

    if not topic:
        raise ConfigError("--table needs a topic name")
    bar = Progress(None if progress else False)

    def show(read: int, keys: int, left: int | None) -> None:
        more = "" if left is None else f", {left} more known"
        bar.update(f"table {topic}: {read} record(s) read, {keys} key(s){more}")

    table, stats = read_table(make, topic, timeout=timeout, wait=wait, on_progress=show)
    bar.end(
        f"table {topic}: {len(table)} key(s) from {stats.records} record(s) in "
        f"{len(stats.partitions)} partition(s)"
    )
    if not stats.partitions:  # said on stderr: stdout stays data
        click.echo(f"% table {topic}: no records of it on the stores", err=True)
    out = sys.stdout.buffer
    for record in table.values():
        out.write(render(record))
    out.flush()
    return len(table)


def run_table(
    topic: str,
    topics: tuple[str, ...],
    given: dict[str, Any],
    renderer: Callable[[bool, str | None, str | None, str | None], Callable[..., bytes]],
) -> None:
    """``dafka-consumer --table TOPIC`` with the command's arguments (``given``) and its
    ``renderer`` (-f, -K, -D, --json): by default 'KEY<tab>VALUE' lines."""
    from ..api.common import node_config
    from ..config import check_profile
    from ..consumer import Consumer
    from ..security import identity

    refuse_with_table(topics)
    as_json, fmt = given["as_json_lines"], given["format"]
    delimiter, key_delimiter = given["delimiter"], given["key_delimiter"]
    if not (as_json or fmt is not None or delimiter is not None or key_delimiter):
        key_delimiter = "\\t"
    render = renderer(as_json, fmt, delimiter, key_delimiter)
    curve, key_dir = given["curve"], given["key_dir"]
    options = {
        "node": node_config(
            given["tower"],
            given["host"],
            curve=curve,
            curve_allowed=curve_allowed(curve, given["curve_allow"]),
            mesh=given["mesh"],
            tower_fanout=given["tower_fanout"],
        ),
        "identity": None if key_dir is None else identity.load(key_dir),
        "profile": check_profile(given["profile"]),
        "trusted_stores": given["trusted_stores"],
        "offset_reset": "earliest",
        "on_data_loss": "skip",
    }
    timeout = given["timeout"]
    print_table(
        topic,
        lambda: Consumer((), **options),
        render,
        timeout=DEFAULT_TABLE_TIMEOUT if timeout is None else timeout,
        wait=given["wait"],
        progress=given["progress"],
    )
