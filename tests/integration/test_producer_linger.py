"""A lingering producer against a real tower and store: flush (and the CLI's end of
input) publish what lingers at once, and records sent within a linger share a batch."""

from __future__ import annotations

import subprocess
import time

from dafka.core import messages as m
from dafka.core.effects import Outgoing, Publish
from dafka.producer._facade import Producer
from tests.procs import ROOT, Tower, py

DEADLINE = 30.0


def test_flush_publishes_what_lingers_at_once(tower: Tower, start_store) -> None:
    start_store()
    with Producer("linger", towers=tower.address, metadata=False, linger_ms=60_000) as p:
        p.send(b"warm-up")
        p.flush(timeout=DEADLINE)  # a store is there and acknowledges
        handler, batches = p._handler, []
        take = handler.on_commands

        def counting(now: float) -> list[Outgoing]:
            out = list(take(now))
            batches.extend(e for e in out if isinstance(e, Publish) and type(e.msg) is m.Record)
            return out

        handler.on_commands = counting  # type: ignore[method-assign]
        futures = [p.send(b"r%d" % k) for k in range(20)]
        started = time.monotonic()
        p.flush(timeout=DEADLINE)  # a minute's linger, ended by the flush
        assert time.monotonic() - started < DEADLINE
        assert [f.result(timeout=0) for f in futures] == list(range(1, 21))
        # twenty records, one signed batch
        assert [(b.msg.offset, b.msg.count) for b in batches] == [(1, 20)]


def test_the_cli_publishes_what_lingers_at_end_of_input(tower: Tower, start_store) -> None:
    start_store()
    done = subprocess.run(
        py("dafka.cli.producer", "linger-cli", "--tower", tower.address, "--linger-ms", "60000"),
        input=b"".join(b"line %d\n" % k for k in range(50)),
        capture_output=True,
        timeout=DEADLINE,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"50 records acknowledged, 0 failed" in done.stderr, done.stderr


def test_the_cli_refuses_a_linger_with_durable(tmp_path) -> None:
    done = subprocess.run(
        [
            *py("dafka.cli.producer", "t", "--tower", "127.0.0.1:1", "--linger-ms", "5"),
            "--durable",
            "--state-dir",
            str(tmp_path / "state"),
        ],
        input=b"",
        capture_output=True,
        timeout=DEADLINE,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode != 0
    lines = done.stderr.decode().strip().splitlines()
    assert "does not apply to a durable producer" in lines[-1]
    assert "Traceback" not in done.stderr.decode()
