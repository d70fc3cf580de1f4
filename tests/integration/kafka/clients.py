"""The three Python Kafka clients, driven the same way: produce N numbered records with keys
and headers, and consume in a group as a child process (``python -m
tests.integration.kafka.clients member ...``) that a test can SIGKILL.

Record ``i`` has key ``k%07d``, a value of 60 bytes derived from ``i`` and two headers;
:func:`fingerprint` is the CRC-32 of all three, so a consumer reports one short line per
record (``r PARTITION OFFSET I CRC``) and the test checks every record's content without
holding it. After every synchronous commit that returned, a member prints ``c PARTITION
NEXT_OFFSET`` for each partition it committed; on every assignment ``a P,P,...``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

RecordHeaders = list[tuple[str, bytes]]


def key_of(i: int) -> bytes:
    return b"k%07d" % i


def value_of(i: int) -> bytes:
    return (b"v%07d-" % i) * 6 + b"0123456789abcdef"[: i % 13]


def headers_of(i: int) -> RecordHeaders:
    return [("n", str(i).encode()), ("src", b"kafka-test")]


def fingerprint(
    key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, bytes | None]]
) -> int:
    crc = zlib.crc32(key or b"\x00")
    crc = zlib.crc32(value or b"\x00", crc)
    for k, v in headers:
        crc = zlib.crc32(k.encode() + b"=" + (v or b"\x00") + b";", crc)
    return crc


def expected_fingerprint(i: int) -> int:
    return fingerprint(key_of(i), value_of(i), headers_of(i))


def index_of(key: bytes | None) -> int:
    assert key is not None and key.startswith(b"k"), key
    return int(key[1:])


# ---------------------------------------------------------------- producing


@dataclass
class Produced:
    acked: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def produce_confluent(
    bootstrap: str, topic: str, indices: Sequence[int], **conf: object
) -> Produced:
    import confluent_kafka

    out = Produced()

    def done(err: object, _msg: object) -> None:
        if err is None:
            out.acked += 1
        elif len(out.errors) < 20:
            out.errors.append(str(err))

    settings: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 20,
        "batch.num.messages": 10_000,
        "compression.type": "lz4",
    }
    settings.update(conf)
    p = confluent_kafka.Producer(settings)
    t0 = time.monotonic()
    for i in indices:
        while True:
            try:
                p.produce(topic, value_of(i), key_of(i), headers=headers_of(i), on_delivery=done)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(60)
    out.seconds = time.monotonic() - t0
    if left:
        out.errors.append(f"{left} records not delivered after 60 s")
    return out


def produce_kafka_python(bootstrap: str, topic: str, indices: Sequence[int]) -> Produced:
    from kafka import KafkaProducer

    out = Produced()
    p = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=20,
        batch_size=256 * 1024,
        compression_type="gzip",
    )
    t0 = time.monotonic()
    futures = [
        p.send(topic, value=value_of(i), key=key_of(i), headers=headers_of(i)) for i in indices
    ]
    p.flush(60)
    for f in futures:
        if f.succeeded():
            out.acked += 1
        elif len(out.errors) < 20:
            out.errors.append(repr(f.exception))
    p.close(10)
    out.seconds = time.monotonic() - t0
    return out


def produce_aiokafka(bootstrap: str, topic: str, indices: Sequence[int]) -> Produced:
    return asyncio.run(_produce_aiokafka(bootstrap, topic, indices))


async def _produce_aiokafka(bootstrap: str, topic: str, indices: Sequence[int]) -> Produced:
    from aiokafka import AIOKafkaProducer

    out = Produced()
    p = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=20, max_batch_size=256 * 1024
    )
    await p.start()
    t0 = time.monotonic()
    try:
        futures = [
            await p.send(topic, value=value_of(i), key=key_of(i), headers=headers_of(i))
            for i in indices
        ]
        for result in await asyncio.gather(*futures, return_exceptions=True):
            if isinstance(result, BaseException):
                if len(out.errors) < 20:
                    out.errors.append(repr(result))
            else:
                out.acked += 1
    finally:
        await p.stop()
    out.seconds = time.monotonic() - t0
    return out


PRODUCERS = {
    "confluent": produce_confluent,
    "kafka-python": produce_kafka_python,
    "aiokafka": produce_aiokafka,
}
CLIENTS = tuple(PRODUCERS)


# ---------------------------------------------------------------- a group member


class _Out:
    """Lines to stdout, flushed once per batch (100,000 records: no print per record)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def record(
        self,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[tuple[str, bytes | None]],
    ) -> None:
        self.lines.append(
            f"r {partition} {offset} {index_of(key)} {fingerprint(key, value, headers)}"
        )

    def commits(self, positions: dict[int, int]) -> None:
        self.lines.extend(f"c {p} {o}" for p, o in sorted(positions.items()))

    def assigned(self, partitions: Iterable[int]) -> None:
        self.lines.append("a " + ",".join(str(p) for p in sorted(partitions)))
        self.flush()

    def flush(self) -> None:
        if self.lines:
            sys.stdout.write("\n".join(self.lines) + "\n")
            sys.stdout.flush()
            self.lines.clear()


STOP = False


