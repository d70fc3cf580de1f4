"""The consumer-group half of the public :class:`~dafka.consumer._facade.Consumer`.

:class:`GroupConsumer` is a base of ``Consumer``: the group API (``commit``,
``committed``, ``assignment``, ``member_id``) and what the member's thread
(:class:`~dafka.groups.member.GroupMember`) asks of the consumer: the partitions
seen, the positions, and to start or stop reading partitions. See ``docs/groups.md``.

Callbacks. The member decides a rebalance on its own thread, but ``on_assign`` and
``on_revoke`` run on the application's thread, inside a poll (with
:class:`~dafka.api.aio.AsyncConsumer`, on the event loop), as Kafka clients do: the
member queues the event (:meth:`GroupConsumer._group_event`) and the next poll runs
what is queued, outside the consumer's lock, before it takes any record. An assign
event is queued before the partitions are read, a revoke after they stopped being
read, in the member's order, so a poll never returns a record of a partition before
its ``on_assign`` ran, nor after its ``on_revoke``. A consumer that does not poll
holds at most :data:`MAX_GROUP_EVENTS` events: past that, the queue is folded into
the net change since the last callback that ran (one revoke, one assign).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config import NodeConfig
from ..core.effects import Publish
from ..errors import ConfigError
from ..groups.member import ASSIGN, REVOKE, Callback, GroupMember, GroupSettings
from ..groups.records import group_topic
from ._core import ConsumerCore
from ._shared import ConsumerShared

if TYPE_CHECKING:
    from ..metadata.follower import MetadataView

PartitionKey = tuple[str, str]

__all__ = ["GroupConsumer"]

log = logging.getLogger(__name__)

MAX_GROUP_EVENTS = 64
"""Rebalance callbacks queued for a consumer that does not poll, before they are folded."""


class GroupConsumer:
    _core: ConsumerCore
    _shared: ConsumerShared  # shared.held: what the member reads (None: no group)
    _group: GroupMember | None = None
    _known: frozenset[PartitionKey] = frozenset()
    _group_events: deque[tuple[str, frozenset[PartitionKey]]]
    """Callbacks to run in the next poll: (ASSIGN or REVOKE, partitions), under ``_cond``."""
    _group_told: frozenset[PartitionKey] = frozenset()
    """What the callbacks that ran have told the application it holds."""
    _group_callbacks: dict[str, Callback | None]

    if TYPE_CHECKING:

        def _on_loop(
            self, fn: Callable[[float], tuple[list[Publish], Any]], timeout: float = 10.0
        ) -> Any: ...

        def positions(self) -> dict[PartitionKey, int]: ...

    # ------------------------------------------------------------------ API

    def commit(
        self,
        offsets: Mapping[PartitionKey, int] | None = None,
        *,
        asynchronous: bool = False,
    ) -> dict[PartitionKey, int]:
        """Commit the next offset to read per (topic, partition) for the group.

        Default: the position (:meth:`positions`: the next record a poll returns) of
        every partition this member reads. Returns what was committed, once
        ``min_acks`` stores hold it (raises :class:`~dafka.errors.DafkaTimeout` if they
        do not in time), or at once if ``asynchronous``.

        After an admin reset a partition's offset (``dafka groups reset``), its positions
        read before it are not committed until the next poll: explicit ``offsets`` naming
        it raise :class:`~dafka.errors.CommitFailedError` (nothing written), the default
        leaves it out (docs/groups.md, "Resetting offsets")."""
        return self._member().commit(offsets, asynchronous)

    def committed(self) -> dict[PartitionKey, int]:
        """The group's committed offsets (next offset to read), per (topic, partition)."""
        return self._member().committed()

    def assignment(self) -> list[PartitionKey]:
        """The partitions this group member reads now."""
        return self._member().assignment()

    @property
    def member_id(self) -> str | None:
        """This consumer's ID in its group (its partition of the group topic), if any."""
        return None if self._group is None else self._group.member_id

    # ------------------------------------------------------------ callbacks

    def _group_event(self, kind: str, keys: frozenset[PartitionKey]) -> None:
        """The member's thread: queue a callback for the next poll (nothing if no callback
        was given for it)."""
        if not keys or self._group_callbacks.get(kind) is None:
            return
        with self._shared.cond:
            events = self._group_events
            events.append((kind, keys))
            if len(events) > MAX_GROUP_EVENTS:
                self._fold_group_events()
            self._shared.cond.notify_all()

    def _fold_group_events(self) -> None:
        """Holding ``_cond``: replace the queue with the net change since the last
        callback that ran (what was told and is no longer held, then what is held and
        was not told)."""
        held = set(self._group_told)
        for kind, keys in self._group_events:
            if kind == ASSIGN:
                held |= keys
            else:
                held -= keys
        self._group_events.clear()
        gone = self._group_told - held
        new = frozenset(held) - self._group_told
        if gone and self._group_callbacks.get(REVOKE) is not None:
            self._group_events.append((REVOKE, gone))
        if new and self._group_callbacks.get(ASSIGN) is not None:
            self._group_events.append((ASSIGN, new))

    def _run_group_callbacks(self) -> None:
        """The application's thread, inside a poll, not holding ``_cond``: run the
        queued callbacks in order."""
        while True:
            with self._shared.cond:
                if not self._group_events:
                    return
                kind, keys = self._group_events.popleft()
                told = self._group_told
                self._group_told = told | keys if kind == ASSIGN else told - keys
            fn = self._group_callbacks.get(kind)
            if fn is None:
                continue
            try:
                fn(sorted(keys))
            except Exception:  # the application's bug: the poll goes on
                log.exception("group.callback_failed kind=%s", kind)

    # ------------------------------------------------------------- set-up

    def _group_mode(self, group: str) -> None:
        """Before the IO thread starts: read nothing until the group assigns."""
        group_topic(group)  # a clear error for a bad name, before anything starts
        self._core.group_mode()
        self._shared.held = set()

    def _start_group(
        self,
        group: str,
        settings: GroupSettings,
        node_kw: Mapping[str, object],
        state_dir: object,
        min_acks: int,
        on_assign: Callback | None,
        on_revoke: Callback | None,
    ) -> None:
        """Start the member (its producer, reader and thread); close if that fails."""
        self._group_callbacks = {ASSIGN: on_assign, REVOKE: on_revoke}
        node = node_kw.get("node")
        if isinstance(node, NodeConfig) and node.port:
            # the consumer binds the port it was given; its member's producer and reader
            # are two more nodes, each on a port of its own
            node_kw = {**node_kw, "node": dataclasses.replace(node, port=0)}
        try:
            # guard: group-member-reader-follows-topic
            self._group = GroupMember(
                _MemberLink(self),
                group,
                self._shared.initial_topics,
                settings,
                producer_kw={
                    **node_kw,
                    # the member commits where this consumer reads: with no trusted stores
                    # it trusts any store, as the consumer does, and says so at INFO only
                    "trust_any_store": True if not node_kw.get("trusted_stores") else None,
                    "state_dir": state_dir,
                    "min_acks": min_acks,
                    "max_batch_records": 1024,
                    # a member without stores says so (BufferFullError), never blocks
                    "max_unacked_bytes": 16 * 1024 * 1024,
                    "on_full": "raise",
                },
                reader_kw=node_kw,
            )
        except BaseException:
            self.close()  # type: ignore[attr-defined]
            raise

    def _member(self) -> GroupMember:
        if self._group is None:
            raise ConfigError("this consumer is in no group (Consumer(..., group=NAME))")
        return self._group

    # ------------------------------------------------- the member's requests

    def _group_known(self) -> frozenset[PartitionKey]:
        """The partitions the core has seen (refreshed on the IO thread for next time)."""

        def call(now: float) -> list[Publish]:
            self._known = frozenset(self._core.known_partitions())
            return []

        self._core_call(call)
        return self._known

    def _core_call(self, fn: Callable[[float], list[Publish]]) -> None:
        self._loop.call(fn)  # type: ignore[attr-defined]

    def _group_revoke(self, keys: frozenset[PartitionKey]) -> dict[PartitionKey, int]:
        """Stop reading ``keys`` at once; their positions (records not polled are dropped,
        so the next owner reads them). One step on the IO thread, holding ``_cond``, so
        a poll sees either all of it or none."""
        held = self._shared.held
        assert held is not None

        def call(now: float) -> tuple[list[Publish], dict[PartitionKey, int]]:
            with self._shared.cond:
                held.difference_update(keys)
                pos = self._shared.polled_positions(self._core.positions())
                for topic, partition in keys:
                    self._shared.drop(topic, partition)
            out = self._core.assign({}, keys, now)
            return out, {k: pos[k] for k in keys if k in pos}

        return dict(self._on_loop(call))

    def _group_assign(self, starts: Mapping[PartitionKey, int | None]) -> None:
        held = self._shared.held
        assert held is not None
        starts = dict(starts)
        with self._shared.cond:
            held.update(starts)

        def call(now: float) -> list[Publish]:
            return self._core.assign(starts, (), now)

        self._core_call(call)


