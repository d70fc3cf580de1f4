"""The producer's IO-thread half (:class:`_ProducerHandler`): records in, futures out.

``Producer.send`` and ``send_many`` append to the handler's queue and wake the node's IO
thread; each turn, :meth:`_ProducerHandler.on_commands` takes everything queued (natural
batching), reserves the offsets in the state directory's offset journal before anything
is published (a restart never reuses an offset), seals the records per topic
(:class:`~dafka.producer._core.ProducerCore`) and, in durable mode, logs them in the
producer's WAL before the ``send`` calls return. A record that does not seal fails
alone. On ACKs the handler writes how far each topic is durable to the acked journal,
then resolves the futures and tells the producer's budget what was freed; a deleted
topic fails what it had in flight. These orders are :class:`~dafka.core.ready.Ready`
steps run by :func:`~dafka.io.ready_shell.run_ready` (:mod:`.producer_ready`); what the
handler shares with the facade is a :class:`~dafka.producer._state.ProducerState`.
Everything here runs on the IO thread.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from sys import getrefcount
from typing import Any, NamedTuple, cast

from ..core import messages as m
from ..core.effects import Acked, Outgoing, Publish, PublishRecords
from ..core.messages import Message, Subscription
from ..core.ready import Ready
from ..errors import (
    ClosedError,
    ConfigError,
    ProducerError,
    StorageError,
    TopicDeletedError,
)
from ..futures import UNHELD, BatchFuture, LazyFuture
from ..ids import is_node_id
from ..io.metrics import AckTimer
from ..io.node import NodeHandler, NodeLoop
from ..io.node_plugins import MessageSources
from ..io.ready_shell import run_ready
from ..wire.rfc46 import Command
from ..wire.signed_rich import Codec, codec_named
from ._core import ProducerCore
from ._disk import StateDirTrouble
from ._inflight import Continued, ManyRun, RecordRun, RichValues, Run, TopicTurn, Values
from ._linger import Linger
from ._ready import AckedUpTo, Log, ReadyQueue, Release, Reserve, StatePersister
from ._state import ProducerState
from ._wal import LoggedBatch
from ._why import AckEvidence, TopicAcks

log = logging.getLogger(__name__)


# queued by send()/send_many(): (topic, value or values, key or keys, future). One
# tuple shape for both, told apart on the hot path by ``type(value) is bytes`` (a send's
# value; a send_many's values are a list, a :class:`Values` as send_many queues them),
# which mypy does not narrow: hence the explained ignores where they are taken apart.
_Queued = tuple[str, object, object, LazyFuture[Any] | Continued]

MAX_STORES_NAMED = 64
"""Connected stores a producer remembers by name (peers choose their subscriptions)."""
TURN_TOPICS = 64
"""Topics one turn publishes at most, a batch each at least: a message each on the data
XPUB, whose mark counts messages (257 by default, ``dafka.io.bounds``) and which hears of
what a subscriber read in steps of half of it, between turns. Records sent to 200 topics at
once went out as 200 one-record batches in one turn, and those past the mark were dropped on
their way to the store, which fetched them a second later, at the next HEAD."""
TURN_BATCHES = 2
"""Full batches' worth (``max_batch_records`` records or ``max_batch_bytes`` bytes) one
turn of the IO thread takes from the queue at most; what is left is taken by the next
turn, straight after. Sealing everything queued before publishing any of it kept the
stores idle while a backlog was sealed (108 batches, 270 ms, before the first went
out) and the producer idle while they caught up: bounded turns let the first batches
travel, be stored and be acknowledged while the next are sealed. A ``send_many`` larger
than what is left of a turn is taken in parts (:meth:`_ProducerHandler._take_many`),
but a durable producer's is never split. Measured with ``python -m
benchmarks.throughput --phases acked``: see the commit that added it."""


class Logged(NamedTuple):
    """Delivered once a turn is logged (durable mode): the next ``items`` queued items are
    in the producer's log, or are not (``error``); their ``send`` calls return."""

    items: int
    error: StorageError | None


