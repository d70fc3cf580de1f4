"""Options and offset arithmetic of the Spark source, with no Spark and no sockets.

Offsets are what Spark checkpoints: ``{"topic": {"partition": next_offset}}``,
always built with sorted keys so that equal offsets serialize to equal JSON
(Spark compares them as JSON text). A partition missing from an offset is at
0: a partition that appears after the query started is read from its start.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..config import parse_towers
from ..errors import ConfigError
from ..query.client import load_client_key as load_key
from ..security.curve_keys import parse_public_key

__all__ = [
    "EARLIEST",
    "LATEST",
    "Heads",
    "Offsets",
    "ReadOptions",
    "Span",
    "WriteOptions",
    "available",
    "cap_offsets",
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


# ------------------------------------------------------------------ options


def _get(options: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    lowered = {str(k).lower(): v for k, v in options.items()}
    value = lowered.get(name.lower(), default)
    return None if value is None else str(value)


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = _get(options, name)
    if value is None:
        return default
    if value.strip().lower() in ("true", "1", "yes"):
        return True
    if value.strip().lower() in ("false", "0", "no"):
        return False
    raise ConfigError(f"option {name} must be true or false, not {value!r}")


def _positive_int(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    value = _get(options, name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"option {name} must be a positive integer, not {value!r}") from None
    if number <= 0:
        raise ConfigError(f"option {name} must be a positive integer, not {value!r}")
    return number


def _positive_float(options: Mapping[str, str], name: str, default: float) -> float:
    value = _get(options, name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"option {name} must be a number of seconds, not {value!r}") from None
    if not number > 0:
        raise ConfigError(f"option {name} must be positive, not {value!r}")
    return number


def _profile(options: Mapping[str, str], default: str | None) -> str | None:
    profile = _get(options, "profile", default)
    if profile is None:
        return None
    profile = profile.strip().lower()
    allowed = ("auto", "rfc46", "signed") if default == "auto" else ("rfc46", "signed")
    if profile not in allowed:
        raise ConfigError(f"option profile must be one of {', '.join(allowed)}, not {profile!r}")
    return profile


def _towers(options: Mapping[str, str]) -> str:
    towers = _get(options, "tower") or _get(options, "towers") or "127.0.0.1:5556"
    parse_towers(towers)  # validate now, on the driver: one clear error
    return towers


def _stores(options: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(endpoints, ((endpoint, public key hex), ...)) of ``stores``: ``HOST:PORT[@PUBHEX],...``
    (a store's key makes its query endpoint a CURVE one)."""
    raw = _get(options, "stores")
    if not raw:
        return (), ()
    stores = []
    keys = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        part, sep, key = part.rpartition("@") if "@" in part else (part, "", "")
        endpoint = part if part.startswith("tcp://") else f"tcp://{part}"
        stores.append(endpoint)
        if sep:
            parse_public_key(key)  # one clear error on the driver
            keys.append((endpoint, key.strip().lower()))
    return tuple(stores), tuple(keys)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """The source's options, checked once on the driver (see ``docs/spark.md``)."""

    towers: str
    stores: tuple[str, ...]
    topics: tuple[str, ...]
    pattern: str | None
    starting: str
    ending: str
    max_offsets_per_trigger: int | None
    max_records_per_partition: int
    fail_on_data_loss: bool
    profile: str
    locate_timeout: float
    query_timeout: float
    read_max_bytes: int
    key_file: str | None = None
    """``curveKeyFile``: this reader's CURVE key (a dafka-keys node key file); a fresh key
    when None. Read on each executor, so the path must exist there."""
    store_keys: tuple[tuple[str, str], ...] = ()
    """Public keys (hex) of the ``stores`` given with ``@PUBHEX``, by endpoint."""

    @classmethod
    def parse(cls, options: Mapping[str, str], *, batch: bool) -> ReadOptions:
        subscribe = _get(options, "subscribe")
        pattern = _get(options, "subscribePattern")
        if bool(subscribe) == bool(pattern):
            raise ConfigError(
                "give exactly one of the options subscribe (a comma list of topics) "
                "or subscribePattern (a regular expression)"
            )
        topics: tuple[str, ...] = ()
        if subscribe:
            topics = tuple(sorted({t.strip() for t in subscribe.split(",") if t.strip()}))
            if not topics:
                raise ConfigError("option subscribe names no topic")
        if pattern:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"option subscribePattern is not a regex: {exc}") from None
        starting = _get(options, "startingOffsets", "earliest" if batch else "latest") or ""
        ending = _get(options, "endingOffsets", "latest") or ""
        _check_offsets_spec(starting, "startingOffsets")
        _check_offsets_spec(ending, "endingOffsets")
        if batch and starting.strip().lower() == "latest":
            raise ConfigError("startingOffsets=latest is not allowed in a batch query")
        if batch and ending.strip().lower() == "earliest":
            raise ConfigError("endingOffsets=earliest is not allowed in a batch query")
        if not batch and _get(options, "endingOffsets") is not None:
            raise ConfigError("endingOffsets is for batch queries only")
        stores, store_keys = _stores(options)
        key_file = _get(options, "curveKeyFile") or None
        if key_file is not None:
            load_key(key_file)  # one clear error on the driver
        return cls(
            towers=_towers(options),
            stores=stores,
            key_file=key_file,
            store_keys=store_keys,
            topics=topics,
            pattern=pattern or None,
            starting=starting,
            ending=ending,
            max_offsets_per_trigger=_positive_int(options, "maxOffsetsPerTrigger", None),
            max_records_per_partition=_positive_int(options, "maxRecordsPerPartition", 1_000_000)
            or 1_000_000,
            fail_on_data_loss=_bool(options, "failOnDataLoss", True),
            profile=_profile(options, "auto") or "auto",
            locate_timeout=_positive_float(options, "locateTimeout", 1.5),
            query_timeout=_positive_float(options, "queryTimeout", 30.0),
            read_max_bytes=_positive_int(options, "readMaxBytes", 4 * 1024 * 1024)
            or 4 * 1024 * 1024,
        )

    def wants(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics


@dataclass(frozen=True, slots=True)
class WriteOptions:
    towers: str
    topic: str | None
    profile: str | None  # None: the Producer's default
    flush_timeout: float

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        return cls(
            towers=_towers(options),
            topic=_get(options, "topic") or None,
            profile=_profile(options, None),
            flush_timeout=_positive_float(options, "flushTimeout", 120.0),
        )


def _check_offsets_spec(spec: str, name: str) -> None:
    text = spec.strip()
    if text.lower() in ("earliest", "latest"):
        return
    try:
        parsed = json.loads(text)
    except ValueError:
        raise ConfigError(
            f"option {name} must be earliest, latest or JSON "
            '{"topic": {"partition": offset}}, not ' + repr(spec)
        ) from None
    from_nested(parsed, name)


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
