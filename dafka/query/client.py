"""A client of one store's query endpoint, and record decoding per wire profile.

:class:`QueryClient` owns one DEALER socket: create it in the thread (and the
process, after any fork) that uses it. Each call sends one request and waits
for the reply with the same request id, up to ``timeout``; late replies to
earlier calls are dropped.

CURVE (``docs/security.md``): a store started with ``--curve`` serves its query endpoint
over CURVE only; give ``key`` (the client's :class:`~dafka.security.identity.Identity`, e.g. from a
``dafka-keys`` key file: what the store's ACLs and ``curve_clients`` judge) and
``server_key`` (the store's Ed25519 public key, from its beacon,
:meth:`~dafka.query.locator.StoreLocator.keys`, or given). A store that does not admit the
key never answers (the handshake fails): a timeout that says so.

Records: a READ reply holds stored batches verbatim, and names the store's
wire profile. :func:`records` turns them into :class:`QueryRecord` s: under ``rfc46`` a batch is one record
(no key, no timestamp); under ``signed`` each blob is checked with
:func:`dafka.wire.signed.verify_batch` (the producer's signature, end to end,
whichever store served it) and expanded into its keyed, timestamped records, with their
headers (format 5: decompressed after verifying, within ``max_raw``).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import zmq

from ..errors import (
    ConfigError,
    DafkaError,
    DafkaTimeout,
    DataLossError,
    ProtocolError,
    TooManyFrames,
    WireError,
)
from ..io.multipart import QUERY_REPLY_FRAMES, recv_bounded
from ..security.curve_keys import CurveConfig, curve_public_of, make_client
from ..security.identity import Identity
from ..wire.signed_batch import Batch
from ..wire.signed_rich import MAX_RAW_BYTES, Header, RichRecords
from . import protocol as qp
from .locator import HEALTH

log = logging.getLogger(__name__)

__all__ = [
    "HEDGE_AFTER",
    "BelowTailError",
    "ask_all",
    "first_answer",
    "heads_request",
    "read_request",
    "load_client_key",
    "QueryClient",
    "QueryError",
    "MAX_RAW",
    "OpenedBatch",
    "QueryRecord",
    "opened_batches",
    "records",
    "verified_batches",
]

_ids = itertools.count(1)


class BelowTailError(DataLossError):
    """The offsets asked for are below the partition's tail on that store: they are gone."""

    def __init__(self, message: str, tail: int | None, head: int | None) -> None:
        super().__init__(message)
        self.tail = tail
        self.head = head


_RETRIABLE = frozenset({qp.ErrorCode.UNAVAILABLE, qp.ErrorCode.BUSY})


class QueryError(ProtocolError):
    """A store refused a query (bad request) or could not answer it (``retriable``)."""

    def __init__(self, message: str, code: qp.ErrorCode) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = code in _RETRIABLE  # type: ignore[misc]  # per answer here, not per class


@dataclass(frozen=True, slots=True)
class QueryRecord:
    topic: str
    partition: str
    offset: int
    key: bytes | None
    value: bytes | None
    """``None``: a tombstone (format 5)."""
    timestamp_ms: int | None
    """The record's own time (ms), or its batch's seal time; None under ``rfc46``."""
    headers: tuple[Header, ...] = ()
    """Ordered ``(key, value)`` pairs, as the producer sent them."""


def load_client_key(path: str | os.PathLike[str]) -> Identity:
    """A query client's CURVE key: a ``dafka-keys`` node key file, or a directory holding
    ``node.key``; one :class:`ConfigError` naming the file otherwise."""
    from ..security import identity

    where = Path(path)
    return identity.load(where) if where.is_dir() else identity.load_file(where)


