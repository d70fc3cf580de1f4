"""``dafka-kafka``'s command line: its listening line, one-line errors and exit codes."""

from __future__ import annotations

import socket

import pytest

from tests.integration.kafka.conftest import Listener
from tests.procs import Proc, py

pytestmark = pytest.mark.integration


def test_a_busy_port_is_one_error_line_and_exit_2(listener: Listener) -> None:
    p = Proc(py("dafka.cli.kafka", "--memory", "--port", str(listener.port)))
    assert p.wait(20) == 2
    assert p.stderr.startswith(f"error: cannot listen on 127.0.0.1:{listener.port}")
    assert len(p.stderr.splitlines()) == 1


def test_sigterm_stops_it_and_frees_the_port() -> None:
    server = Listener()
    assert server.proc.terminate() == 0
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", server.port))
