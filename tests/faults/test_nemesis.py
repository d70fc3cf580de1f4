"""The nemesis schedule is a pure function of its seed."""

from __future__ import annotations

from tests.faults.nemesis import BEACON_EXPIRY, PROCESS_FAULTS, Kind, schedule


def test_the_same_seed_gives_the_same_schedule_and_others_differ() -> None:
    a = schedule(7, 120, PROCESS_FAULTS, 3, 2)
    assert a == schedule(7, 120, PROCESS_FAULTS, 3, 2)
    assert a != schedule(8, 120, PROCESS_FAULTS, 3, 2)


def test_faults_fit_the_run_and_pauses_outlast_the_beacon_expiry() -> None:
    for seed in range(50):
        faults = schedule(seed, 120, (*PROCESS_FAULTS, Kind.FILL_DISK), 3, 2)
        assert faults
        for f in faults:
            assert 0 < f.at and f.at + f.duration <= 120
            if f.kind in (Kind.PAUSE_STORE, Kind.PAUSE_PRODUCER):
                assert f.duration > BEACON_EXPIRY
            count = 2 if "producer" in f.kind.value else 3
            assert 0 <= f.target < count
        starts = [f.at for f in faults]
        assert starts == sorted(starts)
