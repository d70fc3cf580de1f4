"""Open a store's LMDB environment in a process of its own and read it (``python -m
tests.integration.open_store DIR``): prints its heads, exits 1 with one line on a Dafka
error; a SIGBUS or an abort shows as the process's signal."""

from __future__ import annotations

import logging
import sys

from dafka.errors import DafkaError
from dafka.storage.lmdb_store import LmdbStorage


def main(path: str) -> None:
    # the library's warnings (lmdb.meta_restored) on stderr, as logging's last resort put
    # them before dafka's logger had a NullHandler
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        storage = LmdbStorage(path)
        heads = storage.heads()
        print("heads", heads, flush=True)
        for topic, partition in heads:
            storage.read(topic, partition, 0, 1_000_000)
        storage.close()
    except DafkaError as exc:
        print(f"error: {exc}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1])
