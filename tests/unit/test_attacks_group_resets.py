"""An admin's reset of a group's offsets (issue 38): the rule every reader applies, and
the attacks on the new surface.

Who can send a reset: an admin, through a signed ``topic.alter`` of a group topic's
``reset_offsets`` setting. What it may change: the committed offset every reader of that
group sees, for the partitions it names. Attacked here: a non-admin or unsigned reset; a
reset on a user topic; a snapshot whose reset differs from what the admin signed; an epoch
that leaves members no room to commit above it; a reset naming more partitions than the
bound; a group record posing as a reset; and the live member that must seek, not keep its
old position.
"""

from __future__ import annotations

import threading
import types

import msgpack
import pytest

from dafka.errors import ConfigError, WireError
from dafka.groups.records import Commit, Heartbeat, group_topic
from dafka.groups.reset_admin import check_spec
from dafka.groups.resets import (
    EPOCH_STEP,
    MAX_EPOCH,
    MAX_RESET_ENTRIES,
    RESET_MEMBER,
    SETTING,
    ResetSpec,
    ResetTo,
    check_reset_offsets,
    from_config,
    merge,
    reseek,
    targets,
)
from dafka.groups.view import MAX_EPOCH_STEP, GroupView
from dafka.metadata.state import command
from tests.admin import ATTACKER, admin_sm, signed

A, B = "A" * 32, "B" * 32
P1, P2 = "1" * 32, "2" * 32
K1, K2 = ("t", P1), ("t", P2)
GROUP = group_topic("g")


def _member_commits(view: GroupView, member: str, key: tuple[str, str], offset: int, epoch: int):
    view.apply(member, Heartbeat(("t",), frozenset({key}), frozenset({key})), 1.0)
    view.apply(member, Commit(((key[0], key[1], offset, epoch),)), 1.0)


# -- the rule every reader applies -----------------------------------------------------------


def test_a_reset_beats_the_commits_before_it_and_the_next_owner_beats_the_reset() -> None:
    view = GroupView(10.0)
    _member_commits(view, A, K1, 500, 7)
    _member_commits(view, A, K2, 300, 2)
    view.set_resets({K1: (0, 7 + EPOCH_STEP)})
    best = view.committed()
    assert best[K1].offset == 0 and best[K1].member == RESET_MEMBER
    assert best[K2].offset == 300  # a partition the reset does not name keeps its commit
    # the old owner's late commit, at its old epoch, does not undo the reset
    view.apply(A, Commit((("t", P1, 900, 7),)), 2.0)
    assert view.committed()[K1].offset == 0
    # a member that takes the partition commits at the reset's epoch + 1, and wins
    _member_commits(view, B, K1, 40, view.epoch(K1) + 1)
    assert view.committed()[K1].offset == 40 and view.committed()[K1].member == B
    # a reset on a partition nobody committed yet counts too
    view.set_resets({("u", P1): (5, EPOCH_STEP)})
    assert view.committed()[("u", P1)].offset == 5 and K1 not in view._resets


def test_every_reader_orders_a_reset_alike_whatever_it_read_first() -> None:
    """The reset and the commits live in two logs: a reader that learns the reset before
    the commits sees the same winner as one that learns it after."""
    early, late = GroupView(10.0), GroupView(10.0)
    early.set_resets({K1: (0, 3 + EPOCH_STEP)})
    for view in (early, late):
        _member_commits(view, A, K1, 100, 3)
    late.set_resets({K1: (0, 3 + EPOCH_STEP)})
    assert early.committed() == late.committed()
    assert early.committed()[K1].offset == 0


def test_a_group_record_cannot_pose_as_a_reset() -> None:
    """A reset is nobody's commit (RESET_MEMBER); a record is always someone's: one applied
    under the empty member ID (no partition is named so) is not taken."""
    view = GroupView(10.0)
    view.set_resets({K1: (0, 10)})
    view.apply(RESET_MEMBER, Heartbeat(("t",), frozenset({K1}), frozenset({K1})), 1.0)
    view.apply(RESET_MEMBER, Commit((("t", P1, 77, 11),)), 1.0)
    assert view.committed()[K1].offset == 0 and view.refused >= 1


