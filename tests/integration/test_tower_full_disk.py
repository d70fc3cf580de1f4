"""A tower whose Raft data directory fills up (a 2 MiB tmpfs of the test's own, as root).

A Raft peer that cannot persist must stop: it may not vote or acknowledge what it could not
write. The tower exits non-zero with one line naming the directory and the system's reason;
before, it printed that line after two tracebacks (the peer's crash log and the thread's
uncaught exception) and named the error only as ``OSError(28, ...)``. Once the disk has room
again, the tower restarts on the same directory with every change it acknowledged.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dafka.errors import DafkaError
from dafka.metadata.state import command, decode_config
from dafka.raft.client import RaftClient
from tests.admin import tower_args
from tests.procs import Proc, py

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOPICS = 20_000
"""Far more auto-created topics of 200-character names than 2 MiB holds."""


def _tower(data: Path) -> tuple[Proc, str, str]:
    proc = Proc(py("tower", "--bind", "127.0.0.1:0", "--data-dir", str(data), *tower_args()))
    m = proc.wait_line(r"metadata peer \S+ on (tcp://\S+) \(cluster (\S+)\)")
    return proc, m.group(1), m.group(2)


def test_a_tower_on_a_full_disk_exits_with_one_line_and_restarts_with_what_it_acked(
    small_fs: Path,
) -> None:
    data = small_fs / "tower"
    proc, url, cluster = _tower(data)
    acked: list[str] = []
    try:
        with RaftClient([url], cluster, timeout=5) as client:
            for i in range(TOPICS):
                name = f"t{i:05d}-" + "x" * 200
                try:
                    client.update(command("topic.create", topic=name))
                except DafkaError:
                    break  # the tower stopped: not acknowledged
                acked.append(name)
        assert acked and len(acked) < TOPICS, "the disk never filled"
        rc = proc.wait(30)
    finally:
        proc.kill()
    assert rc == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr_lines if line.startswith("error:")]
    assert errors == [
        f"error: the tower's metadata peer t1 stopped: cannot write or read its Raft data "
        f"in {data / 'raft'}: No space left on device"
    ], proc.stderr

    subprocess.run(["mount", "-o", "remount,size=8m", str(small_fs)], check=True)
    proc, url, cluster = _tower(data)
    try:
        with RaftClient([url], cluster, timeout=10) as client:
            topics = decode_config(client.read([b"config"]))["topics"]
        assert set(acked) <= set(topics), len(set(acked) - set(topics))
    finally:
        proc.kill()