def _stop(_sig: int, _frame: object) -> None:
    global STOP
    STOP = True


GROUP_SETTINGS = {"session_ms": 6000, "heartbeat_ms": 500}


def member_confluent(args: argparse.Namespace, out: _Out) -> None:
    import confluent_kafka

    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": GROUP_SETTINGS["session_ms"],
            "heartbeat.interval.ms": GROUP_SETTINGS["heartbeat_ms"],
        }
    )
    c.subscribe([args.topic], on_assign=lambda _c, parts: out.assigned(p.partition for p in parts))
    seen = 0
    try:
        while not STOP and (args.stop_after is None or seen < args.stop_after):
            msgs = c.consume(args.batch, 0.2)
            positions: dict[int, int] = {}
            for m in msgs:
                if m.error() is not None:
                    continue
                out.record(m.partition(), m.offset(), m.key(), m.value(), m.headers() or ())
                positions[m.partition()] = m.offset() + 1
                seen += 1
            out.flush()
            if positions:
                try:
                    c.commit(asynchronous=False)
                except confluent_kafka.KafkaException:
                    continue  # revoked meanwhile: no commit line
                out.commits(positions)
                out.flush()
    finally:
        c.close()


def member_kafka_python(args: argparse.Namespace, out: _Out) -> None:
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: object) -> None:
            pass

        def on_partitions_assigned(self, assigned: Iterable[object]) -> None:
            out.assigned(tp.partition for tp in assigned)  # type: ignore[attr-defined]

    c = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=GROUP_SETTINGS["session_ms"],
        heartbeat_interval_ms=GROUP_SETTINGS["heartbeat_ms"],
        max_poll_records=args.batch,
    )
    c.subscribe([args.topic], listener=Listener())
    seen = 0
    try:
        while not STOP and (args.stop_after is None or seen < args.stop_after):
            batches = c.poll(timeout_ms=200, max_records=args.batch)
            positions: dict[int, int] = {}
            for tp, records in batches.items():
                for m in records:
                    out.record(tp.partition, m.offset, m.key, m.value, m.headers or ())
                    positions[tp.partition] = m.offset + 1
                    seen += 1
            out.flush()
            if positions:
                try:
                    c.commit()
                except KafkaError:
                    continue
                out.commits(positions)
                out.flush()
    finally:
        c.close(autocommit=False)


def member_aiokafka(args: argparse.Namespace, out: _Out) -> None:
    asyncio.run(_member_aiokafka(args, out))


async def _member_aiokafka(args: argparse.Namespace, out: _Out) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        async def on_partitions_revoked(self, revoked: object) -> None:
            pass

        async def on_partitions_assigned(self, assigned: Iterable[object]) -> None:
            out.assigned(tp.partition for tp in assigned)  # type: ignore[attr-defined]

    c = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=GROUP_SETTINGS["session_ms"],
        heartbeat_interval_ms=GROUP_SETTINGS["heartbeat_ms"],
    )
    c.subscribe([args.topic], listener=Listener())
    await c.start()
    seen = 0
    try:
        while not STOP and (args.stop_after is None or seen < args.stop_after):
            batches = await c.getmany(timeout_ms=200, max_records=args.batch)
            positions: dict[int, int] = {}
            for tp, records in batches.items():
                for m in records:
                    out.record(tp.partition, m.offset, m.key, m.value, m.headers or ())
                    positions[tp.partition] = m.offset + 1
                    seen += 1
            out.flush()
            if positions:
                try:
                    await c.commit()
                except KafkaError:
                    continue
                out.commits(positions)
                out.flush()
    finally:
        await c.stop()


MEMBERS = {
    "confluent": member_confluent,
    "kafka-python": member_kafka_python,
    "aiokafka": member_aiokafka,
}


# ---------------------------------------------------------------- what members printed


@dataclass
class Reading:
    """One member's output: records read in order and commits that returned."""

    records: list[tuple[int, int, int, int]] = field(default_factory=list)  # p, o, i, crc
    committed: dict[int, int] = field(default_factory=dict)  # partition -> highest next offset
    assignments: list[tuple[int, ...]] = field(default_factory=list)


def parse(stdout: bytes) -> Reading:
    """The complete lines of a member's stdout so far (a killed member's last line may be cut)."""
    text = stdout.decode(errors="replace")
    out = Reading()
    for line in text[: text.rfind("\n") + 1].splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "r":
            p, o, i, crc = map(int, rest.split())
            out.records.append((p, o, i, crc))
        elif kind == "c":
            p, o = map(int, rest.split())
            out.committed[p] = max(o, out.committed.get(p, 0))
        elif kind == "a":
            out.assignments.append(tuple(int(x) for x in rest.split(",") if x))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.integration.kafka.clients")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("member", help="consume in a group until SIGTERM or --stop-after")
    m.add_argument("--client", choices=CLIENTS, required=True)
    m.add_argument("--bootstrap", required=True)
    m.add_argument("--topic", required=True)
    m.add_argument("--group", required=True)
    m.add_argument("--batch", type=int, default=2000)
    m.add_argument("--stop-after", type=int, default=None)
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    out = _Out()
    MEMBERS[args.client](args, out)
    out.flush()


if __name__ == "__main__":
    main()
