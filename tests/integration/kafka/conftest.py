"""A ``dafka-kafka --memory`` listener on an ephemeral port, for the real clients' tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.procs import Proc, py


class Listener:
    def __init__(self, *args: str) -> None:
        self.proc = Proc(py("dafka.cli.kafka", "--memory", "--port", "0", *args))
        m = self.proc.wait_line(r"% kafka listening on ([0-9.]+):(\d+)")
        self.host = m.group(1)
        self.port = int(m.group(2))
        self.bootstrap = f"{self.host}:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener("--log-level", "info")
    try:
        yield server
    finally:
        server.stop()
