"""What ``dafka groups list|describe`` shows: read from the stores, not from a member.

``describe`` replays the group topic with the members' rules (who the group admits,
``dafka/groups/admission.py``, and what a member may claim or commit; members alive
by the wall-clock time of their last heartbeat, as signed by the member, against
``session_timeout``; committed offsets as members see them) and asks every store it hears of for the heads of the
group's topics (log-end offset = head + 1, the highest over the stores).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import DafkaError, DafkaTimeout, WireError
from ..query.client import QueryClient
from ..query.locator import locate_stores
from .admission import Admission
from .assign import PartitionKey
from .records import PREFIX, decode, group_topic
from .resets import from_config as resets_from_config
from .view import GroupView, MemberState

__all__ = ["GroupInfo", "PartitionRow", "describe", "list_groups", "read_view"]


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: str
    committed: int | None  # next offset the group reads
    end: int | None  # log-end offset (one past the head) over the stores
    member: str | None  # who reads it now

    @property
    def lag(self) -> int | None:
        if self.end is None:
            return None
        return self.end - (self.committed or 0)


@dataclass(frozen=True)
class GroupInfo:
    group: str
    members: tuple[MemberState, ...]
    rows: tuple[PartitionRow, ...]
    records: int  # group-topic records read


def _heads(towers: str | Iterable[str], topics: list[str] | None, timeout: float) -> dict:
    stores = locate_stores(towers)
    if not stores:
        raise DafkaError(f"no store heard through the towers ({towers})")
    ends: dict[PartitionKey, int] = {}
    for endpoint in stores.values():
        with QueryClient(endpoint, timeout=timeout) as client:
            for p in client.heads(topics):
                key = (p.topic, p.partition)
                ends[key] = max(ends.get(key, 0), p.head + 1)
    return ends


GROUP_TAIL_WAIT = 2.0
"""Seconds a group topic's range a store says retention deleted waits for another store
before it is skipped (a consumer's default is 10 s: a describe would time out on it)."""


def list_groups(towers: str | Iterable[str], timeout: float = 5.0) -> list[str]:
    """The groups whose topic some store holds."""
    ends = _heads(towers, None, timeout)
    return sorted({t[len(PREFIX) :] for t, _ in ends if t.startswith(PREFIX)})


def read_view(
    towers: str | Iterable[str], group: str, session_timeout: float = 10.0, timeout: float = 10.0
) -> GroupView:
    """The group as its members see it: its topic replayed to its end with their rules, and
    the admin's resets the metadata holds."""
    from ..consumer import Consumer

    topic = group_topic(group)
    view = GroupView(session_timeout)
    deadline = time.monotonic() + timeout
    # a group topic's retention deletes old group records by design: skipped, and soon
    with Consumer(
        topic,
        towers=towers,
        offset_reset="earliest",
        on_data_loss="skip",
        unserved_after=GROUP_TAIL_WAIT,
    ) as reader:
        metadata = reader.metadata
        if metadata is not None:  # who the group admits and resets, as members see it
            # guard: group-view-waits-metadata-loaded
            if not metadata.wait_loaded(max(0.0, deadline - time.monotonic())):
                where = towers if isinstance(towers, str) else ",".join(towers)
                raise DafkaTimeout(
                    f"the cluster metadata was not read from the towers ({where}) within "
                    f"{timeout:g} s: who group {group!r} admits and its resets are unknown"
                )
            view.set_admission(Admission.from_config(metadata.config, topic))
            view.set_resets(resets_from_config(metadata.config, topic, int(time.time() * 1000)))
        while True:
            runs = reader.poll_batches(10_000, timeout=0.1)
            for run in runs:
                for value in run.values:
                    if value is None:  # a tombstone: no group record
                        continue
                    try:
                        record = decode(value)
                    except WireError:
                        continue
                    view.apply(run.partition, record, run.timestamp or 0.0)
            if not runs and reader.at_end():
                return view
            if time.monotonic() > deadline:
                why = "no store answered" if not reader.store_answered else "not read to its end"
                raise DafkaTimeout(f"group topic {topic}: {why} within {timeout:g} s")


def describe(
    towers: str | Iterable[str],
    group: str,
    session_timeout: float = 10.0,
    timeout: float = 10.0,
) -> GroupInfo:
    view = read_view(towers, group, session_timeout, timeout)
    members = view.alive(time.time())
    committed = view.committed()
    topics = sorted({t for s in members.values() for t in s.topics} | {t for t, _ in committed})
    ends = _heads(towers, topics, timeout) if topics else {}
    holder = {k: m for m, s in members.items() for k in s.held}
    keys = set(committed) | set(ends) | set(holder)
    rows = tuple(
        PartitionRow(
            t,
            p,
            committed[(t, p)].offset if (t, p) in committed else None,
            ends.get((t, p)),
            holder.get((t, p)),
        )
        for t, p in sorted(keys)
    )
    return GroupInfo(group, tuple(members.values()), rows, view.records)