class QueryClient:
    """Requests to one store's query endpoint (``tcp://host:port``)."""

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: float = 10.0,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        key: Identity | None = None,
        server_key: bytes | None = None,
    ) -> None:
        if key is not None and server_key is None:
            raise ConfigError(
                f"CURVE to the store at {endpoint} needs its public key (from its beacon, "
                "or given with --store-key)"
            )
        if server_key is not None:
            curve_public_of(server_key)  # one ConfigError for a key that is not one
        self.endpoint = endpoint
        self.timeout = timeout
        self.key = key
        self.server_key = server_key
        self._pid = os.getpid()
        self._ctx = context or zmq.Context.instance()
        self._sock: zmq.Socket[bytes] | None = None

    def _socket(self) -> zmq.Socket[bytes]:
        if os.getpid() != self._pid:
            raise DafkaError("a QueryClient cannot cross a fork: create it where it is used")
        if self._sock is None:
            sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RCVHWM, qp.REPLY_HWM)
            sock.setsockopt(zmq.MAXMSGSIZE, qp.MAX_REPLY_FRAME_BYTES)
            if self.server_key is not None:
                me = self.key if self.key is not None else Identity.generate()
                make_client(sock, CurveConfig(True), me, self.server_key)
            try:
                sock.connect(self.endpoint)
            except zmq.ZMQError as exc:
                sock.close(0)
                raise DafkaError(f"bad store query endpoint {self.endpoint}: {exc}") from None
            self._sock = sock
        return self._sock

    def _reset(self) -> None:
        """Drop the socket after a timeout: its queue may hold a late reply or our request."""
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None

    def send(self, req: qp.Request) -> None:
        """Send ``req`` without waiting; :meth:`take` collects its reply."""
        self._socket().send_multipart(qp.encode_request(req))

    def take(self, request_id: int) -> qp.Reply | None:
        """The reply to ``request_id`` if it has arrived (late replies to others are dropped)."""
        sock = self._socket()
        while True:
            try:
                frames = recv_bounded(sock, QUERY_REPLY_FRAMES, copy=False)
            except zmq.Again:
                return None
            except TooManyFrames as exc:
                raise ProtocolError(f"bad reply from {self.endpoint}: {exc}") from None
            try:
                reply = qp.decode_reply([f.buffer for f in frames])
            except WireError as exc:
                raise ProtocolError(f"bad reply from {self.endpoint}: {exc}") from None
            if reply.request_id == request_id:
                return reply
            log.debug("query.late_reply id=%d", reply.request_id)

    def _timeout(self, seconds: float) -> DafkaTimeout:
        curve = (
            " (over CURVE: a store that does not admit this client's key never answers)"
            if self.server_key is not None
            else ""
        )
        return DafkaTimeout(
            f"store at {self.endpoint} did not answer within {seconds:g} s; is it running?{curve}"
        )

    def request(self, req: qp.Request, timeout: float | None = None) -> qp.Reply:
        """Send ``req`` and return its reply (an :class:`~protocol.ErrorReply` is returned too)."""
        self.send(req)
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        sock = self._socket()
        while True:
            reply = self.take(req.request_id)
            if reply is not None:
                HEALTH.ok(self.endpoint)
                return reply
            left = deadline - time.monotonic()
            if left <= 0:
                self._reset()
                HEALTH.failed(self.endpoint)
                raise self._timeout(wait)
            sock.poll(max(1, int(left * 1000)), zmq.POLLIN)

    def heads(
        self, topics: Sequence[str] | None = None, timeout: float | None = None
    ) -> list[qp.PartitionInfo]:
        """Tail and head of each partition the store holds (of ``topics``, or of all)."""
        return self.check_heads(self.request(heads_request(topics), timeout))

    def check_heads(self, reply: qp.Reply) -> list[qp.PartitionInfo]:
        """``reply`` as the answer to a HEADS: its partitions, or :class:`QueryError`."""
        if isinstance(reply, qp.ErrorReply):
            raise QueryError(f"{self.endpoint}: {reply.message}", reply.code)
        if not isinstance(reply, qp.HeadsReply):
            raise ProtocolError(f"{self.endpoint} answered HEADS with {type(reply).__name__}")
        if reply.truncated:
            log.warning("query.heads_truncated endpoint=%s", self.endpoint)
        return list(reply.partitions)

    def status(self, timeout: float | None = None) -> qp.StatusReply:
        """The store's disk: free and total bytes of its filesystem, its database's size
        (each None if unknown); :class:`QueryError` from a store that predates STATUS."""
        reply = self.request(qp.StatusRequest(next(_ids)), timeout)
        if isinstance(reply, qp.ErrorReply):
            raise QueryError(f"{self.endpoint}: {reply.message}", reply.code)
        if not isinstance(reply, qp.StatusReply):
            raise ProtocolError(f"{self.endpoint} answered STATUS with {type(reply).__name__}")
        return reply

    def read(
        self,
        topic: str,
        partition: str,
        from_offset: int,
        max_records: int = qp.DEFAULT_READ_RECORDS,
        max_bytes: int = qp.DEFAULT_READ_BYTES,
        timeout: float | None = None,
    ) -> qp.ReadReply:
        """Stored batches from the one holding ``from_offset``; :class:`BelowTailError` if gone.

        An empty reply means nothing at or after ``from_offset`` is stored yet
        (``tail``/``head`` are None when the store does not hold the partition).
        """
        req = read_request(topic, partition, from_offset, max_records, max_bytes)
        return self.check_read(req, self.request(req, timeout))

    def check_read(self, req: qp.ReadRequest, reply: qp.Reply) -> qp.ReadReply:
        """``reply`` as the answer to READ ``req``: :class:`BelowTailError` if the offsets are
        gone, :class:`QueryError` if refused, :class:`ProtocolError` if not a READ of it."""
        topic, partition, from_offset = req.topic, req.partition, req.from_offset
        if isinstance(reply, qp.ErrorReply):
            if reply.code is qp.ErrorCode.BELOW_TAIL:
                raise BelowTailError(
                    f"{topic}/{partition}: offset {from_offset} is below the tail "
                    f"{reply.tail} of the store at {self.endpoint}: those records are gone",
                    reply.tail,
                    reply.head,
                )
            raise QueryError(f"{self.endpoint}: {reply.message}", reply.code)
        if not isinstance(reply, qp.ReadReply) or (reply.topic, reply.partition) != (
            topic,
            partition,
        ):
            raise ProtocolError(f"{self.endpoint} answered READ with another partition")
        return reply

    def read_range(
        self,
        topic: str,
        partition: str,
        start: int,
        end: int,
        max_bytes: int = qp.DEFAULT_READ_BYTES,
    ) -> Iterator[qp.ReadReply]:
        """READ replies covering offsets ``start..end-1`` in order (the last may overshoot ``end``).

        Stops early (without error) when the store holds nothing more; the
        caller compares what it got with ``end``.
        """
        offset = start
        while offset < end:
            reply = self.read(topic, partition, offset, end - offset, max_bytes)
            nxt = reply.next_offset
            if nxt is None or nxt <= offset:
                return
            yield reply
            offset = nxt

    def close(self) -> None:
        if self._sock is not None and os.getpid() == self._pid:
            self._sock.close(0)
        self._sock = None

    def __enter__(self) -> QueryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_request(
    topic: str,
    partition: str,
    from_offset: int,
    max_records: int = qp.DEFAULT_READ_RECORDS,
    max_bytes: int = qp.DEFAULT_READ_BYTES,
) -> qp.ReadRequest:
    """A READ request with a fresh request id."""
    return qp.ReadRequest(next(_ids), topic, partition, from_offset, max_records, max_bytes)


