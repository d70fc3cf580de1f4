"""A re-probe's own rejection counts although heartbeats sent since resumed at
``sent_last`` (``Progress.probe_prev``).

The leader never sends an AppendEntries behind the last one it sent (a reference follower
truncates at ``prev + 1``), so a heartbeat after a re-probe goes out at the re-probe's end
and moves ``next`` there. The re-probe's rejection, answered after that heartbeat, used to
be taken for stale: the leader then re-probed at the same place, the heartbeat's rejection
rewound it there again, and a follower whose log diverged further back was never caught up
(hypothesis found it in ``test_election_safety_without_pre_vote_or_check_quorum``: 1,400
ticks for one commit)."""

from __future__ import annotations

from dafka.raft.codec import Entry, EntryType
from dafka.raft.core import AppendEntries, AppendResponse

from .sim import drain, elect, new_core, outbox

NOW = 1_700_000_000


def entry(index: int, term: int) -> Entry:
    reqid = NOW.to_bytes(4, "big") + index.to_bytes(8, "big")
    return Entry(index, term, EntryType.STATE, reqid, b"x")


def to_b(msgs: list) -> list[AppendEntries]:
    return [m for m in msgs if isinstance(m, AppendEntries) and m.to == "b"]


def reject(lead, ae: AppendEntries, conflict: int) -> None:
    lead.step(
        AppendResponse(
            "b", "a", lead.term, False, 1, conflict, ae.prev_index, ae.prev_index, ae.seq
        )
    )


def test_the_rejection_of_a_re_probe_answered_after_a_heartbeat_walks_next_back():
    lead = new_core("a", "abc", entries=[entry(i, 1) for i in range(1, 11)])
    elect(lead)
    drain(lead)
    last = lead.last_index
    for _ in range(lead.heartbeat_tick):
        lead.tick()
    probe = to_b(outbox(lead))[-1]  # b is probed where the leader's log ends
    assert probe.prev_index == last
    reject(lead, probe, 6)  # b's log agrees at most up to 6
    (reprobe,) = to_b(outbox(lead))
    assert reprobe.prev_index == 6 and reprobe.entries[-1].index == last
    for _ in range(lead.heartbeat_tick):  # a heartbeat goes out before b answers
        lead.tick()
    beats = to_b(outbox(lead))
    assert beats and all(b.prev_index == last for b in beats)
    reject(lead, reprobe, 3)  # b's answer to the re-probe: it agrees at most up to 3
    again = to_b(outbox(lead))
    assert again and again[0].prev_index <= 3, [m.prev_index for m in again]
