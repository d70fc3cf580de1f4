"""``dafka-consumer TOPIC...``: print records, kcat / kafka-console-consumer style."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from ..errors import ConfigError, DafkaError, DafkaTimeout
from .common import (
    CONTEXT,
    Command,
    common_options,
    curve_allowed,
    fanout_option,
    mesh_option,
    profile_option,
    run_cli,
    unescape,
)
from .consumer_ends import (
    StopAt,
    check_end,
    check_not_refused,
    matching,
    parse_offset,
    parse_offsets,
    registered_topics,
    split_topics,
)
from .kcat import kcat_json, kcat_options, run_mode, text_or_b64
from .metrics import announce, metrics_options, metrics_topic_cap_option
from .progress import Progress, end_progress, progress_option

if TYPE_CHECKING:  # imported when the command runs: see dafka.cli.consumer_ends
    from ..consumer import Consumer
    from ..core.effects import ConsumedRecord

__all__ = ["Formatter", "main", "parse_offset"]


class Formatter:
    """kcat-like format tokens: %t topic, %p partition, %o offset, %s value (nothing for a
    tombstone), %k key, %S value size (-1: a tombstone), %K key size (-1: no key), %T the
    record's timestamp (ms since the epoch, -1: none), %h headers (kcat's ``k=v,k2=v2``,
    ``k=NULL`` for a null value), %% a percent sign; the escapes of :func:`unescape`
    (``\\n``, ``\\x00``, ...)."""

    def __init__(self, fmt: str) -> None:
        self.parts: list[str | bytes] = []  # a token, or literal bytes
        literal: list[str] = []
        i = 0
        while i < len(fmt):
            if fmt[i] == "%" and i + 1 < len(fmt):
                token = fmt[i : i + 2]
                if token[1] not in "tposkSKTh%":
                    raise ConfigError(
                        f"unknown format token {token!r} (tokens: %t %p %o %s %k %S %K %T %h %%)"
                    )
                if literal:
                    self.parts.append(unescape("".join(literal)))
                    literal = []
                self.parts.append(b"%" if token == "%%" else token)
                i += 2
            else:
                literal.append(fmt[i])
                i += 1
        if literal:
            self.parts.append(unescape("".join(literal)))

    def __call__(self, r: ConsumedRecord) -> bytes:
        out: list[bytes] = []
        for part in self.parts:
            if type(part) is bytes:
                out.append(part)
            elif part == "%s":
                out.append(r.value or b"")
            elif part == "%k":
                out.append(r.key or b"")
            elif part == "%t":
                out.append(r.topic.encode())
            elif part == "%p":
                out.append(r.partition.encode())
            elif part == "%o":
                out.append(str(r.offset).encode())
            elif part == "%S":
                out.append(str(-1 if r.value is None else len(r.value)).encode())
            elif part == "%K":
                out.append(str(-1 if r.key is None else len(r.key)).encode())
            elif part == "%T":
                out.append(str(timestamp_ms(r)).encode())
            elif part == "%h":
                out.append(kcat_headers(r.headers))
        return b"".join(out)


def kcat_headers(headers: tuple[tuple[str, bytes | None], ...]) -> bytes:
    """kcat's ``%h``: ``k=v,k2=v2`` in the record's order, ``k=NULL`` for a null value,
    the values' bytes as they are; nothing for a record without headers."""
    parts = []
    for key, value in headers:
        parts.append(key.encode() + b"=" + (b"NULL" if value is None else value))
    return b",".join(parts)


def timestamp_ms(r: ConsumedRecord) -> int:
    """The record's timestamp in ms since the epoch (kcat's %T); -1 when it has none (rfc46)."""
    return -1 if r.timestamp is None else round(r.timestamp * 1000)


def delimited_format(delimiter: str | None, key_delimiter: str | None) -> str:
    """The -f format that kcat's -D (after each record) and -K (after the key) stand for."""
    fmt = "%s" + ("\\n" if delimiter is None else delimiter)
    return fmt if key_delimiter is None else "%k" + key_delimiter + fmt