def test_a_member_seeks_where_a_reset_beats_its_ownership_and_only_there() -> None:
    view = GroupView(10.0)
    _member_commits(view, A, K1, 500, 4)
    _member_commits(view, A, K2, 500, 4)
    held = {K1: 4, K2: 4}
    assert reseek(held, view.best) == {}
    view.set_resets({K1: (10, 4 + EPOCH_STEP)})
    moved = reseek(held, view.best)
    assert set(moved) == {K1} and moved[K1].offset == 10
    held[K1] = moved[K1].epoch + 1  # what the member does: owns at the reset's epoch + 1
    assert reseek(held, view.best) == {}  # and it seeks once, not every turn
    # a member that took the partition after the reset owns above it: nothing to seek
    assert reseek({K1: 4 + EPOCH_STEP + 1}, view.best) == {}


# -- what a reset may say --------------------------------------------------------------------


def test_attack_a_reset_epoch_that_leaves_members_no_room_is_refused() -> None:
    """An epoch near 2^64 would put the partition out of every member's reach (a commit must
    stay under 2^64 and within MAX_EPOCH_STEP of the best): refused at validation."""
    assert MAX_EPOCH + MAX_EPOCH_STEP < 1 << 64
    for epoch in ((1 << 64) - 1, MAX_EPOCH + 1, 0, -1, True, 1.5):
        with pytest.raises(ConfigError):
            check_reset_offsets([["t", P1, 0, epoch, 0]])
    assert check_reset_offsets([["t", P1, 0, MAX_EPOCH, 0]]) == [["t", P1, 0, MAX_EPOCH, 0]]


def test_attack_a_reset_names_at_most_the_bound_and_only_real_partitions() -> None:
    many = [["t", f"{i:032X}", 0, 1, 0] for i in range(MAX_RESET_ENTRIES + 1)]
    with pytest.raises(ConfigError, match="at most"):
        check_reset_offsets(many)
    assert len(check_reset_offsets(many[:-1])) == MAX_RESET_ENTRIES
    for bad in (
        [["t", "x", 0, 1, 0]],
        [["", P1, 0, 1, 0]],
        [["a\nb", P1, 0, 1, 0]],  # a name no topic may have (a control character)
        [["t", P1, -1, 1, 0]],
        [["t", P1, 1 << 63, 1, 0]],
        [["t", P1, 0, 1, -1]],
        [["t", P1, 0, 1, 0], ["t", P1, 5, 2, 0]],
        [["t", P1, 0, 1]],
        "t",
        [None],
    ):
        with pytest.raises(ConfigError):
            check_reset_offsets(bad)
    # a reader given an invalid setting (it cannot be applied; defensively) takes none
    assert from_config({"topics": {GROUP: {SETTING: [["t", "x", 0, 1, 0]]}}}, GROUP) == {}


def test_attack_only_an_admin_resets_and_only_a_group_topic() -> None:
    sm = admin_sm()
    for topic in (GROUP, "t"):
        assert sm.apply_data(command("topic.create", topic=topic, settings={})) is None
    entries = [["t", P1, 0, EPOCH_STEP, 0]]
    # unsigned, or signed by a key that is not an admin: no-ops
    assert sm.apply_data(command("topic.alter", topic=GROUP, settings={SETTING: entries}))
    forged = signed(sm, "topic.alter", by=ATTACKER, topic=GROUP, settings={SETTING: entries})
    assert sm.apply_data(forged) and SETTING not in sm.topics[GROUP]
    # an admin's on a user topic: refused alike at admission and apply
    on_user = signed(sm, "topic.alter", topic="t", settings={SETTING: entries})
    assert "group topic" in (sm.admission(on_user) or "")
    assert "group topic" in (sm.apply_data(on_user) or "")
    on_create = signed(sm, "topic.create", topic="u", settings={SETTING: entries})
    assert "group topic" in (sm.apply_data(on_create) or "") and "u" not in sm.topics
    # an admin's on the group topic: applied, and what every reader takes
    assert (
        sm.apply_data(signed(sm, "topic.alter", topic=GROUP, settings={SETTING: entries})) is None
    )
    assert from_config(sm.view(), GROUP) == {K1: (0, EPOCH_STEP)}
    # settings that are not a map do not stop the replica
    odd = signed(sm, "topic.alter", topic=GROUP, settings=5)
    assert sm.apply_data(odd)


