"""What ``dafka console`` shows, as typed values, and the pure functions that build them.

A :class:`Snapshot` is one reading of the cluster: what each tower's Raft peer says of
itself (:class:`TowerRow`), the metadata (topics and their settings, trusted stores,
cluster settings, partition numbers) and what each store heard through the towers
answered on its query endpoint (:class:`StoreRow`). :func:`build_snapshot` joins them
without any socket, so pages and metrics are tested from plain values; the reading
itself is :mod:`dafka.console.reader`.

A partition's copies are counted as ``dafka topics describe`` counts them
(:func:`dafka.cli.holdings.copies`): the trusted stores that hold its head, the highest
head any of them reported; **below min_acks** when fewer than its topic's ``min_acks``. When
the metadata trusts some stores, a partition held only by others is a claim anyone can make
(run a store, say it holds ``topic/x``): it is kept apart (:attr:`TopicRow.untrusted`) and
never counted below ``min_acks``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cli.holdings import StoreView, copies
from ..ids import is_group_topic
from ..metadata.state import topic_settings
from ..query.protocol import PartitionInfo

__all__ = [
    "Holding",
    "PartitionRow",
    "Snapshot",
    "StoreRow",
    "TopicRow",
    "TowerRow",
    "build_snapshot",
]


@dataclass(frozen=True, slots=True)
class TowerRow:
    """One tower's Raft peer, as it answered (``up`` False: it did not)."""

    url: str
    up: bool
    is_leader: bool = False
    leader: str | None = None
    term: int | None = None
    commit: int | None = None
    applied: int | None = None
    peers: tuple[str, ...] = ()

    @property
    def role(self) -> str:
        if not self.up:
            return "unreachable"
        return "leader" if self.is_leader else "follower"


@dataclass(frozen=True, slots=True)
class Holding:
    """What one store holds of a partition: offsets ``tail..head``."""

    store: str
    tail: int
    head: int
    trusted: bool
    answering: bool = True
    """False: the store did not answer this reading; its last answer is shown, not counted."""


@dataclass(frozen=True, slots=True)
class PartitionRow:
    """One partition of a topic: its id (the producer's node ID), its Kafka number when
    the metadata gave it one, each store's holding, and its copies of the head."""

    topic: str
    partition: str
    number: int | None
    holdings: tuple[Holding, ...]
    copies: int
    min_acks: int
    untrusted_only: bool = False
    """Held only by stores the metadata does not trust (it trusts some): a claim anyone can
    make, shown apart and not counted below ``min_acks`` nor in the metrics."""

    @property
    def producer(self) -> str:
        """A native partition is named for the producer that writes it."""
        return self.partition

    @property
    def label(self) -> str:
        """Its number when it has one (``partition.number``), else its id."""
        return self.partition if self.number is None else str(self.number)

    @property
    def below_min_acks(self) -> bool:
        return not self.untrusted_only and self.copies < self.min_acks

    @property
    def tail(self) -> int | None:
        return min((h.tail for h in self.holdings), default=None)

    @property
    def head(self) -> int | None:
        return max((h.head for h in self.holdings), default=None)


@dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    settings: Mapping[str, Any]
    partitions: tuple[PartitionRow, ...]
    internal: bool = False

    @property
    def counted(self) -> tuple[PartitionRow, ...]:
        """The partitions some trusted store holds (every one when the metadata trusts none)."""
        return tuple(p for p in self.partitions if not p.untrusted_only)

    @property
    def untrusted(self) -> tuple[PartitionRow, ...]:
        """The partitions held only by untrusted stores (:attr:`PartitionRow.untrusted_only`)."""
        return tuple(p for p in self.partitions if p.untrusted_only)

    @property
    def below(self) -> tuple[PartitionRow, ...]:
        return tuple(p for p in self.partitions if p.below_min_acks)


@dataclass(frozen=True, slots=True)
class StoreRow:
    """A store the metadata trusts or the towers relay (or both)."""

    node_id: str
    trusted: bool
    heard: bool
    endpoint: str | None = None
    public_key: str | None = None
    holds: tuple[Holding, ...] | None = None
    """None: not heard, or it did not answer (:attr:`error`)."""
    topics: tuple[tuple[str, str], ...] = ()
    """``(topic, partition)`` of each holding, in the order of :attr:`holds`."""
    error: str | None = None
    disk: tuple[int | None, int | None, int | None] | None = None
    """Free and total bytes of its filesystem, and its database's size (its STATUS
    answer; None: not answered, e.g. a store that predates it)."""

    @property
    def answering(self) -> bool:
        return self.holds is not None

    @property
    def records(self) -> int:
        return sum(h.head - h.tail + 1 for h in self.holds or ())


