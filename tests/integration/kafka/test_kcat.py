"""kcat (Debian's, on librdkafka) against the Kafka front door: metadata (``-L``), producing
with keys (``-K``) and headers (``-H``), consuming from the offsets ``-o`` names, and a
balanced group (``-G``) that commits and resumes."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.integration.kafka.conftest import KafkaFront, create_topic
from tests.procs import py
from tests.tools import require_tool

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

FORMAT = r"%p|%o|%k|%s|%h\n"


def kcat(front: KafkaFront, *args: str, stdin: bytes | None = None, timeout: float = 20) -> str:
    binary = require_tool("kcat", "kcat")
    done = subprocess.run(
        [binary, "-b", front.bootstrap, "-X", "socket.timeout.ms=10000", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (
        f"kcat {' '.join(args)} exited {done.returncode}:\n{done.stderr.decode()}"
    )
    return done.stdout.decode()


def rows(text: str) -> list[tuple[int, int, str, str, str]]:
    out = []
    for line in text.splitlines():
        p, o, k, v, h = line.split("|")
        out.append((int(p), int(o), k, v, h))
    return out


def produce_numbered(front: KafkaFront, topic: str, n: int, first: int = 0) -> None:
    lines = "".join(f"key{i}:value{i}\n" for i in range(first, first + n)).encode()
    kcat(
        front, "-P", "-t", topic, "-p", "0", "-K:", "-H", "app=kcat", "-H", "trace=t1", stdin=lines
    )


def test_kcat_metadata_lists_the_topic_its_partitions_and_the_listener(kafka: KafkaFront) -> None:
    require_tool("kcat", "kcat")
    create_topic(kafka.bootstrap, "kc-meta", 3)
    md = json.loads(kcat(kafka, "-L", "-J", "-t", "kc-meta"))
    [topic] = [t for t in md["topics"] if t["topic"] == "kc-meta"]
    assert sorted(p["partition"] for p in topic["partitions"]) == [0, 1, 2]
    brokers = {
        (b["name"].rsplit(":", 1)[0], int(b["name"].rsplit(":", 1)[1])) for b in md["brokers"]
    }
    listener = kafka.listeners[0]
    assert (listener.host, listener.port) in brokers
    assert all(p["leader"] in {b["id"] for b in md["brokers"]} for p in topic["partitions"])
    plain = kcat(kafka, "-L", "-t", "kc-meta")  # the human listing too
    assert 'topic "kc-meta" with 3 partitions' in plain


def test_kcat_produces_keys_and_headers_and_reads_them_back(kafka: KafkaFront) -> None:
    require_tool("kcat", "kcat")
    create_topic(kafka.bootstrap, "kc-rw", 1)
    produce_numbered(kafka, "kc-rw", 10)
    got = rows(kcat(kafka, "-C", "-t", "kc-rw", "-p", "0", "-o", "beginning", "-e", "-f", FORMAT))
    assert got == [(0, i, f"key{i}", f"value{i}", "app=kcat,trace=t1") for i in range(10)]


def test_kcat_offsets_beginning_absolute_relative_end_and_time(kafka: KafkaFront) -> None:
    require_tool("kcat", "kcat")
    create_topic(kafka.bootstrap, "kc-off", 1)
    produce_numbered(kafka, "kc-off", 6)
    time.sleep(0.05)  # the next records are stamped at a later millisecond
    cut_ms = int(time.time() * 1000)
    time.sleep(0.05)
    produce_numbered(kafka, "kc-off", 4, first=6)

    def read(*offset: str) -> list[int]:
        out = kcat(kafka, "-C", "-t", "kc-off", "-p", "0", *offset, "-e", "-f", FORMAT)
        return [o for _, o, _, _, _ in rows(out)]

    assert read("-o", "beginning") == list(range(10))
    assert read("-o", "7") == [7, 8, 9]  # absolute
    assert read("-o", "-3") == [7, 8, 9]  # relative to the end
    assert read("-o", f"s@{cut_ms}") == [6, 7, 8, 9]  # the first record at or after a time
    assert read("-o", "end") == []


def test_kcat_balanced_group_commits_and_resumes(kafka: KafkaFront) -> None:
    require_tool("kcat", "kcat")
    create_topic(kafka.bootstrap, "kc-grp", 1)
    produce_numbered(kafka, "kc-grp", 5)
    group = ["-G", "kc-group", "-X", "auto.offset.reset=earliest", "-f", FORMAT]
    first = rows(kcat(kafka, *group, "-c", "5", "kc-grp", timeout=30))
    assert [o for _, o, _, _, _ in first] == list(range(5))
    produce_numbered(kafka, "kc-grp", 2, first=5)
    # the group committed 5 when kcat left: the next member starts there
    again = rows(kcat(kafka, *group, "-c", "2", "kc-grp", timeout=30))
    assert [(o, k) for _, o, k, _, _ in again] == [(5, "key5"), (6, "key6")]
    if kafka.towers is None:
        return  # the in-memory backend keeps commits in memory: no Dafka group to show
    # the commits are Dafka's: the native admin command shows them, lag 0
    done = subprocess.run(
        py("dafka.cli.admin", "groups", "describe", "kc-group", "-t", kafka.towers),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [row] = [line.split() for line in done.stdout.splitlines() if line.startswith("kc-grp ")]
    assert row[2:5] == ["7", "7", "0"], done.stdout  # CURRENT-OFFSET LOG-END-OFFSET LAG
