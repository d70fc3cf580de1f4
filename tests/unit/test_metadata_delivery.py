"""Every metadata change reaches the node's IO thread (issue 9, point 7).

* A follower that applied entries and then failed (the stream broke, a timeout)
  still publishes what it applied.
* Changes cross from the metadata thread to the IO thread through the node's one
  command channel (:meth:`NodeLoop.call`): in order, each once, the last one wins.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import dafka.producer._facade as producer_module
from dafka.config import NodeConfig, TowerAddress
from dafka.errors import ConfigError, DafkaTimeout, RecordTooLargeError
from dafka.io.node import NodeLoop
from dafka.metadata.follower import MetadataView
from dafka.metadata.state import command, signed_command
from dafka.producer._facade import Producer
from dafka.raft.codec import ZERO_REQID, Entry, EntryType
from tests.admin import ADMIN, ADMIN_HEX
from tests.idle_handler import IdleHandler
from tests.procs import wait_until

# -- the follower --------------------------------------------------------------------------


def _entry(index: int, data: bytes) -> Entry:
    return Entry(index=index, term=1, type=EntryType.STATE, reqid=ZERO_REQID, data=data)


class _BreakingClient:
    """Streams ``entries`` and then fails, like a leader lost in the middle of a sync."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries

    def stream_entries(self, prev: int, timeout: float) -> Iterator[Entry]:
        yield from (e for e in self.entries if e.index > prev)
        raise DafkaTimeout("the leader went away")


def test_a_follower_whose_sync_fails_after_applying_still_publishes() -> None:
    view = MetadataView("127.0.0.1:1")
    seen: list[dict[str, Any]] = []
    view.subscribe(seen.append)
    entries = [
        _entry(1, command("admins.init", admins=[ADMIN_HEX])),
        _entry(2, command("topic.create", topic="a", settings={})),
        _entry(
            3,
            signed_command(ADMIN, "dafka", 0, "topic.create", topic="b", settings={"min_acks": 2})[
                0
            ],
        ),
    ]
    view._sync(_BreakingClient(entries))  # type: ignore[arg-type]
    assert not view.online
    assert seen and set(seen[-1]["topics"]) == {"a", "b"}
    assert view.topic("b") is not None and view.topic("b")["min_acks"] == 2  # type: ignore[index]
    # nothing new: no second publication of the same revision
    view._sync(_BreakingClient(entries))  # type: ignore[arg-type]
    assert len(seen) == 1


# -- the node's command channel ------------------------------------------------------------


def test_calls_from_other_threads_run_on_the_loop_in_order_each_once() -> None:
    config = NodeConfig(towers=(TowerAddress("127.0.0.1", 1),))
    loop = NodeLoop("A" * 32, config, IdleHandler()).start()  # type: ignore[arg-type]
    ran: list[tuple[int, int]] = []
    threads_seen: set[str] = set()

    def make(writer: int, i: int) -> Callable[[float], list]:
        def fn(now: float) -> list:
            threads_seen.add(threading.current_thread().name)
            ran.append((writer, i))
            return []

        return fn

    def burst(writer: int) -> None:
        for i in range(2000):
            loop.call(make(writer, i))

    writers = [threading.Thread(target=burst, args=(w,)) for w in range(4)]
    try:
        for t in writers:
            t.start()
        for t in writers:
            t.join(10)
        wait_until(lambda: len(ran) == 8000, 10, what="every call run")
    finally:
        loop.stop()
    assert threads_seen == {"dafka-node"}
    for writer in range(4):
        assert [i for w, i in ran if w == writer] == list(range(2000))


# -- a producer's policy hand-off ----------------------------------------------------------


