"""``dafka-consumer TOPIC...``: print records, kcat / kafka-console-consumer style."""

from __future__ import annotations

import base64
import json
import sys
import time
from typing import Literal

import click

from ..api.common import node_config
from ..api.consumer import Consumer
from ..config import check_profile
from ..core.effects import ConsumedRecord
from ..errors import ConfigError, DafkaTimeout
from ..security import identity
from .common import CONTEXT, common_options, curve_allowed, profile_option, run_cli
from .metrics import announce, metrics_options

_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\0": "\0", "\\\\": "\\"}


def parse_offset(text: str) -> Literal["earliest", "latest"] | int | float:
    """kcat's -o: ``beginning``, ``end``, an offset ``N``, ``-N`` (``N`` before the end:
    a negative int) or ``s@MS`` (the first batch stamped at or after ``MS`` milliseconds
    since the epoch: a float, in seconds)."""
    low = text.lower()
    if low in ("beginning", "earliest"):
        return "earliest"
    if low in ("end", "latest"):
        return "latest"
    if text.isdigit():
        return int(text)
    if text[:1] == "-" and text[1:].isdigit() and int(text[1:]) > 0:
        return int(text)
    if low[:2] == "s@" and text[2:].isdigit():
        return int(text[2:]) / 1000.0
    if low == "stored":
        raise ConfigError("-o stored: dafka-consumer keeps no stored offsets; give a number")
    raise ConfigError(
        f"bad offset {text!r}: use beginning, end, N, -N (N before the end) or s@TIMESTAMP_MS"
    )


class Formatter:
    """kcat-like format tokens: %t topic, %p partition, %o offset, %s value, %k key,
    %S value size, %% a percent sign; \\n \\t \\r \\0 escapes."""

    def __init__(self, fmt: str) -> None:
        for esc, char in _ESCAPES.items():
            fmt = fmt.replace(esc, char)
        self.parts: list[str] = []
        i = 0
        while i < len(fmt):
            if fmt[i] == "%" and i + 1 < len(fmt):
                token = fmt[i : i + 2]
                if token[1] not in "tposkS%":
                    raise ConfigError(f"unknown format token {token!r}")
                self.parts.append(token)
                i += 2
            else:
                j = fmt.find("%", i + 1) if fmt[i] != "%" else i + 1
                j = len(fmt) if j < 0 else j
                self.parts.append(fmt[i:j])
                i = j

    def __call__(self, r: ConsumedRecord) -> bytes:
        out: list[bytes] = []
        for part in self.parts:
            if part == "%s":
                out.append(r.value)
            elif part == "%k":
                out.append(r.key or b"")
            elif part == "%t":
                out.append(r.topic.encode())
            elif part == "%p":
                out.append(r.partition.encode())
            elif part == "%o":
                out.append(str(r.offset).encode())
            elif part == "%S":
                out.append(str(len(r.value)).encode())
            elif part == "%%":
                out.append(b"%")
            else:
                out.append(part.encode())
        return b"".join(out)


def _text_or_b64(name: str, value: bytes | None) -> dict[str, object]:
    if value is None:
        return {name: None}
    try:
        return {name: value.decode()}
    except UnicodeDecodeError:
        return {name: None, f"{name}_base64": base64.b64encode(value).decode()}


def as_json(r: ConsumedRecord) -> bytes:
    obj: dict[str, object] = {"topic": r.topic, "partition": r.partition, "offset": r.offset}
    obj.update(_text_or_b64("key", r.key))
    obj.update(_text_or_b64("value", r.value))
    return json.dumps(obj).encode() + b"\n"


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
        else:
            return
        elapsed = now - self.started
        if self.at_end and elapsed >= self.wait:
            raise DafkaTimeout(f"{what} within {self.wait:g} s; {hint}")
        if elapsed >= NOTICE_AFTER and missing not in self.noted:
            self.noted.add(missing)
            until = f" (-e gives up after {self.wait:g} s, --wait)" if self.at_end else ""
            click.echo(f"warning: {what}; still trying{until}", err=True)


@click.command(context_settings=CONTEXT)
@click.argument("topics", nargs=-1, required=True)
@common_options("consumer")
@profile_option
@click.option(
    "--from-beginning", is_flag=True, help="Start at the first record (same as -o beginning)."
)
@click.option(
    "-o",
    "--offset",
    default=None,
    help="Start at: beginning, end, an offset N, -N (N before the end) or s@TIMESTAMP_MS "
    "(the first batch stamped at or after it; signed profile), in every partition.",
)
@click.option(
    "--watermarks",
    is_flag=True,
    help="Print 'topic partition low high' for each partition of TOPICS (what the stores "
    "hold, high = one past the newest offset) and exit. Per store: dafka query heads.",
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
    default="%s\\n",
    show_default=True,
    help="Output format: %t topic, %p partition, %o offset, %s value, %k key, %S size.",
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
    type=float,
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
@metrics_options
@run_cli
def main(
    topics: tuple[str, ...],
    tower: str,
    host: str,
    curve: bool,
    curve_allow: str | None,
    key_dir: str | None,
    profile: str,
    from_beginning: bool,
    offset: str | None,
    exit_at_end: bool,
    count: int | None,
    format: str,
    as_json_lines: bool,
    trusted_stores: str | None,
    timeout: float | None,
    wait: float,
    metrics_port: int | None,
    metrics_host: str,
    watermarks: bool,
) -> None:
    """Print the records of TOPICS as they arrive, each partition in order."""
    if from_beginning and offset is not None:
        raise ConfigError("give either --from-beginning or -o, not both")
    start = "earliest" if from_beginning else parse_offset(offset or "end")
    reset = "earliest" if isinstance(start, float) else start
    render = as_json if as_json_lines else Formatter(format)
    out = sys.stdout.buffer
    seen = 0
    started = time.monotonic()
    with Consumer(
        topics,
        node=node_config(tower, host, curve=curve, curve_allowed=curve_allowed(curve, curve_allow)),
        identity=None if key_dir is None else identity.load(key_dir),
        offset_reset=reset,
        profile=check_profile(profile),
        trusted_stores=trusted_stores,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        start_timestamp=start if isinstance(start, float) else None,
    ) as consumer:
        announce(consumer.metrics)
        if watermarks:
            marks = consumer.watermarks(timeout=wait)
            for (topic, partition), (low, high) in sorted(marks.items()):
                click.echo(f"{topic} {partition} {low} {high}")
            return
        waiting = _Waiting(consumer, started, wait, exit_at_end, curve)
        while count is None or seen < count:
            records = consumer.poll_batch(
                max_records=10_000 if count is None else count - seen, timeout=0.1
            )
            for record in records:
                out.write(render(record))
            seen += len(records)
            if records:
                out.flush()
                continue
            waiting.check(time.monotonic())
            if exit_at_end and consumer.at_end():
                break
            if exit_at_end and timeout is not None and time.monotonic() - started > timeout:
                click.echo(f"error: end not reached within {timeout:g} s", err=True)
                sys.exit(1)
        out.flush()


if __name__ == "__main__":
    main()
