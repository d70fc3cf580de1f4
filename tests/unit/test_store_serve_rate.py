"""A store's serving rate is the operator's to set (``Store(serve_rate=...)``,
``dafka-store --serve-rate``): it bounds what readers cost the store each second, and it is
the speed of a catch-up past its burst, so the default must not be the only choice. A FETCH
past it waits for its bytes and is then served, not dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.core import messages as m
from dafka.core.limits import RequestLimiter
from dafka.errors import ConfigError
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.store._facade import DEFAULT_SERVE_RATE, MIN_SERVE_RATE, Store
from dafka.wire.profiles import SignedProfile
from tests.signing import CONSUMER, STORE, P, blob, from_blob, sent
from tests.unit.test_attacks_requesters import From

MIB = 1024 * 1024


@pytest.mark.parametrize("rate", [DEFAULT_SERVE_RATE, 64 * MIB, MIN_SERVE_RATE])
def test_the_serve_rate_given_is_the_one_the_store_serves_at(tmp_path: Path, rate: int) -> None:
    store = Store(tmp_path / "s", towers="127.0.0.1:9", metadata=False, serve_rate=rate)
    try:
        limiter = store.core.serving._bytes_limiter
        assert (limiter.rate, limiter.burst) == (rate, 2 * rate)
        assert (limiter.total_rate, limiter.total_burst) == (4 * rate, 8 * rate)
    finally:
        store.stop()


@pytest.mark.parametrize("rate", [0, MIN_SERVE_RATE - 1, -MIB, float("inf"), float("nan")])
def test_a_serve_rate_below_the_floor_or_not_finite_is_refused(tmp_path: Path, rate) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="serve_rate"):
        Store(tmp_path / "s", towers="127.0.0.1:9", metadata=False, serve_rate=rate)


def _store_of(batches: int, values: int, size: int, rate: float) -> StoreCore:
    core = StoreCore(
        STORE.node_id,
        MemoryStorage(),
        profile=SignedProfile(STORE),
        serve_rate=rate,
        serve_total_rate=4 * rate,
    )
    per = [b"x" * size] * values
    core.handle_batch(
        [from_blob(blob(i * values, values, values=per)) for i in range(batches)], 0.0
    )
    assert core.head("t", P) == batches * values - 1
    return core


def _served(out: list[object]) -> list[int]:
    return [x.offset for x in sent(out) if isinstance(x, m.DirectRecord)]


def test_a_fetch_past_its_requesters_bytes_waits_for_them_and_is_then_served() -> None:
    """A catch-up past its burst: the FETCH its requester sent once its bytes were spent is
    served when they are paid back, at :attr:`serve_at`, not dropped (it was asked again only
    after the requester's timeout, a second of stall per answer)."""
    rate = 1024 * 1024  # a burst of 2 MiB, 1 MiB a second
    core = _store_of(batches=8, values=10, size=60_000, rate=rate)  # 600 kB a batch
    first = _served(core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 40)], 1.0))
    assert first == [0, 10, 20, 30]  # the burst, with one batch's overshoot
    out = core.handle_batch([m.Fetch(P, CONSUMER, "t", 40, 40)], 1.001)
    assert _served(out) == []
    assert core.stats.fetches_paced >= 1 and core.stats.fetches_limited == 0
    due = core.serve_at
    # 2.4 MB taken against a 2 MiB burst: a token back at 1 MiB a second
    assert 1.001 < due < 1.001 + 0.5
    assert not core.has_pending(due - 0.001)  # the IO loop sleeps until then
    assert core.has_pending(due)
    # a token back: one serving step's worth goes (whole batches, charged after)
    assert _served(core.tick(due)) == [40, 50, 60, 70]
    out = core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 10)], due + 0.001)
    assert _served(out) == []  # owing 2.4 MB, paid back at 1 MiB a second
    assert core.serve_at - due == pytest.approx(2.4e6 / rate, rel=0.2)
    assert _served(core.tick(core.serve_at)) == [0]