def test_attack_a_snapshot_whose_reset_differs_from_the_signed_one_is_refused() -> None:
    """A restored snapshot is an input too: a reset it carries must be the one an admin
    signed (the topic setting's proof), not one its sender wrote in."""
    sm = admin_sm()
    assert sm.apply_data(command("topic.create", topic=GROUP, settings={})) is None
    entries = [["t", P1, 100, EPOCH_STEP, 0]]
    assert (
        sm.apply_data(signed(sm, "topic.alter", topic=GROUP, settings={SETTING: entries})) is None
    )
    good = sm.snapshot()
    admin_sm().restore(good)
    state = msgpack.unpackb(good, raw=False, strict_map_key=False)
    state["topics"][GROUP][SETTING] = [["t", P1, 0, EPOCH_STEP, 0]]
    with pytest.raises(WireError):
        admin_sm().check_snapshot(msgpack.packb(state, use_bin_type=True))
    state["topics"]["t"] = {SETTING: entries}  # one added to another topic, unsigned
    state["topics"][GROUP][SETTING] = entries
    with pytest.raises(WireError):
        admin_sm().check_snapshot(msgpack.packb(state, use_bin_type=True))


# -- planning a reset ------------------------------------------------------------------------


def test_a_reset_goes_above_what_the_admin_saw_and_drops_only_overtaken_entries() -> None:
    existing = {K1: (0, 50, 1), K2: (0, 60, 2), ("u", P1): (3, 70, 3)}
    epochs = {K1: 80, K2: 60, ("u", P1): 70, ("v", P1): 9}
    out = merge(existing, {("v", P1): 4}, epochs, 99)
    # K1's reset was overtaken by a commit (epoch 80 > 50): it orders nothing any more
    assert out == [["t", P2, 0, 60, 2], ["u", P1, 3, 70, 3], ["v", P1, 4, 9 + EPOCH_STEP, 99]]
    again = merge({("v", P1): (4, 9 + EPOCH_STEP, 99)}, {("v", P1): 8}, {("v", P1): 9}, 100)
    assert again == [["v", P1, 8, 9 + 2 * EPOCH_STEP, 100]]  # above the reset it replaces
    with pytest.raises(ConfigError, match="no room"):
        merge({}, {K1: 0}, {K1: MAX_EPOCH}, 0)
    full = {("t", f"{i:032X}"): (0, 1, 0) for i in range(MAX_RESET_ENTRIES)}
    with pytest.raises(ConfigError, match="at most"):
        merge(full, {("u", P1): 0}, {}, 0)


def test_attack_a_reset_ages_out_with_the_group_topics_retention() -> None:
    """The red team's fifth break: members overtook a reset, the group topic's retention
    then deleted their commits, and the reset came back: a new member re-read 4,990
    records. A reset is a commit and ages like one: past the group topic's retention_ms
    (from when it was made) no reader counts it, and the group falls back to
    offset_reset as its expired commits do."""
    entries = [["t", P1, 10, EPOCH_STEP, 1_000_000]]
    config = {"topics": {GROUP: {SETTING: entries, "retention_ms": 3000}}}
    assert from_config(config, GROUP, 1_003_000) == {K1: (10, EPOCH_STEP)}
    assert from_config(config, GROUP, 1_003_001) == {}
    assert from_config(config, GROUP) == {K1: (10, EPOCH_STEP)}  # no clock: no ageing
    forever = {"topics": {GROUP: {SETTING: entries}}}  # no retention: kept
    assert from_config(forever, GROUP, 10**15) == {K1: (10, EPOCH_STEP)}


