"""Offset arithmetic of the Spark source, with no Spark and no sockets (the options are
:mod:`dafka.spark.options`).

Offsets are what Spark checkpoints: ``{"topic": {"partition": next_offset}}``,
always built with sorted keys so that equal offsets serialize to equal JSON
(Spark compares them as JSON text). A partition missing from an offset is at
0: a partition that appears after the query started is read from its start.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = [
    "EARLIEST",
    "LATEST",
    "Heads",
    "Offsets",
    "Span",
    "available",
    "cap_offsets",
    "delay_batch",
    "first_at_or_after",
    "split_spans",
    "unheld",
    "from_nested",
    "merge_heads",
    "plan_spans",
    "rate_limit",
    "resolve_offsets",
    "to_nested",
]

EARLIEST = -2
LATEST = -1

TP = tuple[str, str]
Offsets = dict[TP, int]
"""``(topic, partition) -> next offset to read``."""


@dataclass(frozen=True, slots=True)
class Heads:
    """One partition as the stores know it: offsets ``tail..head`` and who holds up to where."""

    tail: int
    head: int
    holders: tuple[tuple[str, int, int], ...] = ()  # (query endpoint, tail, head), best first


# ------------------------------------------------------------------ offsets


def from_nested(data: object, what: str = "offset") -> Offsets:
    """``{"topic": {"partition": n}}`` -> flat offsets; ConfigError if not that shape."""
    if not isinstance(data, dict):
        raise ConfigError(f'{what} must be a JSON object {{"topic": {{"partition": offset}}}}')
    out: Offsets = {}
    for topic, parts in data.items():
        if not isinstance(topic, str) or not isinstance(parts, dict):
            raise ConfigError(f'{what} must be a JSON object {{"topic": {{"partition": offset}}}}')
        for partition, offset in parts.items():
            if (
                not isinstance(partition, str)
                or isinstance(offset, bool)
                or not isinstance(offset, int)
                or offset < EARLIEST
            ):
                raise ConfigError(
                    f"{what}: {topic}/{partition} must map to an offset >= 0, "
                    "or -2 (earliest) or -1 (latest)"
                )
            out[(topic, partition)] = offset
    return out


def to_nested(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """Flat offsets -> the checkpointed form, keys sorted (equal offsets, equal JSON)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[partition] = offset
    return out


def resolve_offsets(
    spec: str, heads: Mapping[TP, Heads], wants: object = None, *, default: str = "earliest"
) -> Offsets:
    """Offsets for ``spec`` (earliest, latest or JSON) given the partitions the stores hold.

    ``earliest`` is each partition's tail, ``latest`` its head + 1. In JSON, -2
    and -1 mean the same per partition; a JSON spec's partitions not yet held by
    any store are kept as given, and held partitions it does not name take
    ``default``.
    """
    text = spec.strip()
    mode = text.lower()

    def earliest(h: Heads) -> int:
        return h.tail

    def latest(h: Heads) -> int:
        return h.head + 1

    if mode in ("earliest", "latest"):
        pick = earliest if mode == "earliest" else latest
        return {tp: pick(h) for tp, h in sorted(heads.items())}
    given = from_nested(json.loads(text), "offsets")
    out: Offsets = {}
    fallback = earliest if default == "earliest" else latest
    for tp, h in heads.items():
        if tp not in given:
            out[tp] = fallback(h)
    for tp, offset in given.items():
        known = heads.get(tp)
        if offset == EARLIEST:
            out[tp] = known.tail if known is not None else 0
        elif offset == LATEST:
            out[tp] = known.head + 1 if known is not None else 0
        else:
            out[tp] = offset
    return dict(sorted(out.items()))


def available(start: Mapping[TP, int], heads: Mapping[TP, Heads]) -> Offsets:
    """Where each partition ends now: head + 1 (never behind ``start``)."""
    out: Offsets = dict(start)
    for tp, h in heads.items():
        out[tp] = max(out.get(tp, 0), h.head + 1)
    return dict(sorted(out.items()))


def cap_offsets(end: Mapping[TP, int], cap: Mapping[TP, int], start: Mapping[TP, int]) -> Offsets:
    """``end`` limited to ``cap`` (Trigger.AvailableNow's target); partitions not in ``cap``
    stay where ``start`` has them (or are left out)."""
    out: Offsets = {}
    for tp, offset in end.items():
        s = start.get(tp, 0)
        limit = cap.get(tp)
        value = s if limit is None else max(s, min(offset, limit))
        if tp in start or value > s:
            out[tp] = value
    return dict(sorted(out.items()))


