"""Raft's safety properties (paper Figure 3) under Hypothesis-generated fault schedules.

Every schedule runs on the simulated network of :mod:`.sim`, whose checker verifies
after *every* event (one delivery, one tick, one client call):

* Election Safety: at most one leader per term;
* Leader Append-Only: a leader never truncates or rewrites its log;
* Log Matching: an (index, term) pair identifies the entry and everything before it;
* Leader Completeness: a leader holds every entry committed in an earlier term;
* State Machine Safety: no two peers apply different entries (or reach different
  states) at one index; committed entries are never truncated.

Then the faults stop and the cluster must elect a leader, commit and converge.
Examples are bounded so the module stays within a few seconds; for a long hunt run
``HYPOTHESIS_PROFILE=thorough pytest tests/unit/raft/test_safety.py``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dafka.errors import NotLeader, ProposalDropped

from .sim import Network, peer, put

IDS = "abcde"

fault = st.one_of(
    st.tuples(st.just("chaos"), st.integers(60, 200)),
    st.tuples(st.just("run"), st.integers(3, 30)),
    st.tuples(st.just("propose"), st.integers(1, 4)),
    st.tuples(st.just("crash"), st.integers(0, 4)),
    st.tuples(st.just("restart"), st.integers(0, 4)),
    st.tuples(st.just("isolate"), st.integers(0, 4)),
    st.tuples(st.just("partition"), st.permutations(range(5)), st.integers(1, 4)),
    st.tuples(st.just("heal")),
    st.tuples(st.just("compact"), st.integers(0, 4), st.integers(0, 3)),
    st.tuples(st.just("transfer"), st.integers(0, 4)),
)
membership = st.tuples(st.just("config"), st.sets(st.sampled_from(IDS), min_size=1, max_size=5))

# bounded for the default ("ci") profile; HYPOTHESIS_PROFILE=thorough runs the profile's count
EXAMPLES = 30 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else settings().max_examples
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def schedules(step=fault):
    return st.lists(step, min_size=5, max_size=25)


CHAOS = ["run", "run", "run", "propose", "propose", "crash", "restart", "isolate", "heal"]
CHAOS += ["partition", "compact"]


def chaos(net: Network, steps: int) -> list:
    """``steps`` faults drawn from the simulation's own seeded rng."""
    rng, ops = net.rng, []
    for _ in range(steps):
        kind = rng.choice(CHAOS)
        if kind == "run":
            ops.append(("run", rng.randint(1, 6)))
        elif kind == "propose":
            ops.append(("propose", rng.randint(1, 4)))
        elif kind == "partition":
            order = list(range(5))
            rng.shuffle(order)
            ops.append(("partition", order, rng.randint(1, 4)))
        elif kind == "heal":
            ops.append(("heal",))
        elif kind == "compact":
            ops.append(("compact", rng.randrange(5), rng.randint(0, 3)))
        else:
            ops.append((kind, rng.randrange(5)))
    return ops


def play(net: Network, schedule, voters: str) -> None:
    net.wait_leader(300)
    ids = sorted(net.nodes)
    for op in schedule:
        kind = op[0]
        if kind == "chaos":
            play_ops(net, chaos(net, op[1]), ids)
        else:
            play_ops(net, [op], ids)


