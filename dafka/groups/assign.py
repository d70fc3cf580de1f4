"""The assignment rule: which live member reads which partition (pure).

Every member computes it alike from the same inputs: the sorted live members
(with the topics each subscribes to) and the partitions known to the group.
Per topic, partitions go in sorted order to the member that ranks them highest
(a hash of member and partition, "rendezvous" ranking) among those subscribed
to the topic and still under their quota (``partitions // members``, and one
more for the first ``partitions % members`` to reach it); so every partition
has exactly one owner, counts differ by at most one within a topic, and the
result does not depend on the order the inputs are given in. The ranking keeps
most partitions where they were when a member comes or goes (no claim of
minimal movement: the quotas move some).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

PartitionKey = tuple[str, str]

__all__ = ["PartitionKey", "assign", "rank"]


def rank(member: str, topic: str, partition: str) -> bytes:
    """How much ``member`` wants ``(topic, partition)``: higher wins (ties by member ID)."""
    data = f"{topic}\0{partition}\0{member}".encode()
    return hashlib.blake2b(data, digest_size=8).digest()


def assign(
    members: Mapping[str, Iterable[str]], partitions: Iterable[PartitionKey]
) -> dict[str, frozenset[PartitionKey]]:
    """Owner of every partition: ``{member: its partitions}`` (every member present).

    ``members`` maps each live member to the topics it subscribes to. A partition of
    a topic no member subscribes to has no owner. Among the members of a topic,
    ``len(partitions) % len(members)`` of them get one more than the others."""
    subscribed: dict[str, list[str]] = {}
    for member in sorted(members):
        for topic in set(members[member]):
            subscribed.setdefault(topic, []).append(member)
    by_topic: dict[str, list[str]] = {}
    for topic, partition in set(partitions):
        by_topic.setdefault(topic, []).append(partition)
    owned: dict[str, set[PartitionKey]] = {member: set() for member in members}
    for topic in sorted(by_topic):
        candidates = subscribed.get(topic)
        if not candidates:
            continue
        parts = sorted(by_topic[topic])
        base, extra = divmod(len(parts), len(candidates))
        load = dict.fromkeys(candidates, 0)
        bigs = 0  # members given base + 1 (at most ``extra`` of them)
        for partition in parts:
            best = max(
                (m for m in candidates if load[m] < base or (load[m] == base and bigs < extra)),
                key=lambda m: (rank(m, topic, partition), m),
            )
            load[best] += 1
            if load[best] > base:
                bigs += 1
            owned[best].add((topic, partition))
    return {member: frozenset(keys) for member, keys in owned.items()}
