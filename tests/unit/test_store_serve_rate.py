"""A store's serving rate is the operator's to set (``Store(serve_rate=...)``,
``dafka-store --serve-rate``): it bounds what a reader that never reads piles up, and it is
the speed of a long catch-up from the store, so the default must not be the only choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.api.store import DEFAULT_SERVE_RATE, MIN_SERVE_RATE, Store
from dafka.errors import ConfigError

MIB = 1024 * 1024


@pytest.mark.parametrize("rate", [DEFAULT_SERVE_RATE, 512 * MIB, MIN_SERVE_RATE])
def test_the_serve_rate_given_is_the_one_the_store_serves_at(tmp_path: Path, rate: int) -> None:
    store = Store(tmp_path / "s", towers="127.0.0.1:9", metadata=False, serve_rate=rate)
    try:
        limiter = store.core._bytes_limiter
        assert (limiter.rate, limiter.burst) == (rate, 2 * rate)
        assert (limiter.total_rate, limiter.total_burst) == (4 * rate, 8 * rate)
    finally:
        store.stop()


@pytest.mark.parametrize("rate", [0, MIN_SERVE_RATE - 1, -MIB, float("inf"), float("nan")])
def test_a_serve_rate_below_the_floor_or_not_finite_is_refused(tmp_path: Path, rate) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="serve_rate"):
        Store(tmp_path / "s", towers="127.0.0.1:9", metadata=False, serve_rate=rate)
