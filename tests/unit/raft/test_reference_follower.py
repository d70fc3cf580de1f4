"""Our leader core against followers that behave like the ØMQ RAFT reference server.

The reference follower (zmq-raft 0.5.0, ``lib/server/raft_router.js``) on every
AppendEntries: bounces a repeat of the *last* request id only; dies ("cowardly refusing
to truncate log ... before commit index") when ``prev`` is below its commit index;
otherwise, when the term at ``prev`` matches, truncates its log at ``prev + 1`` and
appends the entries (even when they are already there) and sets
``commit = min(leader commit, last index)``; when it does not match, answers false with
its ``last index + 1`` as the hint if its log is shorter than ``prev``, with no hint
otherwise. The model raises when an AppendEntries truncates what the follower
acknowledged, even when the same entries are written again (``FileLog`` truncates, then
writes: a crash in between loses them).

The leader's requests to one follower travel in order (one ZeroMQ connection) but may
be lost; the newest may be delivered twice (the shell's resend). Answers may be lost,
duplicated and reordered. After every event: no reference follower died, none holds
less than it acknowledged, and the leader never believes a follower holds more of its
log than it does (so nothing committed stands on fewer peers than a majority).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.raft.codec import Entry
from dafka.raft.core import AppendEntries, AppendResponse, Message, RaftCore

from .sim import elect, new_core, outbox

NOW = 1_700_000_000.0


class Fatal(AssertionError):
    pass


class Dropped(AssertionError):
    pass


@dataclass
class RefFollower:
    """A model of the reference follower's AppendEntries handler (see the module doc)."""

    id: str
    log: list[Entry] = field(default_factory=list)
    commit: int = 0
    term: int = 0
    last_seq: int | None = None
    last_reply: AppendResponse | None = None
    acked: int = 0

    def on_append(self, m: AppendEntries) -> AppendResponse | None:
        if m.seq == self.last_seq:
            return self.last_reply  # the bounce: the cached answer again
        self.last_seq = m.seq
        if m.term < self.term:
            reply = AppendResponse(self.id, m.frm, self.term, False, None, None, m.prev_index)
        else:
            if m.term > self.term:
                self.term, self.acked = m.term, 0
            if m.prev_index < self.commit:
                raise Fatal(
                    f"{self.id}: refusing to truncate log to {m.prev_index} "
                    f"before commit index: {self.commit}"
                )
            have = 0 if m.prev_index == 0 else self.term_at(m.prev_index)
            if have == m.prev_term:
                if m.prev_index < self.acked:
                    # even if the same entries follow: truncated, then written again, on
                    # disk (a crash in between loses what it acknowledged)
                    raise Dropped(f"{self.id}: truncates at {m.prev_index + 1}, acked {self.acked}")
                del self.log[m.prev_index :]
                self.log.extend(m.entries)
                if m.commit > self.commit:
                    self.commit = min(m.commit, len(self.log))
                self.acked = max(self.acked, m.last_index)
                reply = AppendResponse(self.id, m.frm, self.term, True)
            else:
                hint = len(self.log) if len(self.log) < m.prev_index else None
                reply = AppendResponse(self.id, m.frm, self.term, False, None, hint)
        self.last_reply = AppendResponse(
            reply.frm,
            reply.to,
            reply.term,
            reply.success,
            reply.conflict_term,
            reply.conflict_index,
            m.prev_index,
            m.last_index,
            m.seq,
        )
        return self.last_reply

    def term_at(self, index: int) -> int | None:
        return self.log[index - 1].term if 0 < index <= len(self.log) else None


def reqid(n: int) -> bytes:
    return int(NOW).to_bytes(4, "big") + n.to_bytes(8, "big")


