"""Namespaces as separate hosts: nodes reach each other, a cut drops them, a heal restores them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.faults import netns
from tests.procs import Proc

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(60),
    pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable())),
]

SERVER = """
import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 7000))
s.listen(16)
print("listening", flush=True)
for _ in range(100):
    s.accept()[0].close()
"""


def reaches(topo: netns.Topology, src: str, dst: str) -> bool:
    code = f"import socket; socket.create_connection(({topo.addresses[dst]!r}, 7000), timeout=1)"
    run = subprocess.run(
        [*topo.prefix_args(src), sys.executable, "-c", code], capture_output=True, timeout=20
    )
    return run.returncode == 0


def test_cut_and_heal_between_namespaces() -> None:
    topo = netns.Topology(["a", "b", "c"], prefix="dfktest")
    topo.create()
    server = None
    try:
        server = Proc([*topo.prefix_args("a"), sys.executable, "-c", SERVER, topo.addresses["a"]])
        server.wait_line_stdout("listening")
        assert reaches(topo, "b", "a") and reaches(topo, "c", "a")
        topo.cut(["a"], ["b"])
        assert not reaches(topo, "b", "a")
        assert reaches(topo, "c", "a")  # only the cut pair is parted
        topo.heal()
        assert reaches(topo, "b", "a")
    finally:
        if server is not None:
            server.kill()
        topo.destroy()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "dfktest" not in listed
