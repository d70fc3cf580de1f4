"""The per-turn shortcuts give what the generic forms gave: ``Ready.applying`` is
``dataclasses.replace`` of its two fields, ``correlate`` of an AppendEntries answer is the
``replace`` of its echoed fields, and the core's ``_state_changed`` is the comparison of
the hard and soft states it skips building. Each fails if a field is left out."""

from __future__ import annotations

import dataclasses

import pytest

from dafka.raft.codec import (
    ClusterConfig,
    Entry,
    EntryType,
    HardState,
    Peer,
    SnapshotMeta,
)
from dafka.raft.core import (
    AppendEntries,
    AppendResponse,
    RaftCore,
    Ready,
    Role,
    SnapshotChunk,
    correlate,
)
from dafka.raft.core._ready import ReadState, SoftState

from .sim import Network, new_core


def _all_set(value: object) -> None:
    """Every field of ``value`` differs from its default (so a copy that drops one shows)."""
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        if f.default is not dataclasses.MISSING:
            assert getattr(value, f.name) != f.default, f.name


def test_ready_applying_is_replace_of_committed_entries_and_read_states() -> None:
    entry = Entry(7, 2, EntryType.STATE, bytes(12), b"x")
    rd = Ready(
        hard_state=HardState(2, "a", 6),
        entries=(entry,),
        truncate_from=7,
        snapshot=SnapshotMeta(3, 1, ClusterConfig((Peer("a", "tcp://x:1"),))),
        snapshot_chunks=(SnapshotChunk(3, 1, 0, 10, b"c"),),
        messages=(AppendResponse("a", "b", 2, True),),
        committed_entries=(entry,),
        read_states=(ReadState(b"r", 6),),
        soft_state=SoftState("a", Role.LEADER),
        must_sync=True,
        write=4,
    )
    _all_set(rd)
    committed, reads = (Entry(6, 2, EntryType.STATE),), (ReadState(b"s", 5),)
    assert rd.applying(committed, reads) == dataclasses.replace(
        rd, committed_entries=committed, read_states=reads
    )
    assert rd.applying((), ()) == dataclasses.replace(rd, committed_entries=(), read_states=())


def test_correlate_echoes_what_replace_echoes() -> None:
    two = (Entry(11, 3, EntryType.STATE), Entry(12, 3, EntryType.STATE))
    request = AppendEntries("a", "b", 3, 10, 2, 9, two, seq=41)
    response = AppendResponse("b", "a", 3, False, 2, 8, prev_index=1, last_index=1, seq=1)
    _all_set(response)
    expected = dataclasses.replace(response, prev_index=10, last_index=12, seq=41)
    assert correlate(request, response) == expected


def _built_differs(core: RaftCore) -> bool:
    return core._hard_state() != core._prev_hs or core._soft_state() != core._prev_ss


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"term": 9},
        {"voted_for": "c"},
        {"commit": 5},
        {"leader": "c"},
        {"role": Role.CANDIDATE},
    ],
)
def test_state_changed_is_the_hard_and_soft_state_comparison(change: dict[str, object]) -> None:
    core = new_core("a", "abc")
    while core.has_ready():
        core.advance(core.ready())
    assert not core._state_changed() and not _built_differs(core)
    for name, value in change.items():
        setattr(core, name, value)
    assert core._state_changed() == _built_differs(core) == bool(change)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_state_changed_agrees_at_every_has_ready_of_a_cluster(seed: int) -> None:
    net = Network("abc", seed=seed)
    asked = 0
    for node in net.nodes.values():
        core = node.core
        assert core is not None
        plain = core._state_changed

        def checked(core: RaftCore = core, plain: object = plain) -> bool:
            nonlocal asked
            asked += 1
            answer = plain()  # type: ignore[operator]
            assert answer == _built_differs(core)
            return bool(answer)

        core._state_changed = checked  # type: ignore[method-assign]
    lead = net.wait_leader()
    net.commit_value(lead.id, "k", 1)
    net.run(100)
    assert asked > 50
