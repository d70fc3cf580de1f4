"""A small service that embeds a Producer: it samples a metric and publishes it.

    python examples/producer_service.py --topic metrics --tower 127.0.0.1:5556

Each sample is one record. The service keeps going while stores are slow (the
producer buffers up to ``max_unacked_bytes``), logs every thousandth durable
offset from the future's callback, and on Ctrl-C or SIGTERM waits for what is
still unacknowledged before it exits, so nothing it sent is lost silently.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import time
from concurrent.futures import Future

from dafka import DafkaTimeout, Producer

log = logging.getLogger("producer_service")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topic", default="metrics")
    ap.add_argument("--tower", default="127.0.0.1:5556")
    ap.add_argument("--state-dir", default=None, help="keep the partition across restarts")
    ap.add_argument("--rate", type=float, default=100.0, help="samples per second")
    ap.add_argument("--count", type=int, default=0, help="stop after N samples (0: run forever)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    # A signal handler runs on the main thread between two of its bytecodes: it only notes
    # the signal and takes no lock (a threading.Event's may be held by the code it interrupts)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _: stopping.append(signum))

    def on_durable(fut: Future[int]) -> None:
        # runs on the producer's IO thread: keep it short
        if fut.exception() is None and fut.result() % 1000 == 0:
            log.info("durable offset=%d", fut.result())

    with Producer(args.topic, towers=args.tower, state_dir=args.state_dir) as producer:
        log.info("publishing to %s as partition %s", args.topic, producer.partition)
        sent = 0
        while not stopping and (args.count == 0 or sent < args.count):
            sample = {"host": os.uname().nodename, "t": time.time(), "load": os.getloadavg()[0]}
            producer.send(json.dumps(sample)).add_done_callback(on_durable)
            sent += 1
            time.sleep(1.0 / args.rate)
        try:
            producer.flush(timeout=30)
            log.info("all %d samples are durable", sent)
        except DafkaTimeout as exc:
            log.error("%s", exc)
            raise SystemExit(1) from None


if __name__ == "__main__":
    main()
