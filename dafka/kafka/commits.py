"""Kafka groups' committed offsets, kept durably in Dafka: in the native group topic
``__group.NAME``, as native members keep theirs (``docs/groups.md``).

The listener writes with one signed producer identity of its own (``state_dir`` keeps
it across restarts). A group topic's readers (members' views, ``dafka groups describe``)
count a commit only for partitions its writer's last heartbeat held, so each Kafka commit
is three records in the listener's partition of the group topic, in order: a heartbeat
holding exactly the committed partitions, the commit, a leave (the listener is a member
of the native group for no longer than that). A commit's epoch is the one the listener
already holds for the partition, or one above the group's highest when another writer
(a listener that coordinated the group before) holds it, so the newest coordinator's
commits win. :meth:`GroupCommits.commit` returns once ``min_acks`` stores (the group
topic's, from the metadata) acknowledged all three.

The group's commits are read back from the topic's beginning the first time a group is
asked for (then kept, at most ``max_groups``, and updated by this listener's commits;
:meth:`GroupCommits.forget` drops a group whose coordination moved elsewhere).

What the listener must be allowed (the group ACL rules of ``docs/groups.md``): with
``auto_create`` off, an admin creates ``__group.NAME``; with a producer ACL on the group
topic, it must name the listener's node ID (:attr:`GroupCommits.writer`); else with a
consumer ACL on the group topic, that must name it; else the listener must be named by
the consumer ACL of every topic it commits offsets for (a listener serving Kafka
consumers of a topic reads it anyway).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, DafkaTimeout, WireError
from ..groups.admin import GROUP_TAIL_WAIT
from ..groups.admission import Admission
from ..groups.records import MAX_KEYS, MAX_METADATA, Commit, Heartbeat, Leave, decode, encode
from ..groups.records import group_topic as _group_topic
from ..groups.resets import from_config as resets_from_config
from ..groups.view import GroupView

log = logging.getLogger(__name__)

__all__ = ["GroupCommits"]

Key = tuple[str, str]  # topic, Dafka partition (node ID)
Offsets = Mapping[Key, tuple[int, str | None]]


class GroupCommits:
    def __init__(
        self,
        *,
        towers: Any,
        state_dir: str | os.PathLike[str] | None = None,
        read_timeout: float = 10.0,
        max_groups: int = 1000,
        max_unacked_bytes: int = 64 * 1024 * 1024,
        **node_options: Any,
    ) -> None:
        from ..producer import Producer

        self.towers = towers
        self.read_timeout = float(read_timeout)
        self.max_groups = int(max_groups)
        self._node_options = node_options
        self._views: OrderedDict[str, GroupView] = OrderedDict()
        self._lock = threading.Lock()
        self._client = f"dafka-kafka {socket.gethostname()}/{os.getpid()}"
        self._producer = Producer(
            towers=towers,
            state_dir=state_dir,
            max_unacked_bytes=max_unacked_bytes,
            on_full="raise",
            **node_options,
        )
        self.writer: str = self._producer.partition
        """The listener's node ID: its partition of every group topic."""

    def commit(self, group: str, offsets: Offsets, timeout: float) -> None:
        """Write ``offsets`` ({(topic, partition): (next offset, metadata)}) to the group's
        topic; returns once the stores acknowledged (:class:`DafkaTimeout` otherwise)."""
        topic = _group_topic(group)
        if not offsets:
            return
        # guard: kafka-commits-caps-entries
        if len(offsets) > MAX_KEYS:
            raise ConfigError(f"at most {MAX_KEYS} partitions per commit, not {len(offsets)}")
        for (_, _), (offset, meta) in offsets.items():
            if type(offset) is not int or not 0 <= offset < 1 << 63:
                raise ConfigError(f"a committed offset must be an int >= 0, not {offset!r}")
            if meta is not None and (not isinstance(meta, str) or len(meta) > MAX_METADATA):
                raise ConfigError(f"commit metadata is at most {MAX_METADATA} characters")
        view = self._view(group)
        with self._lock:
            best = view.committed()
            entries = []
            for key in sorted(offsets):
                held = best.get(key)
                if held is not None and held.member == self.writer:
                    epoch = held.epoch
                else:
                    epoch = view.epoch(key) + 1
                entries.append((key[0], key[1], offsets[key][0], epoch))
            keys = frozenset(offsets)
            topics = tuple(sorted({t for t, _ in keys}))
            metas = tuple(offsets[(t, p)][1] for t, p, _, _ in entries)
            records = (
                Heartbeat(topics, keys, None, self._client),
                Commit(tuple(entries), metas),
                Leave(),
            )
            futures = [self._producer.send(encode(r), topic=topic) for r in records]
        deadline = time.monotonic() + timeout
        try:
            for fut in futures:
                fut.result(timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError as exc:
            raise DafkaTimeout(
                f"commit to group {group!r} not acknowledged by the stores within {timeout:g} s"
            ) from exc
        now = time.monotonic()
        with self._lock:
            for r in records:
                view.apply(self.writer, r, now)

    def committed(self, group: str) -> dict[Key, tuple[int, str | None]]:
        """The group's committed offsets, as its topic's readers see them."""
        view = self._view(group)
        with self._lock:
            return {k: (c.offset, c.metadata) for k, c in view.committed().items()}

    def forget(self, group: str) -> None:
        """Read the group's topic again next time (another listener may have committed)."""
        with self._lock:
            self._views.pop(group, None)

    def close(self, timeout: float = 5.0) -> None:
        self._producer.close(timeout=timeout)

    # ------------------------------------------------------------- internals

    def _view(self, group: str) -> GroupView:
        with self._lock:
            view = self._views.get(group)
            if view is not None:
                self._views.move_to_end(group)
                self._follow_resets(group, view)
                return view
        view = self._load(group)  # not under the lock: it reads the stores
        with self._lock:
            self._views[group] = self._views.get(group, view)
            self._views.move_to_end(group)
            # guard: kafka-commits-caps-cached-groups
            while len(self._views) > self.max_groups:
                self._views.popitem(last=False)
            view = self._views[group]
            self._follow_resets(group, view)
            return view

    def _follow_resets(self, group: str, view: GroupView) -> None:
        """An admin's resets of the group's offsets, as the metadata says now (a kept view
        would not learn of one otherwise): an offset fetch after a reset answers it."""
        metadata = self._producer.metadata
        # a view not yet loaded may hold a snapshot without the changes after it
        config = None if metadata is None or not metadata.loaded else metadata.config
        if config is not None:
            view.set_resets(
                resets_from_config(config, _group_topic(group), int(time.time() * 1000))
            )

    def _load(self, group: str) -> GroupView:
        """Replay ``__group.NAME`` from its beginning to its end, with the members' rules."""
        from ..consumer import Consumer

        topic = _group_topic(group)
        view = GroupView(10.0)
        deadline = time.monotonic() + self.read_timeout
        options = {k: v for k, v in self._node_options.items() if k != "min_acks"}
        with Consumer(
            topic,
            towers=self.towers,
            offset_reset="earliest",
            on_data_loss="skip",  # the group topic's retention deletes old commits by design
            unserved_after=GROUP_TAIL_WAIT,
            **options,
        ) as reader:
            metadata = reader.metadata
            if metadata is not None and metadata.wait_loaded(self.read_timeout):
                view.set_admission(Admission.from_config(metadata.config, topic))
            while True:
                runs = reader.poll_batches(10_000, timeout=0.05)
                for run in runs:
                    for value in run.values:
                        if value is None:
                            continue
                        try:
                            record = decode(value)
                        except WireError:
                            continue
                        view.apply(run.partition, record, time.monotonic())
                if not runs and reader.at_end():
                    break
                if time.monotonic() > deadline:
                    why = (
                        "no store answered" if not reader.store_answered else "not read to its end"
                    )
                    raise DafkaTimeout(f"group topic {topic}: {why} within {self.read_timeout:g} s")
        log.info("kafka.group_offsets_loaded group=%s records=%d", group[:64], view.records)
        return view
