"""Commit records carrying Kafka's metadata string, and GroupCommits' bounded cache."""

from __future__ import annotations

import json
import types

import pytest

from dafka.errors import WireError
from dafka.groups.records import Commit, Heartbeat, decode, encode
from dafka.groups.view import GroupView
from dafka.kafka.commits import GroupCommits

P = "A" * 32


def test_metadata_round_trips_and_is_left_out_when_none() -> None:
    c = Commit((("t", P, 5, 1),), ("app",))
    assert decode(encode(c)) == c
    plain = Commit((("t", P, 5, 1),), (None,))
    assert "meta" not in json.loads(encode(plain))
    assert decode(encode(plain)) == Commit((("t", P, 5, 1),))


def test_the_view_keeps_the_metadata_of_the_winning_commit() -> None:
    v = GroupView(10.0)
    v.apply(P, Heartbeat(("t",), frozenset({("t", P)}), None), 0.0)
    v.apply(P, Commit((("t", P, 5, 1),), ("m",)), 0.0)
    assert v.committed()[("t", P)].metadata == "m"


@pytest.mark.parametrize(
    "meta", [["x" * 4097], ["a", "b"], "str", [5], {"a": 1}], ids=["long", "count", "s", "i", "d"]
)
def test_attack_commit_metadata_over_its_bounds_is_refused(meta) -> None:
    body = json.loads(encode(Commit((("t", P, 5, 1),))))
    body["meta"] = meta
    with pytest.raises(WireError):
        decode(json.dumps(body).encode())


def test_attack_groups_cached_are_bounded() -> None:
    gc = GroupCommits.__new__(GroupCommits)
    # built by hand: no cluster needed for the cache
    import collections
    import threading

    gc.max_groups = 3
    gc._views = collections.OrderedDict()
    gc._lock = threading.Lock()
    gc._load = lambda group: GroupView(10.0)  # type: ignore[method-assign]
    gc._producer = types.SimpleNamespace(metadata=None)  # no metadata: no admin's resets
    for i in range(10):
        gc.committed(f"g{i}")
    assert list(gc._views) == ["g7", "g8", "g9"]