def as_json(r: ConsumedRecord) -> bytes:
    obj: dict[str, object] = {"topic": r.topic, "partition": r.partition, "offset": r.offset}
    obj["timestamp"] = None if r.timestamp is None else timestamp_ms(r)
    obj.update(text_or_b64("key", r.key))
    obj.update(text_or_b64("value", r.value))
    obj["headers"] = [{"key": key, **text_or_b64("value", value)} for key, value in r.headers]
    return json.dumps(obj).encode() + b"\n"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _group_options(
    group: str | None, commit_interval: float, session_timeout: float, heartbeat_interval: float
) -> dict[str, object]:
    """The Consumer's group arguments for -G (none without it); assignments said on stderr."""
    if group is None:
        return {}

    def said(what: str) -> Callable[[list[tuple[str, str]]], None]:
        def call(keys: list[tuple[str, str]]) -> None:
            names = ", ".join(f"{t}/{p}" for t, p in keys)
            click.echo(f"% group {group} {what}: {names}", err=True)

        return call

    return {
        "group": group,
        "auto_commit_interval": commit_interval,
        "session_timeout": session_timeout,
        "heartbeat_interval": heartbeat_interval,
        "on_assign": said("assigned"),
        "on_revoke": said("revoked"),
    }


DEFAULT_WAIT = 15.0
"""Seconds ``-e`` waits for a tower and a store to answer before it gives up."""
NOTICE_AFTER = 2.0
"""Seconds without an answer before the consumer says it is still trying."""


class _Waiting:
    """Says once when no tower (with ``-e``: no store) has answered yet, and with
    ``-e`` gives up after ``wait`` seconds: silence would look like an empty topic."""

    def __init__(
        self, consumer: Consumer, started: float, wait: float, at_end: bool, curve: bool = False
    ) -> None:
        self.consumer = consumer
        self.curve = curve
        self.started = started
        self.wait = wait
        self.at_end = at_end
        self.noted: set[str] = set()

    def check(self, now: float) -> None:
        c = self.consumer
        elapsed = now - self.started
        if not c.tower_answered:
            missing = "tower"
            what = f"no tower answered at {', '.join(c.towers)}"
            hint = "is dafka-tower (or dafka-local) running there? (--tower)"
            if self.curve:  # a refused handshake looks like silence to the client
                hint = (
                    "is dafka-tower running there with --curve, and does the cluster "
                    "admit this node's key (curve_clients, clients)? (--tower HOST:PORT@KEY)"
                )
        elif self.at_end and not c.store_answered:
            missing = "store"
            what = "no store answered"
            hint = "-e needs a store to know where the end is: is dafka-store running?"
            if c.stores_waiting():
                hint = (
                    "a store greeted this consumer but did not connect back: can it reach --host?"
                )
        elif self.at_end and (waiting := c.stores_waiting()):
            # -e waits for every store that greeted it: one may hold what others do not
            store, elapsed = max(waiting.items(), key=lambda item: item[1])  # since it greeted
            missing = "store connection"
            what = f"store {store} greeted this consumer and did not connect back"
            hint = "can it reach this consumer's --host?"
        else:
            return
        if self.at_end and elapsed >= self.wait:
            raise DafkaTimeout(f"{what} within {self.wait:g} s; {hint}")
        if elapsed >= NOTICE_AFTER and missing not in self.noted:
            self.noted.add(missing)
            until = f" (-e gives up after {self.wait:g} s, --wait)" if self.at_end else ""
            click.echo(f"warning: {what}; still trying{until}", err=True)


