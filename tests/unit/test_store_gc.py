"""The store process collects the garbage collector's youngest generation less often
(dafka.cli.store.tune_gc, issue 13): its older generations keep their thresholds, and
the store command applies it before it starts the store."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Iterator

import pytest

from dafka.cli import store as store_cli


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 11, 12)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_tune_gc_raises_only_the_young_threshold(thresholds: tuple[int, int, int]) -> None:
    store_cli.tune_gc()
    assert gc.get_threshold() == (store_cli.GC_YOUNG_THRESHOLD, 11, 12)
    assert store_cli.GC_YOUNG_THRESHOLD >= 10_000
    assert gc.isenabled()


def test_the_store_command_tunes_the_gc_before_it_starts_the_store() -> None:
    source = inspect.getsource(store_cli.main.callback)  # type: ignore[arg-type]
    assert 0 <= source.index("tune_gc()") < source.index("Store(")
