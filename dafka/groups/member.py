"""A consumer group member, the IO side: one thread that reads the group topic,
heartbeats, rebalances and commits for a :class:`~dafka.consumer._facade.Consumer`.

The member's records go out through its own signed :class:`Producer` on the
group topic (its partition is its member ID) and come back through a reader
that follows the topic from its beginning; a commit returns only once
``min_acks`` stores acknowledged it. See ``docs/groups.md``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from ..core.effects import RecordBatch
from ..errors import CommitFailedError, ConfigError, DafkaError, DafkaTimeout, WireError
from ..futures import RecordFuture
from .admission import Admission
from .assign import PartitionKey
from .plan import Contests, plan
from .records import Commit, Heartbeat, Leave, decode, encode, group_topic
from .resets import from_config as resets_from_config
from .resets import reseek
from .view import GroupView

if TYPE_CHECKING:
    from ..consumer import Consumer
    from ..metadata.follower import MetadataView
    from ..producer import Producer

log = logging.getLogger(__name__)

__all__ = ["ASSIGN", "REVOKE", "GroupLink", "GroupMember", "GroupSettings"]

Callback = Callable[[list[PartitionKey]], object]
ASSIGN, REVOKE = "assign", "revoke"
"""The two rebalance events a member hands its consumer (``_group_event``)."""
PARTS_EVERY = 30  # heartbeats carry the known partitions when they change, and this often


class GroupLink(Protocol):
    """What a member asks of the consumer it reads for (built by
    :mod:`dafka.consumer._group`); the member's thread calls these."""

    @property
    def metadata(self) -> MetadataView | None:
        """The cluster metadata the consumer follows (None: none)."""
        ...

    def positions(self) -> dict[PartitionKey, int]:
        """The next offset a poll returns, per partition seen."""
        ...

    def known(self) -> frozenset[PartitionKey]:
        """The partitions of the group's topics the consumer has seen."""
        ...

    def revoke(self, keys: frozenset[PartitionKey]) -> dict[PartitionKey, int]:
        """Stop reading ``keys`` at once (records not polled dropped); their positions."""
        ...

    def assign(self, starts: Mapping[PartitionKey, int | None]) -> None:
        """Start reading ``starts`` (each from its offset; None: by ``offset_reset``)."""
        ...

    def event(self, kind: str, keys: frozenset[PartitionKey]) -> None:
        """Queue a rebalance callback (ASSIGN or REVOKE) for the application's next poll."""
        ...

    def polls(self) -> int:
        """How many of the application's polls have taken records (a count that only grows:
        a commit of a position read before a reset is fenced until the next one)."""
        ...


class GroupSettings:
    """The timing of a group member (seconds)."""

    def __init__(
        self,
        session_timeout: float = 10.0,
        heartbeat_interval: float = 2.0,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        commit_timeout: float = 10.0,
        join_timeout: float = 5.0,
        refresh_interval: float = 3600.0,
    ) -> None:
        if not session_timeout > 0 or not heartbeat_interval > 0:
            raise ConfigError("session_timeout and heartbeat_interval must be positive")
        if heartbeat_interval * 2 > session_timeout:
            raise ConfigError(
                "heartbeat_interval must be at most half of session_timeout "
                f"({heartbeat_interval} s > {session_timeout} s / 2)"
            )
        if not auto_commit_interval > 0 or not commit_timeout > 0:
            raise ConfigError("auto_commit_interval and commit_timeout must be positive")
        self.session_timeout = float(session_timeout)
        self.heartbeat_interval = float(heartbeat_interval)
        self.auto_commit = bool(auto_commit)
        self.auto_commit_interval = float(auto_commit_interval)
        self.commit_timeout = float(commit_timeout)
        self.join_timeout = float(join_timeout)
        self.refresh_interval = float(refresh_interval)
        self.fence = self.session_timeout * 2 / 3


