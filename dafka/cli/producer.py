"""``dafka-producer TOPIC [FILE...]``: one record per line of standard input, or per file.

Lines end at ``\\n`` (a ``\\r`` before it is dropped), or at the bytes given with
``-D`` (kcat's escapes; then nothing is dropped: byte for byte). Each FILE given is
sent whole as one record, byte for byte, and standard input is not read.

Under the signed profile (the default) an ACK counts only from the stores given
with ``--trusted-store`` (node IDs or public keys, as ``dafka-store`` and
``dafka-keys show`` print them). Without any, ACKs from any store whose signature
verifies count, and the summary line says so: that suits a local platform
(``dafka-local``), not a shared network.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from ..config import DEFAULT_LINGER_MS, MAX_LINGER_MS, check_profile
from ..errors import ConfigError, ProfileError
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
from .feed import Feed, Signals
from .metrics import announce, metrics_options
from .producer_keys import header_option, key_options, key_rule, parse_headers
from .progress import Progress, progress_option

if TYPE_CHECKING:  # imported when the command runs (start-up time; Ctrl-C meanwhile: 130)
    from ..producer import Producer

PROGRESS_AFTER = 0.5
"""Seconds of waiting for acknowledgements before the progress line shows (on a terminal)."""


@click.command(cls=Command, context_settings=CONTEXT)
@click.argument("topic")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@common_options("producer")
@profile_option
@mesh_option
@fanout_option
@click.option(
    "-K",
    "--key-separator",
    default=None,
    help="Split each line into key and value at the first separator (signed profile; "
    "escapes as -D).",
)
@click.option(
    "-D",
    "--delimiter",
    default=None,
    help="Records end at DELIM instead of a newline, and are sent byte for byte (no \\r "
    "dropped); escapes \\n \\r \\t \\0 \\xHH \\\\ (kcat's -D).",
)
@click.option(
    "--trusted-store",
    "trusted_stores",
    default=None,
    help="Comma-separated node IDs or public keys of the stores whose ACKs count "
    "(signed profile; default: any store, with a notice).",
)
@click.option(
    "--min-acks",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Distinct stores that must acknowledge a record (more than 1 needs signed).",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep this producer's identity (its partition) and offsets here across runs.",
)
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds to wait at end of input for every record to be acknowledged.",
)
@click.option(
    "--max-unacked-bytes",
    default=128 * 1024 * 1024,
    show_default=True,
    type=int,
    help="Memory for records awaiting acknowledgement; reading pauses when full.",
)
@click.option(
    "--linger-ms",
    default=None,
    type=click.FloatRange(min=0, max=MAX_LINGER_MS),
    help=f"Let a line wait up to this long for others to share its signed batch: at most "
    f"one batch per linger, and a line after a quiet linger goes at once [default: "
    f"{DEFAULT_LINGER_MS:g}; 0 under --profile rfc46, and with --durable, which takes no "
    "other].",
)
@click.option(
    "--batch-format",
    default=3,
    show_default=True,
    type=int,
    metavar="1|3",
    help="Signed batch format to write: 3 (BLAKE3 digests, faster to seal and verify), or 1 "
    "(BLAKE2b) while stores or consumers of an older version, which read format 1 only, "
    "still serve or read the topic.",
)
@click.option(
    "--durable",
    is_flag=True,
    help="Log every record to the state directory (fsync) before it counts as sent, so "
    "records survive a crash of this process and are published again on restart.",
)
@click.option(
    "--grace",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="On SIGINT or SIGTERM: seconds to wait for what was sent to be acknowledged "
    "(a second signal stops at once).",
)
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary line.")
@key_options
@header_option
@metrics_options
@progress_option
@run_cli
def main(
    topic: str,
    files: tuple[str, ...],
    tower: str,
    host: str,
    curve: bool,
    curve_allow: str | None,
    profile: str,
    mesh: str,
    tower_fanout: str,
    key_separator: str | None,
    delimiter: str | None,
    trusted_stores: str | None,
    min_acks: int,
    state_dir: str | None,
    timeout: float,
    max_unacked_bytes: int,
    linger_ms: float | None,
    batch_format: int,
    durable: bool,
    grace: float,
    quiet: bool,
    fixed_key: str | None,
    null_empty: bool,
    headers: tuple[str, ...],
    compression: str | None,
    metrics_port: int | None,
    metrics_host: str,
    progress: bool,
) -> None:
    """Publish each line of standard input (or each FILE, whole) as one record of TOPIC.

    Exits 0 once every record is acknowledged by a store; 1 if a line could
    not be sent (too big: reported with its line number, the other lines are
    still sent) or some records were not acknowledged within --timeout. On
    SIGINT or SIGTERM it stops reading, waits up to --grace seconds for what it
    sent, prints how many records were and were not acknowledged, and exits
    130 or 143.
    """
    # the node types, imported now (not with this module): --help and usage mistakes
    # answer at once, and Ctrl-C while they load is exit 130 (run_cli), not a traceback
    from ..api.common import node_config
    from ..io.collector import freeze_heap
    from ..io.malloc import keep_freed_memory
    from ..producer import Producer

    keep_freed_memory()  # see dafka.io.malloc
    separator: bytes | None = None
    if key_separator is not None:
        if profile != "signed":
            raise ProfileError("keys need the signed wire profile; the rfc46 profile has no keys")
        if not key_separator:
            raise ProfileError("the key separator must not be empty")
        separator = unescape(key_separator)
    delim = b"\n" if delimiter is None else unescape(delimiter)
    if not delim:
        raise ConfigError("the delimiter (-D) must not be empty")
    if files and (delimiter is not None or separator is not None):
        raise ConfigError("each FILE is one record, whole: -D and -K split standard input only")
    check_readable(files)  # all of them, before any is sent
    keys = key_rule(separator, fixed_key, null_empty, profile)  # -k, -Z
    header_list = parse_headers(headers, profile)  # -H
    if compression not in (None, "none") and profile != "signed":
        raise ProfileError("compression (-z) needs the signed wire profile")
    trust_any = profile == "signed" and not trusted_stores
    producer = Producer(
        topic,
        node=node_config(
            tower,
            host,
            curve=curve,
            curve_allowed=curve_allowed(curve, curve_allow),
            mesh=mesh,
            tower_fanout=tower_fanout,
        ),
        state_dir=state_dir,
        max_unacked_bytes=max_unacked_bytes,
        profile=check_profile(profile),
        trusted_stores=trusted_stores or None,
        trust_any_store=True if trust_any else None,
        min_acks=min_acks,
        durable=durable,
        linger_ms=linger_ms,
        batch_format=batch_format,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        compression=compression,
    )
    freeze_heap()  # the node has started: see dafka.io.collector
    announce(producer.metrics)
    max_line = producer.max_value_bytes
    if separator is not None:
        max_line += len(separator) + producer.max_key_bytes
    if keys is not None and keys.fixed is not None and len(keys.fixed) > producer.max_key_bytes:
        raise ConfigError(f"the key (-k) is over {producer.max_key_bytes} bytes")
    wake = threading.Event()
    feed = Feed(
        producer,
        sys.stdin.fileno(),
        separator=separator,
        max_line=max_line,
        report=lambda text: click.echo(text, err=True),
        on_done=wake.set,
        delimiter=delim,
        strip_cr=delimiter is None,
        files=files,
        keys=keys,
        headers=header_list,
    )

    bar = Progress(None if progress else False)

    # A handler runs on the main thread between two of its bytecodes, so it takes no lock
    # (an Event's, the progress line's): the main thread may hold it. The first signal is
    # only noted (Signals.first); _settle, at most 0.5 s later, stops the feed and says so.
    def first(signum: int) -> None:
        feed.stop()  # a flag the reader checks

    def second(signum: int) -> None:  # abort: no more waiting, but still the counts
        t = feed.tally()  # counters only: no lock
        if bar.enabled:
            os.write(2, b"\n")  # past the progress line, without its lock
        _say(
            f"aborted by a second {Signals.name(signum)}: {t.acknowledged} records "
            f"acknowledged, {t.unacknowledged} not acknowledged"
            + (f", {t.failed} failed" if t.failed else "")
        )
        os._exit(Signals.exit_code(signum))

    signals = Signals(first, second)
    why = None
    try:
        feed.start()
        _settle(producer, feed, signals, wake, timeout, grace, bar)
        if producer.unacked and signals.first is None and feed.error is None:
            bar.end()
            why = producer.diagnose()  # which of the causes it is, before the node stops
    finally:
        bar.end()
        # the lines below say what close() would log; close() also wakes a send
        # blocked on a full buffer
        with _quiet_logger("dafka.producer._facade"):
            result = producer.close(timeout=0)
        feed.quiesce(timeout=5.0)
        if signals.first is None:
            # once interrupted, a second signal aborts at once until the very end
            signals.restore()
    if feed.error is not None:
        raise feed.error
    tally = feed.tally()
    acked, failed, missing = tally.acknowledged, tally.failed, tally.unacknowledged
    if signals.first is not None:
        _say(
            f"interrupted by {Signals.name(signals.first)}: {acked} records acknowledged, "
            f"{missing} not acknowledged"
            + (f", {failed} failed" if failed else "")
            + ("" if missing or failed else " (every line read was acknowledged)")
        )
        sys.exit(Signals.exit_code(signals.first))
    if result.unacknowledged:
        _say(
            f"error: {result.unacknowledged} of {feed.sent} records were not acknowledged within "
            f"{timeout:g} s: {why.text if why else 'no store acknowledged them'}; "
            f"{acked} acknowledged, {failed} failed"
        )
        sys.exit(1)
    if not quiet or failed:
        trust = " (any store's ACK counted; pin stores with --trusted-store)" if trust_any else ""
        _say(
            f"{acked} records acknowledged, {failed} failed on topic {topic!r}, "
            f"partition {producer.partition}{trust}"
        )
    if failed:
        sys.exit(1)


def check_readable(files: tuple[str, ...]) -> None:
    """ConfigError (exit 2, one line) naming the first FILE that cannot be opened for
    reading, before any is sent: checked by opening each, not by permission bits (which
    do not bind root, nor say what an ACL or a read-only mount refuses)."""
    # guard: dafka-producer-checks-file-can
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO: no wait for a writer
        except OSError as exc:
            raise ConfigError(
                f"cannot read FILE {path}: {exc.strerror or exc}; nothing was sent"
            ) from None
        os.close(fd)


def _settle(
    producer: Producer,
    feed: Feed,
    signals: Signals,
    wake: threading.Event,
    timeout: float,
    grace: float,
    bar: Progress,
) -> None:
    """Wait for the end of input or a signal, then for the ACKs: ``timeout`` or ``grace`` s,
    saying on a terminal how many are awaited once the wait lasts (``bar``)."""
    deadline: float | None = None
    quiet_since = 0.0
    interrupted = False
    quiet = False  # nothing more will be sent
    while True:
        now = time.monotonic()
        if signals.first is not None and not interrupted:
            interrupted = True
            feed.stop()
            deadline = now + grace if deadline is None else min(deadline, now + grace)
            bar.end()
            _say(
                f"stopping on {Signals.name(signals.first)}: no more input is read; waiting "
                f"up to {grace:g} s for acknowledgements (signal again to stop at once)"
            )
        if not quiet:
            quiet = feed.done.is_set() or (interrupted and feed.quiesce())
            quiet_since = now
            if quiet:
                producer.publish_now()  # no more lines: nothing lingers for company
            if quiet and deadline is None:
                deadline = now + timeout
            if quiet and feed.error is not None:
                return
        if quiet and not producer.unacked:
            return
        if deadline is not None and now >= deadline:
            return
        if quiet and deadline is not None and now - quiet_since >= PROGRESS_AFTER:
            bar.update(
                f"waiting for {producer.unacked} acknowledgement(s): {producer.acknowledged} "
                f"acknowledged, {max(0.0, deadline - now):.0f} s left"
            )
        wake.wait(0.05 if quiet else 0.5)
        wake.clear()


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _say(text: str) -> None:
    os.write(2, text.encode(errors="replace") + b"\n")


if __name__ == "__main__":
    main()
