"""``dafka-store``, ``dafka-tower`` and ``dafka-local`` wait for SIGTERM or SIGINT with
:func:`dafka.cli.common.wait_for_signal`, then shut down.

Its signal handler used to set a ``threading.Event``. A Python handler runs on the main
thread between two bytecodes, so a second signal arriving while the first handler was inside
``Event.set`` ran a second handler there, which waited for ever on the event's lock, held by
the first (py-spy: nested handlers in ``Condition.__enter__``). A supervisor's SIGTERM and an
operator's Ctrl-C close together were enough; found on a tower that ignored ``timeout``'s
SIGTERM.

The handler that replaced it wrote a byte to a pipe, and took no lock, but it was still
Python: under a storm each handler ran inside the one before, until RecursionError broke out
of the code after the wait (1 of 20 waiters on CI, with the default limit of 1,000 frames).
The waiter here lowers the limit to 30 frames, so that nesting is fatal far sooner (8 of 20 waiters
here with that handler), and does some work after the wait, as a shutdown does, under
the same storm. Now the handler is a C function: nothing nests.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WAITER = (
    "from dafka.cli.common import wait_for_signal\n"
    "said = []\n"
    "def ready():\n"  # called once the handlers are installed
    "    if not said:\n"
    "        said.append(print('ready', flush=True))\n"
    "import sys\n"
    "sys.setrecursionlimit(30)\n"  # nesting handlers would break it at once
    "wait_for_signal(ready)\n"
    "def step(n):\n"  # a shutdown's worth of Python calls, under the storm
    "    return n + 1\n"
    "n = 0\n"
    "for _ in range(20_000):\n"
    "    n = step(n)\n"
    "print('stopped', n, flush=True)\n"
)
TRIALS = 20
STORM_SECONDS = 15.0


def _storm(p: subprocess.Popen[str]) -> bool:
    """SIGTERM and SIGINT in turn until the waiter says it stopped (True) or
    :data:`STORM_SECONDS` pass (False: it hangs)."""
    assert p.stdout is not None
    fd = p.stdout.fileno()
    deadline = time.monotonic() + STORM_SECONDS
    seen = b""
    while time.monotonic() < deadline:
        for sig in (signal.SIGTERM, signal.SIGINT) * 20:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                break
        if select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            seen += chunk
            if b"stopped" in seen or not chunk:
                return b"stopped" in seen
    return False


def test_a_storm_of_sigterm_and_sigint_stops_the_wait_every_time() -> None:
    hung = 0
    for _ in range(TRIALS):
        p = subprocess.Popen([sys.executable, "-c", WAITER], stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            hung += not _storm(p)
        finally:
            p.kill()  # it may be shutting down under the storm: only the wait is tested
            p.wait()
            if p.stdout is not None:
                p.stdout.close()
    assert hung == 0, f"{hung} of {TRIALS} waiters did not stop under the storm"