@click.command(cls=Command, context_settings=CONTEXT)
@click.argument("topics", nargs=-1)
@common_options("consumer")
@profile_option
@mesh_option
@fanout_option
@click.option(
    "--from-beginning", is_flag=True, help="Start at the first record (same as -o beginning)."
)
@click.option(
    "-o",
    "--offset",
    multiple=True,
    help="Start at: beginning, end, an offset N, -N (N before the end) or s@TIMESTAMP_MS "
    "(the first record whose time is at or after it; signed profile), in every partition. "
    "A second -o e@TIMESTAMP_MS stops each partition at its first record stamped at or "
    "after it, and exits once every partition has stopped (or, with -e, reached its end).",
)
@click.option(
    "--watermarks",
    is_flag=True,
    help="Print 'topic partition low high' for each partition of TOPICS and exit: low is "
    "the first offset the stores hold, high the next offset to be written (Kafka's high "
    "watermark: one past the newest). Takes no -o, -c, -e, -f, -D, -K, --json, -G. Per "
    "store: dafka query heads.",
)
@click.option(
    "--table",
    "table",
    default=None,
    metavar="TOPIC",
    help="Print the newest value of every key of TOPIC ('KEY<tab>VALUE' lines in key order, "
    "or as -f, -K, -D, --json say) and exit: every partition read from its beginning to "
    "its end; a tombstone removes its key. Exit 1 if a store dropped a record compaction "
    "must keep. Takes no TOPICS, -o, -e, -c, -G.",
)
@click.option(
    "-e", "--exit-at-end", is_flag=True, help="Exit once every known partition is read to its end."
)
@click.option(
    "-c", "--count", default=None, type=click.IntRange(min=1), help="Exit after N records."
)
@click.option(
    "-f",
    "--format",
    "format",
    default=None,
    help="Output format (default %s\\n): %t topic, %p partition, %o offset, %s value, "
    "%k key, %S value size (-1: tombstone), %K key size, %T the record's timestamp (ms), "
    "%h headers (k=v,k2=v2), %% a percent sign; escapes "
    "\\n \\r \\t \\0 \\xHH \\\\.",
)
@click.option(
    "-D",
    "--delimiter",
    default=None,
    help="Write DELIM after each value, byte for byte (kcat's -D; same escapes as -f). "
    "-D '' writes the values back to back.",
)
@click.option(
    "-K",
    "--key-delimiter",
    default=None,
    help="Write the key, then DELIM, before each value (kcat's -K).",
)
@click.option("--json", "as_json_lines", is_flag=True, help="One JSON object per record.")
@click.option(
    "--trusted-store",
    "trusted_stores",
    default=None,
    help="Comma-separated node IDs or public keys of the stores whose signed retention "
    "tails may skip deleted records (signed profile; default: any store's, bounded).",
)
@click.option(
    "--timeout",
    default=None,
    type=click.FloatRange(min=0, min_open=True),
    help="With -e: give up (exit 1) if the end is not reached within this many seconds.",
)
@click.option(
    "--wait",
    default=DEFAULT_WAIT,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="With -e: give up (exit 1) if no tower, or no store, has answered within this many "
    "seconds. Either way, say so on stderr after a couple of seconds.",
)
@click.option(
    "--key-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="With --curve: the directory of the node.key this consumer speaks CURVE under "
    "(dafka-keys create). Default: a fresh key.",
)
@click.option(
    "-G",
    "--group",
    default=None,
    help="Join this consumer group: read the partitions it assigns, from its committed "
    "offsets, and commit as records are printed (kcat -G). -o then says where to start "
    "a partition with no committed offset (default: stored, which is end).",
)
@click.option(
    "--commit-interval",
    default=5.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="With -G: seconds between automatic commits (and one on exit).",
)
@click.option(
    "--session-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="With -G: a member silent this long is dead and its partitions move.",
)
@click.option(
    "--heartbeat-interval",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="With -G: seconds between heartbeats (at most half the session timeout).",
)
@click.option(
    "--state-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="With -G: keep the member's key here, so a restart is the same member.",
)
@kcat_options
@metrics_options
@metrics_topic_cap_option
@progress_option
@run_cli
def main(
    topics: tuple[str, ...],
    tower: str,
    host: str,
    curve: bool,
    curve_allow: str | None,
    key_dir: str | None,
    profile: str,
    mesh: str,
    tower_fanout: str,
    from_beginning: bool,
    offset: tuple[str, ...],
    exit_at_end: bool,
    count: int | None,
    format: str | None,
    delimiter: str | None,
    key_delimiter: str | None,
    as_json_lines: bool,
    trusted_stores: str | None,
    timeout: float | None,
    wait: float,
    metrics_port: int | None,
    metrics_host: str,
    metrics_topic_cap: int,
    watermarks: bool,
    table: str | None,
    progress: bool,
    group: str | None,
    commit_interval: float,
    session_timeout: float,
    heartbeat_interval: float,
    state_dir: str | None,
    json_envelope: bool,
    list_metadata: bool,
    query_times: bool,
) -> None:
    """Print the records of TOPICS as they arrive, each partition in order."""
    # the node types, imported now (not with this module): --help and usage mistakes
    # answer at once, and Ctrl-C while they load is exit 130 (run_cli), not a traceback
    from ..api.common import node_config
    from ..config import check_profile
    from ..consumer import Consumer
    from ..io.collector import freeze_heap
    from ..io.malloc import keep_freed_memory
    from ..security import identity

    if table is not None:  # dafka.cli.consumer_table
        from .consumer_table import run_table

        run_table(table, topics, locals(), _renderer)
        return
    kcat_key = None if key_dir is None or not curve else identity.load(key_dir)
    if run_mode(  # -L and -Q: ask the stores and exit
        topics=topics,
        tower=tower,
        key=kcat_key,
        list_metadata=list_metadata,
        query_times=query_times,
        json_envelope=json_envelope,
        timeout=wait,
    ):
        return

    keep_freed_memory()  # see dafka.io.malloc
    if isinstance(offset, str):  # one value from a config file or DAFKA_OFFSET
        offset = (offset,)
    if from_beginning and offset:
        raise ConfigError("give either --from-beginning or -o, not both")
    if group is not None and [o for o in offset if o.lower() == "stored"] == list(offset):
        offset = ()  # the committed offsets, else the end
    if group is None and state_dir is not None:
        raise ConfigError("--state-dir needs a group (-G GROUP)")
    if watermarks:
        _only_watermarks()
    offsets = parse_offsets(offset)
    start = "earliest" if from_beginning else offsets.start
    stop = None if offsets.end_ms is None else StopAt(offsets.end_ms)
    named, patterns = split_topics(topics)
    if stop is not None and profile != "signed":
        raise ConfigError("-o e@TIMESTAMP_MS needs the signed profile: rfc46 records carry no time")
    if group is not None and (patterns or stop is not None):
        raise ConfigError("-G takes named topics and no -o e@: a group member's topics are fixed")
    if watermarks and patterns:
        raise ConfigError("--watermarks takes named topics, not a regex")
    group_kw = _group_options(group, commit_interval, session_timeout, heartbeat_interval)
    if group is not None:
        group_kw["state_dir"] = state_dir
    reset = "earliest" if isinstance(start, float) else start
    render = _renderer(as_json_lines, format, delimiter, key_delimiter)
    if json_envelope:  # kcat's -J (its field names)
        if as_json_lines or format is not None or delimiter is not None or key_delimiter:
            raise ConfigError("-J writes JSON lines: it takes no --json, -f, -D or -K")
        render = kcat_json
    out = sys.stdout.buffer
    seen = 0
    started = time.monotonic()
    with Consumer(
        named,
        node=node_config(
            tower,
            host,
            curve=curve,
            curve_allowed=curve_allowed(curve, curve_allow),
            mesh=mesh,
            tower_fanout=tower_fanout,
        ),
        identity=None if key_dir is None else identity.load(key_dir),
        offset_reset=reset,
        profile=check_profile(profile),
        trusted_stores=trusted_stores,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        metrics_topic_cap=metrics_topic_cap,
        start_timestamp=start if isinstance(start, float) else None,
        **group_kw,  # type: ignore[arg-type]
    ) as consumer:
        freeze_heap()  # the node has started: see dafka.io.collector
        announce(consumer.metrics)
        if group is not None:
            # SIGTERM leaves the group cleanly (commit, leave), as Ctrl-C does
            signal.signal(signal.SIGTERM, _interrupt)
            click.echo(f"% group {group} member {consumer.member_id}", err=True)
        if watermarks:
            marks = consumer.watermarks(timeout=wait)
            for (topic, partition), (low, high) in sorted(marks.items()):
                click.echo(f"{topic} {partition} {low} {high}")
            if not marks:  # an empty answer says so (on stderr: stdout stays data)
                check_not_refused(consumer, named, min(wait, 2.0))  # a read ACL: exit 1
                click.echo(f"no partitions of {', '.join(topics)} on the stores", err=True)
            return
        regex = _Regex(consumer, patterns, wait, exit_at_end) if patterns else None
        waiting = _Waiting(consumer, started, wait, exit_at_end, curve)
        # catching up with -e: a status line on stderr when it is a terminal and the records
        # go elsewhere (a file, a pipe), never between records on the same terminal
        bar = Progress(None if progress and exit_at_end and not _stdout_is_terminal() else False)
        while count is None or seen < count:
            records = consumer.poll_batch(
                max_records=10_000 if count is None else count - seen, timeout=0.1
            )
            stopped_one = False
            if stop is not None and records:
                records, stopped_one = stop.keep(records)
            try:
                for record in records:
                    out.write(render(record))
                if records:
                    out.flush()
            except BaseException:
                if group is not None:  # the group commits positions as it leaves: not these
                    _unread(consumer, records)
                raise
            seen += len(records)
            if stopped_one and stop is not None and stop.done(consumer.positions()):
                bar.end(f"reached e@{stop.end_ms}: {seen} record(s) written")
                break
            if bar.due() and consumer.store_answered:
                _catching_up(bar, consumer, seen)
            if records:
                continue
            waiting.check(time.monotonic())
            if regex is not None:
                regex.refresh()
            if exit_at_end and consumer.at_end():
                subscribed = named + ([] if regex is None else regex.topics)
                notes = check_end(
                    consumer, subscribed, start if group is None else 0, min(wait, 2.0)
                )
                bar.end(f"caught up: {seen} record(s) written")
                for note in notes:
                    click.echo(note, err=True)
                break
            if exit_at_end and timeout is not None and time.monotonic() - started > timeout:
                end_progress()
                click.echo(f"error: end not reached within {timeout:g} s", err=True)
                sys.exit(1)
        out.flush()