def rate_limit(start: Mapping[TP, int], end: Mapping[TP, int], max_rows: int) -> Offsets:
    """``end`` advanced at most ``max_rows`` records past ``start`` in total.

    Shares the budget among partitions in proportion to their backlogs (rounded
    down, then the remainder one by one in partition order), so every partition
    with a backlog moves when the budget allows, and the result is deterministic.
    """
    backlog = {tp: end[tp] - start.get(tp, 0) for tp in sorted(end)}
    total = sum(n for n in backlog.values() if n > 0)
    if total <= max_rows:
        return dict(sorted(end.items()))
    take = {tp: (n * max_rows) // total if n > 0 else 0 for tp, n in backlog.items()}
    left = max_rows - sum(take.values())
    for tp, n in backlog.items():
        if left <= 0:
            break
        if n > take[tp]:
            take[tp] += 1
            left -= 1
    out: Offsets = {}
    for tp in sorted(end):
        s = start.get(tp, 0)
        value = s + take[tp] if backlog[tp] > 0 else end[tp]
        if tp in start or value > s:
            out[tp] = value
    return out


@dataclass(frozen=True, slots=True)
class Span:
    """Offsets ``start..end-1`` of one partition: one Spark task's worth."""

    topic: str
    partition: str
    start: int
    end: int


def plan_spans(start: Mapping[TP, int], end: Mapping[TP, int], max_records: int) -> list[Span]:
    """The ranges to read between two offsets, each at most ``max_records`` long."""
    spans: list[Span] = []
    for (topic, partition), stop in sorted(end.items()):
        first = start.get((topic, partition), 0)
        while first < stop:
            last = min(stop, first + max_records)
            spans.append(Span(topic, partition, first, last))
            first = last
    return spans


def merge_heads(
    answers: Iterable[tuple[str, Iterable[tuple[str, str, int, int]]]],
) -> dict[TP, Heads]:
    """Combine the HEADS answers of several stores (``(endpoint, [(t, p, tail, head)])``).

    A partition's tail is the lowest any store holds and its head the highest;
    its holders are listed by head, highest first.
    """
    held: dict[TP, list[tuple[str, int, int]]] = {}
    for endpoint, parts in answers:
        for topic, partition, tail, head in parts:
            held.setdefault((topic, partition), []).append((endpoint, tail, head))
    out: dict[TP, Heads] = {}
    for tp, holders in sorted(held.items()):
        holders.sort(key=lambda h: (-h[2], h[1], h[0]))
        out[tp] = Heads(min(h[1] for h in holders), max(h[2] for h in holders), tuple(holders))
    return out


def split_spans(spans: Sequence[Span], min_parts: int | None) -> list[Span]:
    """``spans`` cut further until there are at least ``min_parts`` of them (``minPartitions``),
    or every span is one record: each span gets pieces in proportion to its length."""
    if not min_parts or len(spans) >= min_parts:
        return list(spans)
    total = sum(s.end - s.start for s in spans)
    if total <= len(spans):
        return list(spans)
    want = min(min_parts, total)
    pieces = [max(1, ((s.end - s.start) * want) // total) for s in spans]
    order = sorted(range(len(spans)), key=lambda i: (-(spans[i].end - spans[i].start), i))
    for i in itertools.islice(itertools.cycle(order), 2 * len(spans) + want):
        if sum(pieces) >= want:
            break
        if pieces[i] < spans[i].end - spans[i].start:
            pieces[i] += 1
    out: list[Span] = []
    for span, n in zip(spans, pieces, strict=True):
        length = span.end - span.start
        bounds = [span.start + (length * k) // n for k in range(n + 1)]
        out.extend(Span(span.topic, span.partition, a, b) for a, b in itertools.pairwise(bounds))
    return out


def delay_batch(
    start: Mapping[TP, int],
    end: Mapping[TP, int],
    min_rows: int | None,
    last_trigger: float,
    now: float,
    max_delay: float,
) -> bool:
    """``minOffsetsPerTrigger``: wait (no new micro-batch) while fewer than ``min_rows`` records
    are new and less than ``max_delay`` seconds passed since the last micro-batch."""
    if not min_rows:
        return False
    new = sum(max(0, offset - start.get(tp, 0)) for tp, offset in end.items())
    return new < min_rows and now - last_trigger < max_delay


def unheld(spec: str, heads: Mapping[TP, Heads]) -> list[TP]:
    """The partitions a JSON offsets ``spec`` names that no store holds."""
    text = spec.strip()
    if text.lower() in ("earliest", "latest"):
        return []
    return sorted(tp for tp in from_nested(json.loads(text), "offsets") if tp not in heads)


BatchAt = Callable[[int], tuple[int, int, int]]
"""``offset -> (first, last, timestamp_ms)`` of the stored batch that holds ``offset``."""


def first_at_or_after(batch_at: BatchAt, tail: int, head: int, timestamp_ms: int) -> int | None:
    """The first offset of the first batch in ``tail..head`` stamped at or after
    ``timestamp_ms`` (a binary search: a partition's batches come from one producer, in
    time order), or None when every batch is older."""
    lo, hi = tail, head + 1  # offsets below lo are older, from hi on they are not
    for _ in range(200):  # each step halves hi - lo: 64 steps cover any u64 range
        if lo >= hi:
            break
        mid = (lo + hi) // 2
        first, last, stamp = batch_at(mid)
        if stamp >= timestamp_ms:
            hi = max(lo, min(first, mid))
        else:
            lo = min(hi, max(mid + 1, last + 1))
    return lo if lo <= head else None