def play_ops(net: Network, ops, ids) -> None:
    for op in ops:
        net.run(net.rng.randint(0, 3))  # time passes between faults
        kind = op[0]
        if kind == "run":
            net.run(op[1])
        elif kind == "propose":
            lead = net.leader()
            for _ in range(op[1] if lead else 0):
                try:
                    net.propose(lead.id, put(f"k{net.serial % 3}", net.serial))
                except (NotLeader, ProposalDropped):
                    break
        elif kind == "crash":
            net.crash(ids[op[1] % len(ids)])
        elif kind == "restart":
            net.restart(ids[op[1] % len(ids)])
        elif kind == "isolate":
            net.isolate(ids[op[1] % len(ids)])
        elif kind == "partition":
            order = [ids[k % len(ids)] for k in op[1]]
            net.partition(order[: op[2]], order[op[2] :])
        elif kind == "heal":
            net.heal()
        elif kind == "compact":
            node = net.nodes[ids[op[1] % len(ids)]]
            if node.alive:
                node.compact(keep=op[2])
        elif kind == "transfer":
            lead = net.leader()
            target = ids[op[1] % len(ids)]
            if lead and target in {p.id for p in lead.core.config.peers}:
                lead.core.transfer_leader(target)
                lead.process()
        elif kind == "config":
            lead = net.leader()
            if lead is not None:
                lead.core.propose_config(
                    tuple(peer(p) for p in sorted(op[1])), net.new_reqid(), net.now()
                )
                lead.process()


def recover(net: Network) -> None:
    """Faults stop: the cluster elects, commits a new entry and converges."""
    net.heal()
    net.drop = net.dup = 0.0
    for pid in net.nodes:
        net.restart(pid)
    net.wait_leader(600)

    def settled() -> bool:  # a leader whose latest config is final and committed
        lead = net.leader()
        cfg = lead.core.config if lead else None
        return lead is not None and not cfg.is_joint and lead.core.config_index <= lead.core.commit

    assert net.run(600, settled)
    lead = net.leader()
    voters = [p.id for p in lead.core.config.peers]
    net.commit_value(lead.id, "final", net.serial, ticks=600, nodes=voters)
    net.run(30)
    net.settle()
    live = [net.nodes[p] for p in voters]
    assert len({(n.sm.applied, n.sm.digest()) for n in live}) == 1
    net.checker.full_log_matching()


@SETTINGS
@given(st.integers(0, 2**32 - 1), schedules())
def test_election_safety_log_matching_leader_completeness_under_faults(seed, schedule):
    net = Network(IDS, seed=seed, drop=0.05, dup=0.05, max_delay=3)
    play(net, schedule, IDS)
    recover(net)


@SETTINGS
@given(st.integers(0, 2**32 - 1), schedules())
def test_safety_when_the_leaders_own_fsync_lags_and_crashes_lose_it(seed, schedule):
    """Leaders send and apply before their own write is durable (docs/raft.md §7); a crash
    loses what was not flushed. A leader that counted its unflushed log towards a commit
    would lose committed entries here (Leader Completeness, State Machine Safety)."""
    net = Network(IDS, seed=seed, drop=0.05, dup=0.05, max_delay=3, lazy_fsync=True)
    play(net, schedule, IDS)
    recover(net)


@SETTINGS
@given(st.integers(0, 2**32 - 1), schedules())
def test_election_safety_without_pre_vote_or_check_quorum(seed, schedule):
    """More contested elections: no pre-vote, no leader lease."""
    net = Network(
        "abc", seed=seed, drop=0.1, dup=0.05, max_delay=4, pre_vote=False, check_quorum=False
    )
    play(net, schedule, "abc")
    recover(net)


@SETTINGS
@given(st.integers(0, 2**32 - 1), schedules())
def test_state_machine_safety_with_snapshots_and_restarts(seed, schedule):
    """Tiny chunks and batches: snapshots are streamed in many pieces, often interrupted."""
    net = Network(
        "abc",
        seed=seed,
        drop=0.05,
        dup=0.05,
        max_delay=2,
        snapshot_chunk_size=9,
        max_batch_entries=2,
        max_inflight=2,
    )
    play(net, schedule, "abc")
    recover(net)


@SETTINGS
@given(st.integers(0, 2**32 - 1), schedules(st.one_of(fault, membership)))
def test_leader_append_only_and_safety_across_membership_changes(seed, schedule):
    net = Network("abc", extra="de", seed=seed, drop=0.05, dup=0.05, max_delay=2)
    play(net, schedule, "abc")
    recover(net)
