"""The mapping between core messages (:mod:`dafka.raft.core._messages`) and wire RPCs
(:mod:`dafka.raft.codec._wire`) used by the peer shell (:mod:`dafka.raft.peer._peer`)."""

from __future__ import annotations

from typing import Any

from .. import codec as w
from .. import core as m
from ..codec import RaftWireError

__all__ = ["core_request", "core_response", "truncating", "wire_request"]


def wire_request(msg: m.Request, msg_id: int, cluster: bytes) -> Any:
    if isinstance(msg, m.AppendEntries):
        return w.AppendEntries(
            msg_id,
            cluster,
            msg.frm,
            msg.term,
            msg.prev_index,
            msg.prev_term,
            msg.commit,
            msg.entries,
        )
    if isinstance(msg, m.RequestVote):
        return w.RequestVote(
            msg_id,
            cluster,
            msg.frm,
            msg.term,
            msg.last_index,
            msg.last_term,
            msg.pre_vote,
            msg.transfer,
        )
    if isinstance(msg, m.InstallSnapshot):
        return w.InstallSnapshot(
            msg_id,
            cluster,
            msg.frm,
            msg.term,
            msg.index,
            msg.term_of_index,
            msg.offset,
            msg.total_size,
            msg.chunk,
        )
    return w.TimeoutNow(msg_id, cluster, msg.frm, msg.term)


def core_request(msg: Any, me: str) -> m.Request:
    if isinstance(msg, w.AppendEntries):
        # ``seq`` is not on the wire; the message id rides in it so that the core's
        # answer (which echoes it) finds its way back to this request
        return m.AppendEntries(
            msg.leader,
            me,
            msg.term,
            msg.prev_index,
            msg.prev_term,
            msg.commit,
            msg.entries,
            msg.msg_id,
        )
    if isinstance(msg, w.RequestVote):
        return m.RequestVote(
            msg.candidate,
            me,
            msg.term,
            msg.last_log_index,
            msg.last_log_term,
            msg.pre_vote,
            msg.transfer,
        )
    if isinstance(msg, w.InstallSnapshot):
        return m.InstallSnapshot(
            msg.leader,
            me,
            msg.term,
            msg.last_index,
            msg.last_term,
            msg.offset,
            msg.total_size,
            msg.chunk,
        )
    return m.TimeoutNow(msg.leader, me, msg.term)


def truncating(request: m.Request) -> bool:
    return isinstance(request, m.AppendEntries | m.InstallSnapshot)


def core_response(resp: Any, frm: str, me: str) -> m.Message:
    if isinstance(resp, w.AppendEntriesResponse):
        return m.AppendResponse(frm, me, resp.term, resp.success, resp.conflict_term, resp.hint)
    if isinstance(resp, w.RequestVoteResponse):
        return m.VoteResponse(frm, me, resp.term, resp.granted)
    if isinstance(resp, w.InstallSnapshotResponse):
        return m.SnapshotResponse(frm, me, resp.term, resp.next_offset)
    if isinstance(resp, w.TimeoutNowResponse):
        return m.TimeoutNowResponse(frm, me, resp.term)
    raise RaftWireError(f"unexpected response {type(resp).__name__}")
