"""The leader's own log write overlaps replication (thesis §10.2.1): it counts towards a
commit only once reported durable (``Ready.write``, ``RaftCore.log_durable``)."""

from __future__ import annotations

import pytest

from dafka.errors import RaftError
from dafka.raft.codec import Entry, EntryType
from dafka.raft.core import AppendEntries, AppendResponse, RaftCore, Ready, Role
from dafka.raft.core._log import RaftLog

from .sim import Network, drain, elect, new_core, put

NOW = 1_700_000_000.0


def reqid(n: int) -> bytes:
    return int(NOW).to_bytes(4, "big") + n.to_bytes(8, "big")


def entry(index: int, term: int) -> Entry:
    return Entry(index, term, EntryType.STATE, reqid(index), b"x")


def take(core: RaftCore) -> list[Ready]:
    """Every Ready, sent and applied, the log writes still running (not durable)."""
    readies = []
    while core.has_ready():
        rd = core.ready()
        core.advance(rd, durable=False)
        readies.append(rd)
    return readies


def ack(core: RaftCore, frm: str, last: int) -> None:
    core.step(AppendResponse(frm, core.id, core.term, True, None, None, last - 1, last, 0))


def leader_of_three() -> RaftCore:
    lead = new_core("a", "abc")
    elect(lead)
    drain(lead)  # the checkpoint entry, durable
    for peer in "bc":
        ack(lead, peer, lead.last_index)
    drain(lead)
    assert lead.commit == lead.last_index == lead.stable_index
    return lead


def test_the_leader_sends_before_its_fsync_but_counts_itself_only_once_durable():
    lead = leader_of_three()
    index = lead.propose(put("k", 1), reqid(1), NOW).index
    readies = take(lead)
    (rd,) = [rd for rd in readies if rd.entries]
    assert rd.write and [e.index for e in rd.entries] == [index]
    assert any(isinstance(m, AppendEntries) and m.entries for m in rd.messages)
    ack(lead, "b", index)  # the leader and b hold it, but the leader's copy is not durable
    assert lead.commit == index - 1
    assert not [e for r in take(lead) for e in r.committed_entries]
    lead.log_durable(rd.write)
    assert lead.stable_index == index and lead.commit == index
    assert [e.index for r in drain(lead) for e in r.committed_entries] == [index]


def test_a_majority_of_followers_commits_without_the_leaders_own_fsync():
    lead = leader_of_three()
    index = lead.propose(put("k", 1), reqid(1), NOW).index
    take(lead)
    ack(lead, "b", index)
    ack(lead, "c", index)
    assert lead.commit == index and lead.stable_index == index - 1  # two durable copies of 3


def test_a_single_voter_commits_only_after_its_own_fsync():
    lead = new_core("a", "a")
    elect(lead)
    drain(lead)
    index = lead.propose(put("k", 1), reqid(1), NOW).index
    (rd,) = [rd for rd in take(lead) if rd.entries]
    assert lead.commit == index - 1
    lead.log_durable(rd.write)
    assert lead.commit == index
    assert [e.index for r in drain(lead) for e in r.committed_entries] == [index]


def test_reports_cover_every_earlier_write_and_old_reports_move_nothing():
    lead = new_core("a", "a")
    elect(lead)
    drain(lead)
    writes = []
    for n in range(3):
        lead.propose(put("k", n), reqid(10 + n), NOW)
        writes += [rd.write for rd in take(lead) if rd.entries]
    assert writes == sorted(writes) and len(set(writes)) == 3
    lead.log_durable(writes[1])
    assert lead.commit == lead.last_index - 1
    lead.log_durable(writes[0])  # late and out of order: nothing moves back
    assert lead.commit == lead.last_index - 1
    lead.log_durable(writes[2])
    assert lead.commit == lead.last_index
    with pytest.raises(RaftError):
        lead.log_durable(writes[2] + 1)  # never handed out: a shell bug


def test_a_report_for_entries_a_truncation_replaced_does_not_count():
    # a leader of term t steps down with its last entry still being written; the new
    # leader replaces that entry; the old write's report must not make the new one durable
    old = new_core("a", "abc")
    elect(old)
    drain(old)
    for peer in "bc":
        ack(old, peer, old.last_index)
    drain(old)
    term, base = old.term, old.last_index
    index = old.propose(put("k", 1), reqid(1), NOW).index
    (written,) = [rd for rd in take(old) if rd.entries]
    new_term = term + 1
    replacement = Entry(index, new_term, EntryType.CHECKPOINT, bytes(12), b"")
    old.step(AppendEntries("b", "a", new_term, base, term, base, (replacement,), 1))
    assert old.role is Role.FOLLOWER and old.term_at(index) == new_term
    assert old.stable_index == base
    rd = old.ready()
    assert rd.truncate_from == index and rd.entries == (replacement,)
    old.advance(rd, durable=False)  # (a shell would write a follower's log at once)
    old.log_durable(written.write)  # the report of the replaced entry's write
    assert old.stable_index == base
    old.log_durable(rd.write)
    assert old.stable_index == index


def test_the_log_ties_reports_to_writes_not_to_terms():
    log = RaftLog(0, 0, [entry(1, 1)])
    log.append([entry(2, 1), entry(3, 1)])
    _, written = log.take_unstable()
    first = log.last_write
    assert [e.index for e in written] == [2, 3] and log.stable_index == 1
    log.truncate(3)  # the same (index, term) comes back: only its new write may count
    log.append([entry(3, 1)])
    log.take_unstable()
    second = log.last_write
    assert not log.stable_to(first) and log.stable_index == 1
    assert log.stable_to(second) and log.stable_index == 3
    log.restore(10, 2)
    assert log.stable_index == 3 and not log.stable_to(second)


def test_a_leader_crashing_before_its_fsync_loses_no_committed_entry() -> None:
    # simulated cluster (tests/unit/raft/sim.py, lazy_fsync): a writes e, b acknowledges
    # it, c is cut off; a crashes before its own write is durable, b becomes unreachable,
    # and a (without e) and c elect a leader. Had a counted its unflushed copy, e would
    # have been committed on a and b, and lost.
    net = Network("abc", seed=7, lazy_fsync=True)
    lead = net.wait_leader()
    for node in net.nodes.values():
        node.flush()
        node.process()
    net.settle()
    a = lead.id
    b, c = sorted(set("abc") - {a})
    net.isolate(c)
    index = net.propose(a, put("e", 1)).index
    assert index is not None
    net.settle()  # b stores e durably and acknowledges it
    assert net.nodes[b].core.last_index >= index  # type: ignore[union-attr]
    assert lead.core.commit < index and not lead.core.stable_index >= index  # type: ignore[union-attr]
    net.crash(a)  # before its flush: e is gone from a's disk
    assert net.nodes[a].disk.last_index < index
    net.heal()
    net.isolate(b)
    net.restart(a)
    net.wait_leader(600)  # a or c, neither has e: fine, since e was never committed
    net.heal()
    net.commit_value(a, "after", 2, ticks=600)
    net.assert_converged()
