"""The Storage contract, run against every backend (MemoryStorage and LmdbStorage)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka.errors import ClosedError, StorageError
from dafka.storage.base import Storage, StoredBatch
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.memory import MemoryStorage

P1 = "0123456789ABCDEF0123456789ABCDEF"
P2 = "FEDCBA9876543210FEDCBA9876543210"
P3 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


@pytest.fixture(params=["memory", "lmdb"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    s: Storage = MemoryStorage() if request.param == "memory" else LmdbStorage(tmp_path / "db")
    yield s
    s.close()


def rec(topic: str, partition: str, offset: int, blob: bytes | None = None) -> StoredBatch:
    """A single-record batch, as the rfc46 profile stores them."""
    if blob is None:
        blob = f"{topic}/{partition[:4]}/{offset}".encode()
    return StoredBatch(topic, partition, offset, offset, blob)


def offsets_of(batches: list[StoredBatch]) -> list[tuple[int, int]]:
    return [(b.first_offset, b.last_offset) for b in batches]


def test_implements_the_protocol(storage: Storage) -> None:
    assert isinstance(storage, Storage)


def test_empty(storage: Storage) -> None:
    assert storage.heads() == {}
    assert storage.partitions("t") == []
    assert storage.read("t", P1, 0, 10) == []
    storage.append([])
    assert storage.heads() == {}


def test_append_then_read_back_exact_records(storage: Storage) -> None:
    batches = [rec("t", P1, i) for i in range(300)]
    storage.append(batches)
    assert storage.heads() == {("t", P1): (299, 0)}
    assert storage.read("t", P1, 0, 1000) == batches
    assert storage.read("t", P1, 256, 3) == batches[256:259]
    assert storage.read("t", P1, 299, 5) == [batches[299]]


def test_read_outside_the_stored_range_is_empty(storage: Storage) -> None:
    storage.append([rec("t", P1, i) for i in range(5, 10)])  # a partition may start anywhere
    assert storage.heads() == {("t", P1): (9, 5)}
    assert storage.read("t", P1, 4, 10) == []  # below the tail
    assert storage.read("t", P1, 10, 10) == []  # above the head
    assert storage.read("t", P1, 2**64 - 1, 10) == []
    assert storage.read("t", P2, 5, 10) == []  # unknown partition
    assert storage.read("t", "not-a-node-id", 5, 10) == []
    assert storage.read("u", P1, 5, 10) == []  # other topic
    assert storage.read("t", P1, 5, 0) == []


def test_multi_record_batches_are_found_by_any_offset_inside(storage: Storage) -> None:
    a = StoredBatch("t", P1, 0, 9, b"ten records")
    b = StoredBatch("t", P1, 10, 10, b"one")
    c = StoredBatch("t", P1, 11, 40, b"thirty")
    storage.append([a, b, c])
    assert storage.heads()[("t", P1)] == (40, 0)
    assert storage.read("t", P1, 0, 10) == [a, b, c]
    assert storage.read("t", P1, 7, 2) == [a, b]
    assert storage.read("t", P1, 25, 10) == [c]
    assert storage.read("t", P1, 41, 10) == []


def test_interleaved_partitions_and_topics_in_one_append(storage: Storage) -> None:
    batches = []
    for i in range(50):
        batches += [rec("t", P2, i), rec("t", P1, i), rec("u", P1, 100 + i)]
    storage.append(batches)
    assert storage.heads() == {("t", P1): (49, 0), ("t", P2): (49, 0), ("u", P1): (149, 100)}
    assert storage.read("t", P1, 0, 100) == [
        b for b in batches if b.topic == "t" and b.partition == P1
    ]
    assert storage.read("u", P1, 120, 100) == [rec("u", P1, i) for i in range(120, 150)]


def test_successive_appends_continue_the_partition(storage: Storage) -> None:
    storage.append([rec("t", P1, 0), rec("t", P1, 1)])
    storage.append([rec("t", P1, 2)])
    storage.append([StoredBatch("t", P1, 3, 5, b"three")])
    assert storage.heads() == {("t", P1): (5, 0)}
    assert offsets_of(storage.read("t", P1, 0, 10)) == [(0, 0), (1, 1), (2, 2), (3, 5)]


@pytest.mark.parametrize(
    "bad",
    [
        [rec("t", P1, 4)],  # a hole after head 2
        [rec("t", P1, 2)],  # overlaps the head
        [rec("t", P1, 3), rec("t", P1, 5)],  # a hole inside the call
        [StoredBatch("t", P1, 4, 3, b"")],  # first > last
        [rec("t", "0123", 0)],  # partition is not a node ID
        [rec("t", P1.lower(), 0)],  # nor is a lower-case spelling of one
        [rec("a\x00b", P2, 0)],  # topic with NUL
        [rec("", P2, 0)],  # empty topic
        [rec("t", P2, 2**64)],  # offset beyond u64
    ],
)
def test_bad_appends_are_refused_and_store_nothing(
    storage: Storage, bad: list[StoredBatch]
) -> None:
    storage.append([rec("t", P1, i) for i in range(3)])
    with pytest.raises(StorageError):
        # a valid batch of another partition in the same call must not be stored either
        storage.append([rec("t", P3, 0), *bad])
    assert storage.heads() == {("t", P1): (2, 0)}
    assert storage.read("t", P3, 0, 10) == []
    assert storage.partitions("t") == [(P1, 2)]


def test_partitions_match_the_exact_topic(storage: Storage) -> None:
    storage.append([rec("hello", P2, 0), rec("hello", P2, 1), rec("hello", P1, 0)])
    storage.append([rec("hello2", P3, 0), rec("hell", P3, 0), rec("hello\x01", P3, 0)])
    assert storage.partitions("hello") == [(P1, 0), (P2, 1)]
    assert storage.partitions("hello2") == [(P3, 0)]
    assert storage.partitions("hell") == [(P3, 0)]
    assert storage.partitions("hel") == []
    assert storage.partitions("") == []
    assert storage.partitions("a\x00b") == []


def test_blobs_are_kept_byte_for_byte(storage: Storage) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB
    batches = [rec("t", P1, 0, b""), rec("t", P1, 1, b"\x00\xff" * 3), rec("t", P1, 2, big)]
    storage.append(batches)
    got = storage.read("t", P1, 0, 3)
    assert [b.blob for b in got] == [b"", b"\x00\xff" * 3, big]
    assert all(type(b.blob) is bytes for b in got)


def test_heads_is_a_copy(storage: Storage) -> None:
    storage.append([rec("t", P1, 0)])
    heads = storage.heads()
    heads[("t", P2)] = (1, 1)
    assert storage.heads() == {("t", P1): (0, 0)}


def test_close_is_idempotent_and_final(storage: Storage) -> None:
    storage.append([rec("t", P1, 0)])
    storage.close()
    storage.close()
    with pytest.raises(ClosedError):
        storage.append([rec("t", P1, 1)])
    with pytest.raises(ClosedError):
        storage.read("t", P1, 0, 1)


def test_a_partition_is_pinned_to_the_profile_of_its_first_batch(storage: Storage) -> None:
    signed_batch = StoredBatch("t", P2, 0, 4, b"five records", "signed")
    storage.append([rec("t", P1, 0), signed_batch])
    assert storage.profiles() == {("t", P1): "rfc46", ("t", P2): "signed"}
    assert storage.read("t", P2, 3, 1) == [signed_batch]
    with pytest.raises(StorageError, match="never mixes"):
        storage.append([StoredBatch("t", P1, 1, 1, b"x", "signed")])
    with pytest.raises(StorageError, match="never mixes"):
        storage.append([rec("u", P3, 0), StoredBatch("u", P3, 1, 2, b"y", "signed")])
    with pytest.raises(StorageError, match="unknown profile"):
        storage.append([StoredBatch("v", P3, 0, 0, b"z", "neither")])
    assert storage.heads() == {("t", P1): (0, 0), ("t", P2): (4, 0)}
    storage.append([StoredBatch("t", P2, 5, 5, b"six", "signed")])
    assert storage.profiles()[("t", P2)] == "signed"


def test_truncate_drops_the_batches_from_a_first_offset_to_the_head(storage: Storage) -> None:
    storage.append([rec("t", P1, i) for i in range(5)] + [rec("t", P2, 0)])
    assert storage.truncate("t", P1, 3) == 2  # type: ignore[attr-defined]
    assert storage.heads()[("t", P1)] == (2, 0)
    assert offsets_of(storage.read("t", P1, 0, 10)) == [(0, 0), (1, 1), (2, 2)]
    storage.append([rec("t", P1, 3, b"new")])  # the partition continues from there
    assert storage.read("t", P1, 3, 1)[0].blob == b"new"
    with pytest.raises(StorageError):
        storage.truncate("t", P1, 9)  # type: ignore[attr-defined]
    assert storage.truncate("t", P2, 0) == 1  # type: ignore[attr-defined]
    assert ("t", P2) not in storage.heads()
    assert storage.partitions("t") == [(P1, 3)]


def test_truncate_survives_a_reopen(tmp_path: Path) -> None:
    s = LmdbStorage(tmp_path / "db")
    s.append([rec("t", P1, i) for i in range(4)])
    s.truncate("t", P1, 2)
    s.close()
    again = LmdbStorage(tmp_path / "db")
    try:
        assert again.heads()[("t", P1)] == (1, 0)
        again.append([rec("t", P1, 2, b"after")])
    finally:
        again.close()
