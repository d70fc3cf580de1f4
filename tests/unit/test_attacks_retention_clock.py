"""Retention that no clock can turn into data loss (issue 33, point 6).

A store decides retention by age; the attacks are a store clock that jumps forward and
a producer clock far behind. Pure store core over LMDB in ``tmp_path`` with fake time:
``apply_retention(wall_ms, mono_ms)`` is what the IO shell calls every few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from dafka.storage.held_file import HELD_FILE, HeldFile
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.retention import BatchInfo, HeldLedger
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.signing import STORE, P, record

S = STORE.node_id
SEC = 1_000
MIN = 60 * SEC
HOUR = 60 * MIN
T0 = 1_800_000_000_000  # the true wall time at the start, in ms
RETENTION = 10 * MIN


class _Run:
    """A store receiving one 2-record batch every ``every`` ms of true time, checking
    retention every 5 s, with its wall clock ``skew`` ms off the true time."""

    def __init__(self, tmp_path: Path, *, retention: int = RETENTION) -> None:
        self.storage = LmdbStorage(tmp_path / "lmdb", map_size=1 << 24, node_id=S)
        self.core = StoreCore(S, self.storage, profile=SignedProfile(STORE))
        self.core.set_policy({"t": {"retention_ms": retention}})
        self.mono = 0  # the store's monotonic clock, ms
        self.true = T0
        self.skew = 0
        self.next = 0  # next offset
        self.acked_at: dict[int, int] = {}  # last offset -> monotonic ms of its ACK

    @property
    def wall(self) -> int:
        return self.true + self.skew

    def produce(self, stamp_skew: int = 0) -> None:
        first = self.next
        self.core.handle_batch([record(first, 2, timestamp_ms=self.true + stamp_skew)], 0.0)
        self.next += 2
        self.acked_at[first + 1] = self.mono

    def run(self, ms: int, *, every: int | None = None, stamp_skew: int = 0) -> None:
        end = self.mono + ms
        due = self.mono
        while self.mono < end:
            if every is not None and self.mono >= due:
                self.produce(stamp_skew)
                due += every
            self.core.apply_retention(self.wall, self.mono)
            self.mono += 5 * SEC
            self.true += 5 * SEC

    def held(self) -> set[int]:
        return {b.last_offset for b in self.storage.batch_infos("t", P)}

    def young(self) -> set[int]:
        """Last offsets acknowledged less than the retention period ago (monotonic)."""
        return {o for o, at in self.acked_at.items() if self.mono - at < RETENTION}


def test_a_store_clock_jumping_an_hour_ahead_trims_nothing_acked_within_retention(
    tmp_path: Path,
) -> None:
    run = _Run(tmp_path)
    run.run(15 * MIN, every=MIN)
    before = run.held()
    assert run.young() <= before and len(before) < 15  # retention ran: the oldest went
    run.skew = HOUR  # the store's clock jumps forward; producers keep the true time
    run.run(MIN, every=MIN)
    assert run.young() <= run.held(), "records acked minutes ago were trimmed"
    assert before <= run.held()  # nothing at all is trimmed by age while the clock is ahead
    assert run.core.stats.retention_paused > 0


def test_a_whole_host_clock_jump_still_keeps_what_was_held_less_than_retention(
    tmp_path: Path,
) -> None:
    """Store and producer jump together (their stamps agree with the store's clock again,
    so age retention goes on): what the store has held less than the retention period by
    its monotonic measure stays."""
    run = _Run(tmp_path)
    run.run(15 * MIN, every=MIN)
    run.skew = HOUR
    run.run(MIN, every=MIN, stamp_skew=HOUR)
    assert run.young() <= run.held(), "records acked minutes ago were trimmed"
    run.run(15 * MIN, every=MIN, stamp_skew=HOUR)
    assert run.young() <= run.held()
    assert min(run.held()) > 2 * 16  # and retention goes on once they are old
    assert run.core.stats.retention_paused > 0


def test_a_producer_an_hour_behind_keeps_its_records_past_their_ack(
    tmp_path: Path,
) -> None:
    run = _Run(tmp_path)
    for _ in range(20):
        run.produce(stamp_skew=-HOUR)
    run.run(5 * SEC)
    run.run(5 * SEC)
    assert len(run.held()) == 20, "acked records of a slow-clocked producer were trimmed"
    run.run(RETENTION + MIN)
    assert len(run.held()) == 1  # after the retention period they go (the newest stays)


def test_a_producer_clock_ahead_cannot_keep_its_records_for_ever(
    tmp_path: Path,
) -> None:
    run = _Run(tmp_path)
    for _ in range(5):
        run.produce(stamp_skew=365 * 24 * HOUR)
    run.run(RETENTION + 2 * MIN)
    assert len(run.held()) == 1


def test_the_held_time_survives_a_restart_and_a_clock_jump_while_down(
    tmp_path: Path,
) -> None:
    run = _Run(tmp_path)
    run.run(8 * MIN, every=MIN)
    assert run.core.held is not None
    HeldFile(tmp_path).save(run.core.held, 0.0, force=True)
    held = run.held()
    run.storage.close()
    # restarted 2 hours later by its wall clock, with a new monotonic clock
    storage = LmdbStorage(tmp_path / "lmdb", map_size=1 << 24, node_id=S)
    core = StoreCore(S, storage, profile=SignedProfile(STORE))
    core.set_policy({"t": {"retention_ms": RETENTION}})
    core.held = HeldFile(tmp_path).load()
    mono, wall = 10**9, run.wall + 2 * HOUR
    for step in range(12):  # one more minute: nothing was held 10 minutes yet but the oldest
        core.apply_retention(wall + step * 5 * SEC, mono + step * 5 * SEC)
    got = {b.last_offset for b in storage.batch_infos("t", P)}
    assert got == held, "a restart with the clock moved on trimmed young records"
    for step in range(12, 12 * 4):
        core.apply_retention(wall + step * 5 * SEC, mono + step * 5 * SEC)
    got = {b.last_offset for b in storage.batch_infos("t", P)}
    assert len(got) < len(held)  # and the ones held long enough went
    storage.close()


def test_a_lost_or_damaged_ledger_only_keeps_records_longer(tmp_path: Path) -> None:
    (tmp_path / HELD_FILE).write_text(json.dumps({"version": 1, "held_ms": "x"}))
    ledger = HeldFile(tmp_path).load()
    assert ledger.held_ms == 0 and not ledger.receipts
    ledger.advance(0, T0)
    infos = [BatchInfo(0, 1, 10, T0 - HOUR), BatchInfo(2, 3, 10, T0 - HOUR)]
    ledger.observe(("t", P), 3, T0)
    assert ledger.ages(("t", P), infos, T0 + HOUR) == [0, 0]


def test_receipts_per_partition_are_bounded_and_merge_only_younger() -> None:
    ledger = HeldLedger()
    for i in range(1_000):
        ledger.advance(i * SEC, T0 + i * SEC)
        ledger.observe(("t", P), i, T0 + i * SEC)
    receipts = ledger.receipts[("t", P)]
    assert len(receipts) <= 64
    infos = [BatchInfo(i, i, 1, T0 + i * SEC) for i in range(1_000)]
    ages = ledger.ages(("t", P), infos, T0 + 1_000 * SEC)
    assert all(a is not None and a <= 1_000 * SEC - i * SEC for i, a in enumerate(ages))


def test_the_ledger_file_is_written_only_when_something_changed(tmp_path: Path) -> None:
    held = HeldFile(tmp_path)
    ledger = held.load()
    held.save(ledger, 0.0)
    assert not (tmp_path / HELD_FILE).exists()  # nothing to keep yet
    ledger.advance(0, T0)
    ledger.advance(5 * SEC, T0 + 5 * SEC)
    held.save(ledger, 100.0)
    assert HeldFile(tmp_path).load().held_ms == 5 * SEC
    (tmp_path / HELD_FILE).unlink()
    held.save(ledger, 200.0)  # unchanged since
    assert not (tmp_path / HELD_FILE).exists()
    ledger.observe(("t", P), 3, T0)
    held.save(ledger, 210.0)  # changed
    assert HeldFile(tmp_path).load().receipts[("t", P)][0].upto == 3


def test_a_clock_jump_before_the_topic_policy_arrives_is_still_seen(
    tmp_path: Path,
) -> None:
    """The held clock starts at the store's first check, not at the first check after a
    topic with retention is known: a jump in between is a jump (CI saw it missed)."""
    storage = LmdbStorage(tmp_path / "lmdb", map_size=1 << 24, node_id=S)
    core = StoreCore(S, storage, profile=SignedProfile(STORE))
    core.apply_retention(T0, 0)  # the store's first check: no policy yet
    core.handle_batch([record(0, 2, timestamp_ms=T0)], 0.0)
    core.set_policy({"t": {"retention_ms": RETENTION}})
    core.apply_retention(T0 + HOUR + 5 * SEC, 5 * SEC)  # the wall clock jumped an hour
    assert core.held is not None and core.held.clock_ahead_ms(T0 + HOUR + 5 * SEC) == HOUR
    assert core.stats.retention_paused == 1
    assert storage.batch_infos("t", P)[0].first_offset == 0
