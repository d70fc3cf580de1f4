"""decide_update's shortcuts for the common answers decide as the full decoder does."""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import example, given
from hypothesis import strategies as st

from dafka.errors import RaftError
from dafka.raft.client._clientanswers import Outcome, decide_update
from dafka.raft.codec import RaftWireError
from dafka.raft.codec import _wire as w

REQID = bytes(range(12))


def _by_the_decoder(frames: list[bytes]) -> tuple[Outcome, Any]:
    """The decision from RequestUpdateResponse.decode, as decide_update made it before
    its shortcuts."""
    resp = w.RequestUpdateResponse.decode(frames)
    if resp.status is w.UpdateStatus.COMMITTED:
        return Outcome.DONE, resp.index
    if resp.status is w.UpdateStatus.PENDING:
        return Outcome.PENDING, None
    if resp.status is w.UpdateStatus.NOT_LEADER:
        return Outcome.REDIRECT, resp.leader
    return Outcome.FAIL, RaftError


def _decision(decide: Any, frames: list[bytes]) -> tuple[Any, Any]:
    try:
        outcome, value = decide(frames)
    except RaftWireError:
        return "wire-error", None
    return outcome, type(value) if isinstance(value, Exception) else value


frame = st.one_of(
    st.binary(max_size=14),
    st.sampled_from([REQID, b"\x01", b"\x00", b"\x02", b""]),
    st.integers(-(2**40), 2**64 - 1).map(lambda n: msgpack.packb(n)),
    st.floats(allow_nan=True).map(lambda f: msgpack.packb(f)),
    st.sampled_from([msgpack.packb("p2"), msgpack.packb(None), msgpack.packb(True)]),
)


@given(st.lists(frame, min_size=1, max_size=4))
@example([REQID, b"\x01", msgpack.packb(42)])  # committed
@example([REQID, b"\x01"])  # accepted, not committed (the reference sends it first)
@example([REQID, b"\x02", msgpack.packb(2**32)])  # any non-zero first byte is true
@example([REQID, b"\x01", msgpack.packb(-1)])  # not an index
@example([REQID[:11], b"\x01"])  # a short reqid
@example([REQID, b"\x00", msgpack.packb("p2")])  # not the leader
def test_shortcuts_decide_as_the_decoder(frames: list[bytes]) -> None:
    decoder = _decision(lambda f: _by_the_decoder(f), frames)
    assert _decision(decide_update, frames) == decoder
