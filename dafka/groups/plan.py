"""The member's decision, each turn: which partitions to give up and which to take (pure).

A member reads a partition only while it *holds* it; it announces what it holds
in each heartbeat. Each turn it computes the assignment over the members alive
in its view (itself included) and the partitions any of them knows:

* it revokes what it holds and no longer owns (the caller commits them first);
* it takes what it owns only once no other live member says it holds it (the
  previous owner published a heartbeat without it, left, or went silent for
  the session timeout), or once such a claim has stood for ``grace`` seconds
  (the session timeout) while the rule gave the partition to this member: an
  honest previous owner stops reading as soon as it sees the new assignment,
  so a claim that outlives that is a member that does not let go, and must
  not stall the partition for as long as it keeps heartbeating;
* it fences itself: when its own last heartbeat was read back from the group
  topic more than ``fence`` seconds ago (``session_timeout * 2/3`` by default),
  the others may soon count it dead and take its partitions, so it revokes them
  all and takes nothing until its heartbeats come back. This is also the join:
  a member takes nothing before its first heartbeat is read back.

So two members read one partition only if a member's heartbeats reach the
others late by more than the session timeout while its own come back to it in
time, and then only until its next turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .assign import PartitionKey, assign
from .view import MemberState

__all__ = ["Plan", "plan"]


Contests = Mapping[tuple[str, PartitionKey], float]
"""(other member, partition of this member's target it claims) -> since when (local time)."""


@dataclass(frozen=True)
class Plan:
    revoke: frozenset[PartitionKey]
    take: frozenset[PartitionKey]
    target: frozenset[PartitionKey]  # what the rule gives this member
    contests: Contests = field(default_factory=dict)  # to pass to the next turn


def plan(
    me: str,
    topics: Iterable[str],
    held: frozenset[PartitionKey],
    alive: Mapping[str, MemberState],
    known: Iterable[PartitionKey],
    now: float,
    fence: float,
    contests: Contests | None = None,
    grace: float = float("inf"),
) -> Plan:
    mine = alive.get(me)
    if mine is None or now - mine.seen_at > fence:
        return Plan(revoke=held, take=frozenset(), target=frozenset(), contests=contests or {})
    members: dict[str, Iterable[str]] = {m: s.topics for m, s in alive.items()}
    members[me] = tuple(topics)
    parts: set[PartitionKey] = set(known)
    for s in alive.values():
        parts.update(s.parts)
    target = assign(members, parts)[me]
    before = contests or {}
    now_contested: dict[tuple[str, PartitionKey], float] = {}
    others: set[PartitionKey] = set()
    for m, s in alive.items():
        if m == me:
            continue
        for k in s.held & target:
            since = now_contested[(m, k)] = before.get((m, k), now)
            # guard: claim-what-rule-gives-another
            if now - since < grace:
                others.add(k)
    revoke = held - target
    take = frozenset(k for k in target - held if k not in others)
    return Plan(revoke=frozenset(revoke), take=take, target=target, contests=now_contested)
