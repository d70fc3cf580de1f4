"""Binding a listening socket in a process that may just have closed one on the same address.

Closing a zmq socket is asynchronous: its listener is torn down later by the context's IO
thread. A node stopped and started again in one process (a tower restarted by its embedder, a
test restarting a tower on its port) can therefore find its own previous listener still there,
so "address in use" is retried for a short while before it is believed.
"""

from __future__ import annotations

import errno
import time

import zmq

REBIND_SECONDS = 2.0
"""How long a bind finding its address in use waits for an earlier listener to go."""


def bind_patiently(sock: zmq.Socket[bytes], endpoint: str, seconds: float = REBIND_SECONDS) -> None:
    """``sock.bind(endpoint)``, retrying EADDRINUSE for up to ``seconds``; other errors and a
    still-used address raise the :class:`zmq.ZMQError`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            sock.bind(endpoint)
            return
        except zmq.ZMQError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                raise
        time.sleep(0.05)