_NOT_WITH_WATERMARKS = {
    "offset": "-o",
    "from_beginning": "--from-beginning",
    "exit_at_end": "-e",
    "count": "-c",
    "format": "-f",
    "delimiter": "-D",
    "key_delimiter": "-K",
    "as_json_lines": "--json",
    "group": "-G",
}


def _only_watermarks() -> None:
    """--watermarks prints the watermarks and reads no record: an option that shapes or
    bounds the records read, given on the command line (or the environment), is refused
    rather than ignored (the environment's and a config file's defaults are left alone)."""
    ctx = click.get_current_context()
    given = [
        flag
        for name, flag in _NOT_WITH_WATERMARKS.items()
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    ]
    # guard: dafka-consumer-watermarks-refuses
    if given:
        raise click.UsageError(f"--watermarks reads no records: it takes no {', '.join(given)}")


class _Regex:
    """The topics that regex TOPICS (``^...``) match in the cluster metadata, subscribed
    to as they appear (kcat, Kafka); with ``-e`` those that match at start only, and
    none is an error."""

    def __init__(
        self, consumer: Consumer, patterns: list[re.Pattern[str]], wait: float, exit_at_end: bool
    ) -> None:
        self.consumer = consumer
        self.patterns = patterns
        self.topics: list[str] = []
        self.follow = not exit_at_end
        registered = registered_topics(consumer, wait)
        shown = ", ".join(p.pattern for p in patterns)
        if registered is None:
            raise DafkaTimeout(
                f"regex topic(s) {shown}: no cluster metadata answered within {wait:g} s to "
                "match them against (--wait)"
            )
        self._revision = -1
        self._take(registered)
        if not self.topics:
            if exit_at_end:
                raise DafkaError(f"no topic matches {shown} ({len(registered)} topic(s) known)")
            click.echo(f"% no topic matches {shown} yet: waiting for one", err=True)
        elif exit_at_end:
            # subscribed after the consumer started: wait for the stores' heads of these
            # topics, so that at_end() knows their partitions before it can say "done"
            consumer.watermarks(self.topics, timeout=wait)

    def _take(self, registered: object) -> None:
        view = self.consumer.metadata
        self._revision = -1 if view is None else view.revision
        for topic in matching(self.patterns, registered):  # type: ignore[arg-type]
            if topic not in self.topics:
                self.consumer.subscribe(topic)
                self.topics.append(topic)
                click.echo(f"% subscribed to {topic}", err=True)

    def refresh(self) -> None:
        view = self.consumer.metadata
        if not self.follow or view is None or view.revision == self._revision:
            return
        config = view.config
        if config is not None:
            self._take(config["topics"])


