"""An in-memory storage that counts what its reads return: each batch a read returns is a
copy in LMDB, so tests of the readers (a store's serving, its query server) bound these."""

from __future__ import annotations

from dafka.storage.base import StoredBatch
from dafka.storage.memory import MemoryStorage


class CountingStorage(MemoryStorage):
    """Counts the batches (``returned``) and blob bytes (``returned_bytes``) read out."""

    def __init__(self) -> None:
        super().__init__()
        self.returned = 0
        self.returned_bytes = 0

    def read(
        self,
        topic: str,
        partition: str,
        offset: int,
        max_batches: int,
        max_records: int | None = None,
        max_bytes: int | None = None,
    ) -> list[StoredBatch]:
        out = super().read(topic, partition, offset, max_batches, max_records, max_bytes)
        self.returned += len(out)
        self.returned_bytes += sum(len(b.blob) for b in out)
        return out
