"""Our Raft peer's RPC resends, seen by a follower that never answers AppendEntries.

A reference follower (zmq-raft) debounces only the last request id it saw from a
leader: an older AppendEntries sent again is processed again, truncating its log at
that request's ``prev + 1``. So our peer may send an AppendEntries again (same bytes,
same id) only while it is the newest it sent to that peer. The fake follower here
(a ROUTER at peer ``b``'s URL) grants votes, answers no AppendEntries, and records the
message ids in the order they arrive.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import zmq

from tests.procs import Proc, free_port, py, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_only_the_newest_append_entries_is_sent_again(tmp_path: Path) -> None:
    taken: set[int] = set()
    url_a, url_b = (f"tcp://127.0.0.1:{free_port(taken)}" for _ in range(2))
    ctx = zmq.Context()
    fake = ctx.socket(zmq.ROUTER)
    fake.setsockopt(zmq.LINGER, 0)
    fake.bind(url_b)
    args = ["--id", "a", "--bind", url_a, "--peer", f"b={url_b}", "--cluster", "rs"]
    args.append("--raft-insecure-null")  # b is this test's socket, speaking NULL
    proc = Proc(py("dafka.cli.raft", "peer", *args, "--data-dir", str(tmp_path / "a")))
    seen: list[bytes] = []
    try:
        proc.wait_line(r"raft peer a on ")

        def collect() -> bool:
            deadline = time.monotonic() + 0.05
            while (left := deadline - time.monotonic()) > 0:
                if not fake.poll(int(left * 1000) + 1):
                    break
                ident, msg_id, kind, *rest = fake.recv_multipart()
                if kind == b"?":  # RequestVote: granted, at the candidate's term
                    fake.send_multipart([ident, msg_id, rest[2], b"\x01"])
                elif kind == b"+":
                    seen.append(msg_id)
            return len(seen) >= 60 and len(seen) > len(set(seen)) + 5

        wait_until(collect, 20.0, interval=0.0, what="AppendEntries and some resends")
    finally:
        proc.terminate()
        fake.close(0)
        ctx.term()
    stale = []
    for k, msg_id in enumerate(seen):
        if msg_id in seen[:k] and seen[k - 1] != msg_id and msg_id != max_new(seen[:k]):
            stale.append(k)
    assert not stale, f"{len(stale)} resends of an AppendEntries older than the newest"


def max_new(earlier: list[bytes]) -> bytes:
    """The newest distinct id among ``earlier`` (the last first-seen one)."""
    firsts = [m for k, m in enumerate(earlier) if m not in earlier[:k]]
    return firsts[-1]
