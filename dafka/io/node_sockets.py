"""The node loop's socket helpers: reconnect backoff, rate-limited logging of bad input,
whether a socket has unread input, and a heartbeat sent without blocking."""

from __future__ import annotations

import logging
import random

import zmq

log = logging.getLogger(__name__)

__all__ = [
    "RECONNECT_IVL_MAX_MS",
    "RECONNECT_IVL_MS",
    "RateLimitedLog",
    "backoff",
    "has_input",
    "send_heartbeat",
]


RECONNECT_IVL_MS = 100
RECONNECT_IVL_MAX_MS = 2000
"""A connection to a peer or a tower that fails is tried again after 100-200 ms, then twice
as long each time up to 2-3 s (libzmq's exponential backoff). The two are drawn at random
per socket (libzmq adds no jitter of its own once a maximum is set: measured, its retries
came at exactly 100, 200, 400 ... 2000 ms), so the nodes that lost one peer do not retry in
step when it comes back, and a dead peer costs a node a try every 2-3 s for the rest of its
grace, not ten a second (issue 39, 'no positive feedback')."""


def backoff(sock: zmq.Socket[bytes], rng: random.Random | None = None) -> None:
    """Exponential reconnect backoff with a random start and cap, on a connecting socket."""
    draw = rng if rng is not None else random
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_IVL_MS + draw.randrange(RECONNECT_IVL_MS))
    cap = RECONNECT_IVL_MAX_MS + draw.randrange(RECONNECT_IVL_MAX_MS // 2)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, cap)


class RateLimitedLog:
    """Counts malformed input; logs at most one line per ``period`` seconds."""

    def __init__(self, period: float = 5.0, event: str = "wire.malformed") -> None:
        self.count = 0
        self._period = period
        self._last = -period
        self._event = event

    def __call__(self, what: str, exc: Exception | str, now: float) -> None:
        self.count += 1
        if now - self._last >= self._period:
            self._last = now
            log.warning("%s what=%s error=%s total=%d", self._event, what, exc, self.count)


def has_input(*socks: zmq.Socket[bytes]) -> bool:
    """Whether any of ``socks`` has a message queued that the loop did not read."""
    return any(int(s.getsockopt(zmq.EVENTS)) & zmq.POLLIN for s in socks)


def send_heartbeat(xpub: zmq.Socket[bytes], frame: bytes) -> None:
    """Our heartbeat to every peer subscribed to it (a peer at its high-water mark misses
    it, as any message: it hears the next one, or our data, or our beacon)."""
    try:
        xpub.send(frame, zmq.NOBLOCK)
    except zmq.ZMQError:
        pass
