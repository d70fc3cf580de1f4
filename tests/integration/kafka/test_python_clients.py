"""confluent-kafka, kafka-python and aiokafka through the Kafka front door: 100,000 records
with keys and headers produced and read by a group of two members, one SIGKILLed mid-way
(nothing lost; a record read twice only where Kafka's at-least-once allows it); and a
member that commits, stops, and a new one resuming exactly there."""

from __future__ import annotations

import signal
import threading
from collections import Counter

import pytest

from tests.integration.kafka import clients as kc
from tests.integration.kafka.conftest import KafkaFront, create_topic
from tests.procs import Proc, py, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # kafka-python, aiokafka
]

N = 100_000
PARTITIONS = 4


def member(front: KafkaFront, client: str, topic: str, group: str, *extra: str) -> Proc:
    return Proc(
        py(
            "tests.integration.kafka.clients", "member", "--client", client,
            "--bootstrap", front.bootstrap, "--topic", topic, "--group", group, *extra,
        )
    )  # fmt: skip


def reading(p: Proc) -> kc.Reading:
    return kc.parse(bytes(p.stdout))


def check_contents(readings: list[kc.Reading], n: int) -> Counter[tuple[int, int]]:
    """Every record 0..n-1 read with its content intact, at one (partition, offset) each;
    returns how often each (partition, offset) was read."""
    where: dict[int, tuple[int, int]] = {}
    times: Counter[tuple[int, int]] = Counter()
    bad = []
    for r in readings:
        for p, o, i, crc in r.records:
            times[(p, o)] += 1
            if crc != kc.expected_fingerprint(i) and len(bad) < 5:
                bad.append((p, o, i))
            assert where.setdefault(i, (p, o)) == (p, o), f"record {i} at two places"
    assert not bad, f"records whose key, value or headers changed: {bad}"
    missing = sorted(set(range(n)) - set(where))
    assert not missing, f"{len(missing)} records never read, first {missing[:5]}"
    return times


@pytest.mark.parametrize("client", kc.CLIENTS)
def test_group_of_two_one_killed_loses_nothing(kafka: KafkaFront, client: str) -> None:
    topic, group = f"grp-{client}", f"g-{client}"
    create_topic(kafka.bootstrap, topic, PARTITIONS)
    survivor = member(kafka, client, topic, group)
    victim = member(kafka, client, topic, group)
    try:
        # both hold partitions: the group has formed with two members
        wait_until(
            lambda: all(
                (r := reading(m)).assignments and r.assignments[-1] for m in (survivor, victim)
            ),
            30,
            interval=0.1,
            what="both members assigned partitions",
        )
        produced: list[kc.Produced] = []
        t = threading.Thread(
            target=lambda: produced.append(kc.PRODUCERS[client](kafka.bootstrap, topic, range(N)))
        )
        t.start()
        wait_until(lambda: len(reading(victim).records) >= 5_000, 30, what="the victim reading")
        victim.p.send_signal(signal.SIGKILL)
        victim.wait(10)
        t.join(60)
        assert produced and produced[0].errors == [] and produced[0].acked == N, produced

        def complete() -> bool:
            seen = {i for r in (reading(survivor), reading(victim)) for _, _, i, _ in r.records}
            return len(seen) == N

        wait_until(complete, 40, interval=0.2, what=f"all {N} records read by the group")
        survivor.terminate()
    finally:
        survivor.kill()
        victim.kill()
    readings = [reading(survivor), reading(victim)]
    times = check_contents(readings, N)
    duplicates = sum(c - 1 for c in times.values())
    # a record is read again only if the member that read it first never committed past it
    again = []
    for p_o, count in times.items():
        if count < 2:
            continue
        committed = sum(
            1
            for r in readings
            if any((p, o) == p_o for p, o, _, _ in r.records)
            and r.committed.get(p_o[0], 0) > p_o[1]
        )
        if committed > 1:
            again.append(p_o)
    assert not again, f"records read again after a commit past them: {again[:5]}"
    assert duplicates <= len(readings[1].records), (duplicates, len(readings[1].records))
    print(
        f"{client}: {N} records, {duplicates} read twice (the victim read {len(readings[1].records)})"
    )


@pytest.mark.parametrize("client", kc.CLIENTS)
def test_commit_restart_resume(kafka: KafkaFront, client: str) -> None:
    n = 1000
    topic, group = f"resume-{client}", f"r-{client}"
    create_topic(kafka.bootstrap, topic, 2)
    produced = kc.PRODUCERS[client](kafka.bootstrap, topic, range(n))
    assert produced.errors == [] and produced.acked == n
    first = member(kafka, client, topic, group, "--batch", "100", "--stop-after", "600")
    assert first.wait(30) == 0, first.stderr
    one = reading(first)
    assert 600 <= len(one.records) < n
    read_first = {(p, o) for p, o, _, _ in one.records}
    # what it committed is exactly what it read, per partition
    for p in {p for p, _ in read_first}:
        assert one.committed[p] == max(o for q, o in read_first if q == p) + 1
    rest = n - len(one.records)
    second = member(kafka, client, topic, group, "--batch", "100", "--stop-after", str(rest))
    assert second.wait(30) == 0, second.stderr
    two = reading(second)
    times = check_contents([one, two], n)
    assert max(times.values()) == 1, "a record read again after its commit"
    for p, committed in one.committed.items():
        starts = [o for q, o, _, _ in two.records if q == p]
        assert not starts or min(starts) == committed, (p, committed, min(starts))
