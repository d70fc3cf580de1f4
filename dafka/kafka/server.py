"""The Kafka listener's TCP shell: asyncio streams, bounded per connection and in total.

Per connection, a reader reads frames (each size checked before its bytes are read, and
counted against a listener-wide budget of request bytes held), decodes them and queues at
most ``max_in_flight``; one worker answers them one at a time in request order (Kafka
handles a connection's requests in order, and a producer's pipelined batches must be
written in order). Backend calls run in a bounded thread pool; group API calls on the loop
thread. A client that does not read its responses: once its unsent bytes pass
``max_unsent_bytes`` its worker waits for them to drain (so its reader stops at the queue
bound), and after ``slow_timeout`` it is closed; the others are never held up by it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .frames import (
    API_VERSIONS,
    GROUP_VERSIONS,
    Refusal,
    Request,
    api_versions_response,
    check_size,
    encode_response,
    error_response,
    parse_request,
    version_table,
)
from .handlers import Handlers
from .model import Code, Deferred, GroupApi

__all__ = [
    "KafkaServer",
    "RateLog",
    "ServerLimits",
    "admit",
    "must_wait_for_budget",
    "must_wait_for_reader",
]

log = logging.getLogger(__name__)

MIB = 1024 * 1024
FETCH = 1


@dataclass(frozen=True, slots=True)
class ServerLimits:
    max_connections: int = 1000
    max_connections_per_host: int = 100
    """Connections one client address holds at once (Kafka's ``max.connections.per.ip``), so
    that one host cannot take all ``max_connections``."""
    first_request_timeout: float = 30.0
    """Seconds a new connection may take to send its first request (then ``idle_timeout``)."""
    max_request_bytes: int = 100 * MIB
    """Kafka's ``socket.request.max.bytes``: a larger frame closes its connection."""
    max_buffered_bytes: int = 512 * MIB
    """Request bytes held by the listener at once (read, not yet answered), over all
    connections; a reader waits for room before reading a request's body."""
    small_request_bytes: int = MIB
    """Requests up to this size are read at once, whatever the budget holds."""
    request_timeout: float = 60.0
    """Seconds a request's bytes may take to arrive once its size was read."""
    max_in_flight: int = 5
    """Requests of one connection read ahead of the one being answered."""
    max_unsent_bytes: int = 8 * MIB
    """Response bytes a client may leave unread before its requests stop being read."""
    slow_timeout: float = 30.0
    """Seconds a client may leave its responses unread (over ``max_unsent_bytes``)."""
    idle_timeout: float = 600.0
    """Seconds a connection may send nothing (Kafka's ``connections.max.idle.ms``)."""
    pool_threads: int = 32
    """Threads answering requests that call the backend, but Fetch."""
    fetch_threads: int = 64
    """Threads answering Fetch requests, which wait for records (long polls): apart, so
    that idle consumers never hold up a producer's answers."""


def admit(open_connections: int, limits: ServerLimits, from_host: int = 0) -> bool:
    """Whether one more connection is served, ``from_host`` being open from its address."""
    # guard: listener-connections-capped
    if open_connections >= limits.max_connections:
        return False
    # guard: listener-connections-per-host-capped
    return from_host < limits.max_connections_per_host


def must_wait_for_budget(size: int, limits: ServerLimits) -> bool:
    """Whether a request of ``size`` bytes waits for room in the listener's budget of
    request bytes before it is read (small ones never do)."""
    return size > limits.small_request_bytes


def must_wait_for_reader(unsent: int, limits: ServerLimits) -> bool:
    """Whether a connection's worker waits for its client to read before answering more."""
    # guard: listener-unsent-bytes-capped
    return unsent > limits.max_unsent_bytes


class RateLog:
    """At most one line per ``period`` seconds for one kind of event; counts the rest."""

    def __init__(self, period: float = 10.0) -> None:
        self.period = period
        self._last = -1e18
        self.skipped = 0

    def allow(self, now: float) -> bool:
        if now - self._last >= self.period:
            self._last = now
            return True
        self.skipped += 1
        return False

    def take_skipped(self) -> int:
        n, self.skipped = self.skipped, 0
        return n


class _ByteBudget:
    """Request bytes held, over all connections. A large request waits for room; a small
    one is counted but never waits, so that clients holding the budget with large requests
    they send slowly (or never finish) cannot hold up anybody's small requests."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._cond = asyncio.Condition()

    async def take(self, n: int, wait: bool = True) -> None:
        async with self._cond:
            if wait:
                await self._cond.wait_for(lambda: self.used == 0 or self.used + n <= self.total)
            self.used += n

    async def give(self, n: int) -> None:
        async with self._cond:
            self.used -= n
            self._cond.notify_all()


class KafkaServer:
    """Serve ``handlers`` (and ``groups`` for the consumer-group APIs) on ``host:port``."""

    def __init__(
        self,
        handlers: Handlers,
        groups: GroupApi | None = None,
        host: str = "127.0.0.1",
        port: int = 9092,
        limits: ServerLimits = ServerLimits(),
        group_versions: Mapping[int, tuple[int, int]] | None = None,
    ) -> None:
        """``group_versions``: the versions the group API serves (default: the frames
        module's GROUP_VERSIONS)."""
        self.handlers = handlers
        self.groups = groups
        self.host = host
        self.port = port
        self.limits = limits
        self.group_keys = groups.api_keys if groups is not None else frozenset()
        self.table = version_table(self.group_keys, group_versions or GROUP_VERSIONS)
        self.pool = ThreadPoolExecutor(limits.pool_threads, thread_name_prefix="kafka-backend")
        self.fetch_pool = ThreadPoolExecutor(limits.fetch_threads, thread_name_prefix="kafka-fetch")
        self.connections = 0
        self._per_host: dict[str, int] = {}
        """Open connections by client address."""
        self._tokens = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._budget: _ByteBudget | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._too_many = RateLog()
        self._refusals = RateLog(1.0)

    async def start(self, sock: socket.socket | None = None) -> int:
        """Listen (on ``sock`` if given: bound already, so that its port could be
        advertised before); return the bound port."""
        self._loop = asyncio.get_running_loop()
        self._budget = _ByteBudget(self.limits.max_buffered_bytes)
        if self.groups is not None:
            loop = self._loop

            def wake() -> None:
                loop.call_soon_threadsafe(self._poll_groups)

            self.groups.set_waker(wake)
        if sock is not None:
            self._server = await asyncio.start_server(self._serve, sock=sock, limit=64 * 1024)
        else:
            self._server = await asyncio.start_server(
                self._serve, self.host, self.port, limit=64 * 1024, reuse_address=True
            )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        if self._timer is not None:
            self._timer.cancel()
        if self.groups is not None:
            self.groups.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.fetch_pool.shutdown(wait=False, cancel_futures=True)

    # --- the group API -----------------------------------------------------------------

    def _poll_groups(self) -> None:
        if self.groups is None:
            return
        try:
            answers = self.groups.poll(time.time())
        except Exception:
            log.exception("the group API's poll failed")
            answers = []
        for token, response in answers:
            future = self._pending.pop(token, None)
            if future is not None and not future.done():
                future.set_result(response)
        self._arm_timer()

    def _arm_timer(self) -> None:
        if self.groups is None or self._loop is None:
            return
        when = self.groups.next_wakeup()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if when is not None:
            delay = max(0.0, when - time.time())
            self._timer = self._loop.call_later(delay, self._poll_groups)

    async def _group_answer(self, req: Request) -> Any:
        assert self.groups is not None and self._loop is not None
        token = next(self._tokens)
        try:
            answer = self.groups.handle(
                token, req.api_key, req.api_version, req.body, None, time.time()
            )
        except Exception:
            log.exception("the group API failed on api %d v%d", req.api_key, req.api_version)
            return error_response(req.api_key, req.api_version, Code.UNKNOWN_SERVER_ERROR)
        finally:
            self._arm_timer()
        if not isinstance(answer, Deferred):
            return answer
        future: asyncio.Future[Any] = self._loop.create_future()
        self._pending[answer.token] = future
        try:
            return await future
        finally:
            self._pending.pop(answer.token, None)

    # --- connections -------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)
        from_host = self._per_host.get(host, 0)
        if not admit(self.connections, self.limits, from_host):
            now = time.monotonic()
            if self._too_many.allow(now):
                log.warning(
                    "refused a connection from %s: %d open, %d from its host, the most served "
                    "(%d more refused since the last line)",
                    peer,
                    self.connections,
                    from_host,
                    self._too_many.take_skipped(),
                )
            writer.close()
            return
        self.connections += 1
        self._per_host[host] = from_host + 1
        self._writers.add(writer)
        this = asyncio.current_task()
        if this is not None:
            self._tasks.add(this)
        writer.transport.set_write_buffer_limits(high=self.limits.max_unsent_bytes)
        queue: asyncio.Queue[tuple[Request | Refusal, int] | None] = asyncio.Queue(
            self.limits.max_in_flight
        )
        worker = asyncio.create_task(self._answer(queue, writer, peer))
        self._tasks.add(worker)
        try:
            await self._read(reader, queue, peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("connection from %s failed", peer)
        finally:
            try:
                await queue.put(None)  # the worker answers what was read, then ends
                await worker
            except asyncio.CancelledError:  # the listener closes
                worker.cancel()
                raise
            except Exception:
                log.exception("connection from %s failed", peer)
            finally:
                self.connections -= 1
                left = self._per_host.pop(host, 1) - 1
                if left > 0:
                    self._per_host[host] = left
                self._writers.discard(writer)
                self._tasks.discard(worker)
                if this is not None:
                    self._tasks.discard(this)
                writer.close()

    async def _read(
        self,
        reader: asyncio.StreamReader,
        queue: asyncio.Queue[tuple[Request | Refusal, int] | None],
        peer: object,
    ) -> None:
        assert self._budget is not None
        # guard: listener-first-request-deadline
        idle = self.limits.first_request_timeout
        while True:
            try:
                head = await asyncio.wait_for(reader.readexactly(4), idle)
            except TimeoutError:
                log.info("closing the connection of %s: idle %.0f s", peer, idle)
                return
            except asyncio.IncompleteReadError:
                return
            idle = self.limits.idle_timeout
            size = int.from_bytes(head, "big", signed=True)
            why = check_size(size, self.limits.max_request_bytes)
            if why is not None:
                log.warning("closing the connection of %s: %s", peer, why)
                return
            # guard: listener-small-requests-never-wait
            await self._budget.take(size, wait=must_wait_for_budget(size, self.limits))
            try:
                try:
                    # guard: listener-request-body-deadline
                    frame = await asyncio.wait_for(
                        reader.readexactly(size), self.limits.request_timeout
                    )
                except TimeoutError:
                    log.warning(
                        "closing the connection of %s: a request of %d bytes not received "
                        "in %.0f s",
                        peer,
                        size,
                        self.limits.request_timeout,
                    )
                    await self._budget.give(size)
                    return
                parsed = parse_request(frame, self.table)
            except BaseException:
                await self._budget.give(size)
                raise
            del frame
            await queue.put((parsed, size))
            if isinstance(parsed, Refusal) and parsed.answer is None:
                return

    async def _answer(
        self,
        queue: asyncio.Queue[tuple[Request | Refusal, int] | None],
        writer: asyncio.StreamWriter,
        peer: object,
    ) -> None:
        assert self._budget is not None
        while True:
            item = await queue.get()
            if item is None:
                return
            parsed, size = item
            try:
                if writer.is_closing():
                    continue
                data = await self._respond(parsed, peer)
                if data is None:
                    continue
                writer.write(data)
                if must_wait_for_reader(writer.transport.get_write_buffer_size(), self.limits):
                    try:
                        await asyncio.wait_for(writer.drain(), self.limits.slow_timeout)
                    except TimeoutError:
                        log.warning(
                            "closing the connection of %s: %d bytes of responses unread for %.0f s",
                            peer,
                            writer.transport.get_write_buffer_size(),
                            self.limits.slow_timeout,
                        )
                        writer.transport.abort()
                    except ConnectionError:
                        writer.transport.abort()
            finally:
                await self._budget.give(size)

    async def _respond(self, parsed: Request | Refusal, peer: object) -> bytes | None:
        if isinstance(parsed, Refusal):
            if self._refusals.allow(time.monotonic()):
                skipped = self._refusals.take_skipped()
                more = f" ({skipped} more since the last line)" if skipped else ""
                log.warning(
                    "refused from %s: %s, answered %s%s",
                    peer,
                    parsed.reason,
                    parsed.code.name if parsed.answer is not None else "nothing (closed)",
                    more,
                )
            return parsed.answer
        req = parsed
        if req.api_key == API_VERSIONS:
            body = api_versions_response(req.api_version, Code.NONE, self.table)
            return encode_response(req.api_key, req.api_version, req.correlation_id, body)
        if req.api_key in self.group_keys:
            body = await self._group_answer(req)
            return encode_response(req.api_key, req.api_version, req.correlation_id, body)
        assert self._loop is not None
        # guard: listener-fetch-own-pool
        pool = self.fetch_pool if req.api_key == FETCH else self.pool
        return await self._loop.run_in_executor(pool, self._handle, req)

    def _handle(self, req: Request) -> bytes | None:
        """In the pool: answer and encode one request (a failure answered, logged)."""
        try:
            body = self.handlers.handle(req)
            if body is None:
                return None
            return encode_response(req.api_key, req.api_version, req.correlation_id, body)
        except Exception:
            log.exception("api %d v%d failed", req.api_key, req.api_version)
            body = error_response(req.api_key, req.api_version, Code.UNKNOWN_SERVER_ERROR)
            return encode_response(req.api_key, req.api_version, req.correlation_id, body)
