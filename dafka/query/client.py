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
whichever store served it) and expanded into its keyed, timestamped records.
"""

from __future__ import annotations

import itertools
import logging
import os
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
    WireError,
)
from ..security.curve_keys import CurveConfig, curve_public_of, make_client
from ..security.identity import Identity
from . import protocol as qp

log = logging.getLogger(__name__)

__all__ = [
    "BelowTailError",
    "load_client_key",
    "QueryClient",
    "QueryError",
    "QueryRecord",
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


class QueryError(ProtocolError):
    """A store refused a query (bad request) or could not answer it (``retriable``)."""

    def __init__(self, message: str, code: qp.ErrorCode) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = code is qp.ErrorCode.UNAVAILABLE  # type: ignore[misc]  # per answer here, not per class


@dataclass(frozen=True, slots=True)
class QueryRecord:
    topic: str
    partition: str
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int | None


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

    def request(self, req: qp.Request, timeout: float | None = None) -> qp.Reply:
        """Send ``req`` and return its reply (an :class:`~protocol.ErrorReply` is returned too)."""
        sock = self._socket()
        sock.send_multipart(qp.encode_request(req))
        wait_ms = int((self.timeout if timeout is None else timeout) * 1000)
        while True:
            if not sock.poll(wait_ms, zmq.POLLIN):
                self._reset()
                curve = (
                    " (over CURVE: a store that does not admit this client's key never answers)"
                    if self.server_key is not None
                    else ""
                )
                raise DafkaTimeout(
                    f"store at {self.endpoint} did not answer within "
                    f"{wait_ms / 1000:g} s; is it running?{curve}"
                )
            frames = sock.recv_multipart(copy=False)
            try:
                reply = qp.decode_reply([f.buffer for f in frames])
            except WireError as exc:
                raise ProtocolError(f"bad reply from {self.endpoint}: {exc}") from None
            if reply.request_id == req.request_id:
                return reply
            log.debug("query.late_reply id=%d", reply.request_id)

    def heads(
        self, topics: Sequence[str] | None = None, timeout: float | None = None
    ) -> list[qp.PartitionInfo]:
        """Tail and head of each partition the store holds (of ``topics``, or of all)."""
        req = qp.HeadsRequest(next(_ids), None if topics is None else tuple(topics))
        reply = self.request(req, timeout)
        if isinstance(reply, qp.ErrorReply):
            raise QueryError(f"{self.endpoint}: {reply.message}", reply.code)
        if not isinstance(reply, qp.HeadsReply):
            raise ProtocolError(f"{self.endpoint} answered HEADS with {type(reply).__name__}")
        if reply.truncated:
            log.warning("query.heads_truncated endpoint=%s", self.endpoint)
        return list(reply.partitions)

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
        req = qp.ReadRequest(next(_ids), topic, partition, from_offset, max_records, max_bytes)
        reply = self.request(req, timeout)
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


def records(reply: qp.ReadReply, start: int = 0, end: int | None = None) -> Iterator[QueryRecord]:
    """The records of a READ reply at offsets ``start..end-1``, decoded per the store's profile.

    Signed batches are verified first (:func:`verified_batches`).
    """
    topic, partition = reply.topic, reply.partition
    for first, timestamp_ms, recs in verified_batches(reply):
        if end is not None and first >= end:
            return
        for offset, (key, value) in enumerate(recs, first):
            if offset < start:
                continue
            if end is not None and offset >= end:
                return
            yield QueryRecord(topic, partition, offset, key, value, timestamp_ms)


def verified_batches(
    reply: qp.ReadReply,
) -> Iterator[tuple[int, int | None, Sequence[tuple[bytes | None, bytes]]]]:
    """``(first offset, timestamp_ms, ((key, value), ...))`` per batch of a READ reply.

    Signed batches are verified (signature, partition, offsets) before they are
    yielded; an rfc46 batch is one record with no key and no timestamp.
    """
    if reply.profile != "signed":
        for first, last, blob in reply.batches():
            if first != last:
                raise WireError(f"{reply.topic}/{reply.partition}: an rfc46 batch holds one record")
            yield first, None, ((None, blob),)
        return
    from ..wire import signed

    for first, last, blob in reply.batches():
        batch = signed.verify_batch(blob, topic=reply.topic, partition=reply.partition)
        if batch.first_offset != first or batch.last_offset != last:
            raise WireError(
                f"{reply.topic}/{reply.partition}: stored batch {first}..{last} holds offsets "
                f"{batch.first_offset}..{batch.last_offset}"
            )
        yield first, batch.timestamp_ms, batch.records
