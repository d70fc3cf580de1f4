"""``dafka-producer TOPIC``: one record per line of standard input.

Under the signed profile (the default) an ACK counts only from the stores given
with ``--trusted-store`` (node IDs or public keys, as ``dafka-store`` and
``dafka-keys show`` print them). Without any, ACKs from any store whose signature
verifies count, and the summary line says so: that suits a local platform
(``dafka-local``), not a shared network.
"""

from __future__ import annotations

import sys

import click

from ..errors import DafkaTimeout, ProfileError
from ..producer import Producer
from .common import CONTEXT, common_options, profile_option, run_cli


@click.command(context_settings=CONTEXT)
@click.argument("topic")
@common_options("producer")
@profile_option
@click.option(
    "-K",
    "--key-separator",
    default=None,
    help="Split each line into key and value at the first separator (signed profile).",
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
@click.option(
    "--durable",
    is_flag=True,
    help="Log every record to the state directory (fsync) before it counts as sent, so "
    "records survive a crash of this process and are published again on restart.",
)
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary line.")
@run_cli
def main(
    topic: str,
    tower: str,
    host: str,
    profile: str,
    key_separator: str | None,
    trusted_stores: str | None,
    min_acks: int,
    state_dir: str | None,
    timeout: float,
    max_unacked_bytes: int,
    durable: bool,
    quiet: bool,
) -> None:
    """Publish each line of standard input as one record of TOPIC.

    Exits 0 once every record is acknowledged by a store, 1 if some were not
    acknowledged within --timeout.
    """
    separator: bytes | None = None
    if key_separator is not None:
        if profile != "signed":
            raise ProfileError("keys need the signed wire profile; the rfc46 profile has no keys")
        if not key_separator:
            raise ProfileError("the key separator must not be empty")
        separator = key_separator.encode()
    trust_any = profile == "signed" and not trusted_stores
    producer = Producer(
        topic,
        towers=tower,
        host=host,
        state_dir=state_dir,
        max_unacked_bytes=max_unacked_bytes,
        profile=profile,  # type: ignore[arg-type]
        trusted_stores=trusted_stores or None,
        trust_any_store=True if trust_any else None,
        min_acks=min_acks,
        durable=durable,
    )
    sent = 0
    try:
        for line in sys.stdin.buffer:
            if line.endswith(b"\n"):
                line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
            if separator is None:
                producer.send(line)
            else:
                key, found, value = line.partition(separator)
                if found:
                    producer.send(value, key)
                else:  # a line without the separator is a record without a key
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
        trust = " (any store's ACK counted; pin stores with --trusted-store)" if trust_any else ""
        click.echo(
            f"{sent} records acknowledged on topic {topic!r}, partition {producer.partition}"
            f"{trust}",
            err=True,
        )


if __name__ == "__main__":
    main()