class Cluster:
    """Leader ``a`` (our core), followers ``b`` (reference model) and ``c`` (reference
    model, or our core with ``ours=True``)."""

    def __init__(self, rng: random.Random, ours: bool, drop: float) -> None:
        self.rng = rng
        self.drop = drop
        self.leader = new_core("a", "abc", max_inflight=8, max_batch_entries=4)
        elect(self.leader)
        self.b = RefFollower("b")
        self.c: RefFollower | RaftCore = new_core("c", "abc") if ours else RefFollower("c")
        self.requests: dict[str, list[AppendEntries]] = {"b": [], "c": []}
        self.last_sent: dict[str, AppendEntries | None] = {"b": None, "c": None}
        self.answers: list[Message] = []
        self.proposed = 0
        self.collect()

    def collect(self) -> None:
        for m in outbox(self.leader):
            if isinstance(m, AppendEntries) and m.to in self.requests:
                self.requests[m.to].append(m)
                self.last_sent[m.to] = m
        if isinstance(self.c, RaftCore):
            self.answers.extend(outbox(self.c))

    def follower(self, pid: str) -> RefFollower | RaftCore:
        return self.b if pid == "b" else self.c

    def deliver(self, pid: str, m: AppendEntries) -> None:
        f = self.follower(pid)
        if isinstance(f, RefFollower):
            reply = f.on_append(m)
            if reply is not None:
                self.answers.append(reply)
        else:
            f.step(m)

    def event(self, op: int) -> None:
        rng = self.rng
        if op == 0:
            self.proposed += 1
            self.leader.propose(b"x%d" % self.proposed, reqid(self.proposed), NOW)
        elif op == 1:
            self.leader.tick()
        elif op in (2, 3, 4):
            pid = "b" if op != 4 else "c"
            queue = self.requests[pid]
            if queue:
                m = queue.pop(0)
                if rng.random() >= self.drop:
                    self.deliver(pid, m)
        elif op == 5:
            pid = rng.choice("bc")
            last = self.last_sent[pid]
            if last is not None and not self.requests[pid]:
                self.deliver(pid, last)  # the shell's resend of the newest request
        elif op in (6, 7, 8) and self.answers:
            k = rng.randrange(len(self.answers))
            m = self.answers[k] if op == 8 else self.answers.pop(k)
            if rng.random() >= self.drop:
                self.leader.step(m)
        self.collect()
        self.check()

    def agreed(self, pid: str) -> int:
        """How long a prefix of the leader's log the follower holds."""
        f = self.follower(pid)
        n = 0
        if isinstance(f, RefFollower):
            for e in f.log:
                if self.leader.term_at(e.index) != e.term:
                    break
                n = e.index
            return n
        while n < f.last_index and f.term_at(n + 1) == self.leader.term_at(n + 1):
            n += 1
        return n

    def check(self) -> None:
        agreed = {pid: self.agreed(pid) for pid in "bc"}
        for pid in "bc":
            f = self.follower(pid)
            if isinstance(f, RefFollower):
                assert agreed[pid] >= f.acked, f"{pid} lost acknowledged entries"
            match = self.leader.replication.progress[pid].match
            assert match <= agreed[pid], f"leader counts {pid} at {match}, it holds {agreed[pid]}"
        # 3 voters: what the leader committed is on it and at least one follower
        assert self.leader.commit <= max(agreed.values()), "committed on a minority"


def run(seed: int, ops: list[int], ours: bool, drop: float) -> Cluster:
    cluster = Cluster(random.Random(seed), ours, drop)
    for op in ops:
        cluster.event(op)
    return cluster


def settle(cluster: Cluster) -> None:
    """No more losses: everything sent gets through until all agree."""
    cluster.drop = 0.0
    for _ in range(200):
        if all(cluster.agreed(pid) == cluster.leader.last_index for pid in "bc"):
            if cluster.leader.commit == cluster.leader.last_index:
                break
        for _ in range(3):
            cluster.event(1)
        for op in (2, 4, 6, 6, 6, 6):
            for _ in range(10):
                cluster.event(op)
    for pid in "bc":
        assert cluster.agreed(pid) == cluster.leader.last_index, pid


@pytest.mark.parametrize("ours", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_pipelined_leader_never_makes_a_reference_follower_drop_or_die(seed, ours):
    rng = random.Random(seed)
    ops = [rng.choice([0, 0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8]) for _ in range(1000)]
    cluster = run(seed, ops, ours, drop=0.1)
    assert cluster.leader.is_leader
    settle(cluster)
    assert cluster.leader.commit == cluster.leader.last_index


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    ops=st.lists(st.integers(0, 8), min_size=1, max_size=400),
    ours=st.booleans(),
    drop=st.sampled_from([0.0, 0.05, 0.3]),
)
def test_reference_followers_under_any_interleaving(seed, ops, ours, drop):
    cluster = run(seed, ops, ours, drop)
    if cluster.leader.is_leader:
        settle(cluster)