def heads_request(topics: Sequence[str] | None) -> qp.HeadsRequest:
    """A HEADS request with a fresh request id."""
    return qp.HeadsRequest(next(_ids), None if topics is None else tuple(topics))


HEDGE_AFTER = 1.0
"""Seconds a reader waits for one store before asking the next one too."""


def first_answer(
    asks: Sequence[tuple[QueryClient, qp.Request]],
    *,
    timeout: float,
    hedge_after: float = HEDGE_AFTER,
    first_sent: bool = False,
) -> tuple[int, qp.Reply | DafkaError]:
    """``(index, reply)`` of the first of ``asks`` to be answered: a hedged request.

    Sends the first request (unless ``first_sent``: the caller sent it ahead, a
    prefetch, and ``timeout`` counts from now); each ``hedge_after`` seconds without an answer, sends the next
    one too (another store's copy of the same data), and returns whichever answer comes
    first (a reply that does not decode is that store's answer, as a :class:`DafkaError`).
    Stores asked that had not answered are reported to :data:`HEALTH` and their
    sockets dropped (a late answer is then never read). :class:`DafkaTimeout` naming every
    store asked when none answers within ``timeout``.
    """
    if not asks:
        raise DafkaError("no store to ask")
    start = time.monotonic()
    deadline = start + timeout
    poller = zmq.Poller()
    sent = 0
    try:
        while True:
            now = time.monotonic()
            while sent < len(asks) and (sent == 0 or now >= start + sent * hedge_after):
                client, req = asks[sent]
                if sent or not first_sent:
                    client.send(req)
                poller.register(client._socket(), zmq.POLLIN)
                sent += 1
            for i in range(sent):
                client, req = asks[i]
                reply: qp.Reply | DafkaError | None
                try:
                    reply = client.take(req.request_id)
                except DafkaError as exc:
                    reply = exc
                if reply is not None:
                    HEALTH.ok(client.endpoint)
                    for j in range(sent):
                        if j != i:
                            asks[j][0]._reset()
                            HEALTH.failed(asks[j][0].endpoint)
                    return i, reply
            if now >= deadline:
                break
            wake = deadline if sent == len(asks) else min(deadline, start + sent * hedge_after)
            poller.poll(max(1, int((wake - now) * 1000)))
    except zmq.ZMQError as exc:
        raise DafkaError(f"query sockets failed: {exc}") from None
    for client, _ in asks[:sent]:
        client._reset()
        HEALTH.failed(client.endpoint)
    raise DafkaTimeout(
        f"no store answered within {timeout:g} s: "
        + ", ".join(client.endpoint for client, _ in asks[:sent])
    )


