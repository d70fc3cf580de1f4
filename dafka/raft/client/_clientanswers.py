"""How :class:`~dafka.raft.client.RaftClient` judges one answer to a client RPC.

Each ``decide_*`` function takes the frames of an answer (RequestUpdate, ConfigUpdate,
ClientDispatch) and says what the client's request loop (``RaftClient._run``) does
next: an :class:`Outcome` and a value (the result, the leader hint, the retry delay or
the error to raise). Pure functions over :mod:`dafka.raft.codec._wire`; no sockets.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from ...errors import ConfigError, RaftError
from .. import codec as w
from ..codec import (
    REQID_SIZE,
    RaftWireError,
    decode_bool,
    decode_json,
    decode_json_index,
    decode_uint,
)
from ..peer import DispatchStatus

__all__ = [
    "BUSY_RETRY",
    "Outcome",
    "decide_config",
    "decide_dispatch",
    "decide_update",
    "dispatch_answer",
]

BUSY_RETRY = 0.5
"""Seconds before a ConfigUpdate answered BUSY (another change runs) is sent again."""


class Outcome(IntEnum):
    """What one answer means for the request it answers."""

    DONE = 0
    """Value: the result."""
    PENDING = 1
    """Accepted, not finished: wait on (the response clock restarts)."""
    REDIRECT = 2
    """Value: the leader hint (or None): ask the leader."""
    RETRY = 3
    """Value: seconds to wait before sending again."""
    FAIL = 4
    """Value: the exception to raise."""


def decide_update(frames: list[bytes]) -> tuple[Outcome, Any]:
    if len(frames) in (2, 3) and len(frames[0]) == REQID_SIZE and decode_bool(frames[1]):
        # the answers to nearly every update, decoded as RequestUpdateResponse.decode
        # does, without building one: committed (its LOG INDEX), or accepted and not
        # committed yet (the reference server sends that first for every update)
        if len(frames) == 2:
            return Outcome.PENDING, None
        return Outcome.DONE, decode_json_index(frames[2])
    resp = w.RequestUpdateResponse.decode(frames)
    status = resp.status
    if status is w.UpdateStatus.COMMITTED:
        return Outcome.DONE, resp.index
    if status is w.UpdateStatus.PENDING:
        return Outcome.PENDING, None
    if status is w.UpdateStatus.NOT_LEADER:
        return Outcome.REDIRECT, resp.leader
    # the spec's one final failure: an expired reqid, or (Dafka peers) data over their cap
    # or refused by the leader's admission check (RaftPeer admit=, which logs why)
    return Outcome.FAIL, RaftError(
        "the cluster refused the update: its reqid expired, its data is over the"
        " peers' size limit (PeerOptions.max_entry_bytes, 1 MiB by default), or the"
        " leader's admission check refused it (for the metadata: not signed by an admin"
        " key, or invalid or changing nothing against its state; the leader logs the reason)"
    )


def decide_config(frames: list[bytes]) -> tuple[Outcome, Any]:
    resp = w.ConfigUpdateResponse.decode(frames)
    status = w.ConfigUpdateStatus
    if resp.status is status.ACCEPTED:
        return (Outcome.PENDING, None) if resp.index is None else (Outcome.DONE, resp.index)
    if resp.status is status.NOT_LEADER:
        return Outcome.REDIRECT, resp.leader
    if resp.status is status.BUSY:
        return Outcome.RETRY, BUSY_RETRY
    if resp.status is status.ARGUMENT_ERROR:
        return Outcome.FAIL, ConfigError(f"configuration refused: {resp.error_message}")
    return Outcome.FAIL, RaftError("the configuration update expired")


def dispatch_answer(frames: list[bytes]) -> tuple[int, Any, list[bytes]]:
    if len(frames) < 3:
        raise RaftWireError("a dispatch answer has at least 3 frames")
    return decode_uint(frames[1]), decode_json(frames[2]), list(frames[3:])


def decide_dispatch(frames: list[bytes]) -> tuple[Outcome, Any]:
    status, meta, result = dispatch_answer(frames)
    if status == DispatchStatus.OK:
        return Outcome.DONE, (meta, result)
    if status == DispatchStatus.NOT_LEADER:
        return Outcome.REDIRECT, meta if isinstance(meta, str) else None
    return Outcome.FAIL, RaftError(f"query failed: {meta}")