def test_heartbeat_is_never_behind_what_is_in_flight():
    """The measured failure: entries in flight, then a heartbeat at ``match`` truncated
    them on the reference follower after it had acknowledged them."""
    leader = new_core("a", "ab", max_inflight=8, max_batch_entries=4)
    elect(leader)
    follower = RefFollower("b")
    for m in outbox(leader):
        leader.step(follower.on_append(m))  # probe matched: replicate
    for n in range(1, 9):
        leader.propose(b"x", reqid(n), NOW)
    sent = [m for m in outbox(leader) if isinstance(m, AppendEntries)]
    leader.tick()  # heartbeat due (heartbeat_tick=1)
    beats = [m for m in outbox(leader) if isinstance(m, AppendEntries) and not m.entries]
    assert beats
    hi = max(m.last_index for m in sent)
    assert all(m.prev_index >= hi for m in beats), (hi, [m.prev_index for m in beats])


def test_a_stale_rejection_does_not_move_next_back():
    leader = new_core("a", "ab", max_inflight=8, max_batch_entries=2)
    elect(leader)
    follower = RefFollower("b")
    for m in outbox(leader):
        leader.step(follower.on_append(m))  # probe matched: replicate
    for n in range(1, 7):
        leader.propose(b"x", reqid(n), NOW)
    first, *rest = [m for m in outbox(leader) if isinstance(m, AppendEntries)]
    answers = [follower.on_append(m) for m in rest]  # the first one was lost
    assert not any(a.success for a in answers)
    leader.step(answers[0])  # acted on: re-probe at b's log end
    reprobe = [m for m in outbox(leader) if isinstance(m, AppendEntries)]
    assert reprobe and reprobe[0].prev_index == len(follower.log)
    nxt = leader.replication.progress["b"].next
    for a in answers[1:]:
        leader.step(a)  # rejections of what was sent before the re-probe: stale
    assert leader.replication.progress["b"].next == nxt
    assert not [m for m in outbox(leader) if isinstance(m, AppendEntries)]
    del first


def test_a_duplicated_old_rejection_is_ignored():
    """A rejection answered before the last re-probe, delivered again after it: acting on
    it would re-probe below what the follower committed meanwhile (and kill it)."""
    leader = new_core("a", "abc", max_inflight=8, max_batch_entries=2)
    elect(leader)
    b, c = RefFollower("b"), RefFollower("c")

    def sent(pid: str) -> list[AppendEntries]:
        return [m for m in pending if isinstance(m, AppendEntries) and m.to == pid]

    pending = outbox(leader)
    for f in (b, c):
        for m in sent(f.id):
            leader.step(f.on_append(m))  # the probes match: replicate
    for n in range(1, 7):
        leader.propose(b"x%d" % n, reqid(n), NOW)
    pending = outbox(leader)
    for m in sent("c"):
        leader.step(c.on_append(m))  # c has it all: the leader commits 7
    assert leader.commit == 7
    first, *rest = sent("b")  # the first one to b is lost
    rejections = [b.on_append(m) for m in rest]
    assert not any(r.success for r in rejections)
    leader.step(rejections[0])
    pending = outbox(leader)
    (reprobe,) = sent("b")
    leader.step(b.on_append(reprobe))  # matched: replicate from there
    pending = outbox(leader)
    answers = [b.on_append(m) for m in sent("b")]
    leader.tick()  # a heartbeat, and the rest of the log
    pending = outbox(leader)
    answers += [b.on_append(m) for m in sent("b")]  # b now holds and commits 7
    assert b.commit == 7
    nxt = leader.replication.progress["b"].next
    leader.step(rejections[-1])  # a duplicate of an old rejection
    assert leader.replication.progress["b"].next == nxt
    pending = outbox(leader)
    for m in sent("b"):
        b.on_append(m)  # would be "refusing to truncate log ... before commit index"
    for a in answers:
        leader.step(a)
    assert leader.replication.progress["b"].match == 7
    del first