def ask_all(
    asks: Sequence[tuple[QueryClient, qp.Request]],
    *,
    timeout: float,
    grace: float = HEDGE_AFTER,
) -> list[qp.Reply | DafkaError]:
    """Every request of ``asks`` sent at once; each one's reply, or the error it met.

    Waits until all are answered, ``timeout`` passes, or ``grace`` seconds after the first
    answer (so one dead store delays a caller by ``grace``, not ``timeout``). A store that
    did not answer gets a :class:`DafkaTimeout` and is reported to :data:`HEALTH`.
    """
    out: list[qp.Reply | DafkaError | None] = [None] * len(asks)
    poller = zmq.Poller()
    start = time.monotonic()
    deadline = start + timeout
    for i, (client, req) in enumerate(asks):
        try:
            client.send(req)
            poller.register(client._socket(), zmq.POLLIN)
        except DafkaError as exc:
            out[i] = exc
    while True:
        for i, (client, req) in enumerate(asks):
            if out[i] is None:
                try:
                    out[i] = client.take(req.request_id)
                except DafkaError as exc:
                    out[i] = exc
                if out[i] is not None:
                    HEALTH.ok(client.endpoint)
                    deadline = min(deadline, time.monotonic() + grace)
        now = time.monotonic()
        if all(o is not None for o in out) or now >= deadline:
            break
        poller.poll(max(1, int((deadline - now) * 1000)))
    result: list[qp.Reply | DafkaError] = []
    for (client, _), o in zip(asks, out, strict=True):
        if o is None:
            client._reset()
            HEALTH.failed(client.endpoint)
            o = client._timeout(time.monotonic() - start)
        result.append(o)
    return result


MAX_RAW = MAX_RAW_BYTES
"""Bytes a reader lets one compressed (format-5) batch decompress to, by default: the
most a producer can seal. The signed raw length is checked against it before
decompressing (:class:`~dafka.wire.signed_rich.DecompressionBomb` over it)."""


