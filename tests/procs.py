"""Real processes for integration and end-to-end tests: start, wait for, stop.

Every wait polls until a deadline; nothing sleeps blindly. Every process is
bound to 127.0.0.1 and killed at the end of its test.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.admin import tower_args
from tests.attack_mutants import mutated

ROOT = Path(__file__).resolve().parent.parent


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def rss_mib(pid: int) -> float:
    """The resident set of process ``pid`` now (``VmRSS``), in MiB."""
    return _status_kib(pid, "VmRSS") / 1024


def peak_rss_mib(pid: int) -> float:
    """The peak resident set of process ``pid`` (``VmHWM``), in MiB."""
    return _status_kib(pid, "VmHWM") / 1024


def wait_until(
    pred: Callable[[], object],
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "condition",
) -> object:
    """Poll ``pred`` until it returns something truthy; fail the test at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Proc:
    """A child process whose stderr lines are collected by a reader thread."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        open_stdin: bool = False,
    ) -> None:
        """``stdin`` bytes are written and the pipe closed; ``open_stdin`` leaves the pipe
        (``self.p.stdin``) to the test instead."""
        full_env = dict(os.environ)
        full_env["PYTHONUNBUFFERED"] = "1"
        full_env.update(env or {})
        # under tests.attack_mutants, our modules run with the mutant being tested
        self.args = mutated(list(args))
        self.p = subprocess.Popen(
            self.args,
            stdin=subprocess.PIPE if stdin is not None or open_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=str(cwd or ROOT),
        )
        self.stderr_lines: list[str] = []
        self.stdout = bytearray()
        self._threads = [
            threading.Thread(target=self._read_err, daemon=True),
            threading.Thread(target=self._read_out, daemon=True),
        ]
        for t in self._threads:
            t.start()
        if stdin is not None:
            assert self.p.stdin is not None
            threading.Thread(target=self._write_in, args=(stdin,), daemon=True).start()

    def _write_in(self, data: bytes) -> None:
        assert self.p.stdin is not None
        try:
            self.p.stdin.write(data)
            self.p.stdin.close()
        except BrokenPipeError:
            pass

    def _read_err(self) -> None:
        assert self.p.stderr is not None
        for raw in self.p.stderr:
            self.stderr_lines.append(raw.decode(errors="replace").rstrip("\n"))

    def _read_out(self) -> None:
        assert self.p.stdout is not None
        while True:
            chunk = self.p.stdout.read1(65536)
            if not chunk:
                return
            self.stdout += chunk

    @property
    def stderr(self) -> str:
        return "\n".join(self.stderr_lines)

    def wait_line(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        rx = re.compile(pattern)

        def find() -> re.Match[str] | None:
            for line in self.stderr_lines:
                m = rx.search(line)
                if m:
                    return m
            if self.p.poll() is not None:
                raise AssertionError(
                    f"{self.args} exited {self.p.returncode} before printing {pattern!r}:\n"
                    + self.stderr
                )
            return None

        try:
            m = wait_until(find, timeout, what=f"{pattern!r} from {self.args[-3:]}")
        except AssertionError:
            self.kill()  # and close its pipes: no ResourceWarning in a later test
            raise
        assert isinstance(m, re.Match)
        return m

    def wait_line_stdout(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        rx = re.compile(pattern)

        def find() -> re.Match[str] | None:
            m = rx.search(bytes(self.stdout).decode(errors="replace"))
            if m is None and self.p.poll() is not None:
                raise AssertionError(f"{self.args} exited {self.p.returncode}:\n{self.stderr}")
            return m

        m = wait_until(find, timeout, what=f"{pattern!r} on stdout of {self.args[-3:]}")
        assert isinstance(m, re.Match)
        return m

    def wait(self, timeout: float = 30.0) -> int:
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.args} did not exit within {timeout} s:\n{self.stderr}"
            ) from None
        for t in self._threads:
            t.join(5)
        self._close_pipes()
        return rc

    def _close_pipes(self) -> None:
        for pipe in (self.p.stdin, self.p.stdout, self.p.stderr):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except OSError:
                    pass

    def terminate(self, timeout: float = 10.0) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.wait(10)


def stored_head(data_dir: Path, topic: str, partition: str) -> int | None:
    """The head a store's LMDB holds for a partition, read by a concurrent
    read-only LMDB reader (LMDB allows readers in other processes)."""
    import lmdb

    from dafka.storage.keys import partition_prefix

    if not (data_dir / "data.mdb").exists():
        return None
    env = lmdb.open(str(data_dir), readonly=True, max_dbs=3, lock=True)
    try:
        with env.begin() as txn:
            heads = env.open_db(b"heads", txn=txn, create=False)
            raw = txn.get(partition_prefix(topic, partition), db=heads)
    except lmdb.Error:
        return None
    finally:
        env.close()
    return None if raw is None else int.from_bytes(raw[:8], "big")


def free_port(taken: set[int], host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now, below the ephemeral range (where the kernel
    picks ports for outgoing connections, so they cannot take it before we bind; the
    tower's own pick, ``free_port_block``) and not in ``taken``, to which it is added."""
    from tower.metadata import free_port_block

    for _ in range(200):
        port = free_port_block(host, 1)
        if port not in taken:
            taken.add(port)
            return port
    raise RuntimeError(f"no free port outside {len(taken)} taken after 200 tries")


def free_tower_address(host: str = "127.0.0.1") -> str:
    """``host:port`` where a tower can bind later: ``port`` and ``port + 1`` (its relay)
    free now, and below the ephemeral range. A port from ``--bind :0`` was in that range,
    so while nobody listens there a node reconnecting to it can be handed that very port
    as its own source port and connect to itself, taking the port from the tower."""
    from tower.metadata import free_port_block

    return f"{host}:{free_port_block(host, 2)}"


def py(module: str, *args: str) -> list[str]:
    """Command line running one of our modules with this interpreter."""
    return [sys.executable, "-m", module, *args]


class Tower:
    def __init__(self) -> None:
        self.proc = Proc(py("tower", "--bind", "127.0.0.1:0", *tower_args()))
        m = self.proc.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)")
        self.address = f"127.0.0.1:{m.group(1)}"

    def stop(self) -> None:
        self.proc.kill()


class StoreProc:
    def __init__(self, data_dir: Path, towers: str, *args: str) -> None:
        self.data_dir = data_dir
        self.towers = towers
        self.proc = Proc(
            py("dafka.cli.store", "--data-dir", str(data_dir), "--tower", towers, *args)
        )
        m = self.proc.wait_line(r"store ([0-9A-F]{32}) on (tcp://\S+) query (tcp://[^\s,]+)")
        self.node_id = m.group(1)
        self.endpoint = m.group(2)
        self.query_endpoint = m.group(3)

    def stop(self) -> int:
        return self.proc.terminate()

    def kill(self) -> None:
        self.proc.kill()