class GroupMember:
    def __init__(
        self,
        consumer: GroupLink,
        group: str,
        topics: Iterable[str],
        settings: GroupSettings,
        *,
        producer_kw: Mapping[str, object],
        reader_kw: Mapping[str, object],
    ) -> None:
        from ..consumer import Consumer
        from ..producer import Producer

        self.group = group
        self.topic = group_topic(group)
        self.settings = settings
        self._link = consumer
        self._topics = tuple(topics)
        self._lock = threading.RLock()
        self._held: dict[PartitionKey, int] = {}  # partition -> epoch of our ownership
        self._last_committed: dict[PartitionKey, int] = {}
        self._fence: dict[PartitionKey, int] = {}
        """Partitions an admin's reset moved -> the application's poll count then: a
        position of theirs is committed only once the application has polled since."""
        self.view = GroupView(settings.session_timeout)
        self.bad_records = 0
        self._stop = threading.Event()
        self._client = f"{socket.gethostname()}/{os.getpid()}"
        self.producer: Producer = Producer(self.topic, **producer_kw)  # type: ignore[arg-type]
        self.member_id = self.producer.partition
        try:
            self.reader: Consumer = Consumer(
                self.topic,
                offset_reset="earliest",
                **reader_kw,  # type: ignore[arg-type]
            )
        except BaseException:
            self.producer.close(timeout=1.0)
            raise
        self.caught_up = False
        self._admitted = True  # as far as it knows (warned once when not)
        self._contests: Contests = {}  # claims of others on what the rule gives this member
        self._metadata = consumer.metadata
        if self._metadata is not None:  # who the group admits, and resets, follow the metadata
            self._metadata.subscribe(self._admission_changed)
        self._refreshed = time.monotonic()
        self._beats = 0
        self._settled_at: float | None = None  # since when it holds what the rule gives it
        self._told: frozenset[PartitionKey] | None = None  # partitions said in a heartbeat
        self._thread = threading.Thread(
            target=self._run, name=f"dafka-group-{group[:16]}", daemon=True
        )
        self._thread.start()
        log.info("group.join group=%s member=%s", group, self.member_id)

    # ------------------------------------------------------------------ API

    def settled(self, now: float, quiet: float) -> bool:
        """True once this member has held exactly what the rule gives it for ``quiet`` s."""
        at = self._settled_at
        return at is not None and now - at >= quiet

    def assignment(self) -> list[PartitionKey]:
        with self._lock:
            return sorted(self._held)

    def committed(self) -> dict[PartitionKey, int]:
        with self._lock:
            return {k: c.offset for k, c in self.view.committed().items()}

    def commit(
        self, offsets: Mapping[PartitionKey, int] | None = None, asynchronous: bool = False
    ) -> dict[PartitionKey, int]:
        """Commit ``offsets`` (default: the next offset after what was polled, per held
        partition); returns once ``min_acks`` stores hold the commit, unless
        ``asynchronous``."""
        with self._lock:
            if offsets is None:
                polled = self._link.positions()
                offsets = {k: polled[k] for k in self._held if k in polled}
                offsets = self._unfenced(offsets)
            else:
                stale = sorted(self._fenced(offsets))
                # guard: member-fences-commits-after-reset
                if stale:
                    raise CommitFailedError(
                        f"{len(stale)} partition(s) were reset by an admin since these "
                        f"positions were read (first {stale[0][0]}/{stale[0][1]}): nothing "
                        "committed; poll to read from the reset offsets, then commit"
                    )
            offsets, fut = self._send_commit(dict(offsets))
        if fut is not None and not asynchronous:
            self._wait(fut)
        return offsets

    def close(self, timeout: float = 5.0) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=timeout + self.settings.commit_timeout)
        try:
            with self._lock:
                if self.settings.auto_commit and self._held:
                    try:
                        self.commit()
                    except DafkaError as exc:
                        log.warning("group.final_commit_failed group=%s error=%s", self.group, exc)
                self._send(Leave()).result(timeout=timeout)
        except Exception as exc:  # a leave not stored only delays the others
            log.info("group.leave_unconfirmed group=%s error=%s", self.group, exc)
        finally:
            self.reader.close()
            self.producer.close(timeout=timeout)
        log.info("group.leave group=%s member=%s", self.group, self.member_id)

    # ------------------------------------------------------------- internals

    def _admission_changed(self, config: Mapping[str, object]) -> None:
        """The metadata's thread: who the group admits and the admin's resets, from the new
        configuration. Not under the member's lock (it may wait for a commit): the view swaps
        one reference each; the member's turn acts on a reset (:meth:`_reseek`)."""
        self.view.set_admission(Admission.from_config(config, self.topic))
        self.view.set_resets(resets_from_config(config, self.topic, int(time.time() * 1000)))

    def _check_admitted(self) -> None:
        """Say once (per change) when the group does not admit this member: it then takes
        nothing, since its own heartbeats do not count (``docs/groups.md``)."""
        admitted = self.view.admission.admits(self.member_id, self._topics)
        if admitted != self._admitted:
            self._admitted = admitted
            if not admitted:
                log.warning(
                    "group.not_admitted group=%s member=%s: the group's ACLs do not name "
                    "this member (see dafka topics describe %s), so it reads nothing",
                    self.group,
                    self.member_id,
                    self.topic,
                )

    def _admission_known(self, waited: float) -> bool:
        """Whether to read the group topic yet: once the metadata (if followed) loaded,
        so that no record is taken from a writer the group does not admit, or after
        ``join_timeout`` without it (then: who the last configuration admits, or all)."""
        view = self._metadata
        return view is None or view.loaded or waited > self.settings.join_timeout

    def _send(self, record: Heartbeat | Commit | Leave) -> RecordFuture:
        return self.producer.send(encode(record))

    def _commit(self, offsets: dict[PartitionKey, int], asynchronous: bool) -> dict:
        offsets, fut = self._send_commit(offsets)
        if fut is not None and not asynchronous:
            self._wait(fut)
        return offsets

    def _wait(self, fut: RecordFuture) -> None:
        try:
            fut.result(timeout=self.settings.commit_timeout)
        except TimeoutError as exc:
            raise DafkaTimeout(
                f"commit to group {self.group!r} not acknowledged by the stores within "
                f"{self.settings.commit_timeout} s (is a store running?)"
            ) from exc

    def _send_commit(
        self, offsets: dict[PartitionKey, int]
    ) -> tuple[dict[PartitionKey, int], RecordFuture | None]:
        """Publish a commit (holding the lock); its future, None if nothing to commit."""
        if not offsets:
            return {}, None
        for key, offset in offsets.items():
            if type(offset) is not int or offset < 0:
                raise ConfigError(f"commit offset for {key} must be an int >= 0, not {offset!r}")
        foreign = sorted(k for k in offsets if k not in self._held)
        if foreign:  # the group takes a member's commits only for what it holds
            raise ConfigError(
                f"cannot commit partitions this member does not hold: {foreign[:3]}"
                + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            )
        entries = tuple((t, p, o, self._held[(t, p)]) for (t, p), o in sorted(offsets.items()))
        record = Commit(entries)
        fut = self._send(record)
        self.view.apply(self.member_id, record, time.monotonic(), own=True)
        self._last_committed.update(offsets)
        return offsets, fut

    def _heartbeat(self) -> None:
        known = self._link.known()
        self._beats += 1
        if known == self._told and self._beats % PARTS_EVERY:
            parts = None  # unchanged: the readers keep what this member said last
        else:
            parts = self._told = known
        self._send(Heartbeat(self._topics, frozenset(self._held), parts, self._client))

    def _read(self) -> None:
        runs = self.reader.poll_batches(10_000, timeout=0.05)  # not holding the lock
        now = time.monotonic()
        with self._lock:
            self._apply(runs, now)

    def _apply(self, runs: list[RecordBatch], now: float) -> None:
        for run in runs:
            for value in run.values:
                if value is None:  # a tombstone: no group record
                    self.bad_records += 1
                    continue
                try:
                    record = decode(value)
                except WireError as exc:
                    self.bad_records += 1
                    log.debug("group.bad_record member=%s error=%s", run.partition, exc)
                    continue
                self.view.apply(run.partition, record, now)

    def _run(self) -> None:
        s = self.settings
        start = time.monotonic()
        while not self._admission_known(time.monotonic() - start):
            if self._stop.wait(0.05):
                return
        start = time.monotonic()
        next_hb = start
        next_commit = start + s.auto_commit_interval
        while not self._stop.is_set():
            try:
                self._read()
                now = time.monotonic()
                with self._lock:
                    if not self.caught_up and (
                        self.reader.at_end() or now - start > s.join_timeout
                    ):
                        self.caught_up = True
                        log.info(
                            "group.caught_up group=%s records=%d", self.group, self.view.records
                        )
                    self._check_admitted()
                    if now >= next_hb:
                        self._heartbeat()
                        next_hb = now + s.heartbeat_interval
                    if self.caught_up and self._rebalance(time.monotonic()):
                        self._heartbeat()
                        next_hb = time.monotonic() + s.heartbeat_interval
                    if s.auto_commit and now >= next_commit:
                        next_commit = now + s.auto_commit_interval
                        self._auto_commit(now)
            except Exception:  # the member must go on; a broken turn is logged
                log.exception("group.turn_failed group=%s", self.group)
                self._stop.wait(0.5)

    def _auto_commit(self, now: float) -> None:
        polled = self._link.positions()
        refresh = now - self._refreshed >= self.settings.refresh_interval
        if refresh:  # commit even what did not move, so retention keeps a live group's offsets
            self._refreshed = now
        offsets = {
            k: polled[k]
            for k in self._held
            if k in polled and (refresh or self._last_committed.get(k) != polled[k])
        }
        offsets = self._unfenced(offsets)
        if offsets:
            self._commit(offsets, asynchronous=True)

    def _fenced(self, keys: Iterable[PartitionKey]) -> list[PartitionKey]:
        """Of ``keys``, those a reset moved that the application has not polled since."""
        fence = self._fence
        if not fence:
            return []
        polls = self._link.polls()
        for k in [k for k, at in fence.items() if polls > at]:
            del fence[k]  # polled since: its positions are the new assignment's
        return [k for k in keys if k in fence]

    def _unfenced(self, offsets: dict[PartitionKey, int]) -> dict[PartitionKey, int]:
        """``offsets`` without fenced partitions (said in a line when any): what a commit
        of positions (auto, revoke, close) may write."""
        stale = self._fenced(offsets)
        if stale:
            log.warning(
                "group.commit_fenced group=%s partitions=%d: reset by an admin since read; "
                "not committed (the reset offset stands)",
                self.group,
                len(stale),
            )
            offsets = {k: o for k, o in offsets.items() if k not in stale}
        return offsets

    def _reseek(self) -> bool:
        """Seek the partitions held where an admin's reset now beats this member's
        ownership (:mod:`.resets`): to the reset's offset, owned at its epoch + 1, as a
        revoke and an assign the application sees; under the lock, so no commit of the old
        position goes out after the seek. True if any."""
        moved = reseek(self._held, self.view.best)
        if not moved:
            return False
        keys = frozenset(moved)
        self._link.revoke(keys)  # the old positions: the reset replaces them, not committed
        self._link.event(REVOKE, keys)
        for k, c in moved.items():
            self._held[k] = c.epoch + 1
            self._last_committed.pop(k, None)
        self._link.event(ASSIGN, keys)
        self._link.assign({k: c.offset for k, c in moved.items()})
        # after the revoke: a poll counted from here on returns the new assignment's records
        polls = self._link.polls()
        for k in keys:
            self._fence[k] = polls
        log.info("group.reset_applied group=%s partitions=%d", self.group, len(keys))
        return True

    def _rebalance(self, now: float) -> bool:
        reseeked = self._reseek()
        p = plan(
            self.member_id,
            self._topics,
            frozenset(self._held),
            self.view.alive(now),
            self._link.known(),
            now,
            self.settings.fence,
            self._contests,
            self.settings.session_timeout,
        )
        self._contests = p.contests
        if not p.revoke and not p.take:
            if p.target == frozenset(self._held):
                if self._settled_at is None:
                    self._settled_at = now
            else:
                self._settled_at = None  # waiting for a previous owner to let go
            return reseeked
        self._settled_at = None
        if p.revoke:
            polled = self._link.revoke(p.revoke)
            offsets = self._unfenced({k: polled[k] for k in p.revoke if k in polled})
            try:
                self._commit(offsets, asynchronous=False)
            except DafkaError as exc:
                log.warning("group.revoke_commit_failed group=%s error=%s", self.group, exc)
            for k in p.revoke:
                self._held.pop(k, None)
            log.info("group.revoke group=%s partitions=%d", self.group, len(p.revoke))
            # on_revoke runs in the application's next poll, which returns nothing of them
            self._link.event(REVOKE, p.revoke)
        if p.take:
            committed = self.view.committed()
            starts: dict[PartitionKey, int | None] = {}
            for k in p.take:
                c = committed.get(k)
                starts[k] = c.offset if c is not None else None
                self._held[k] = self.view.epoch(k) + 1
            # queued before they are read: a poll runs on_assign before any of their records
            self._link.event(ASSIGN, p.take)
            self._link.assign(starts)
            log.info("group.assign group=%s partitions=%d", self.group, len(p.take))
        return True