def records(
    reply: qp.ReadReply, start: int = 0, end: int | None = None, *, max_raw: int = MAX_RAW
) -> Iterator[QueryRecord]:
    """The records of a READ reply at offsets ``start..end-1``, decoded per the store's profile.

    Signed batches are verified first, then opened (:func:`opened_batches`): each record
    with its headers and its own time (the batch's seal time where the producer gave
    none); a tombstone has value ``None``; a compacted batch's dropped offsets give no
    record. Raises :class:`~dafka.errors.WireError` for a batch that does not verify,
    inflates past ``max_raw`` or whose records are not the ones signed.
    """
    topic, partition = reply.topic, reply.partition
    for opened in opened_batches(reply, max_raw=max_raw):
        if end is not None and opened.first >= end:
            return
        recs = opened.records
        for i, offset in enumerate(recs.offsets):
            if offset < start:
                continue
            if end is not None and offset >= end:
                return
            stamp = None if opened.batch is None else recs.timestamps[i]
            yield QueryRecord(
                topic, partition, offset, recs.keys[i], recs.values[i], stamp, recs.headers[i]
            )


@dataclass(frozen=True, slots=True)
class OpenedBatch:
    """One batch of a READ reply, verified and opened: offsets ``first..last``;
    ``batch`` is the verified signed batch (None under ``rfc46``, whose batch is one
    record, its blob the value)."""

    first: int
    last: int
    batch: Batch | None
    records: RichRecords


def opened_batches(reply: qp.ReadReply, *, max_raw: int = MAX_RAW) -> Iterator[OpenedBatch]:
    """Every batch of a READ reply, verified (signature, partition, the offsets the store
    claims) and then opened with :func:`~dafka.wire.signed.open_batch`: any record format,
    format 5 decompressed only within ``max_raw`` (checked before decompressing) and its
    records checked against the signed root."""
    if reply.profile != "signed":
        for first, last, blob in reply.batches():
            if first != last:
                raise WireError(f"{reply.topic}/{reply.partition}: an rfc46 batch holds one record")
            yield OpenedBatch(first, last, None, RichRecords([first], [None], [blob], [0], [()]))
        return
    from ..wire import signed

    for first, last, blob in reply.batches():
        batch = _verified(reply, first, last, blob)
        # guard: query-client-opens-rich-within-bound
        opened = signed.open_batch(batch, max_raw=max_raw)
        yield OpenedBatch(first, last, batch, opened)


def _verified(reply: qp.ReadReply, first: int, last: int, blob: bytes) -> Batch:
    from ..wire import signed

    batch = signed.verify_batch(blob, topic=reply.topic, partition=reply.partition)
    if batch.first_offset != first or batch.last_offset != last:
        raise WireError(
            f"{reply.topic}/{reply.partition}: stored batch {first}..{last} holds offsets "
            f"{batch.first_offset}..{batch.last_offset}"
        )
    return batch


class _Unopened(Sequence[tuple[bytes | None, bytes]]):
    """The records of a format-5 batch where :func:`verified_batches` gives ``(key,
    value)`` pairs: its length, but no record (they would lose their headers, times and
    tombstones): reading one raises :class:`WireError` pointing at :func:`opened_batches`."""

    __slots__ = ("_count",)

    def __init__(self, count: int) -> None:
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        raise WireError(
            "a format-5 batch (headers, record times, tombstones or compression): read it "
            "with dafka.query.opened_batches or records, not verified_batches"
        )


def verified_batches(
    reply: qp.ReadReply,
) -> Iterator[tuple[int, int | None, Sequence[tuple[bytes | None, bytes]]]]:
    """``(first offset, timestamp_ms, ((key, value), ...))`` per batch of a READ reply.

    Signed batches are verified (signature, partition, offsets) before they are
    yielded; an rfc46 batch is one record with no key and no timestamp. The pairs of a
    format-5 batch cannot be read here (its length and seal time can): use
    :func:`opened_batches`, which gives every format with headers and record times.
    """
    if reply.profile != "signed":
        for first, last, blob in reply.batches():
            if first != last:
                raise WireError(f"{reply.topic}/{reply.partition}: an rfc46 batch holds one record")
            yield first, None, ((None, blob),)
        return
    for first, last, blob in reply.batches():
        batch = _verified(reply, first, last, blob)
        if batch.is_rich:
            yield first, batch.timestamp_ms, _Unopened(batch.count)
        else:
            yield first, batch.timestamp_ms, batch.records