def test_targets_are_clamped_into_what_the_stores_hold() -> None:
    bounds = {K1: (10, 100), K2: (0, 5)}
    assert targets(ResetSpec(ResetTo.EARLIEST), bounds, {}) == {K1: 10, K2: 0}
    assert targets(ResetSpec(ResetTo.LATEST), bounds, {}) == {K1: 100, K2: 5}
    assert targets(ResetSpec(ResetTo.OFFSET, 50), bounds, {}) == {K1: 50, K2: 5}
    assert targets(ResetSpec(ResetTo.SHIFT, -30), bounds, {K1: 60, K2: 4}) == {K1: 30, K2: 0}
    assert targets(ResetSpec(ResetTo.SHIFT, 3), bounds, {}) == {K1: 13, K2: 3}
    found = {K1: 42, K2: None}
    assert targets(ResetSpec(ResetTo.DATETIME, 1), bounds, {}, found) == {K1: 42, K2: 5}


def test_a_reset_spec_from_a_form_is_checked() -> None:
    assert check_spec("earliest", None) == ResetSpec(ResetTo.EARLIEST)
    assert check_spec("shift", " -5 ") == ResetSpec(ResetTo.SHIFT, -5)
    for to, value in (
        ("offset", "-1"),
        ("offset", "1e3"),
        ("offset", ""),
        ("offset", "9" * 30),
        ("back", "1"),
        ("offset", "١٢"),
    ):
        with pytest.raises(ConfigError):
            check_spec(to, value)


# -- the Kafka listener's offset fetches -----------------------------------------------------


def test_the_kafka_listener_answers_a_reset_and_its_next_commit_goes_above_it() -> None:
    from dafka.kafka.commits import GroupCommits

    config = {"topics": {GROUP: {SETTING: [["t", P1, 0, 5 + EPOCH_STEP, 0]]}}}
    gc = GroupCommits.__new__(GroupCommits)
    gc.max_groups = 3
    gc._views = {}
    gc._lock = threading.Lock()
    gc._producer = types.SimpleNamespace(metadata=types.SimpleNamespace(config=None, loaded=True))
    view = GroupView(10.0)
    _member_commits(view, A, K1, 500, 5)
    gc._load = lambda group: view  # type: ignore[method-assign]
    import collections

    gc._views = collections.OrderedDict()
    assert gc.committed("g")[K1][0] == 500  # no metadata yet: the commits alone
    gc._producer.metadata.config = config  # the admin's reset arrives
    assert gc.committed("g")[K1][0] == 0  # a kept view learns of it
    assert view.epoch(K1) == 5 + EPOCH_STEP


def test_a_group_is_not_described_from_a_metadata_view_not_yet_loaded(monkeypatch) -> None:
    """The red team's third break: describe, the console and a reset's plan showed the
    offset from before a reset, now and then, when the metadata view had installed a
    snapshot and not yet the changes after it (a first sync that failed halfway). A group
    is now read only once the view has loaded; until then, one clear timeout."""
    import dafka.consumer
    from dafka.errors import DafkaTimeout
    from dafka.groups.admin import read_view

    stale = {"topics": {GROUP: {}}}  # the snapshot: no reset yet

    class View:
        config = stale

        def wait_loaded(self, timeout: float) -> bool:
            return False

    class Reader:
        metadata = View()
        store_answered = True

        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def __enter__(self) -> Reader:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def poll_batches(self, n: int, timeout: float) -> list:
            return []

        def at_end(self) -> bool:
            return True

    monkeypatch.setattr(dafka.consumer, "Consumer", Reader)
    with pytest.raises(DafkaTimeout, match="metadata was not read"):
        read_view("127.0.0.1:1", "g", timeout=0.2)
    View.wait_loaded = lambda self, timeout: True  # type: ignore[method-assign]
    assert read_view("127.0.0.1:1", "g", timeout=0.2).committed() == {}
