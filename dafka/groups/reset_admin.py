"""``dafka groups reset`` and the console's reset form: plan an admin's reset of a group's
offsets from what the stores hold, and sign it into the metadata (:mod:`.resets` says
what a reset is and how every reader of the group orders it).

As ``kafka-consumer-groups --reset-offsets``: a plan is shown first and written only when
asked (``execute``); offsets are clamped into what the stores hold (the first stored
offset to the log end).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import ConfigError, DafkaError
from ..ids import check_topic, is_group_topic
from ..metadata.client import MetadataClient
from ..query.client import QueryClient
from ..query.locator import locate_stores
from .admin import read_view
from .assign import PartitionKey
from .records import group_topic
from .resets import SETTING, ResetSpec, ResetTo, entries_of, merge, targets

log = logging.getLogger(__name__)

__all__ = ["ResetPlan", "ResetRow", "check_spec", "reset_offsets"]


@dataclass(frozen=True)
class ResetRow:
    topic: str
    partition: str
    current: int | None  # the group's committed offset before
    new: int


@dataclass(frozen=True)
class ResetPlan:
    group: str
    rows: tuple[ResetRow, ...]
    members: int  # members alive when planned (they seek to the new offsets)
    index: int | None  # the metadata log index it was written at (None: not written)


def _bounds(
    towers: str | Iterable[str], topics: list[str], timeout: float
) -> dict[PartitionKey, tuple[int, int]]:
    """{partition: (first stored offset, log end)} over every store heard."""
    stores = locate_stores(towers)
    if not stores:
        raise DafkaError(f"no store heard through the towers ({towers})")
    out: dict[PartitionKey, tuple[int, int]] = {}
    for endpoint in stores.values():
        with QueryClient(endpoint, timeout=timeout) as client:
            for p in client.heads(topics):
                key = (p.topic, p.partition)
                first, end = out.get(key, (p.tail, p.head + 1))
                out[key] = (min(first, p.tail), max(end, p.head + 1))
    return out


def reset_offsets(
    towers: str | Iterable[str],
    group: str,
    spec: ResetSpec,
    *,
    topics: Iterable[str] = (),
    cluster: str,
    admin_key: str | None = None,
    execute: bool = False,
    timeout: float = 10.0,
    exact: Mapping[PartitionKey, int] | None = None,
) -> ResetPlan:
    """Plan (and with ``execute``, sign and write) a reset of ``group``'s offsets for the
    partitions of ``topics`` (default: every topic the group reads or has committed).
    ``exact``: the offsets of a plan shown before (the console's execute button), written
    as they are (each still clamped into what the stores hold) rather than planned anew:
    what is written is what the admin saw, even if the group moved in between."""
    for t in topics:
        check_topic(t)  # a clear line for a bad name (non-UTF-8 bytes, a control character)
        if is_group_topic(t):
            raise ConfigError(f"{t} is a group's own topic, not one a group reads")
    view = read_view(towers, group, timeout=timeout)
    committed = view.committed()
    alive = view.alive(time.time())  # as describe: heartbeats by their signed times
    chosen = sorted(set(topics)) or sorted(
        {t for s in alive.values() for t in s.topics} | {t for t, _ in committed}
    )
    if not chosen:
        raise ConfigError(f"group {group!r} has no topics: name the topic to reset")
    bounds = _bounds(towers, chosen, timeout)
    if not bounds:
        raise ConfigError(f"no store holds a partition of {', '.join(chosen)}")
    found = None
    if spec.to is ResetTo.DATETIME:
        from ..api.cluster import StoreQueries

        with StoreQueries(towers, timeout=timeout) as queries:
            found = queries.offsets_for_times({k: spec.value for k in bounds})
    current = {k: c.offset for k, c in committed.items()}
    if exact is not None:
        # guard: reset-writes-the-plan-shown
        unknown = sorted(k for k in exact if k not in bounds)
        if unknown:
            raise ConfigError(
                f"{unknown[0][0]}/{unknown[0][1]} of the plan is held by no store now: plan again"
            )
        wanted = {k: min(max(o, bounds[k][0]), bounds[k][1]) for k, o in exact.items()}
    else:
        wanted = targets(spec, bounds, current, found)
    rows = tuple(ResetRow(t, p, current.get((t, p)), o) for (t, p), o in sorted(wanted.items()))
    if not execute:
        return ResetPlan(group, rows, len(alive), None)
    topic = group_topic(group)
    with MetadataClient(towers, cluster=cluster, timeout=timeout, admin=admin_key) as client:
        config = client.config()
        if topic not in config["topics"]:
            raise ConfigError(f"group {group!r} has no topic {topic} in the metadata")
        epochs = {k: view.epoch(k) for k in wanted}
        now_ms = int(time.time() * 1000)
        entries = merge(entries_of(config, topic, now_ms), wanted, epochs, now_ms)
        index = client.alter_topic(topic, {SETTING: entries})
    log.info("group.reset group=%s partitions=%d index=%d", group, len(rows), index)
    return ResetPlan(group, rows, len(alive), index)


def check_spec(to: str, value: str | None) -> ResetSpec:
    """A spec from a form or the command line: ``earliest``, ``latest``, ``offset N``,
    ``shift N`` (negative: back) or ``datetime MS`` (ms since the epoch)."""
    try:
        kind = ResetTo(to)
    except ValueError:
        raise ConfigError(
            f"bad reset {to[:40]!r}: one of {', '.join(r.value for r in ResetTo)}"
        ) from None
    if kind in (ResetTo.EARLIEST, ResetTo.LATEST):
        return ResetSpec(kind)
    text = (value or "").strip()
    if not text.lstrip("-").isdigit() or not text.isascii() or len(text) > 20:
        raise ConfigError(f"reset to {kind.value} needs a whole number, not {text[:40]!r}")
    number = int(text)
    if kind is not ResetTo.SHIFT and number < 0:
        raise ConfigError(f"reset to {kind.value} needs a number >= 0, not {number}")
    if abs(number) >= 1 << 63:
        raise ConfigError(f"reset to {kind.value}: {number} is out of range")
    return ResetSpec(kind, number)
