"""dafka.io.malloc: buffers of a batch's size are reused, not faulted in afresh."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

_FAULTS = """
import sys
from dafka.io.malloc import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def faults():
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])
blob = b"x" * (900 * 1024)
def drain():  # as a store does per drain: a few batches received, copied, then freed
    received = [bytes(blob) for _ in range(6)]
    values = [b"8 bytes:" + r for r in received]
    del received, values
for _ in range(3):  # warm up: the allocator settles
    drain()
before = faults()
for _ in range(20):
    drain()
print(faults() - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_batch_sized_buffers_are_reused_once_freed_memory_is_kept() -> None:
    kept = _faults("keep")
    assert kept < 20 * 12  # not a page per 4 kB of each buffer
    assert _faults("default") > 20 * 12 * 50  # without: most of them faulted in afresh
