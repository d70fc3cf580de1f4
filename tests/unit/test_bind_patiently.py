"""bind_patiently: an address still held by our own closing listener is waited for, briefly."""

from __future__ import annotations

import errno
from typing import Any

import pytest
import zmq

from dafka.io.bind import bind_patiently


class FakeSocket:
    def __init__(self, failures: int, code: int = errno.EADDRINUSE) -> None:
        self.failures = failures
        self.code = code
        self.calls = 0

    def bind(self, endpoint: str) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise zmq.ZMQError(self.code)


def test_an_address_freed_meanwhile_is_bound() -> None:
    sock: Any = FakeSocket(failures=3)
    bind_patiently(sock, "tcp://127.0.0.1:1", seconds=5)
    assert sock.calls == 4


def test_an_address_still_in_use_raises_after_the_wait() -> None:
    sock: Any = FakeSocket(failures=10**9)
    with pytest.raises(zmq.ZMQError) as info:
        bind_patiently(sock, "tcp://127.0.0.1:1", seconds=0.2)
    assert info.value.errno == errno.EADDRINUSE and 2 <= sock.calls < 50


def test_other_errors_are_not_retried() -> None:
    sock: Any = FakeSocket(failures=1, code=errno.EACCES)
    with pytest.raises(zmq.ZMQError):
        bind_patiently(sock, "tcp://127.0.0.1:1", seconds=5)
    assert sock.calls == 1


def test_a_real_listener_closed_in_this_process_can_be_bound_again() -> None:
    ctx = zmq.Context()
    try:
        first = ctx.socket(zmq.ROUTER)
        port = first.bind_to_random_port("tcp://127.0.0.1")
        first.close(linger=0)
        again = ctx.socket(zmq.ROUTER)
        bind_patiently(again, f"tcp://127.0.0.1:{port}")
        again.close(linger=0)
    finally:
        ctx.term()
