"""``dafka-producer TOPIC``: one record per line of standard input."""

from __future__ import annotations

import sys

import click

from ..errors import DafkaTimeout, ProfileError
from ..producer import Producer
from .common import CONTEXT, common_options, run_cli


@click.command(context_settings=CONTEXT)
@click.argument("topic")
@common_options("producer")
@click.option(
    "-K",
    "--key-separator",
    default=None,
    help="Split each line into key and value at this separator.",
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
    type=float,
    help="Seconds to wait at end of input for every record to be acknowledged.",
)
@click.option(
    "--max-unacked-bytes",
    default=256 * 1024 * 1024,
    show_default=True,
    type=int,
    help="Memory for records awaiting acknowledgement; reading pauses when full.",
)
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary line.")
@run_cli
def main(
    topic: str,
    tower: str,
    host: str,
    key_separator: str | None,
    state_dir: str | None,
    timeout: float,
    max_unacked_bytes: int,
    quiet: bool,
) -> None:
    """Publish each line of standard input as one record of TOPIC.

    Exits 0 once every record is acknowledged by a store, 1 if some were not
    acknowledged within --timeout.
    """
    if key_separator is not None:
        raise ProfileError("keys need the signed wire profile; the rfc46 profile has no keys")
    producer = Producer(
        topic, towers=tower, host=host, state_dir=state_dir, max_unacked_bytes=max_unacked_bytes
    )
    sent = 0
    try:
        for line in sys.stdin.buffer:
            if line.endswith(b"\n"):
                line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
            producer.send(line)
            sent += 1
        try:
            producer.flush(timeout)
        except DafkaTimeout:
            missing = producer.unacked
            click.echo(
                f"error: {missing} of {sent} records were not acknowledged within {timeout:g} s "
                "(is a store running and reachable through the tower?)",
                err=True,
            )
            sys.exit(1)
    finally:
        producer.close(timeout=0)
    if not quiet:
        click.echo(
            f"{sent} records acknowledged on topic {topic!r}, partition {producer.partition}",
            err=True,
        )


if __name__ == "__main__":
    main()
