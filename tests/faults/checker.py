"""What a fault run did to the records: pure counts from the logs (no sockets, no clocks).

The workload writes records whose content names its writer and carries a checksum
(:func:`content`). The producers log each acknowledgement as it happens, the live
consumer logs each delivery in order, and at the end every store is read back. From
those three views :func:`check` counts what must all be zero:

``acked_lost``         acknowledged, and at the end no store holds it
``acked_undelivered``  acknowledged, and the live consumer never delivered it
``duplicates``         the live consumer delivered an offset twice, or one record's content
                       sits at two places (two offsets, or two partitions)
``order_inversions``   the live consumer went back in a partition, or a writer's records
                       are stored out of its sending order
``gaps``               the live consumer jumped over offsets that were acknowledged or stored
``content_mismatches`` a delivered or stored record whose content differs from what was
                       acknowledged at its offset, from another store's copy, or whose
                       checksum is wrong
``stuck_partitions``   a partition where records exist (acknowledged or stored) past the
                       last offset the live consumer delivered, or past what a fresh consumer
                       reads from the earliest offset after the run, or whose producer could
                       not get its records acknowledged once every fault was healed
``crashed``            processes that exited when nobody killed them (from the harness)
``below_min_acks``     acknowledged records that at the end (every fault healed, and time
                       given to re-replicate) fewer than the topic's ``min_acks`` stores
                       hold, though one does (none: ``acked_lost``)
``metadata_lost``      acknowledged metadata changes (topics the nemesis created) the towers
                       no longer have at the end
``bad_served``         corrupt batches (failing their signature or digest) a store served
                       after the time it had to scrub: to the harness reading every store
                       back, or to the fresh consumer (whose core counts each batch it
                       rejects, ``ConsumerStats.rejected``)
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

COUNTS = (
    "acked_lost",
    "acked_undelivered",
    "duplicates",
    "order_inversions",
    "gaps",
    "content_mismatches",
    "stuck_partitions",
    "crashed",
    "below_min_acks",
    "bad_served",
    "metadata_lost",
    "peers_expired",
)


def content(writer: str, incarnation: int, seq: int, pad: int = 24) -> str:
    """A record's value: ``writer.incarnation.seq.padding.crc32`` (ASCII, no spaces)."""
    body = f"{writer}.{incarnation}.{seq}.{'abcdefghijklmnopqrstuvwxyz'[seq % 26] * pad}"
    return f"{body}.{zlib.crc32(body.encode()):08x}"


@dataclass(frozen=True, slots=True)
class Parsed:
    writer: str
    incarnation: int
    seq: int


def parse(value: str) -> Parsed | None:
    """The writer, incarnation and sequence a value names; None if its checksum is wrong."""
    body, _, crc = value.rpartition(".")
    parts = body.split(".")
    if len(parts) != 4 or not crc:
        return None
    try:
        if int(crc, 16) != zlib.crc32(body.encode()):
            return None
        return Parsed(parts[0], int(parts[1]), int(parts[2]))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Ack:
    partition: str
    offset: int
    value: str


@dataclass(frozen=True, slots=True)
class Delivery:
    partition: str
    offset: int
    value: str


Key = tuple[str, int]


@dataclass
class Report:
    """The counts, and a few examples of each for the person reading the output."""

    acked_lost: int = 0
    acked_undelivered: int = 0
    duplicates: int = 0
    order_inversions: int = 0
    gaps: int = 0
    content_mismatches: int = 0
    stuck_partitions: int = 0
    crashed: int = 0
    below_min_acks: int = 0
    bad_served: int = 0
    metadata_lost: int = 0
    peers_expired: int = 0
    """Peers a store expired while every tower was paused (issue 39: a peer lives on its
    own data connection, so the data plane keeps every peer through a tower's silence)."""
    acked: int = 0
    delivered: int = 0
    stored: int = 0
    delivered_unstored: int = 0
    """Delivered live, never stored nor acknowledged: allowed (unacknowledged records of a
    producer that died), shown because a fresh consumer will never see them."""
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, count: str, example: str, n: int = 1) -> None:
        setattr(self, count, getattr(self, count) + n)
        shown = self.examples.setdefault(count, [])
        if len(shown) < 5:
            shown.append(example)

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTS}

    def ok(self) -> bool:
        return not any(self.counts().values())

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        return out


