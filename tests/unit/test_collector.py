"""dafka.io.collector.freeze_heap: a full collection no longer walks what a node started
with, garbage made afterwards is still collected, and the producer, consumer and store
commands freeze once their node has started."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from dafka.cli import consumer as consumer_cli
from dafka.cli import producer as producer_cli
from dafka.cli import store as store_cli

_FREEZE = """
import gc, sys
from dafka import Consumer, Producer  # what a node's process holds from its start
from dafka.io.collector import freeze_heap
gc.collect()
walked_before = len(gc.get_objects())  # what a full collection walks
if sys.argv[1] == "freeze":
    assert freeze_heap() >= walked_before - 100
walked_after = len(gc.get_objects())
class Cycle:
    pass
a, b = Cycle(), Cycle()
a.other, b.other = b, a
del a, b
collected = gc.collect()
print(walked_before, walked_after, collected)
"""


def _walked(mode: str) -> tuple[int, int, int]:
    out = subprocess.run(
        [sys.executable, "-c", _FREEZE, mode], capture_output=True, text=True, check=True
    )
    before, after, collected = map(int, out.stdout.split())
    return before, after, collected


def test_a_full_collection_walks_only_what_came_after_the_freeze() -> None:
    before, after, collected = _walked("freeze")
    assert before > 10_000  # modules, classes, functions: a node's start
    assert after < 100
    assert collected >= 2  # a cycle made after the freeze is still garbage collected
    before, after, _ = _walked("none")
    assert after >= before - 100  # without it, everything is walked again


@pytest.mark.parametrize("cli, starts", [(producer_cli, "Producer("), (store_cli, "Store(")])
def test_the_commands_freeze_once_their_node_has_started(cli: object, starts: str) -> None:
    source = inspect.getsource(cli.main.callback)  # type: ignore[attr-defined]
    assert 0 <= source.index(starts) < source.index("freeze_heap()")


def test_the_consumer_command_freezes_once_its_node_has_started() -> None:
    source = inspect.getsource(consumer_cli.main.callback)  # type: ignore[attr-defined]
    assert 0 <= source.index("as consumer:") < source.index("freeze_heap()")
