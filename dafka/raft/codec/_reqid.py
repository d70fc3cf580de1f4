"""12-byte request ids (``reqid``) of the ØMQ RAFT protocol.

Layout, as the spec gives it (the MongoDB ObjectId layout)::

    0..3   seconds since the Unix epoch, big-endian
    4..6   machine identifier
    7..8   process id (low 16 bits), big-endian
    9..11  counter, big-endian, starting at a random value, wrapping at 2**24

RequestUpdate and ConfigUpdate ids are written into the log, which makes those
RPCs idempotent; the seconds field bounds how long an id stays acceptable.
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
import threading
import time
from collections.abc import Callable

from ._frames import RaftWireError
from ._types import REQID_SIZE

__all__ = [
    "REQUEST_ID_FUTURE_MAX",
    "REQUEST_ID_PAST_MAX",
    "REQUEST_ID_TTL",
    "ReqIdGenerator",
    "default_machine_id",
    "parse_reqid",
    "reqid_acceptable",
    "reqid_expired",
    "reqid_hex",
    "reqid_time",
]

REQUEST_ID_TTL = 8 * 3600.0
"""Seconds after which an update with this id is rejected as expired (spec: 8 hours)."""
REQUEST_ID_PAST_MAX = 7 * 3600.0
"""How old a *new* (never seen) update id may be and still be accepted."""
REQUEST_ID_FUTURE_MAX = 15 * 60.0
"""How far in the future (clock skew) an update id may be and still be accepted."""

_COUNTER_MOD = 1 << 24


def default_machine_id() -> bytes:
    """Three bytes derived from the host name (stable across restarts of one machine)."""
    return hashlib.blake2b(socket.gethostname().encode(), digest_size=3).digest()


class ReqIdGenerator:
    """Makes unique reqids. Thread-safe; clock and randomness are injectable for tests.

    ``clock`` returns seconds since the epoch; ``rng`` seeds the counter's start value.
    """

    __slots__ = ("_clock", "_counter", "_lock", "_prefix_tail")

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        machine_id: bytes | None = None,
        pid: int | None = None,
    ) -> None:
        machine = default_machine_id() if machine_id is None else machine_id
        if len(machine) != 3:
            raise ValueError("machine_id must be 3 bytes")
        process = os.getpid() if pid is None else pid
        self._prefix_tail = machine + (process & 0xFFFF).to_bytes(2, "big")
        self._clock = clock
        self._counter = (rng or random.SystemRandom()).randrange(_COUNTER_MOD)
        self._lock = threading.Lock()

    def __call__(self) -> bytes:
        return self.next()

    def next(self) -> bytes:
        with self._lock:
            counter = self._counter
            self._counter = (counter + 1) % _COUNTER_MOD
        seconds = int(self._clock()) & 0xFFFFFFFF
        return seconds.to_bytes(4, "big") + self._prefix_tail + counter.to_bytes(3, "big")


def _check(reqid: bytes) -> bytes:
    if len(reqid) != REQID_SIZE:
        raise RaftWireError(f"a reqid is {REQID_SIZE} bytes, got {len(reqid)}")
    return reqid


def reqid_time(reqid: bytes) -> int:
    """The seconds-since-epoch the reqid was made at."""
    return int.from_bytes(_check(reqid)[:4], "big")


def reqid_expired(reqid: bytes, now: float, ttl: float = REQUEST_ID_TTL) -> bool:
    """True once ``ttl`` seconds have passed since the reqid was made."""
    return now - reqid_time(reqid) >= ttl


def reqid_acceptable(
    reqid: bytes,
    now: float,
    past_max: float = REQUEST_ID_PAST_MAX,
    future_max: float = REQUEST_ID_FUTURE_MAX,
) -> bool:
    """Whether a reqid never seen before is fresh enough to start an update."""
    age = now - reqid_time(reqid)
    return -future_max <= age <= past_max


def reqid_hex(reqid: bytes) -> str:
    """24 lower-case hex characters, the way the spec's examples print them."""
    return _check(reqid).hex()


def parse_reqid(text: str) -> bytes:
    """The inverse of :func:`reqid_hex`; raises :class:`RaftWireError` on anything else."""
    try:
        value = bytes.fromhex(text)
    except ValueError as exc:
        raise RaftWireError(f"not a hex reqid: {text!r}") from exc
    return _check(value)
