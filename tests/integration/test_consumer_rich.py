"""Format-5 records end to end (issue 36): a producer publishes records with headers, their
own timestamps, a tombstone, compressed with zstd; a store process keeps them; a consumer
(the library, and the ``dafka-consumer`` CLI as a process) reads them back from the store
with the right headers and times, each verified against the producer's signature.

Every part is the real one: ``Producer.send(..., headers=, timestamp=)`` with
``compression="zstd"``, a store process, the library consumer, and the CLI as processes.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from dafka import Consumer, Producer
from dafka.wire.signed_rich import RichRecord
from tests.procs import ROOT, Tower, py

pytestmark = pytest.mark.integration

DEADLINE = 30.0
TOPIC = "rich"
T0 = 1_600_000_000_000  # the records' own times: years before their seal time

RECORDS = [
    RichRecord(b"user-1", b"first", T0, (("traceparent", b"00-4bf92f-00f067-01"),)),
    RichRecord(b"user-2", b"second", T0 + 1, (("a", b"1"), ("a", b"2"), ("null", None))),
    RichRecord(b"user-1", None, T0 + 2, ()),  # a tombstone
    RichRecord(None, b"\xff binary", T0 + 3, (("bin", b"\x00\xff"),)),
]


def test_headers_times_and_tombstones_come_back_from_a_store(tower: Tower, start_store) -> None:
    start_store()
    with Producer(
        TOPIC, towers=tower.address, metadata=False, linger_ms=50, compression="zstd"
    ) as p:
        futures = [
            p.send(r.value, r.key, headers=r.headers, timestamp=r.timestamp_ms) for r in RECORDS
        ]
        p.flush(timeout=DEADLINE)
        offsets = [f.result(timeout=DEADLINE) for f in futures]
        partition = p.node_id
    assert offsets == [0, 1, 2, 3]
    # the library, from the store (the producer is gone)
    got = []
    with Consumer(TOPIC, towers=tower.address, offset_reset="earliest", metadata=False) as c:
        deadline = time.monotonic() + DEADLINE
        while len(got) < len(RECORDS) and time.monotonic() < deadline:
            got.extend(c.poll_batch(timeout=0.5))
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
        (i, r.key, r.value, r.headers) for i, r in enumerate(RECORDS)
    ]
    assert [r.timestamp for r in got] == [r.timestamp_ms / 1000 for r in RECORDS]
    assert {r.partition for r in got} == {partition}
    # the CLI, two processes at once: kcat's %h, %T and %S; -J
    common = ["--from-beginning", "-e", "--wait", "20", "--tower", tower.address]
    procs = [
        subprocess.Popen(
            py("dafka.cli.consumer", TOPIC, *common, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
        for args in (["-f", "%o|%T|%S|%h\\n"], ["-J"])
    ]
    outs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=DEADLINE)
        finally:
            proc.kill()
        assert proc.returncode == 0, err.decode()
        outs.append(out)
    assert outs[0].splitlines() == [
        b"0|%d|5|traceparent=00-4bf92f-00f067-01" % T0,
        b"1|%d|6|a=1,a=2,null=NULL" % (T0 + 1),
        b"2|%d|-1|" % (T0 + 2),
        b"3|%d|8|bin=\x00\xff" % (T0 + 3),
    ]
    rows = [json.loads(line) for line in outs[1].splitlines()]
    assert [row["ts"] for row in rows] == [T0, T0 + 1, T0 + 2, T0 + 3]
    assert rows[0]["headers"] == ["traceparent", "00-4bf92f-00f067-01"]
    assert rows[1]["headers"] == ["a", "1", "a", "2", "null", None]
    assert "headers" not in rows[2] and rows[2]["payload"] is None
