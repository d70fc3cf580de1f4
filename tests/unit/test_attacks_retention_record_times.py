"""Retention by the records' own times (issue 36, point 3), and its bound.

A format-5 batch carries its records' own times, signed, and their maximum in its header;
retention ages the batch by that maximum (as Kafka ages a segment by its largest
timestamp), clamped to a window around the batch's arrival at the store:
``[W_r - retention // 2, W_r + max_future_ms]`` (``dafka.storage.retention``). The
attacks: a producer stamping its records far in the future to keep them (and every batch
after them) for ever, and one stamping them far in the past to have them deleted before
anyone read them. Pure ledger and store core over LMDB in ``tmp_path``, fake time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.metadata.settings import TOPIC_DEFAULTS
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.lmdb_values import batch_record_time, batch_timestamp
from dafka.storage.memory import MemoryStorage
from dafka.storage.retention import (
    DEFAULT_MAX_FUTURE_MS,
    BatchInfo,
    HeldLedger,
    backdate_ms,
    retention_cut,
)
from dafka.store import StoreCore
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed_rich import Codec, RichRecord, rich_layout, seal_rich
from tests.signing import PRODUCER, STORE, P, from_blob, record

S = STORE.node_id
SEC = 1_000
MIN = 60 * SEC
HOUR = 60 * MIN
DAY = 24 * HOUR
YEAR = 365 * DAY
T0 = 1_800_000_000_000
R = 10 * MIN  # the topic's retention
F = 5 * MIN  # the topic's max_future_ms
KEY = ("t", P)


def rich(first: int, times: list[int], seal_ms: int, codec: Codec = Codec.NONE) -> bytes:
    recs = [RichRecord(None, f"v{first + i}".encode(), t) for i, t in enumerate(times)]
    return seal_rich(PRODUCER, b"t", first, recs, seal_ms, codec)


# ------------------------------------------------------------- what is read from a blob


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
def test_the_record_time_read_in_place_is_the_signed_headers_maximum(codec: Codec) -> None:
    blob = rich(0, [T0 - DAY, T0 + HOUR, T0 - MIN], T0, codec)
    records_at = 2 + blob[1] + 16 + 8 + 4 + 8
    layout = rich_layout(blob, records_at, len(blob) - 96)
    assert batch_record_time(blob, 0) == layout.max_ts == T0 + HOUR
    assert batch_timestamp(blob, 0) == T0
    stored = b"\0" * 8 + blob  # as LMDB keeps it: something before the blob
    assert batch_record_time(stored, 8) == T0 + HOUR
    assert batch_record_time(memoryview(stored), 8) == T0 + HOUR


def test_records_at_the_seal_time_and_earlier_formats_have_no_record_time() -> None:
    assert batch_record_time(rich(0, [T0, T0], T0), 0) is None  # every record at the seal
    assert batch_record_time(signed.encode_batch(PRODUCER, "t", 0, [(None, b"x")], T0), 0) is None
    assert batch_record_time(b"\x05", 0) is None  # truncated: nothing read past the end
    assert batch_record_time(rich(0, [T0 + 1], T0)[:56], 0) is None


@pytest.mark.parametrize("kind", ["lmdb", "memory"])
def test_both_storages_give_the_record_time_to_retention(tmp_path: Path, kind: str) -> None:
    storage = (
        LmdbStorage(tmp_path / "lmdb", map_size=1 << 24, node_id=S)
        if kind == "lmdb"
        else MemoryStorage()
    )
    core = StoreCore(S, storage, profile=SignedProfile(STORE))
    core.handle_batch([from_blob(rich(0, [T0 - DAY, T0 - HOUR], T0))], 0.0)
    core.handle_batch([record(2, 1, timestamp_ms=T0)], 0.0)
    core.handle_batch([from_blob(rich(3, [T0, T0], T0))], 0.0)
    infos = storage.batch_infos("t", P)
    assert [(i.timestamp_ms, i.record_ms) for i in infos] == [
        (T0, T0 - HOUR),
        (T0, None),
        (T0, None),
    ]


def test_the_default_max_future_is_the_topic_settings_default() -> None:
    assert DEFAULT_MAX_FUTURE_MS == TOPIC_DEFAULTS["max_future_ms"]
    assert backdate_ms(R) == R // 2 and backdate_ms(None) == 0


# ------------------------------------------------------------- the bound, on the ledger


def _ledger_with(record_ms: int | None, *, seal: int = T0) -> tuple[HeldLedger, list[BatchInfo]]:
    """A ledger that received batch 0..1 (records at ``record_ms``) at wall T0, held 0,
    and then batch 2..2 (the head, never deleted)."""
    ledger = HeldLedger()
    ledger.advance(0, T0)
    infos = [BatchInfo(0, 1, 100, seal, record_ms), BatchInfo(2, 2, 100, seal)]
    ledger.observe(KEY, 1, T0, seal)
    return ledger, infos


def _age_after(ledger: HeldLedger, infos: list[BatchInfo], held: int, wall: int) -> int:
    ledger.held_ms = held
    ages = ledger.ages(KEY, infos, wall, max_age_ms=R, max_future_ms=F)
    assert ages[0] is not None
    return ages[0]


def _deleted(ledger: HeldLedger, infos: list[BatchInfo], held: int, wall: int) -> bool:
    ledger.held_ms = held
    ages = ledger.ages(KEY, infos, wall, max_age_ms=R, max_future_ms=F)
    return retention_cut(infos, max_age_ms=R, max_bytes=None, now_ms=wall, ages_ms=ages) == 1


def test_records_stamped_far_in_the_future_cannot_stay_past_retention_plus_max_future() -> None:
    ledger, infos = _ledger_with(T0 + 10 * YEAR)
    for held in range(0, R + F, 30 * SEC):
        assert not _deleted(ledger, infos, held, T0 + held), held
    # a future time counts as F past the arrival: gone once held R + F (and 1 ms)
    assert _deleted(ledger, infos, R + F + 1, T0 + R + F + 1)
    assert _age_after(ledger, infos, R + F + 1, T0 + R + F + 1) == R + 1


def test_records_stamped_far_in_the_past_cannot_delete_a_batch_held_less_than_half_retention() -> (
    None
):
    ledger, infos = _ledger_with(1)  # 1 ms after the epoch
    for held in range(0, R // 2 + 1, 10 * SEC):
        # even with the store's wall clock far ahead: the held term bounds the age
        for wall in (T0 + held, T0 + held + YEAR):
            assert not _deleted(ledger, infos, held, wall), (held, wall)
    assert _deleted(ledger, infos, R // 2 + 1, T0 + R // 2 + 1)


def test_a_store_clock_far_ahead_cannot_age_record_times_past_the_held_time() -> None:
    ledger, infos = _ledger_with(T0 - R // 4)
    # held one minute, the wall clock a year ahead: age is held + R/4, not a year
    assert _age_after(ledger, infos, MIN, T0 + YEAR) == MIN + R // 4


def test_a_past_record_time_ages_the_batch_faster_within_the_bound() -> None:
    ledger, infos = _ledger_with(T0 - R // 4)
    assert not _deleted(ledger, infos, R - R // 4, T0 + R - R // 4)
    assert _deleted(ledger, infos, R - R // 4 + 1, T0 + R - R // 4 + 1)
    # a seal-stamped batch the same age goes only after the whole retention
    ledger, infos = _ledger_with(None, seal=T0 - R // 4)
    assert not _deleted(ledger, infos, R - R // 4 + 1, T0 + R - R // 4 + 1)
    assert _deleted(ledger, infos, R + 1, T0 + R + 1)


def test_a_future_record_time_within_the_bound_keeps_the_batch_that_much_longer() -> None:
    ledger, infos = _ledger_with(T0 + 2 * MIN)
    assert not _deleted(ledger, infos, R + 2 * MIN, T0 + R + 2 * MIN)
    assert _deleted(ledger, infos, R + 2 * MIN + 1, T0 + R + 2 * MIN + 1)


def test_a_store_clock_stepped_back_only_keeps_record_timed_batches_longer() -> None:
    ledger, infos = _ledger_with(T0 - R // 4)
    assert not _deleted(ledger, infos, R, T0 - HOUR)  # wall behind: younger, not older


# ------------------------------------------------------------- the store core


class _Store:
    """A store core over LMDB checking retention every 5 s of fake time."""

    def __init__(self, tmp_path: Path, **settings: int) -> None:
        self.storage = LmdbStorage(tmp_path / "lmdb", map_size=1 << 24, node_id=S)
        self.core = StoreCore(S, self.storage, profile=SignedProfile(STORE))
        self.core.set_policy({"t": {"retention_ms": R, **settings}})
        self.mono = 0
        self.wall = T0
        self.next = 0

    def produce(self, times: list[int] | None = None) -> int:
        first = self.next
        data = rich(first, times or [self.wall], self.wall)
        self.core.handle_batch([from_blob(data)], 0.0)
        self.next += len(times or [0])
        return first

    def run(self, ms: int) -> None:
        end = self.mono + ms
        while self.mono < end:
            self.core.apply_retention(self.wall, self.mono)
            self.mono += 5 * SEC
            self.wall += 5 * SEC

    def firsts(self) -> list[int]:
        return [b.first_offset for b in self.storage.batch_infos("t", P)]


def test_a_store_deletes_future_stamped_records_after_retention_plus_max_future(
    tmp_path: Path,
) -> None:
    store = _Store(tmp_path, max_future_ms=F)
    store.run(10 * SEC)
    store.produce([store.wall + 10 * YEAR, store.wall])  # the attack: far in the future
    store.produce()  # fresh data behind it, blocked while the first batch stays
    store.run(R + F - 30 * SEC)
    assert store.firsts() == [0, 2], "the future-stamped batch went early"
    store.produce()  # the head stays; keeps it from being the newest
    store.run(2 * MIN)
    assert 0 not in store.firsts(), "a future record time kept its batch past R + max_future"


def test_a_store_keeps_past_stamped_records_at_least_half_the_retention(tmp_path: Path) -> None:
    store = _Store(tmp_path)
    store.run(10 * SEC)
    store.produce([1, 2])  # the attack: stamped at the epoch
    store.produce()
    store.run(R // 2 - 10 * SEC)
    assert store.firsts() == [0, 2], "a record time in the past deleted a batch held < R/2"
    store.run(MIN)
    assert store.firsts() == [2]


def test_the_topics_max_future_setting_reaches_retention(tmp_path: Path) -> None:
    store = _Store(tmp_path, max_future_ms=0)
    store.run(10 * SEC)
    store.produce([store.wall + YEAR])
    store.produce()
    store.run(R + 30 * SEC)
    assert store.firsts() == [1], "max_future_ms 0: the batch goes after the retention"
