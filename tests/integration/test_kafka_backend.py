"""The Kafka front door's backend over a real tower and store (issue 37 point 2 and 3):
numbered partitions written through :class:`DafkaBackend` and read natively, native
partitions read through it, offsets by time, restarts and takeovers that continue a
partition's offsets, and topic management through the metadata."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka import Consumer, Producer
from dafka.errors import KafkaRequestError
from dafka.kafka.dafka_backend import DafkaBackend
from dafka.kafka.model import Broker, Code, FetchResult, KafkaRecord
from tests.admin import ADMIN
from tests.procs import Tower

pytestmark = pytest.mark.integration

DEADLINE = 20.0
ME = Broker(1, "127.0.0.1", 9092)
T0 = 1_600_000_000_000

RECORDS = [
    KafkaRecord(0, T0, b"k1", b"first", (("traceparent", b"00-ab-01"),)),
    KafkaRecord(0, T0 + 1, b"k2", b"second", (("a", b"1"), ("a", b"2"), ("null", None))),
    KafkaRecord(0, T0 + 2, b"k1", None, ()),  # a tombstone
    KafkaRecord(0, T0 + 3, None, b"\xff binary", (("bin", b"\x00\xff"),)),
]


def backend(tower: Tower, state: Path, **kw: object) -> DafkaBackend:
    options: dict = {"partitions": {"kt": 2}, "admin_key": ADMIN, "poll_interval": 0.05}
    options.update(kw)
    return DafkaBackend(towers=tower.address, me=ME, state_dir=state, **options)


@pytest.fixture
def listener(tower: Tower, start_store, tmp_path: Path) -> Iterator[DafkaBackend]:
    start_store()
    b = backend(tower, tmp_path / "listener")
    yield b
    b.close()


def fetch_all(b: DafkaBackend, topic: str, index: int, end: int) -> list[KafkaRecord]:
    got: list[KafkaRecord] = []
    deadline = time.monotonic() + DEADLINE
    while len(got) < end and time.monotonic() < deadline:
        offset = got[-1].offset + 1 if got else 0
        got.extend(b.fetch(topic, index, offset, 1 << 20, 0.5).records)
    return got


def test_produced_through_the_backend_reads_natively_byte_for_byte(
    tower: Tower, listener: DafkaBackend
) -> None:
    first = listener.produce("kt", 1, RECORDS, DEADLINE)
    assert first == 0
    assert listener.produce("kt", 1, RECORDS[:1], DEADLINE) == len(RECORDS)
    (info,) = listener.topics(["kt"])
    assert [(p.index, p.writable, p.leader) for p in info.partitions] == [
        (0, True, 1),
        (1, True, 1),
    ]
    partition = info.partitions[1].dafka_partition
    got = []
    with Consumer("kt", towers=tower.address, offset_reset="earliest", metadata=False) as c:
        deadline = time.monotonic() + DEADLINE
        while len(got) < len(RECORDS) + 1 and time.monotonic() < deadline:
            got.extend(c.poll_batch(timeout=0.5))
    assert {r.partition for r in got} == {partition}
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (i, r.key, r.value, r.headers, r.timestamp / 1000)
        for i, r in enumerate([*RECORDS, RECORDS[0]])
    ]
    # and back through the backend, as a Kafka consumer fetches them
    fetched = fetch_all(listener, "kt", 1, len(RECORDS) + 1)
    assert fetched == [
        KafkaRecord(i, r.timestamp, r.key, r.value, r.headers)
        for i, r in enumerate([*RECORDS, RECORDS[0]])
    ]
    assert listener.list_offset("kt", 1, -1) == (len(RECORDS) + 1, -1)
    assert listener.list_offset("kt", 1, -2) == (0, -1)
    assert listener.list_offset("kt", 1, T0 + 2) == (2, T0 + 2)
    assert listener.list_offset("kt", 1, T0 + 100) == (-1, -1)


def test_native_partitions_read_through_the_backend(tower: Tower, listener: DafkaBackend) -> None:
    with Producer("kt", towers=tower.address, linger_ms=0) as p:
        p.send_many([b"a", b"b"], [b"x", None], headers=[{"h": b"v"}, None])
        p.flush(DEADLINE)
        p.send_many([b"c"], timestamps=[T0])
        p.flush(DEADLINE)
        native = p.partition
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        (info,) = listener.topics(["kt"])
        if len(info.partitions) == 3:
            break
        time.sleep(0.05)
    assert [(p.index, p.dafka_partition, p.writable) for p in info.partitions][2] == (
        2,
        native,
        False,
    )
    got = fetch_all(listener, "kt", 2, 3)
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
        (0, b"x", b"a", (("h", b"v"),)),
        (1, None, b"b", ()),
        (2, None, b"c", ()),
    ]
    assert got[2].timestamp == T0 and got[0].timestamp > T0
    assert listener.list_offset("kt", 2, T0) == (0, got[0].timestamp)  # seal time is later
    with pytest.raises(KafkaRequestError) as refused:
        listener.produce("kt", 2, RECORDS[:1], DEADLINE)
    assert refused.value.code == Code.INVALID_REQUEST


def test_a_long_poll_ends_when_a_record_arrives(listener: DafkaBackend) -> None:
    listener.produce("kt", 0, RECORDS[:1], DEADLINE)
    start = time.monotonic()
    empty = listener.fetch("kt", 0, 1, 1 << 20, 0.3)
    assert empty.records == () and empty.high_watermark == 1
    assert 0.25 <= time.monotonic() - start < 5
    answers: list[FetchResult] = []
    waiting = threading.Thread(
        target=lambda: answers.append(listener.fetch("kt", 0, 1, 1 << 20, 8.0))
    )
    waiting.start()
    time.sleep(0.2)  # the fetch is waiting at the end of the partition
    start = time.monotonic()
    listener.produce("kt", 0, RECORDS[1:2], DEADLINE)
    waiting.join(DEADLINE)
    assert time.monotonic() - start < 4  # not the 8 s asked
    assert [(r.offset, r.value) for r in answers[0].records] == [(1, b"second")]


def test_a_restarted_listener_continues_the_partition(
    tower: Tower, start_store, tmp_path: Path
) -> None:
    start_store()
    state = tmp_path / "listener"
    first = backend(tower, state)
    try:
        assert first.produce("kt", 0, RECORDS, DEADLINE) == 0
    finally:
        first.close()
    again = backend(tower, state)
    try:
        assert again.produce("kt", 0, RECORDS[:1], DEADLINE) == len(RECORDS)
    finally:
        again.close()


def test_another_listener_with_the_secret_takes_over(
    tower: Tower, start_store, tmp_path: Path
) -> None:
    start_store()
    secret = tmp_path / "cluster.secret"
    a = backend(tower, tmp_path / "a", secret_file=secret)
    try:
        assert a.produce("kt", 1, RECORDS, DEADLINE) == 0
        pid = a.topics(["kt"])[0].partitions[1].dafka_partition
    finally:
        a.close()
    b = backend(tower, tmp_path / "b", secret_file=secret)
    try:
        assert b.topics(["kt"])[0].partitions[1].dafka_partition == pid
        assert b.produce("kt", 1, RECORDS[:2], DEADLINE) == len(RECORDS)
        got = fetch_all(b, "kt", 1, len(RECORDS) + 2)
        assert [r.offset for r in got] == list(range(len(RECORDS) + 2))
    finally:
        b.close()
    # the first one back, its own state a lease behind: it numbers after what b wrote
    a = backend(tower, tmp_path / "a", secret_file=secret)
    try:
        assert a.produce("kt", 1, RECORDS[:1], DEADLINE) == len(RECORDS) + 2
    finally:
        a.close()
    # a listener with another secret writes another partition
    c = backend(tower, tmp_path / "c")
    try:
        assert c.topics(["kt"])[0].partitions[1].dafka_partition != pid
    finally:
        c.close()


def test_create_describe_and_delete_a_topic(listener: DafkaBackend) -> None:
    listener.create_topic(
        "made",
        3,
        {"retention.ms": "60000", "cleanup.policy": "delete", "min.insync.replicas": "1"},
        False,
    )
    (info,) = listener.topics(["made"])
    assert [p.index for p in info.partitions] == [0, 1, 2]
    conf = listener.describe_configs("made")
    assert conf["retention.ms"] == "60000"
    assert conf["retention.bytes"] == "-1"
    assert conf["min.insync.replicas"] == "1"
    assert conf["compression.type"] == "producer"
    assert conf["partitions"] == "3"
    with pytest.raises(KafkaRequestError) as again:
        listener.create_topic("made", 1, {}, False)
    assert again.value.code == Code.TOPIC_ALREADY_EXISTS
    listener.create_topic("only-checked", 1, {}, True)
    assert listener.topics(["only-checked"]) == []
    with pytest.raises(KafkaRequestError) as bad:
        listener.create_topic("x", 1, {"segment.bytes": "1"}, False)
    assert bad.value.code == Code.INVALID_CONFIG
    listener.delete_topic("made")
    assert listener.topics(["made"]) == []
    with pytest.raises(KafkaRequestError) as gone:
        listener.describe_configs("made")
    assert gone.value.code == Code.UNKNOWN_TOPIC_OR_PARTITION


def test_topic_changes_need_an_admin_key(tower: Tower, start_store, tmp_path: Path) -> None:
    start_store()
    b = backend(tower, tmp_path / "l", admin_key=None)
    try:
        with pytest.raises(KafkaRequestError) as refused:
            b.create_topic("t", 1, {}, False)
        assert refused.value.code == Code.CLUSTER_AUTHORIZATION_FAILED
        assert "admin key" in str(refused.value)
    finally:
        b.close()


class Commits:
    """An in-memory GroupCommits: what the backend hands it, by Dafka partition."""

    def __init__(self) -> None:
        self.kept: dict[str, dict] = {}

    def commit(self, group: str, offsets, timeout: float) -> None:
        self.kept.setdefault(group, {}).update(offsets)

    def committed(self, group: str):
        return dict(self.kept.get(group, {}))


def test_commits_are_kept_by_dafka_partition(tower: Tower, start_store, tmp_path: Path) -> None:
    start_store()
    commits = Commits()
    b = backend(tower, tmp_path / "l", commits=commits)
    try:
        pids = [p.dafka_partition for p in b.topics(["kt"])[0].partitions]
        b.commit_offsets("g", {("kt", 0): (5, "meta"), ("kt", 1): (7, None)})
        assert commits.kept["g"] == {("kt", pids[0]): (5, "meta"), ("kt", pids[1]): (7, None)}
        assert b.committed_offsets("g", None) == {("kt", 0): (5, "meta"), ("kt", 1): (7, None)}
        assert b.committed_offsets("g", [("kt", 1)]) == {("kt", 1): (7, None)}
        assert b.committed_offsets("other", None) == {}
        with pytest.raises(KafkaRequestError) as unknown:
            b.commit_offsets("g", {("kt", 9): (1, None)})
        assert unknown.value.code == Code.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        b.close()


def test_closing_ends_long_polls_before_closing_their_sockets(
    tower: Tower, start_store, tmp_path: Path
) -> None:
    start_store()
    b = backend(tower, tmp_path / "l")
    outcomes: list[object] = []

    def poll() -> None:
        try:
            outcomes.append(b.fetch("kt", 0, 0, 1 << 20, 8.0))
        except Exception as exc:  # what the server's worker would get
            outcomes.append(exc)

    waiting = [threading.Thread(target=poll) for _ in range(3)]
    for t in waiting:
        t.start()
    time.sleep(0.3)  # the fetches wait at the end of the empty partition
    start = time.monotonic()
    b.close()
    for t in waiting:
        t.join(DEADLINE)
    assert time.monotonic() - start < 4
    assert len(outcomes) == 3
    for got in outcomes:  # an empty answer, or the listener's refusal: never a socket error
        assert isinstance(got, FetchResult) or (
            isinstance(got, KafkaRequestError) and got.code == Code.NOT_LEADER_OR_FOLLOWER
        ), got
    with pytest.raises(KafkaRequestError):
        b.fetch("kt", 0, 0, 1024, 0.0)
