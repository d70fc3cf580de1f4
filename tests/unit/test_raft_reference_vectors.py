"""Golden vectors: frames the ØMQ RAFT reference server (zmq-raft 0.5.0) really sent.

``tests/data/raft/zmq_raft_0.5.0_frames.json`` was captured with
``tests/data/raft/capture_zmq_raft.py`` (one reference peer, this script posing as the
other peer of its cluster). We must decode what it sends, and what we send a reference
leader must be the same bytes for the same answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dafka.raft.codec import Entry, EntryType
from dafka.raft.codec import _wire as w
from dafka.raft.core import AppendEntries as CoreAppend
from dafka.raft.core import AppendResponse

from .raft.sim import drain, new_core
from .raft.test_reference_follower import RefFollower

DATA = Path(__file__).resolve().parents[1] / "data" / "raft" / "zmq_raft_0.5.0_frames.json"
CASES = {c["name"]: c for c in json.loads(DATA.read_text())["cases"]}


def frames(case: str, key: str = "response") -> list[bytes]:
    return [bytes.fromhex(f) for f in CASES[case][key]]


def ae_response(case: str) -> w.AppendEntriesResponse:
    got = w.decode_response(w.MsgType.APPEND_ENTRIES, frames(case))
    assert isinstance(got, w.AppendEntriesResponse)
    return got


def test_the_gap_answer_carries_the_followers_log_end_plus_one():
    request = w.decode_request(frames("append-gap", "request"))
    assert isinstance(request, w.AppendEntries) and request.prev_index == 10
    got = ae_response("append-gap")
    assert (got.term, got.success, got.next_index, got.hint) == (1000, False, 3, 2)
    assert got.conflict_term is None


@pytest.mark.parametrize("case", ["append-term-mismatch", "append-stale-term"])
def test_rejections_without_a_hint(case):
    got = ae_response(case)
    assert (got.term, got.success, got.next_index, got.hint) == (1000, False, None, None)


@pytest.mark.parametrize("case", ["append-success", "append-heartbeat"])
def test_success(case):
    got = ae_response(case)
    assert (got.term, got.success, got.next_index) == (1000, True, None)


@pytest.mark.parametrize(
    "case", ["append-success", "append-gap", "append-term-mismatch", "append-heartbeat"]
)
def test_we_encode_the_same_bytes_for_the_same_answer(case):
    got = ae_response(case)
    assert got.encode() == frames(case)


def test_our_follower_answers_a_gap_as_the_reference_does():
    """Our core, in the reference's situation (log 1-2, asked at prev 10), and the peer
    shell's mapping to the wire: the same frames."""
    follower = new_core("ref", ["ref", "lead"])
    entries = tuple(
        Entry(k, 1000, EntryType.STATE, k.to_bytes(12, "big"), b"golden") for k in (1, 2)
    )
    follower.step(CoreAppend("lead", "ref", 1000, 0, 0, 0, entries, seq=1))
    drain(follower)
    follower.step(CoreAppend("lead", "ref", 1000, 10, 1000, 0, (), seq=2))
    (answer,) = [m for rd in drain(follower) for m in rd.messages]
    assert isinstance(answer, AppendResponse) and answer.conflict_index == 2
    wire = w.AppendEntriesResponse(2, answer.term, answer.success, answer.conflict_index + 1)
    assert wire.encode() == frames("append-gap")


def test_the_model_follower_matches_the_real_one():
    """The model used by test_reference_follower.py answers these cases as the real
    server did (so what the model tests prove is about the real thing)."""
    ref = RefFollower("ref")
    for case in ["append-success", "append-gap", "append-term-mismatch", "append-heartbeat"]:
        req = w.decode_request(frames(case, "request"))
        assert isinstance(req, w.AppendEntries)
        core = CoreAppend(
            "lead",
            "ref",
            req.term,
            req.prev_index,
            req.prev_term,
            req.commit,
            req.entries,
            seq=req.msg_id,
        )
        reply = ref.on_append(core)
        want = ae_response(case)
        assert reply is not None
        assert (reply.success, reply.conflict_index) == (want.success, want.hint), case


def test_a_pre_vote_is_a_real_vote_to_the_reference():
    """Why pre-vote must not be sent to reference peers: it granted our pre-vote as a
    real vote and took its term (1005)."""
    req = w.decode_request(frames("prevote-as-real-vote", "request"))
    assert isinstance(req, w.RequestVote) and req.pre_vote and req.term == 1005
    got = w.decode_response(w.MsgType.REQUEST_VOTE, frames("prevote-as-real-vote"))
    assert isinstance(got, w.RequestVoteResponse) and (got.term, got.granted) == (1005, True)


def test_the_reference_dies_truncating_below_its_commit():
    note = CASES["append-below-commit"]["note"]
    assert "refusing to truncate log to 0 before commit index: 2" in note
