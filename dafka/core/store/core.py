"""The store core that the IO shell drives (:class:`StoreCore`).

It puts the parts of the package together: one drained batch of messages is dispatched
to ingest (``ingest.py``) and to the answers (``serve.py``), committed in one append,
and followed by gap FETCHes (``gaps.py``), head answers, the next serving step and, last,
the ACKs. What each message does is described in :mod:`dafka.core.store`.
"""

from __future__ import annotations

import logging
import math
import struct
from collections.abc import Mapping, Sequence

from ...errors import DafkaError
from ...ids import is_node_id
from ...wire.rfc46 import Command
from .. import messages as m
from ..effects import Publish
from .replicate import StoreReplication
from .serve import StoreServing
from .state import _Batch

log = logging.getLogger(__name__)

MAX_HELLO_TOPICS = 1024
"""Topics answered per CONSUMER-HELLO; the rest are ignored (a peer controls the list)."""

_BAD_INPUT = (DafkaError, ValueError, TypeError, OverflowError, struct.error)


class StoreCore(StoreReplication, StoreServing):
    """The store's state machine: records in, (FETCH | DIRECT-* | STORE-HELLO | ACK) out.

    ``profile`` is the store's wire profile (``rfc46`` unless given); it
    verifies what the store keeps. ACKs come out unsigned and the profile signs
    them in the shell.
    """

    def handle_batch(
        self, msgs: Sequence[m.Message], now: float, sources: Sequence[str] = ()
    ) -> list[Publish]:
        """Process one drained batch: store, then publish FETCHes, answers and ACKs (last).

        ``sources[i]``: the host ``msgs[i]`` came from, whose budget of new partitions
        it spends (:class:`~dafka.core.admission.PartitionGate`; "" or none: unknown);
        read only for a message that would take on a new partition.

        The same as :meth:`ingest`, the append of its records (:meth:`committed` or
        :meth:`commit_failed`) and :meth:`finish`, which an IO shell that commits on a
        writer thread calls apart (``dafka.api.store_pipeline``)."""
        b = self.ingest(msgs, now, sources)
        return self.finish(b, self._commit(b, now), now)

    def ingest(
        self,
        msgs: Sequence[m.Message],
        now: float,
        sources: Sequence[str] = (),
        checked: Mapping[int, tuple[object, Exception | None]] | None = None,
    ) -> _Batch:
        """Dispatch one drained batch; return what its commit must append (``accepted``).

        Nothing may be appended between this and the report of its commit: the heads
        stay those of the last commit until then. ``checked``: what :meth:`verify_ahead`
        found of ``msgs``."""
        b = _Batch(now, sources, checked)
        for i, msg in enumerate(msgs):
            b.index = i
            try:
                self._dispatch(msg, b)
            except _BAD_INPUT as exc:
                self.stats.malformed += 1
                log.debug("store.malformed type=%s error=%s", type(msg).__name__, exc)
        return b

    def finish(self, b: _Batch, committed: bool, now: float) -> list[Publish]:
        """After ``b``'s commit was reported: gap FETCHes, answers, then the ACKs, only if
        ``committed``."""
        out: list[Publish] = []
        self._decide_fetches(b.gap_keys | b.advanced, now, out)
        for requester, topics in b.head_requests:
            self._answer_heads(requester, topics, out, now)
        for requester, topic, partition in b.tail_answers:
            self._answer_tail(requester, topic, partition, out)
        self._serve(out, now)
        if committed:
            self._ack(sorted(b.advanced | b.reack), out, now)
        return out

    def on_subscription(self, sub: m.Subscription, now: float) -> list[Publish]:
        """Greet a consumer that subscribes to its STORE-HELLOs (``L`` + consumer ID); a
        node subscribing to its DIRECT-HEADs (a store or consumer that just connected)
        brings the next replication round forward (:meth:`replicate_soon`)."""
        if sub.subscribe and sub.cmd == Command.DIRECT_HEAD.value:
            self.replicate_soon(now)
            return []
        if not (sub.subscribe and sub.cmd == Command.STORE_HELLO.value):
            return []
        try:
            consumer = sub.rest.decode("ascii")
        except UnicodeDecodeError:
            return []
        if not is_node_id(consumer) or consumer == self._node_id:
            return []
        return [Publish(m.StoreHello(consumer, self._node_id))]

    def tick(self, now: float, gaps: bool = True) -> list[Publish]:
        """Retry FETCHes for gaps still open, then serve the next chunk of pending fetches
        (the shell also calls :meth:`replicate`, the rounds that ask the other stores).

        ``gaps=False`` (a commit is in flight, its heads not reported yet): the gaps wait
        for a tick after the report, so none is fetched again for what the commit holds."""
        out: list[Publish] = []
        if gaps and now >= self._next_gap_check:
            self._next_gap_check = math.inf
            self._decide_fetches(list(self._gaps), now, out)
        self._serve(out, now)
        return out

    def _dispatch(self, msg: m.Message, b: _Batch) -> None:
        if self._deleted and getattr(msg, "topic", None) in self._deleted:
            self.stats.deleted_topic += 1
            return
        if isinstance(msg, m.Record) or (
            isinstance(msg, m.DirectRecord) and msg.recipient == self._node_id
        ):
            self._on_record(msg, b)
        elif isinstance(msg, m.Head):
            self._on_head(msg, b)
        elif isinstance(msg, m.Fetch):
            self._on_fetch(msg, b)
        elif isinstance(msg, m.GetHeads):
            self._on_head_request(msg.requester, (msg.topic,), b)
        elif isinstance(msg, m.ConsumerHello) and msg.store == self._node_id:
            topics = tuple(dict.fromkeys(msg.topics[:MAX_HELLO_TOPICS]))
            self._on_head_request(msg.consumer, topics, b)
        elif isinstance(msg, m.DirectHead) and msg.recipient == self._node_id:
            self._on_direct_head(msg, b)  # another store's heads (replicate.py)
        elif isinstance(msg, m.Oversized) and msg.recipient in (None, self._node_id):
            self._on_oversized(msg, b)
        else:
            self.stats.ignored += 1  # ACKs, DIRECT-HEADs, other nodes' direct messages
