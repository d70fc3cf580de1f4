"""The consumer's IO-thread half (:class:`_ConsumerHandler`): messages in, records out.

The node's IO thread hands every decoded message to :class:`_ConsumerHandler`, which
steps the :class:`~dafka.consumer._core.ConsumerCore` with it and executes the core's
:class:`~dafka.core.ready.Ready` through :func:`dafka.io.ready_shell.run_ready`, as
every node does: its FETCHes go out, and what it delivers (verified runs of records,
joined by :func:`_coalesce` when they continue each other, and the data losses it
reports) goes to the :class:`~dafka.consumer._shared.ConsumerShared` it shares with
the :class:`~dafka.consumer._facade.Consumer`, whose ``poll`` takes them on the caller's
thread. It also counts what ``watermarks``
waits for (DIRECT-HEADs to this consumer) and answers ``at_end``. Commands from the
caller's thread (subscribe, seek, metadata changes) come through ``NodeLoop.call``.
Everything here runs on the IO thread.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ..core import messages as m
from ..core.effects import DataLoss, Outgoing, Publish, RecordBatch
from ..io.node import NodeHandler, NodeLoop
from ..io.ready_shell import run_ready
from ._core import ConsumerCore
from ._end import END_QUIET
from ._shared import ConsumerShared

__all__ = ["END_QUIET", "_ConsumerHandler"]


class _ConsumerHandler(NodeHandler):
    def __init__(self, shared: ConsumerShared, core: ConsumerCore) -> None:
        self.shared = shared
        self.core = core
        self.loop: NodeLoop | None = None
        self.heads_seen = 0  # DIRECT-HEADs addressed to this consumer (watermarks waits)
        self.joined = 0  # the tower link's connections to peers when last looked at
        self.last_news = 0.0
        self.delivered_bytes = 0  # value bytes of the records the core delivered (metrics)
        self.lists = False
        """Whether to hand runs on with their values and keys as lists, made here right after
        verification, while the batch is in the CPU's cache, rather than as columns: set while
        the application reads records (``poll``, ``poll_batch``), which makes every value
        anyway (about a tenth less CPU than making them on its thread); ``poll_batches``
        clears it."""
        self.count_bytes = False
        """Whether to count :attr:`delivered_bytes`: only for the metrics (free for a signed
        batch's columns, a pass over the values of other runs)."""

    def subscriptions(self) -> list[bytes]:
        return self.core.subscriptions()

    def interest(self) -> Collection[str]:
        """The topics subscribed (``NodeHandler.interest``)."""
        return self.core.topic_names

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        self.loop = loop
        self.last_news = now
        out: list[Publish] = []
        for topic in self.shared.initial_topics:
            out.extend(self.core.subscribe(topic, now))
        loop.sync_subscriptions()
        return out

    def has_pending(self) -> bool:
        return False

    def accepting(self) -> bool:
        return self.shared.accepting()

    def on_commands(self, now: float) -> list[Publish]:
        return []  # commands come through NodeLoop.call

    def _run(self) -> list[Outgoing]:
        """Execute the core's Readies: publish, then deliver (nothing to persist)."""
        out: list[Outgoing] = []
        run_ready(self.core, None, send=out.extend, deliver=self._deliver)
        return out

    def _deliver(self, items: Sequence[Any]) -> None:
        """What one Ready delivers: runs of records (to be polled) and data losses (to be
        raised by a poll), in order."""
        delivered: list[RecordBatch] = []
        for item in items:
            if type(item) is RecordBatch:
                # columns: none waiting to be polled pins a batch it barely uses
                delivered.append(item.as_lists() if self.lists else item.detached())
                if self.count_bytes:
                    self.delivered_bytes += item.value_bytes
            elif type(item) is DataLoss:
                self.shared.data_loss(item)
        if delivered:
            self.shared.deliver(_coalesce(delivered) if len(delivered) > 1 else delivered)

    def on_arrival(self, msgs: list[m.Message], now: float) -> Sequence[Outgoing]:
        """The FETCHes that go out before ``msgs`` are verified (``ConsumerCore.ask_ahead``)."""
        ahead = self.core.ask_ahead(msgs, now)
        if not ahead:
            return ()
        self.core.push(ahead)
        return self._run()

    def on_messages(
        self, msgs: list[m.Message], now: float, sources: Sequence[str] = ()
    ) -> Sequence[Outgoing]:
        core = self.core
        node = core.node_id
        for i, msg in enumerate(msgs):
            t = type(msg)
            if t is m.DirectHead:
                if msg.recipient == node:  # type: ignore[union-attr]
                    self.heads_seen += 1
                    self.last_news = now  # what it holds is noted by the core (caught_up)
            elif t is m.StoreHello:
                self.last_news = now
            core.step(msg, now, sources[i] if i < len(sources) else "")
        return self._run()

    def on_subscription(self, sub: m.Subscription, now: float) -> Sequence[Outgoing]:
        self.core.push(self.core.on_subscription(sub, now))
        return self._run()

    def on_tick(self, now: float) -> Sequence[Outgoing]:
        link = self.loop.tower_link if self.loop is not None else None
        # guard: consumer-tells-its-core-a-peer-joined
        if link is not None and link.joined != self.joined:
            self.joined = link.joined
            self.core.peer_joined(now)  # the stores are asked for the heads soon
        self.core.push(self.core.tick(now))
        return self._run()

    def on_stop(self) -> None:
        self.shared.wake()

    def at_end(self, now: float) -> bool:
        """Whether the consumer is at the end of stream, in one step on the IO thread: no
        record the core delivered waits to be polled (the shared state is written on this
        thread, so every record delivered so far is counted, and the caller's poll only
        takes from the count), and the core is at what the stores said they hold
        (``ConsumerCore.at_end``); nor does an error a poll has still to raise (a data
        loss reported with the last window). Checked on the caller's thread first,
        the count could be read just before the last window landed: ``-e`` then exited 0
        with that window unprinted (issue 34, point 1)."""
        # guard: end-counts-unpolled-records-same
        if self.shared.unpolled():  # a record, or an error a poll has still to raise
            return False
        return self.core.at_end(now)


SHORT_RUN = 64
"""Runs of at most this many records are joined by :func:`_coalesce`."""


def _coalesce(runs: list[RecordBatch]) -> list[RecordBatch]:
    """Join short runs that continue each other (one partition, no keys, one timestamp).

    Under rfc46 every record is a run of its own; joined, a drained socket
    becomes one run per partition, and handing them out costs far less. Runs of
    more than :data:`SHORT_RUN` records (a signed batch's columns over its blob) are
    handed on as they are: joining them would copy out a ``bytes`` object per record,
    which is what the columns spare.
    """
    out: list[RecordBatch] = []
    values: list[bytes | None] | None = None  # the values of out[-1], once it is being extended
    for run in runs:
        if out:
            last = out[-1]
            if (
                len(run.values) <= SHORT_RUN
                and (values is not None or len(last.values) <= SHORT_RUN)
                and run.keys is None
                and last.keys is None
                and run.timestamps is None  # format 5: own times and headers, kept apart
                and last.timestamps is None
                and run.partition == last.partition
                and run.topic == last.topic
                and run.timestamp == last.timestamp
                and run.offset == last.offset + len(last.values)
            ):
                if values is None:
                    values = list(last.values)
                    out[-1] = RecordBatch(
                        last.topic, last.partition, last.offset, values, None, last.timestamp
                    )
                values.extend(run.values)
                continue
        out.append(run)
        values = None
    return out
