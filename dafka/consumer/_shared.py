"""What the consumer's two halves share: :class:`ConsumerShared`.

The caller-facing :class:`~dafka.consumer._facade.Consumer` (``poll``, ``seek``, the group
and pause controls) and its IO-thread half (:class:`~dafka.consumer._io.
_ConsumerHandler`, which runs the core and delivers what it verified) meet here and
nowhere else: the runs of records delivered and not polled yet, the errors a poll has
still to raise, and which partitions' runs are kept (a group member's, an
``assign``-ed set, the paused ones). Everything that changes is guarded by ``cond``;
the IO thread writes runs and errors, the caller's thread takes them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping

from ..core.effects import DataLoss, RecordBatch
from ..errors import DataLossError, TopicDeletedError

PartitionKey = tuple[str, str]

__all__ = ["ConsumerShared"]


class ConsumerShared:
    """The state the consumer's facade and its IO thread share, under :attr:`cond`."""

    def __init__(self, initial_topics: Iterable[str] = (), max_backlog: int = 100_000) -> None:
        self.cond = threading.Condition(threading.RLock())
        """Guards everything below (reentrant: a holder may call the methods here)."""
        self.initial_topics: tuple[str, ...] = tuple(initial_topics)
        """The topics subscribed when the IO thread starts (fixed)."""
        self.max_backlog = max_backlog
        """Records delivered and not polled past which the IO thread stops reading (fixed)."""
        self.ready: deque[RecordBatch] = deque()
        """Verified runs of records, oldest first; ConsumedRecords are made when polled."""
        self.count = 0
        """Records in :attr:`ready` not handed out yet."""
        self.head_used = 0
        self.takes = 0
        """How many times the application took records (a poll that returned, under
        ``cond``): a group member fences commits until the application polled after an
        admin's reset moved its position (:meth:`GroupMember._reseek`)."""
        """Records of ``ready[0]`` already handed out."""
        self.errors: deque[DataLossError | TopicDeletedError] = deque()
        """Raised by the next poll, once each."""
        self.held: set[PartitionKey] | None = None
        """A group member's partitions (None: no group): runs of others are dropped."""
        self.manual: set[PartitionKey] | None = None
        """The partitions ``assign`` gave (None: never called)."""
        self.paused: dict[PartitionKey, int | None] | None = None
        """Paused partitions -> where to resume (None: not known yet, set by the first run
        dropped). None until the first pause."""

    # ------------------------------------------------------------ IO thread

    def accepting(self) -> bool:
        """Whether the IO thread may read more (the backlog is under ``max_backlog``)."""
        return self.count < self.max_backlog

    def unpolled(self) -> bool:
        """Whether a record delivered waits to be polled, or an error to be raised."""
        with self.cond:
            return bool(self.count or self.errors)

    def deliver(self, runs: list[RecordBatch]) -> None:
        """Runs the core delivered (the IO thread): kept if their partition is read."""
        with self.cond:
            runs = self.keep(runs)
            self.ready.extend(runs)
            self.count += sum(len(run.values) for run in runs)
            self.cond.notify_all()

    def keep(self, runs: list[RecordBatch]) -> list[RecordBatch]:
        """Holding ``cond``: drop runs of partitions revoked, left out of ``assign``, or
        paused (noting where a paused one must resume)."""
        held = self.held
        if held is not None:
            runs = [r for r in runs if (r.topic, r.partition) in held]
        manual, paused = self.manual, self.paused
        if manual is None and not paused:
            return runs
        kept: list[RecordBatch] = []
        for run in runs:
            key = (run.topic, run.partition)
            if manual is not None and key not in manual:
                continue
            if paused and key in paused:
                if paused[key] is None:
                    paused[key] = run.offset  # the first record it missed
                continue
            kept.append(run)
        return kept

    def data_loss(self, loss: DataLoss) -> None:
        """The core skipped records (the IO thread): the next poll raises it, once."""
        why = {
            "oversized": "hold a record over max_message_size, which this node refuses",
            "unserved": "were never served by any producer or store (the rest of the "
            "partition was; e.g. a record over a store's max_message_size)",
        }.get(loss.reason, "were deleted by retention on a store before they were delivered")
        err = DataLossError(
            f"topic {loss.topic} partition {loss.partition}: offsets {loss.start}.."
            f"{loss.tail - 1} {why}; delivery goes on from offset {loss.tail}"
        )
        with self.cond:
            self.errors.append(err)
            self.cond.notify_all()

    def topic_deleted(self, topic: str, revision: int) -> int:
        """A subscribed topic was deleted: drop what of it was not polled yet and make the
        next poll raise :class:`TopicDeletedError` once; returns how many were dropped."""
        with self.cond:
            dropped = self.drop(topic, None)
            self.errors.append(
                TopicDeletedError(
                    f"topic {topic!r} was deleted (metadata revision {revision}): the stores "
                    f"dropped its records; {dropped} records not yet polled were dropped too"
                )
            )
            self.cond.notify_all()
        return dropped

    def wake(self) -> None:
        """Wake every thread waiting in a poll (to see the consumer closed or stopped)."""
        with self.cond:
            self.cond.notify_all()

    # ------------------------------------------------------- caller's thread

    def take(self, max_records: int) -> list[RecordBatch]:
        """Holding ``cond``: up to ``max_records`` ready records as runs."""
        self.takes += 1
        ready = self.ready
        out: list[RecordBatch] = []
        want = max_records
        while ready and want > 0:
            run = ready[0]
            used = self.head_used
            left = len(run.values) - used
            if used == 0 and left <= want:
                out.append(ready.popleft())
                taken = left
            else:
                taken = min(left, want)
                out.append(run.sliced(used, used + taken))
                if taken == left:
                    ready.popleft()
                    self.head_used = 0
                else:
                    self.head_used = used + taken
            want -= taken
        self.count -= max_records - want
        return out

    def drop(self, topic: str, partition: str | None) -> int:
        """Drop the records of a partition (every one of ``topic`` when ``None``) that
        were delivered and not polled (a seek moved it, or the topic was deleted);
        returns how many."""
        with self.cond:
            kept: deque[RecordBatch] = deque()
            dropped = 0
            for i, run in enumerate(self.ready):
                if run.topic != topic or (partition is not None and run.partition != partition):
                    kept.append(run)
                    continue
                used = self.head_used if i == 0 else 0
                dropped += len(run.values) - used
                if i == 0:
                    self.head_used = 0
            self.ready = kept
            self.count -= dropped
        return dropped

    def polled_positions(self, positions: dict[PartitionKey, int]) -> dict[PartitionKey, int]:
        """Holding ``cond``: ``positions`` (the core's next offsets) moved back to the first
        record not polled yet of every partition with runs waiting (Kafka's position)."""
        seen: set[PartitionKey] = set()
        for i, run in enumerate(self.ready):
            key = (run.topic, run.partition)
            if key not in seen:
                seen.add(key)
                positions[key] = run.offset + (self.head_used if i == 0 else 0)
        return positions

    def lag(
        self, positions: dict[PartitionKey, int], ends: Mapping[PartitionKey, tuple[int, int]]
    ) -> dict[PartitionKey, int]:
        """Each partition read here: offsets known to exist not yet polled (the IO thread,
        for ``dafka_consumer_lag_records``). ``positions``: the core's next offsets;
        ``ends``: its watermarks, ``(low, high)`` with ``high`` one past the highest
        offset stores and producers said exists. The lag is ``high`` minus the offset a
        poll returns next (a paused partition's: where it resumes), at least 0; a
        partition left out (a group's other members', one ``assign`` left out, one known
        only from a store and never started) has none."""
        with self.cond:
            at = self.polled_positions(positions)
            held, manual, paused = self.held, self.manual, self.paused
            out: dict[PartitionKey, int] = {}
            for key, (_, high) in ends.items():
                if (held is not None and key not in held) or (
                    manual is not None and key not in manual
                ):
                    continue
                position = paused.get(key) if paused else None
                if position is None:
                    position = at.get(key)
                if position is not None:
                    out[key] = max(0, high - position)
            return out

    def reseek_paused(self, topic: str, partition: str | None) -> None:
        """A seek moved ``partition`` (every one of ``topic`` when None): a paused one
        resumes where the seek put it, its first record delivered after."""
        paused = self.paused
        if not paused:
            return
        with self.cond:
            for key in paused:
                if key[0] == topic and (partition is None or key[1] == partition):
                    paused[key] = None
