"""A ``dafka-kafka`` listener as a child process, for the Kafka tests and benchmarks/kafka.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.procs import Proc, py, wait_until

LISTENING = re.compile(r"% kafka listening on (\S+):(\d+)")


@dataclass
class Listener:
    proc: Proc
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def start_listener(state_dir: Path, *args: str) -> Listener:
    """``dafka-kafka ARGS --port 0 --state-dir STATE_DIR``, once it says where it listens
    (stderr or stdout)."""
    proc = Proc(py("dafka.cli.kafka", *args, "--port", "0", "--state-dir", str(state_dir)))

    def listening() -> re.Match[str] | None:
        for line in (*proc.stderr_lines, *bytes(proc.stdout).decode(errors="replace").splitlines()):
            m = LISTENING.search(line)
            if m is not None:
                return m
        if proc.p.poll() is not None:
            raise AssertionError(f"dafka-kafka exited {proc.p.returncode}:\n{proc.stderr}")
        return None

    try:
        m = wait_until(listening, 20, what="% kafka listening on HOST:PORT")
    except AssertionError:
        proc.kill()
        raise
    assert isinstance(m, re.Match)
    return Listener(proc, m.group(1), int(m.group(2)))