class _MemberLink:
    """What the group member's thread asks of its consumer
    (:class:`~dafka.groups.member.GroupLink`): the consumer's side of the member."""

    def __init__(self, consumer: GroupConsumer) -> None:
        self._consumer = consumer

    @property
    def metadata(self) -> MetadataView | None:
        """The cluster metadata the consumer follows (who the group admits)."""
        return getattr(self._consumer, "metadata", None)

    def positions(self) -> dict[PartitionKey, int]:
        """The next offset a poll returns, per partition seen."""
        return self._consumer.positions()

    def known(self) -> frozenset[PartitionKey]:
        """The partitions of the group's topics the consumer has seen."""
        return self._consumer._group_known()

    def revoke(self, keys: frozenset[PartitionKey]) -> dict[PartitionKey, int]:
        """Stop reading ``keys`` at once; their positions."""
        return self._consumer._group_revoke(keys)

    def assign(self, starts: Mapping[PartitionKey, int | None]) -> None:
        """Start reading ``starts`` (each from its offset; None: by ``offset_reset``)."""
        self._consumer._group_assign(starts)

    def event(self, kind: str, keys: frozenset[PartitionKey]) -> None:
        """Queue a rebalance callback for the application's next poll."""
        self._consumer._group_event(kind, keys)

    def polls(self) -> int:
        """How many polls of the application have taken records so far (only grows)."""
        shared = self._consumer._shared
        with shared.cond:
            return shared.takes