def check(
    acks: Iterable[Ack],
    deliveries: Sequence[Delivery],
    stores: Mapping[str, Mapping[Key, str]],
    crashed: Iterable[str] = (),
    readback: Sequence[Delivery] | None = None,
    stalled: Iterable[str] = (),
    min_acks: int = 1,
    bad_served: Iterable[str] = (),
    metadata_lost: Iterable[str] = (),
    peers_expired: Iterable[tuple[str, int]] = (),
) -> Report:
    """Count everything that went wrong (see the module docstring).

    ``readback`` is what a fresh consumer delivered from the earliest offset after the
    run (checked like the live consumer's deliveries); ``stalled`` names partitions whose
    producer could not get its last records acknowledged once every fault was healed;
    ``min_acks`` is the topic's; ``bad_served`` says one corrupt batch served per item,
    ``metadata_lost`` one acknowledged metadata change lost per item.
    """
    report = Report()
    for what in crashed:
        report.note("crashed", what)
    for what in bad_served:
        report.note("bad_served", what)
    for what in metadata_lost:
        report.note("metadata_lost", what)
    for what, n in peers_expired:
        report.note("peers_expired", what, n)

    acked: dict[Key, str] = {}
    for ack in acks:
        key = (ack.partition, ack.offset)
        if key in acked and acked[key] != ack.value:
            report.note("content_mismatches", f"{key} acknowledged as two values")
        acked[key] = ack.value
        if parse(ack.value) is None:
            report.note("content_mismatches", f"{key} acknowledged with a bad checksum")
    report.acked = len(acked)

    # the union of the stores; copies that disagree are mismatches
    stored: dict[Key, str] = {}
    for name, held in sorted(stores.items()):
        for key, value in held.items():
            first = stored.setdefault(key, value)
            if first != value:
                report.note("content_mismatches", f"{key} differs on store {name}")
    report.stored = len(stored)
    for key, value in sorted(stored.items()):
        if parse(value) is None:
            report.note("content_mismatches", f"{key} stored with a bad checksum")
        if key in acked and acked[key] != value:
            report.note("content_mismatches", f"{key} stored {value!r}, acked {acked[key]!r}")

    for key in sorted(acked):
        if key not in stored:
            report.note("acked_lost", f"{key} {acked[key]}")
    _copies(report, acked, stores, min_acks)

    seen = _deliveries(report, "live consumer", deliveries, acked, stored)
    report.delivered = len(seen)
    for key in sorted(acked):
        if key not in seen:
            report.note("acked_undelivered", f"{key} {acked[key]}")
    report.delivered_unstored = sum(1 for k in seen if k not in stored and k not in acked)
    fresh = None if readback is None else _deliveries(report, "read-back", readback, acked, stored)

    # one record in two places
    where: dict[str, set[Key]] = defaultdict(set)
    for key, value in stored.items():
        where[value].add(key)
    for d in deliveries:
        where[d.value].add((d.partition, d.offset))
    for value, keys in sorted(where.items()):
        if len(keys) > 1:
            report.note("duplicates", f"{value} at {sorted(keys)}", len(keys) - 1)

    # a writer's records in its sending order (one writer incarnation = one partition, serial)
    by_writer: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for (_partition, offset), value in stored.items():
        p = parse(value)
        if p is not None:
            by_writer[(p.writer, p.incarnation)].append((offset, p.seq))
    for writer, pairs in sorted(by_writer.items()):
        pairs.sort()
        for (o1, s1), (o2, s2) in zip(pairs, pairs[1:], strict=False):
            if s2 < s1:
                report.note("order_inversions", f"{writer} seq {s2} at {o2} after seq {s1} at {o1}")

    # stuck: a partition that cannot reach the end of its records
    ends: dict[str, int] = {}
    for partition, offset in list(acked) + list(stored):
        ends[partition] = max(ends.get(partition, -1), offset)
    stuck: dict[str, str] = {}
    for partition, end in sorted(ends.items()):
        reached = max((o for p, o in seen if p == partition), default=-1)
        if reached < end:
            stuck[partition] = f"live consumer delivered to {reached}, records to {end}"
    if fresh is not None:
        for partition, _ in sorted(stored):
            end = ends[partition]
            reached = max((o for p, o in fresh if p == partition), default=-1)
            if reached < end and partition not in stuck:
                stuck[partition] = f"a fresh consumer read to {reached}, stores hold to {end}"
    for partition in sorted(set(stalled)):
        stuck.setdefault(partition, "its producer could not get records acknowledged")
    for partition, why in sorted(stuck.items()):
        report.note("stuck_partitions", f"{partition}: {why}")
    return report


def _copies(
    report: Report, acked: Mapping[Key, str], stores: Mapping[str, Mapping[Key, str]], min_acks: int
) -> None:
    """Count acknowledged records held by fewer than ``min_acks`` stores (but by one),
    with one example per partition."""
    short: dict[str, list[int]] = defaultdict(list)
    for key, value in sorted(acked.items()):
        copies = sum(1 for held in stores.values() if held.get(key) == value)
        if 0 < copies < min_acks:
            short[key[0]].append(key[1])
    for partition, offsets in sorted(short.items()):
        report.note(
            "below_min_acks",
            f"{partition}: {len(offsets)} records ({offsets[0]}..{offsets[-1]}) "
            f"on fewer than {min_acks} stores",
            len(offsets),
        )


def _deliveries(
    report: Report,
    who: str,
    deliveries: Sequence[Delivery],
    acked: Mapping[Key, str],
    stored: Mapping[Key, str],
) -> set[Key]:
    """Check one consumer's deliveries in order; the (partition, offset) pairs it delivered."""
    seen: set[Key] = set()
    last: dict[str, int] = {}
    for d in deliveries:
        key = (d.partition, d.offset)
        expected = acked.get(key, stored.get(key))
        if parse(d.value) is None:
            report.note("content_mismatches", f"{who}: {key} delivered with a bad checksum")
        elif expected is not None and expected != d.value:
            report.note("content_mismatches", f"{who}: {key} is {d.value!r}, not {expected!r}")
        if key in seen:
            report.note("duplicates", f"{who}: {key} delivered again")
            continue
        seen.add(key)
        prev = last.get(d.partition)
        if prev is not None and d.offset < prev:
            report.note("order_inversions", f"{who}: {d.partition} {d.offset} after {prev}")
            continue
        start = -1 if prev is None else prev
        if any(
            (d.partition, o) in acked or (d.partition, o) in stored
            for o in range(start + 1, d.offset)
        ):
            report.note("gaps", f"{who}: {d.partition} jumped from {start} to {d.offset}")
        last[d.partition] = d.offset
    return seen


def format_table(rows: Sequence[tuple[str, Report]]) -> str:
    """One line per run, one column per count."""
    heads = ["run", *COUNTS, "acked", "delivered"]
    lines = [heads]
    for name, r in rows:
        lines.append([name, *(str(v) for v in r.counts().values()), str(r.acked), str(r.delivered)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(heads))]
    return "\n".join(
        "  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    )