@dataclass(frozen=True, slots=True)
class Snapshot:
    towers: tuple[TowerRow, ...]
    cluster: Mapping[str, Any]
    topics: Mapping[str, TopicRow]
    stores: tuple[StoreRow, ...]
    admins: tuple[str, ...] = ()
    revision: int | None = None
    errors: tuple[str, ...] = field(default=())
    """What could not be read (the metadata, a store), one line each."""

    @property
    def leader(self) -> TowerRow | None:
        return next((t for t in self.towers if t.up and t.is_leader), None)

    @property
    def stores_answering(self) -> int:
        return sum(1 for s in self.stores if s.answering)

    def user_topics(self) -> list[TopicRow]:
        return [t for name, t in sorted(self.topics.items()) if not t.internal]


def tower_rows(status: Sequence[Mapping[str, Any]]) -> tuple[TowerRow, ...]:
    """:meth:`~dafka.metadata.client.MetadataClient.status` rows as :class:`TowerRow` s."""
    out = []
    for r in status:
        if r.get("state") != "up":
            out.append(TowerRow(str(r["url"]), False))
            continue
        out.append(
            TowerRow(
                str(r["url"]),
                True,
                bool(r.get("is_leader")),
                r.get("leader"),
                r.get("term"),
                r.get("commit"),
                r.get("applied"),
                tuple(str(p) for p in r.get("peers") or ()),
            )
        )
    return tuple(out)


def _untrusted_only(holdings: Sequence[Holding], trusted: Collection[str]) -> bool:
    # guard: console-untrusted-only-partitions-apart
    only = bool(trusted) and not any(h.trusted for h in holdings)
    return only


def build_snapshot(
    status: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None,
    stores: Sequence[StoreView],
    errors: Sequence[str] = (),
    remembered: Mapping[str, Sequence[PartitionInfo]] | None = None,
) -> Snapshot:
    """One :class:`Snapshot` from the towers' status rows, the metadata ``config`` (None
    when no leader answered) and the stores' answers. ``remembered``: what each store held
    when it last answered; a store that does not answer now (or is not heard) keeps those
    partitions listed as not answering (:attr:`Holding.answering` False), so a partition
    only it holds stays with 0 copies instead of vanishing."""
    topics_meta: Mapping[str, Mapping[str, Any]] = (config or {}).get("topics", {})
    trusted = set((config or {}).get("stores", ()))
    numbering: dict[str, dict[str, int]] = {
        t: {str(i): int(n) for i, n in rows}
        for t, rows in (config or {}).get("numbering", {}).items()
    }
    held = copies(stores, trusted)
    settings_of = {name: topic_settings(s) for name, s in topics_meta.items()}
    min_acks = {name: int(s.get("min_acks", 1)) for name, s in settings_of.items()}
    per_partition: dict[tuple[str, str], list[Holding]] = {}
    rows: list[StoreRow] = []
    heard = {s.node_id: s for s in stores}
    for node_id in sorted(set(trusted) | set(heard)):
        s = heard.get(node_id)
        if s is None or s.partitions is None:
            # guard: console-keeps-a-silent-stores-partitions
            for p in (remembered or {}).get(node_id, ()):
                h = Holding(node_id, p.tail, p.head, node_id in trusted, answering=False)
                per_partition.setdefault((p.topic, p.partition), []).append(h)
        if s is None:
            rows.append(StoreRow(node_id, True, False, error="not heard through the towers"))
            continue
        holds: list[Holding] = []
        keys: list[tuple[str, str]] = []
        for p in s.partitions or ():
            h = Holding(node_id, p.tail, p.head, node_id in trusted)
            holds.append(h)
            keys.append((p.topic, p.partition))
            per_partition.setdefault((p.topic, p.partition), []).append(h)
        rows.append(
            StoreRow(
                node_id,
                node_id in trusted,
                True,
                s.endpoint,
                s.public_key,
                None if s.partitions is None else tuple(holds),
                tuple(keys),
                s.error,
                s.disk,
            )
        )
    names = set(topics_meta) | {t for t, _ in per_partition}
    topics: dict[str, TopicRow] = {}
    for name in sorted(names):
        settings = dict(settings_of.get(name, {}))
        need = min_acks.get(name, 1)
        parts = tuple(
            PartitionRow(
                name,
                part,
                numbering.get(name, {}).get(part),
                tuple(sorted(hs, key=lambda h: h.store)),
                len(held[(name, part)].stores) if (name, part) in held else 0,
                need,
                _untrusted_only(hs, trusted),
            )
            for (t, part), hs in sorted(per_partition.items())
            if t == name
        )
        topics[name] = TopicRow(name, settings, parts, is_group_topic(name))
    return Snapshot(
        tower_rows(status),
        dict((config or {}).get("cluster", {})),
        topics,
        tuple(rows),
        tuple((config or {}).get("admins", ())),
        None if config is None else int(config.get("revision", 0)),
        tuple(errors),
    )
