"""The workload's processes: ``python -m tests.faults.drivers producer|consumer ...``.

``producer`` sends records named by :func:`tests.faults.checker.content` at a steady pace
through :class:`dafka.Producer` and appends ``A partition offset value`` to its log the
moment each record is acknowledged (flushed line by line, so a SIGKILL loses no line
already written). ``consumer`` delivers every partition from the earliest offset through
:class:`dafka.Consumer` and appends ``D partition offset value`` per record. Both stop
cleanly on SIGTERM (the producer flushes what it can first) and exit non-zero on any
error, which the harness counts as a crash.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TextIO

from dafka.consumer._facade import Consumer
from dafka.errors import BufferFullError, StorageError
from dafka.producer._facade import Producer
from tests.faults.checker import content


class _Stop:
    """SIGTERM or SIGINT seen. The handler only sets a flag: a Python handler runs between
    two bytecodes of the main thread, so one that took a lock (a ``threading.Event``'s)
    could find it held by the code it interrupted and hang the driver (``docs/faults.md``
    counts a driver that does not stop on SIGTERM as crashed)."""

    def __init__(self) -> None:
        self.seen = False
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        self.seen = True

    def is_set(self) -> bool:
        return self.seen

    def wait(self, seconds: float) -> None:
        """Sleep up to ``seconds``, in steps of at most 0.1 s, until a signal is seen."""
        end = time.monotonic() + seconds
        while not self.seen and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))


class AckLog:
    """Acknowledgement lines, written as the futures resolve (on the producer's IO thread)."""

    def __init__(self, out: TextIO, partition: str) -> None:
        self.out = out
        self.partition = partition
        self.lock = threading.Lock()
        self.acked = 0
        self.failed = 0
        """Records whose future failed with a StorageError (not sent: a full state
        directory refused their offsets), which no store will ever acknowledge."""

    def callback(self, value: str) -> Callable[[Future[int]], None]:
        def done(fut: Future[int]) -> None:
            if fut.cancelled() or fut.exception() is not None:
                if isinstance(fut.exception(), StorageError):  # not sent: never acknowledged
                    with self.lock:
                        self.failed += 1
                return  # closed unacknowledged: counted as unacked (a stalled producer)
            with self.lock:
                self.out.write(f"A {self.partition} {fut.result()} {value}\n")
                self.out.flush()
                self.acked += 1

        return done


def run_producer(args: argparse.Namespace) -> int:
    stop = _Stop()
    producer = Producer(
        args.topic,
        towers=args.towers,
        host=args.host,
        state_dir=args.state_dir,
        min_acks=args.min_acks,
        trusted_stores=args.trusted.split(",") if args.trusted else None,
        max_unacked_records=args.max_unacked,
        on_full="raise",
    )
    print(f"producer {args.name}.{args.incarnation} partition {producer.partition}", flush=True)
    sent = 0
    with open(args.log, "a", encoding="ascii") as out:
        log = AckLog(out, producer.partition)
        period = args.burst / args.rate  # bursts keep records in flight when a fault hits
        next_at = time.monotonic()
        while not stop.is_set():
            for _ in range(args.burst):
                value = content(args.name, args.incarnation, sent)
                try:
                    fut = producer.send(value)
                except BufferFullError:
                    break
                fut.add_done_callback(log.callback(value))
                sent += 1
            next_at = max(next_at + period, time.monotonic() - period)  # no catch-up storms
            stop.wait(max(0.0, next_at - time.monotonic()))
        producer.close(timeout=args.drain)
    print(
        f"producer {args.name}.{args.incarnation} sent {sent} acked {log.acked} "
        f"unacked {sent - log.acked - log.failed} failed {log.failed}",
        flush=True,
    )
    return 0


def run_consumer(args: argparse.Namespace) -> int:
    stop = _Stop()
    consumer = Consumer(args.topic, towers=args.towers, host=args.host, offset_reset="earliest")
    delivered = 0
    try:
        with open(args.log, "a", encoding="ascii") as out:
            while not stop.is_set():
                runs = consumer.poll_batches(timeout=0.2)
                for run in runs:
                    for i, value in enumerate(run.values):
                        text = value.decode("ascii", "backslashreplace").replace(" ", "\\x20")
                        out.write(f"D {run.partition} {run.offset + i} {text}\n")
                    delivered += len(run.values)
                if runs:
                    out.flush()
    finally:
        rejected = _rejected(consumer)
        consumer.close()
    print(f"consumer delivered {delivered} rejected {rejected}", flush=True)
    return 0


def _rejected(consumer: Consumer) -> int:
    """Batches the consumer's core rejected (``ConsumerStats.rejected``: failed their
    signature or digest), -1 if it cannot say."""
    try:
        return consumer._on_loop(lambda now: ([], consumer._core.stats.rejected))
    except Exception:
        return -1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.drivers")
    sub = parser.add_subparsers(dest="role", required=True)
    p = sub.add_parser("producer")
    p.add_argument("--name", required=True)
    p.add_argument("--incarnation", type=int, required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--rate", type=float, default=50.0, help="records per second")
    p.add_argument("--burst", type=int, default=10, help="records sent back to back")
    p.add_argument("--max-unacked", type=int, default=2000)
    p.add_argument("--min-acks", type=int, default=1)
    p.add_argument("--trusted", default="")
    p.add_argument("--drain", type=float, default=10.0, help="seconds to flush at SIGTERM")
    c = sub.add_parser("consumer")
    for q in (p, c):
        q.add_argument("--towers", required=True)
        q.add_argument("--host", default="127.0.0.1", help="the address to bind and advertise")
        q.add_argument("--topic", required=True)
        q.add_argument("--log", required=True)
    args = parser.parse_args(argv)
    return run_producer(args) if args.role == "producer" else run_consumer(args)


if __name__ == "__main__":
    sys.exit(main())