class _FakeView:
    """Stands for MetadataView: loaded at once; the test calls the listener itself."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.listeners: list[Callable[[dict], None]] = []
        self.loaded = True

    def start(self, wait: float = 0.0) -> bool:
        return True

    def stop(self, timeout: float = 5.0) -> None:
        pass

    def subscribe(self, listener: Callable[[dict], None]) -> None:
        self.listeners.append(listener)

    def topic(self, name: str) -> dict | None:
        return {}

    def change(self, min_acks: int) -> None:
        config = {"stores": [], "topics": {"t": {"min_acks": min_acks}}}
        for listener in self.listeners:
            listener(config)


@pytest.fixture
def fake_producer(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Producer, _FakeView]]:
    monkeypatch.setattr(producer_module, "MetadataView", _FakeView)
    p = Producer("t", towers="127.0.0.1:1", metadata=True)
    view = p.metadata
    assert isinstance(view, _FakeView)
    try:
        yield p, view
    finally:
        p.close(0)


def _applied(p: Producer) -> int | None:
    return p._core._topic_min_acks.get("t")


def test_a_change_arriving_during_the_hand_off_is_not_lost(
    fake_producer: tuple[Producer, _FakeView],
) -> None:
    """The second change arrives while the IO thread takes the first, at the point where
    each hand-off is weakest (reading the shared slot, or applying the command)."""
    p, view = fake_producer
    injected = threading.Event()

    def inject() -> None:
        if not injected.is_set():
            injected.set()
            view.change(3)  # what the metadata thread does, at the worst moment

    handler = p._handler

    class Racing(type(handler)):  # type: ignore[misc]
        # a hand-off through a shared attribute: the write lands between its read and
        # its clear (the code before this fix had such a slot; the fix has none)
        @property
        def policy(self) -> Any:
            value = self.__dict__.get("policy")
            if value is not None and sys._getframe(1).f_code.co_name == "apply_policy":
                inject()  # between `policy, self.policy = self.policy, None`'s read and clear
            return value

        @policy.setter
        def policy(self, value: Any) -> None:
            self.__dict__["policy"] = value

    handler.__dict__.setdefault("policy", None)
    handler.__class__ = Racing
    real = p._core.set_policy

    def racing_set_policy(*args: Any) -> Any:
        out = real(*args)
        inject()
        return out

    p._core.set_policy = racing_set_policy  # type: ignore[method-assign]
    view.change(2)
    wait_until(lambda: injected.is_set(), 5, what="the first change taken")
    wait_until(lambda: _applied(p) == 3, 5, what="the last change applied")


def test_a_burst_of_changes_ends_with_the_last_one_applied(
    fake_producer: tuple[Producer, _FakeView],
) -> None:
    p, view = fake_producer
    for rounds in range(20):
        last = 0

        def burst(base: int) -> None:
            nonlocal last
            for i in range(1, 200):
                view.change(1 + (base + i) % 15)
                last = 1 + (base + i) % 15

        t = threading.Thread(target=burst, args=(rounds * 7,))
        t.start()
        t.join(10)
        want = last
        wait_until(lambda w=want: _applied(p) == w, 5, what=f"round {rounds}: the last change")


def test_a_deletion_during_a_sends_topic_check_is_not_undone_by_the_send(
    fake_producer: tuple[Producer, _FakeView],
) -> None:
    """The follower thread deletes a topic while a send checks it: the send must not mark
    it known after the deletion dropped it, or every later send skips the check."""
    p, view = fake_producer

    def publish(config: dict) -> None:
        for listener in view.listeners:
            listener(config)

    publish({"stores": [], "topics": {"t": {}, "u": {}}, "deleted": {}})
    racing = [True]

    def topic(name: str) -> dict | None:
        if name != "u":
            return {}
        if racing[0]:  # checked before the deletion lands ...
            racing[0] = False
            publish({"stores": [], "topics": {"t": {}}, "deleted": {"u": 7}})  # ... meanwhile
            return {}
        return None

    view.topic = topic  # type: ignore[method-assign]
    view.auto_create = lambda: False  # type: ignore[attr-defined]
    p.send(b"a", topic="u")
    with pytest.raises(ConfigError, match="'u' does not exist"):
        p.send(b"b", topic="u")


def test_sends_policy_is_one_frozen_snapshot_replaced_whole(
    fake_producer: tuple[Producer, _FakeView],
) -> None:
    p, view = fake_producer
    view.change(1)
    before = p._policy
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.topics_ok = frozenset()  # type: ignore[misc]
    p.send(b"a")
    after = p._policy
    assert after is not before and "t" in after.topics_ok and "t" not in before.topics_ok
    config = {"stores": [], "topics": {"t": {"max_record_bytes": 4}}}
    for listener in view.listeners:
        listener(config)
    assert p._policy.max_record == {"t": 4} and not dict(before.max_record)
    with pytest.raises(RecordTooLargeError, match="max_record_bytes"):
        p.send(b"12345")


# -- topic creation on first use -----------------------------------------------------------


def test_creating_a_topic_without_a_leader_is_one_clear_error() -> None:
    view = MetadataView("127.0.0.1:9", timeout=0.3)
    view.start()
    try:
        with pytest.raises(DafkaTimeout, match="could not create topic 'x'"):
            view.create_topic("x", timeout=3.0)
    finally:
        view.stop()
