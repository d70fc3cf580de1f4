"""Capture real frames from the ØMQ RAFT reference server (golden vectors; run by hand).

    DAFKA_ZMQ_RAFT_DIR=/work/zmqraft-ref python tests/data/raft/capture_zmq_raft.py \
        > tests/data/raft/zmq_raft_0.5.0_frames.json

Starts one reference peer (``node .../bin/zmq-raft.js -c CONFIG``) in a cluster of two
whose other member, ``lead``, is this script: a DEALER that sends it AppendEntries
and RequestVote as ``lead`` would and records the bytes of every answer. Each case is
``{"name", "note", "request": [hex frames], "response": [hex frames]}``. Nothing here
runs in the test suite; ``tests/unit/test_raft_reference_vectors.py`` reads the JSON.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq

from dafka.raft.codec import Entry, EntryType
from dafka.raft.codec import _wire as w

CLUSTER = b"golden"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    ref = Path(os.environ["DAFKA_ZMQ_RAFT_DIR"]) / "node_modules" / "zmq-raft"
    version = json.loads((ref / "package.json").read_text())["version"]
    tmp = Path(tempfile.mkdtemp(prefix="zmqraft-golden-"))
    ref_url = f"tcp://127.0.0.1:{free_port()}"
    lead_url = f"tcp://127.0.0.1:{free_port()}"
    config = {
        "raft": {
            "id": "ref",
            "secret": CLUSTER.decode(),
            "peers": [{"id": "ref", "url": ref_url}, {"id": "lead", "url": lead_url}],
            "data": {"path": str(tmp / "ref")},
            "router": {"bind": ref_url},
            "broadcast": {"url": f"tcp://127.0.0.1:{free_port()}"},
            "webmonitor": {"enable": False},
        }
    }
    (tmp / "ref.json").write_text(json.dumps(config))
    proc = subprocess.Popen(
        ["node", str(ref / "bin" / "zmq-raft.js"), "-c", str(tmp / "ref.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,  # read once it exited (little is written before)
        text=True,
    )
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    cases: list[dict[str, object]] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 20
        while "server listening at" not in proc.stdout.readline():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the reference peer did not start")
        dealer.connect(ref_url)
        ids = iter(range(1, 1000))

        def ask(name: str, note: str, frames: list[bytes]) -> list[bytes]:
            dealer.send_multipart(frames)
            if not dealer.poll(3000):
                raise SystemExit(f"{name}: no answer")
            got = dealer.recv_multipart()
            cases.append(
                {
                    "name": name,
                    "note": note,
                    "request": [f.hex() for f in frames],
                    "response": [f.hex() for f in got],
                }
            )
            return got

        def entry(n: int, term: int) -> Entry:
            return Entry(n, term, EntryType.STATE, n.to_bytes(12, "big"), b"golden %d" % n)

        term = 1000
        two = (entry(1, term), entry(2, term))
        ae = w.AppendEntries(next(ids), CLUSTER, "lead", term, 0, 0, 0, two)
        ask("append-success", "prev 0, entries 1-2 of term 1000, commit 0", ae.encode())
        ae = w.AppendEntries(next(ids), CLUSTER, "lead", term, 10, term, 0, ())
        ask(
            "append-gap",
            "prev 10 beyond its log (last index 2): false with its last index + 1 (3)",
            ae.encode(),
        )
        ae = w.AppendEntries(next(ids), CLUSTER, "lead", term, 2, term - 1, 0, ())
        ask(
            "append-term-mismatch",
            "prev 2 held with another term: false, no hint frame",
            ae.encode(),
        )
        ae = w.AppendEntries(next(ids), CLUSTER, "lead", term - 1, 2, term, 0, ())
        ask("append-stale-term", "term 999 < 1000: false, its term, no hint", ae.encode())
        ae = w.AppendEntries(next(ids), CLUSTER, "lead", term, 2, term, 0, ())
        frames = ae.encode()
        ask("append-heartbeat", "empty, prev 2 matching: true", frames)
        vote = w.RequestVote(next(ids), CLUSTER, "lead", term + 5, 2, term, pre_vote=True)
        ask(
            "prevote-as-real-vote",
            "our pre-vote (flags frame 1) for term 1005: the reference ignores the flags "
            "frame, grants a real vote and takes term 1005",
            vote.encode(),
        )
        term += 5
        ae = w.AppendEntries(next(ids), CLUSTER, "lead", term, 2, term - 5, 2, ())
        ask("append-commit", "empty, prev 2 matching, commit 2: true", ae.encode())
        ae = w.AppendEntries(next(ids), CLUSTER, "lead", term, 0, 0, 2, ())
        dealer.send_multipart(ae.encode())
        answered = bool(dealer.poll(1000))
        proc.wait(10)
        said = [line for line in proc.stderr.read().splitlines() if "refusing" in line]
        cases.append(
            {
                "name": "append-below-commit",
                "note": f"prev 0 below its commit index 2: answered={answered}, the peer "
                f"exited {proc.returncode}: {said[0].strip() if said else '?'}",
                "request": [f.hex() for f in ae.encode()],
                "response": None,
            }
        )
    finally:
        dealer.close(0)
        ctx.term()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    json.dump(
        {
            "reference": f"npm zmq-raft {version}",
            "captured_with": "tests/data/raft/capture_zmq_raft.py",
            "frames": "request frames as sent by a DEALER; response frames as received",
            "cases": cases,
        },
        sys.stdout,
        indent=1,
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
