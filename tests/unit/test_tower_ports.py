"""Ports a tower picks for itself (``--bind HOST:0``) lie below the ephemeral range: a
port there can be handed to an outgoing connection between our check and our bind (a
CI run lost a tower that way: ``tcp://127.0.0.1:57572 is already in use``)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import tower.metadata as tm


def test_a_picked_block_is_free_and_below_the_ephemeral_range() -> None:
    low, _high = tm.ephemeral_port_range()
    for _ in range(20):
        base = tm.free_port_block("127.0.0.1")
        assert tm.PICKED_PORT_FLOOR <= base and base + tm.PORTS_PER_TOWER <= low
        for port in range(base, base + tm.PORTS_PER_TOWER):
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))


def test_the_range_is_read_from_the_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "range"
    f.write_text("40000\t60999\n")
    monkeypatch.setattr(tm, "EPHEMERAL_RANGE_FILE", str(f))
    assert tm.ephemeral_port_range() == (40_000, 60_999)
    for _ in range(20):
        assert tm.free_port_block("127.0.0.1") + tm.PORTS_PER_TOWER <= 40_000
    monkeypatch.setattr(tm, "EPHEMERAL_RANGE_FILE", str(tmp_path / "missing"))
    assert tm.ephemeral_port_range() == (32_768, 60_999)


def test_a_host_with_little_room_below_its_ephemeral_range_gets_the_kernels_pick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ip_local_port_range`` tuned to start at 1024 leaves nothing below it: the picks
    are the kernel's, spread as before, not one block every time (or none at all)."""
    f = tmp_path / "range"
    f.write_text("1024 65535\n")
    monkeypatch.setattr(tm, "EPHEMERAL_RANGE_FILE", str(f))
    picks = {tm.free_port_block("127.0.0.1") for _ in range(10)}
    assert len(picks) > 1 and all(p >= 1024 for p in picks), picks