def test_ready_at_is_when_allow_lets_the_requester_through_again() -> None:
    limiter = RequestLimiter(100.0, 10.0, total_rate=1000.0, total_burst=100.0)
    assert limiter.ready_at("r", 0.0) == 0.0  # unknown: let through now
    assert limiter.allow("r", 0.0, 0.0)
    limiter.charge("r", 29.0)  # owes 19 tokens: one back in (19 + 1) / 100 s
    at = limiter.ready_at("r", 0.0)
    assert at == pytest.approx(0.2, abs=1e-5) and at >= 0.2
    assert not limiter.allow("r", at - 0.001, 0.0)
    assert limiter.allow("r", at, 0.0)
    # the shared bucket too: another requester waits for it when it is the one spent
    limiter.charge("r", 200.0)  # the shared bucket (full at 0.2) owes 100: paid back at 0.3
    other = limiter.ready_at("s", 0.3)
    assert other > 0.3 and not limiter.allow("s", 0.3, 0.0)
    assert limiter.allow("s", other, 0.0)


def test_an_rfc46_store_sleeps_while_a_fetch_waits_for_its_bytes() -> None:
    """rfc46 has no send credits, and ``has_pending`` said "serve now" whenever a FETCH was
    queued, whatever ``serve_at`` said: a FETCH waiting for its requester's bytes had the
    IO loop poll without waiting, turn after turn, until they were paid back (a spin)."""
    rate = 1024 * 1024
    core = StoreCore(
        STORE.node_id, MemoryStorage(), serve_rate=rate, serve_total_rate=4 * rate
    )  # rfc46
    value = b"x" * 300_000
    core.handle_batch([m.Record("t", P, i, value) for i in range(80)], 0.0)
    core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 40)], 1.0)  # 12 MB: the burst spent
    out = core.handle_batch([m.Fetch(P, CONSUMER, "t", 40, 40)], 1.001)
    served = [x.msg.offset for x in out if isinstance(x.msg, m.DirectRecord)]  # type: ignore[attr-defined]
    assert served == [] and core.stats.fetches_paced >= 1
    due = core.serve_at
    assert 1.001 < due < 30.0
    assert not core.has_pending(due - 0.001)  # the IO loop sleeps until then
    assert core.has_pending(due)
    done = set(served)
    now = due
    for _ in range(1_000):  # to the end, each turn at serve_at: no turn without a record
        out = core.tick(now)
        got = {x.msg.offset for x in out if isinstance(x.msg, m.DirectRecord)}  # type: ignore[attr-defined]
        assert got, f"a turn at {now} served nothing"
        done |= got
        if not core.has_pending():
            break
        now = core.serve_at
    assert done == set(range(40, 80))


def test_fetches_waiting_for_their_bytes_are_checked_once_a_serving_turn() -> None:
    """The second red team's case: FETCHes in made-up names (proxied) spend their total byte
    budget and wait, while one own FETCH of small records can go on. Each round of a turn
    serves that one a share (a record or two) and used to check every waiting FETCH again:
    511 of them made 730,320 checks and 1.1 s of CPU in one turn. Now a FETCH that must
    wait is set aside for the rest of the turn: checked once."""
    rate = 1024 * 1024
    core = StoreCore(
        STORE.node_id,
        MemoryStorage(),
        serve_rate=rate,
        serve_total_rate=4 * rate,
        new_partition_rate=1e9,
        new_partition_burst=1e9,
    )
    big = bytes(64 * 1024)
    core.handle_batch([m.Record("big", P, i, big) for i in range(64)], 0.0)
    core.handle_batch([m.Record("small", P, i, b"x" * 100) for i in range(3_000)], 0.0)
    made_up = [f"{0xF000 + i:032X}" for i in range(64)]
    now = 1.0
    for requester in made_up:
        core.handle_batch([m.Fetch(P, requester, "big", 0, 64)], now, From(1, "", False))
    for _ in range(100):  # until every one of them waits for its bytes
        now += 0.001
        core.tick(now)
    paced = core.stats.fetches_paced
    out = core.handle_batch([m.Fetch(P, CONSUMER, "small", 0, 3_000)], now)
    served = [x for x in out if isinstance(x.msg, m.DirectRecord) and x.msg.recipient == CONSUMER]  # type: ignore[attr-defined]
    assert len(served) > 100  # the own FETCH went on, many rounds of a share each
    assert 0 < core.stats.fetches_paced - paced <= len(made_up)  # each waiting one once