class _ProducerHandler(NodeHandler):
    """Runs on the IO thread: seals and publishes queued records, resolves futures on ACK.

    What must be durable before something leaves (offsets before publishing, the log
    before ``send`` returns, the acked bound before futures resolve) is queued as
    :class:`~dafka.core.ready.Ready` steps (:mod:`.producer_ready`), run by
    :func:`~dafka.io.ready_shell.run_ready`."""

    def __init__(self, state: ProducerState, core: ProducerCore) -> None:
        self.state = state
        self.core = core
        self.readies = ReadyQueue()
        """The steps of this turn's durability orders, in order (:meth:`_run`)."""
        self.named: str | None = None
        """The topic the producer was made for (``Producer(topic)``), if any."""
        self.persister = StatePersister(state)
        self.queue: deque[_Queued] = deque()
        self.inflight: dict[str, deque[Run]] = {}
        """Per topic, the runs of sends published and not yet acknowledged, in offset order."""
        self.ack_timer: AckTimer | None = None
        """Times publication to ACK for the metrics (``metrics_port``), or None."""
        config = state.config
        # signed: the data XPUB keeps ``queue_bytes`` of this producer's own batches per
        # connection, so a subscriber that never reads costs it a bounded queue
        # (dafka.io.bounds); rfc46, a record per frame, keeps its message count
        self.xpub_frame_bytes = config.max_batch_bytes if config.profile == "signed" else None
        # and at least twice a full budget of full batches: each batch a store is sent
        # stays unacknowledged until it answers, so a slow store may have the whole budget
        # queued for it, and libzmq hears of what it read in steps of half the mark
        # (dafka.store._credits); with 256 MiB of budget over a 256-batch mark, 1.8M
        # of 10M records were dropped on the way to the store and fetched from us again
        self.xpub_min_hwm = 2 * -(-config.max_unacked_bytes // config.max_batch_bytes) + 1
        self.linger = Linger(config.linger_ms / 1000, config.max_batch_records)
        """How long queued records may wait for others to share their batch."""
        self.turn_records = TURN_BATCHES * config.max_batch_records
        self.turn_bytes = TURN_BATCHES * config.max_batch_bytes
        """What one turn takes from the queue at most (see :data:`TURN_BATCHES`)."""
        self._clock: Callable[[], float] = time.monotonic
        """The IO loop's clock (set when it starts)."""
        self.cut_short = False
        """The last turn left queued items behind for the bound: the next turn takes them
        at once (no linger), and the loop does not wait in between (:meth:`has_pending`)."""
        self.records_sent = 0
        self.bytes_sent = 0
        """Records published (not counting resends) and their value bytes, for the metrics."""
        self.trouble = StateDirTrouble()
        """Writes to the state directory that fail (a full disk): :mod:`.producer_disk`."""
        self._unjournaled: dict[str, Acked] = {}
        """Per topic, the latest ACK whose offset could not be recorded yet (tried again
        on ticks): its futures wait until it is."""
        self.stopped = False
        """Set by :meth:`on_stop` before it drains the queue; ``Producer._enqueue`` reads
        it after appending: whoever of the two comes last fails what is queued."""
        self.codec: Codec | None = (
            None if config.compression is None else codec_named(config.compression)
        )
        """The producer's ``compression`` (None: each topic's, from the metadata)."""
        self.topic_codecs: dict[str, Codec] = {}
        self.compacted: frozenset[str] = frozenset()
        """Per topic, from the metadata: its ``compression``, and whether it is compacted
        (:meth:`sealing`)."""
        self.stores: set[str] = set()
        """Stores connected to this producer (subscribed to its data socket), at most
        :data:`MAX_STORES_NAMED`: to say why nothing is acknowledged."""

    def apply_policy(self, stores: tuple[str, ...] | None, min_acks: dict[str, int]) -> None:
        """On the IO thread (queued with NodeLoop.call): trusted stores and per-topic min_acks."""
        try:
            effects = self.core.set_policy(stores, min_acks)
        except ConfigError as exc:
            log.warning("producer.metadata.rejected error=%s", exc)
            return
        self._durable([e for e in effects if type(e) is Acked], self._clock())
        self._run([])

    def sealing(self, topic: str) -> tuple[Codec, bool]:
        """How ``topic``'s batches are sealed: the codec (the producer's own, else the
        topic's ``compression`` from the metadata, else none) and whether the topic is
        compacted (its batches are format 5 whatever they hold)."""
        codec = self.codec
        if codec is None:
            codec = self.topic_codecs.get(topic, Codec.NONE)
        return codec, topic in self.compacted

    def set_topic_sealing(self, codecs: dict[str, Codec], compacted: frozenset[str]) -> None:
        """On the IO thread (queued with NodeLoop.call): the topics' ``compression`` and
        which are compacted, from the metadata."""
        self.topic_codecs = codecs
        self.compacted = compacted

    def topic_deleted(self, topic: str, revision: int) -> None:
        """On the IO thread: the topic was deleted; what was not acknowledged never will be."""
        dropped = self.core.forget_unacked(topic)
        if self.ack_timer is not None:
            self.ack_timer.forget(topic)
        pending = self.inflight.pop(topic, None) or deque()
        error = TopicDeletedError(
            f"topic {topic!r} was deleted (metadata revision {revision}) before the record "
            "was acknowledged"
        )
        freed = freed_bytes = 0
        for run in pending:
            count, size = run.fail(error)
            freed += count
            freed_bytes += size
        if freed:  # failed, not acknowledged: flush and close count them so
            self.state.budget.rejected(freed, freed_bytes, error)
        if self.state.wal is not None:  # never re-published after a restart either

            def then(rd: Ready, failed: BaseException | None) -> None:
                if failed is not None:
                    log.warning("producer.log_release_failed error=%s", failed)

            release = Release({topic: self.core.next_offset(topic)})
            self.readies.push(Ready(persist=(release,)), then)
            self._run([])
        log.warning(
            "producer.topic_deleted topic=%s revision=%d unacked=%d", topic, revision, dropped
        )

    def subscriptions(self) -> list[bytes]:
        return self.core.subscriptions()

    def interest(self) -> Collection[str]:
        """The topics written (or restored), and the one the producer was made for: its
        consumers hear of it before its first record (``NodeHandler.interest``)."""
        topics = self.core.topic_names
        named = self.named
        if named is not None and named not in topics:
            return (*topics, named)
        return topics

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        self._clock = loop.clock
        return []

    def has_pending(self) -> bool:
        """True when the last turn was cut short, or FETCHes that waited for their
        requester's bytes can be answered (by the core's tick): the loop turns again
        without waiting."""
        if self.cut_short:
            return True
        due = self.core.serve_at
        return due is not None and self._clock() >= due

    def command_deadline(self) -> float | None:
        """When the loop must turn again though nothing woke it (a linger ending, or
        FETCHes waiting for their requester's bytes due); None: only on a wake-up."""
        due = None if self.core.holds_publishing else self.linger.deadline()
        paced = self.core.serve_at
        if paced is not None and (due is None or paced < due):
            return paced
        return due

    def accepting(self) -> bool:
        return True

    def on_commands(self, now: float) -> list[Outgoing]:
        """Natural batching: what was queued since the last wake-up, per topic, up to a
        bounded turn (:data:`TURN_BATCHES`)."""
        queue = self.queue
        more, self.cut_short = self.cut_short, False
        if not queue:
            self.linger.idle(now)
            return []
        if self.core.holds_publishing:
            self.linger.idle(math.inf)  # no deadline, no open window: sends wake the loop
            return []
        if not (more or self.linger.ready(len(queue), now, self._full_batch_queued())):
            return []
        by_topic: dict[str, TopicTurn] = {}
        popleft = queue.popleft
        taken = 0
        # at most a bounded turn (TURN_BATCHES); a record counts as one, its bytes only
        # in send_many's runs, whose sizes are summed anyway
        records_left, bytes_left = self.turn_records, self.turn_bytes
        # a run of send() calls on one topic appends to three lists, found again only
        # when the topic changes or a send_many comes
        run_topic: str | None = None
        full = False  # of topics
        for _ in range(len(queue)):
            if records_left <= 0 or bytes_left <= 0:
                break
            topic, value, key, fut = popleft()
            taken += 1
            if topic != run_topic or type(value) is not bytes:
                if type(fut) is Continued and fut.future.done():
                    self._drop_rest(value)  # an earlier part failed: send none of the rest
                    run_topic = None
                    continue
                if topic not in by_topic:
                    if len(by_topic) >= TURN_TOPICS:  # its batch goes next turn
                        queue.appendleft((topic, value, key, fut))
                        taken -= 1
                        full = True
                        break
                    by_topic[topic] = TopicTurn()
                turn = by_topic[topic]
                if type(value) is not bytes:  # a send_many's values
                    many = self._take_many(turn, (topic, value, key, fut), records_left, bytes_left)
                    if not many.last:
                        taken -= 1  # its rest is queued again, in front
                    records_left -= many.count
                    bytes_left -= many.size
                    run_topic = None
                    continue
                add_value, add_key = turn.values.append, turn.keys.append
                add_future = turn.records().futures.append
                run_topic = topic
            records_left -= 1
            add_value(value)  # bytes: see _Queued
            add_key(key)  # type: ignore[arg-type]  # bytes | None: see _Queued
            # a future its caller dropped, with no callback or waiter, is not kept: nobody
            # could ever see it resolve, and a million kept until their ACK cost the
            # garbage collector more than everything else send() does
            if getrefcount(fut) == UNHELD and not fut._used:  # type: ignore[union-attr]  # see _Queued
                add_future(None)
            else:
                add_future(fut)  # type: ignore[arg-type]  # a RecordFuture: see _Queued
            if key is not None:
                turn.keyed = True
        if queue and (full or records_left <= 0 or bytes_left <= 0):
            self.cut_short = True  # the rest of a full turn goes next, without waiting
        out: list[Outgoing] = []
        if self.state.journal is not None:
            # durable before anything is published: a restart never reuses an offset
            core = self.core
            reserve = Reserve(
                {t: core.next_offset(t) + len(turn.values) for t, turn in by_topic.items()}
            )

            def then(rd: Ready, failed: BaseException | None) -> None:
                if failed is not None:
                    self._refuse_turn(by_topic, taken, cast(StorageError, failed), now)
                    return
                self.trouble.succeeded()
                self._seal(by_topic, taken, now)

            self.readies.push(Ready(persist=(reserve,), must_sync=True), then)
        else:
            self._seal(by_topic, taken, now)
        self._run(out)
        return out

    def _run(self, out: list[Outgoing]) -> None:
        """Run the queued steps: persist, then publish (into ``out``), then deliver."""
        run_ready(self.readies, self.persister, out.extend, self._deliver)

    def _deliver(self, items: Sequence[object]) -> None:
        """What a step delivers: ACKs that resolve futures, turns logged (durable mode)."""
        for item in items:
            if type(item) is Acked:
                self._resolve(item)
            else:
                count, error = cast(Logged, item)
                self.state.log_wait.logged(count, error)

    def _seal(self, by_topic: dict[str, TopicTurn], taken: int, now: float) -> None:
        """Seal the turn's records (their offsets reserved), and queue their publication:
        in durable mode, once they are logged."""
        stamp = time.time_ns() // 1_000_000
        out: list[Outgoing] = []
        for topic, turn in by_topic.items():
            values, runs = turn.values, turn.runs
            keys = turn.keys if turn.keyed else None
            codec, compacted = self.sealing(topic)
            try:
                first, pubs = self.core.publish(
                    topic, values, now, keys, stamp, turn.lengths, turn.extras, codec, compacted
                )
            except Exception:  # send() checks sizes, so this is a defence: isolate the bad
                first, pubs, runs, values = self._publish_apart(topic, turn, now, stamp)
                if not runs:
                    continue
            pending = self.inflight.get(topic)
            if pending is None:
                pending = self.inflight[topic] = deque()
            offset = first
            sent_bytes = 0
            for run in runs:
                sent_bytes += run.place(offset, values)
                offset += run.count
            pending.extend(runs)
            self.records_sent += offset - first
            self.bytes_sent += sent_bytes
            out.extend(pubs)
            if self.ack_timer is not None:
                self.ack_timer.published(topic, offset - 1)
        if self.state.wal is not None:
            self._log(out, taken, now)
        elif out:
            self.readies.push(Ready(publish=tuple(out)))

    def _full_batch_queued(self) -> bool:
        """Whether the oldest or the newest queued item is a ``send_many`` of a full
        batch's worth of records (one item, which the linger's count of items would not
        see as full). Any other is found by the turn that takes it."""
        full = self.linger.max_items
        for item in (self.queue[0], self.queue[-1]):
            values = item[1]
            if type(values) is not bytes and len(values) >= full:  # type: ignore[arg-type]  # a list: see _Queued
                return True
        return False

    def _take_many(
        self,
        turn: TopicTurn,
        item: _Queued,
        records_left: int,
        bytes_left: int,
    ) -> ManyRun:
        """Add a ``send_many``'s records to ``turn``, or as many of them as the turn has room
        for (at least one): the rest goes back to the front of the queue for the next turn,
        so its offsets follow on (:class:`ManyRun`). Room in bytes is reckoned from the
        records' mean size. A durable producer's are never split: its ``send_many`` returns
        once all of them are logged (``LogWait`` counts queued items)."""
        topic = item[0]
        values = cast(list[bytes], item[1])  # a send_many's item: see _Queued
        keys = cast("list[bytes | None] | None", item[2])
        fut = cast("BatchFuture | Continued", item[3])
        future, origin = (fut.future, fut.origin) if isinstance(fut, Continued) else (fut, None)
        n = len(values)
        if type(values) is Values or type(values) is RichValues:  # measured already (send_many)
            lengths, size = values.lengths, values.size
        else:
            lengths = list(map(len, values))
            size = sum(lengths)
        if self.state.wal is None and n > 1:
            room = min(records_left, n * bytes_left // size if size > bytes_left else n)
            if room < n:
                room = max(1, room)
                part = lengths[:room]
                if type(values) is RichValues:  # its extras go with their records
                    head, rich_left = values.part(0, room), values.part(room, n)
                    run = turn.add_many(
                        head,
                        keys[:room] if keys is not None else None,
                        future,
                        origin,
                        False,
                        head.lengths,  # with their headers' bytes, as the budget counts them
                        head.size,
                    )
                    self.cut_short = True
                    self.queue.appendleft(
                        (
                            topic,
                            rich_left,
                            keys[room:] if keys is not None else None,
                            Continued(future, origin or run),
                        )
                    )
                    return run
                run = turn.add_many(
                    values[:room],
                    keys[:room] if keys is not None else None,
                    future,
                    origin,
                    False,
                    part,
                )
                rest = Continued(future, origin or run)
                self.cut_short = True  # the rest goes next, without waiting
                left = Values(values[room:], lengths[room:], size - run.size)
                self.queue.appendleft(
                    (topic, left, keys[room:] if keys is not None else None, rest)
                )
                return run
        return turn.add_many(values, keys, future, origin, lengths=lengths, size=size)

    def _drop_rest(self, value: object) -> None:
        """The rest of a ``send_many`` whose future an earlier part failed (its offsets
        could not be reserved, its topic was deleted): counted as failed, never published,
        so that what the failure says was not sent is not sent later either."""
        values = cast(list[bytes], value)  # a send_many's item: see _Queued
        size = values.size if isinstance(values, Values) else sum(map(len, values))
        error = ProducerError("not sent: an earlier part of its send_many failed")
        self.state.budget.rejected(len(values), size, error)

    def _refuse_turn(
        self, by_topic: dict[str, TopicTurn], taken: int, exc: StorageError, now: float
    ) -> None:
        """The turn's offsets could not be reserved (a full disk): publish none of its
        records and fail them, with why; later sends are tried as they come. A ``send_many``
        whose first parts went in earlier turns is told which offsets they took: those may
        be acknowledged, and only the rest needs sending again."""
        self.trouble.failed("offset journal", exc, now)
        error = StorageError(
            f"{exc}: the record was not sent (its offset could not be reserved in the "
            "producer's state directory)"
        )
        failed = failed_bytes = 0
        for topic, turn in by_topic.items():
            for run in turn.runs:
                run.place(0, turn.values)  # never published: placed only to count its bytes
                if type(run) is ManyRun and run.origin is not None:
                    sent = range(run.origin.base, self.core.next_offset(topic))
                    count, size = run.fail(
                        StorageError(
                            f"{exc}: the send_many's records from its record {len(sent)} on "
                            "were not sent (their offsets could not be reserved in the "
                            f"producer's state directory); its first {len(sent)} were "
                            f"published earlier, offsets {sent.start}..{sent.stop - 1}, and "
                            "may be acknowledged"
                        )
                    )
                else:
                    count, size = run.fail(error)
                failed += count
                failed_bytes += size
        if failed:
            self.state.budget.rejected(failed, failed_bytes, error)
        if self.state.wal is not None:  # durable sends waiting on these return the error
            self.state.log_wait.logged(taken, error)

    def _log(self, effects: list[Outgoing], taken: int, now: float) -> None:
        """Durable mode: log what is about to be published (one fsync), then publish it and
        let the ``send`` calls of the ``taken`` records return. If it cannot be logged, it
        is published all the same (it is sealed), and the ``send`` calls say so."""
        batches: list[LoggedBatch] = []
        for effect in effects:
            if isinstance(effect, PublishRecords):
                first = effect.first_offset
                batches.extend(
                    LoggedBatch(effect.topic, first + i, 1, content)
                    for i, content in enumerate(effect.contents)
                )
            elif isinstance(effect.msg, m.Record):
                rec = effect.msg
                batches.append(LoggedBatch(rec.topic, rec.offset, rec.count, rec.content))

        def then(rd: Ready, failed: BaseException | None) -> None:
            if failed is None:
                self.trouble.succeeded()
                return
            self.trouble.failed("producer log", cast(StorageError, failed), now)
            error = StorageError(
                f"{failed}: the record was sent but is not in the producer log, so it would "
                "not survive a crash"
            )
            self.readies.push(Ready(publish=rd.publish, deliver=(Logged(taken, error),)))

        step = Ready(
            persist=(Log(batches),),
            must_sync=True,
            publish=tuple(effects),
            deliver=(Logged(taken, None),),
        )
        self.readies.push(step, then)

    def _publish_apart(
        self, topic: str, turn: TopicTurn, now: float, stamp: int
    ) -> tuple[int, list[Outgoing], list[Run], list[bytes]]:
        """Publish each send's records on their own; fail only the sends that do not seal.

        Returns the first offset, the effects, the runs of the sends kept (whose offsets
        follow on from the first: a failed send takes none) and their values, which the
        runs index.
        """
        values, keys = turn.values, turn.keys if turn.keyed else None
        extras = turn.extras or {}
        codec, compacted = self.sealing(topic)
        first = -1
        out: list[Outgoing] = []
        kept: list[Run] = []
        kept_values: list[bytes] = []
        for run in turn.runs:
            # (index in values, records, future) of each send of the run
            sends: list[tuple[int, int, LazyFuture[Any] | None]]
            if isinstance(run, ManyRun):
                sends = [(run.at, run.count, run.future)]
            else:
                sends = [(run.at + i, 1, fut) for i, fut in enumerate(run.futures)]
            for at, count, fut in sends:
                part = values[at : at + count]
                try:
                    start, pubs = self.core.publish(
                        topic,
                        part,
                        now,
                        keys[at : at + count] if keys is not None else None,
                        stamp,
                        None,
                        {i - at: e for i, e in extras.items() if at <= i < at + count},
                        codec,
                        compacted,
                    )
                except Exception as exc:
                    log.warning(
                        "producer.record.rejected topic=%s records=%d error=%s", topic, count, exc
                    )
                    if fut is not None:
                        fut.fail(exc)
                    # a send_many's size counts its headers' bytes, as the budget did
                    size = run.size if isinstance(run, ManyRun) else sum(map(len, part))
                    self.state.budget.rejected(count, size, exc)
                    continue
                if first < 0:
                    first = start
                out.extend(pubs)
                if isinstance(run, ManyRun):
                    # the same run, moved: a later part of its send may name it as its origin
                    run.at = len(kept_values)
                    kept.append(run)
                else:
                    last = kept[-1] if kept else None
                    if not isinstance(last, RecordRun):
                        last = RecordRun(len(kept_values))
                        kept.append(last)
                    last.futures.append(fut)  # type: ignore[arg-type]  # a RecordFuture
                kept_values.extend(part)
        return first, out, kept, kept_values

    def on_messages(
        self, msgs: list[Message], now: float, sources: MessageSources
    ) -> list[Outgoing]:
        out: list[Outgoing] = []
        sender = sources.sender  # who asked: a FETCH is answered on its connection
        wall_ms = time.time_ns() // 1_000_000  # stamps gap statements (a restart's recovery)
        core = self.core
        for i, msg in enumerate(msgs):
            core.step(
                msg,
                now,
                sender(i) if type(msg) is m.Fetch else None,
                wall_ms,
            )
        run_ready(core, None, out.extend, lambda acked: self._durable(acked, now))
        if self.readies:
            self._run(out)
        return out

    def on_tick(self, now: float) -> list[Publish]:
        if self._unjournaled and self.trouble.retry_due(now):
            self._durable([], now)  # ACKs that could not be recorded: try again
            self._run([])
        return self.core.tick(now, time.time_ns() // 1_000_000)

    def _durable(self, acked: Sequence[Acked], now: float) -> None:
        """Queue: record how far each topic is durable, then tell the futures (a restart
        must never declare an acknowledged offset a gap, ``dafka.producer._recovery``), then let
        the log forget it. If it cannot be recorded (a full disk), the futures wait, and
        :meth:`on_tick` tries again. Of several ACKs of a topic, the last (highest) counts."""
        if len(acked) > 1:
            acked = list({a.topic: a for a in acked}.values())
        if self.state.acked_journal is None:
            self.readies.push(Ready(deliver=tuple(acked)), lambda rd, _: self._release(acked, now))
            return
        if self._unjournaled:
            latest = self._unjournaled
            for a in acked:
                before = latest.get(a.topic)
                if before is None or a.offset > before.offset:
                    latest[a.topic] = a
            acked = list(latest.values())
        trouble = self.trouble

        def then(rd: Ready, failed: BaseException | None) -> None:
            if failed is not None:
                trouble.failed("acknowledged offsets", cast(StorageError, failed), now)
                self._unjournaled = {a.topic: a for a in acked}
                return
            self._unjournaled = {}
            trouble.succeeded()
            self._release(acked, now)

        upto = AckedUpTo({a.topic: a.offset + 1 for a in acked})
        self.readies.push(Ready(persist=(upto,), must_sync=True, deliver=tuple(acked)), then)

    def _release(self, acked: Sequence[Acked], now: float) -> None:
        """Once ``acked`` resolved their futures: the log forgets them (durable mode)."""
        if self.state.wal is None:
            return
        trouble = self.trouble

        def then(_: Ready, failed: BaseException | None) -> None:
            if failed is not None:
                trouble.failed("producer log release", cast(StorageError, failed), now)

        release = Release({a.topic: a.offset + 1 for a in acked})
        self.readies.push(Ready(persist=(release,)), then)

    def _resolve(self, acked: Acked) -> None:
        if self.ack_timer is not None:
            self.ack_timer.acked(acked.topic, acked.offset)
        pending = self.inflight.get(acked.topic)
        if not pending:
            return
        freed = freed_bytes = 0
        durable = acked.offset
        while pending and pending[0].first <= durable:
            run = pending[0]
            count, size = run.resolve(durable)
            freed += count
            freed_bytes += size
            if not run.finished:
                break  # the rest of the run waits for a later ACK
            pending.popleft()
        if freed:
            self.state.budget.released(freed, freed_bytes)

    def on_subscription(self, sub: Subscription, now: float) -> list[Publish]:
        # a store subscribes to CONSUMER-HELLOs addressed to it, by its node ID: so we
        # know which stores are connected to us (to say why nothing is acknowledged, and
        # so that a probe's wait runs only while it can ask a store)
        if sub.cmd == Command.CONSUMER_HELLO.value:
            store = sub.rest.decode("ascii", "replace")
            if not sub.subscribe:
                self.stores.discard(store)
            # guard: producer-remembers-boundedly-stores
            elif is_node_id(store) and len(self.stores) < MAX_STORES_NAMED:
                self.stores.add(store)
            # guard: producer-tells-core-stores-connected
            self.core.stores_connected(bool(self.stores))
        return []

    def evidence(self) -> AckEvidence:
        """What bears on why records wait (:mod:`.producer_why`); on the IO thread, or
        once it has stopped."""
        core = self.core
        waiting = [t for t, runs in self.inflight.items() if runs] or core.topics()
        topics = []
        for topic in waiting:
            need, topic_set = core.needs(topic)
            topics.append(TopicAcks(topic, need, topic_set, tuple(core.store_acks(topic))))
        return AckEvidence(
            profile=self.state.config.profile,
            towers=tuple(str(t) for t in self.state.towers),
            welcomed=loop.welcomed if (loop := self.state.loop) is not None else False,
            stores=tuple(sorted(self.stores)),
            trusted=core.trusted,
            untrusted=tuple(sorted(core.untrusted_from)),
            topics=tuple(topics),
            state_dir=self.trouble.describe(),
        )

    def on_stop(self) -> None:
        self.stopped = True  # before the queue is drained: see Producer._enqueue
        error = ClosedError("producer closed before the record was acknowledged")
        for pending in self.inflight.values():
            for run in pending:
                run.fail(error)
        self.fail_queued()
        self.state.budget.io_stopped()

    def fail_queued(self) -> None:
        """Fail every queued record's future with :class:`ClosedError` (the IO thread has
        stopped). Any thread: each item is popped, so failed, once."""
        error = ClosedError("producer IO thread has stopped before the record was published")
        queue = self.queue
        while True:
            try:
                _, _, _, fut = queue.popleft()
            except IndexError:
                return
            fut.fail(error)