def _unread(consumer: Consumer, records: list[ConsumedRecord]) -> None:
    """Seek each partition of ``records`` back to its first one: a signal (SIGTERM raises
    KeyboardInterrupt here, as Ctrl-C does) or a closed pipe stopped their printing, and the
    group commits the positions as the member leaves. Before, the records polled but not
    printed were committed as read, and the next member started after them: lost to the
    group. Now they are read again (some of them perhaps printed twice: at least once)."""
    first: dict[tuple[str, str], int] = {}
    for record in records:
        first.setdefault((record.topic, record.partition), record.offset)
    for (topic, partition), offset in first.items():
        consumer.seek(topic, partition, offset)


def _renderer(
    as_json_lines: bool, format: str | None, delimiter: str | None, key_delimiter: str | None
) -> Callable[[ConsumedRecord], bytes]:
    """--json, -f, or -D/-K; a choice given on the command line wins over the config file's."""
    ctx = click.get_current_context()
    given = {
        name
        for name, value in (
            ("format", format),
            ("delimiter", delimiter),
            ("key_delimiter", key_delimiter),
            ("as_json_lines", as_json_lines or None),
        )
        if value is not None
        and ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT_MAP
    }
    if as_json_lines:
        if given & {"format", "delimiter", "key_delimiter"}:
            raise ConfigError("--json writes JSON lines: it takes no -f, -D or -K")
        return as_json
    if format is not None and (delimiter is not None or key_delimiter is not None):
        if "format" in given and given & {"delimiter", "key_delimiter"}:
            raise ConfigError("give -f, or -D and -K, not both")
        if "format" not in given:  # -D/-K here, a format in the config file
            format = None
    return Formatter(format if format is not None else delimited_format(delimiter, key_delimiter))


def _stdout_is_terminal() -> bool:
    try:
        return os.isatty(1)
    except OSError:
        return False


def _catching_up(bar: Progress, consumer: Consumer, seen: int) -> None:
    left = consumer.remaining()
    if left is not None:
        bar.update(f"catching up: {seen} record(s) written, {left} more known")


if __name__ == "__main__":
    main()
