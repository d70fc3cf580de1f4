"""Options and offset arithmetic of the Spark source, with no Spark and no sockets.

Offsets are what Spark checkpoints: ``{"topic": {"partition": next_offset}}``,
always built with sorted keys so that equal offsets serialize to equal JSON
(Spark compares them as JSON text). A partition missing from an offset is at
0: a partition that appears after the query started is read from its start.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
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


def _at_most(value: int | None, limit: int) -> int | None:
    if value is not None and value > limit:
        raise ConfigError(f"option minPartitions must be at most {limit}, not {value}")
    return value


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


READ_OPTIONS = {
    name.lower(): name
    for name in (
        "tower",
        "towers",
        "stores",
        "subscribe",
        "subscribePattern",
        "assign",
        "startingOffsets",
        "endingOffsets",
        "startingTimestamp",
        "endingTimestamp",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy",
        "maxOffsetsPerTrigger",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "minPartitions",
        "maxRecordsPerPartition",
        "failOnDataLoss",
        "includeHeaders",
        "profile",
        "locateTimeout",
        "queryTimeout",
        "readMaxBytes",
        "curveKeyFile",
    )
}
"""Every option the source reads, lowercased -> its spelling (Spark's options ignore case)."""

_NOT_HERE = {
    "topic": "topic is a sink option; a reader names its topics with subscribe",
    "groupidprefix": "Dafka has no consumer groups: a Spark query keeps its offsets in its checkpoint",
    "kafkaconsumer.polltimeoutms": "use queryTimeout (seconds) for how long to wait for one READ",
    "fetchoffset.numretries": "a READ that a store does not answer moves to the next store",
    "fetchoffset.retryintervalms": "a READ that a store does not answer moves to the next store",
    "path": "the dafka format reads no path: call load() without one",
}


def _check_known(options: Mapping[str, str]) -> None:
    """One ConfigError naming the first option the source does not know (and the closest one)."""
    for raw in options:
        name = str(raw)
        low = name.lower()
        if low in READ_OPTIONS:
            continue
        if low.startswith("kafka."):
            raise ConfigError(
                f"option {name} is a Kafka client setting, which Dafka does not read: "
                "give the towers with option tower (HOST:PORT,...), or the stores' query "
                "endpoints with option stores"
            )
        if low in _NOT_HERE:
            raise ConfigError(f"option {name} is not supported when reading: {_NOT_HERE[low]}")
        close = difflib.get_close_matches(low, list(READ_OPTIONS), n=1, cutoff=0.6)
        hint = f" (did you mean {READ_OPTIONS[close[0]]}?)" if close else ""
        raise ConfigError(f"unknown option {name} for reading format dafka{hint}")


def _millis(options: Mapping[str, str], name: str) -> int | None:
    value = _get(options, name)
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        number = -1
    if number < 0:
        raise ConfigError(
            f"option {name} must be a time in milliseconds since the epoch, not {value!r}"
        )
    return number


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h|d)?", re.IGNORECASE)
_UNIT = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _duration(options: Mapping[str, str], name: str, default: float) -> float:
    """Seconds of a Spark-style duration: ``15m``, ``30s``, ``500ms``, or bare milliseconds."""
    value = _get(options, name)
    if value is None:
        return default
    m = _DURATION.fullmatch(value.strip())
    if m is None:
        raise ConfigError(f"option {name} must be a duration such as 15m, 30s or 500ms")
    return float(m.group(1)) * _UNIT[(m.group(2) or "ms").lower()]


_PARTITION_ID = re.compile(r"[0-9A-Fa-f]{32}")


def _check_partition_id(partition: str, name: str) -> str:
    if not _PARTITION_ID.fullmatch(partition):
        raise ConfigError(
            f"option {name}: {partition!r} is not a Dafka partition: a partition is the "
            "producer's node ID, 32 hex characters (the partition column)"
        )
    return partition.upper()


def _assign(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    raw = _get(options, "assign")
    if raw is None:
        return ()
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    shape = 'option assign must be JSON {"topic": ["partition", ...]}'
    if not isinstance(data, dict) or not data:
        raise ConfigError(shape)
    out: set[tuple[str, str]] = set()
    for topic, parts in data.items():
        if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
            raise ConfigError(shape)
        out.update((topic, _check_partition_id(p, "assign")) for p in parts)
    if not out:
        raise ConfigError("option assign names no partition")
    return tuple(sorted(out))


def _by_timestamp(options: Mapping[str, str], name: str) -> tuple[tuple[TP, int], ...]:
    raw = _get(options, name)
    if raw is None:
        return ()
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    shape = f'option {name} must be JSON {{"topic": {{"partition": milliseconds since the epoch}}}}'
    if not isinstance(data, dict):
        raise ConfigError(shape)
    out: dict[TP, int] = {}
    for topic, parts in data.items():
        if not isinstance(parts, dict):
            raise ConfigError(shape)
        for partition, ms in parts.items():
            if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
                raise ConfigError(shape)
            out[(topic, _check_partition_id(partition, name))] = ms
    return tuple(sorted(out.items()))


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
    assign: tuple[tuple[str, str], ...] = ()
    """``assign``: the (topic, partition) pairs to read, instead of whole topics."""
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_by_timestamp: tuple[tuple[TP, int], ...] = ()
    ending_by_timestamp: tuple[tuple[TP, int], ...] = ()
    timestamp_strategy: str = "error"
    """``startingOffsetsByTimestampStrategy``: ``error`` or ``latest`` when no record is that new."""
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: float = 900.0
    min_partitions: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], *, batch: bool) -> ReadOptions:
        _check_known(options)
        subscribe = _get(options, "subscribe")
        pattern = _get(options, "subscribePattern")
        assign = _assign(options)
        if [bool(subscribe), bool(pattern), bool(assign)].count(True) != 1:
            raise ConfigError(
                "give exactly one of the options subscribe (a comma list of topics), "
                "subscribePattern (a regular expression) or assign (JSON "
                '{"topic": ["partition", ...]})'
            )
        topics: tuple[str, ...] = ()
        if subscribe:
            topics = tuple(sorted({t.strip() for t in subscribe.split(",") if t.strip()}))
            if not topics:
                raise ConfigError("option subscribe names no topic")
        if assign:
            topics = tuple(sorted({t for t, _ in assign}))
        if pattern:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"option subscribePattern is not a regex: {exc}") from None
        starting = _get(options, "startingOffsets", "earliest" if batch else "latest") or ""
        ending = _get(options, "endingOffsets", "latest") or ""
        _check_offsets_spec(starting, "startingOffsets", batch=batch)
        _check_offsets_spec(ending, "endingOffsets", batch=batch)
        if batch and starting.strip().lower() == "latest":
            raise ConfigError("startingOffsets=latest is not allowed in a batch query")
        if batch and ending.strip().lower() == "earliest":
            raise ConfigError("endingOffsets=earliest is not allowed in a batch query")
        if not batch:
            for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
                if _get(options, name) is not None:
                    raise ConfigError(f"{name} is for batch queries only")
        elif _get(options, "minOffsetsPerTrigger") or _get(options, "maxTriggerDelay"):
            raise ConfigError("minOffsetsPerTrigger and maxTriggerDelay are for streaming only")
        strategy = (_get(options, "startingOffsetsByTimestampStrategy", "error") or "").lower()
        if strategy not in ("error", "latest"):
            raise ConfigError(
                "option startingOffsetsByTimestampStrategy must be error or latest, "
                f"not {strategy!r}"
            )
        if _bool(options, "includeHeaders", False):
            raise ConfigError(
                "option includeHeaders: Dafka records have no headers (a record is a key and "
                "a value); leave includeHeaders unset or false"
            )
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
            assign=assign,
            starting=starting,
            ending=ending,
            starting_timestamp=_millis(options, "startingTimestamp"),
            ending_timestamp=_millis(options, "endingTimestamp"),
            starting_by_timestamp=_by_timestamp(options, "startingOffsetsByTimestamp"),
            ending_by_timestamp=_by_timestamp(options, "endingOffsetsByTimestamp"),
            timestamp_strategy=strategy,
            max_offsets_per_trigger=_positive_int(options, "maxOffsetsPerTrigger", None),
            min_offsets_per_trigger=_positive_int(options, "minOffsetsPerTrigger", None),
            max_trigger_delay=_duration(options, "maxTriggerDelay", 900.0),
            min_partitions=_at_most(_positive_int(options, "minPartitions", None), 100_000),
            max_records_per_partition=_positive_int(options, "maxRecordsPerPartition", 1_000_000)
            or 1_000_000,
            fail_on_data_loss=_bool(options, "failOnDataLoss", True),
            profile=_profile(options, "auto") or "auto",
            locate_timeout=_positive_float(options, "locateTimeout", 1.5),
            query_timeout=_positive_float(options, "queryTimeout", 30.0),
            read_max_bytes=_positive_int(options, "readMaxBytes", 4 * 1024 * 1024)
            or 4 * 1024 * 1024,
        )

    def wants(self, topic: str, partition: str | None = None) -> bool:
        if self.assign:
            if partition is None:
                return topic in self.topics
            return (topic, partition) in self.assign
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics

    @property
    def uses_timestamps(self) -> bool:
        return bool(
            self.starting_timestamp is not None
            or self.ending_timestamp is not None
            or self.starting_by_timestamp
            or self.ending_by_timestamp
        )


@dataclass(frozen=True, slots=True)
class WriteOptions:
    towers: str
    topic: str | None
    profile: str | None  # None: the Producer's default
    flush_timeout: float
    guarantee: str | None = None
    """``deliveryGuarantee``: ``exactlyOnce`` or ``atLeastOnce``; None: the default
    (exactly once for streaming writes, at least once for batch writes)."""
    checkpoint: str | None = None
    """``checkpointLocation`` (Spark passes it to a streaming sink)."""
    state_dir: str | None = None
    """``sinkStateDir``: the exactly-once sink's state, instead of the checkpoint's."""

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        guarantee = _get(options, "deliveryGuarantee")
        if guarantee is not None:
            guarantee = {"exactlyonce": "exactlyOnce", "atleastonce": "atLeastOnce"}.get(
                guarantee.strip().lower(), ""
            )
            if not guarantee:
                raise ConfigError(
                    "option deliveryGuarantee must be exactlyOnce or atLeastOnce, not "
                    f"{_get(options, 'deliveryGuarantee')!r}"
                )
        return cls(
            towers=_towers(options),
            topic=_get(options, "topic") or None,
            profile=_profile(options, None),
            flush_timeout=_positive_float(options, "flushTimeout", 120.0),
            guarantee=guarantee,
            checkpoint=_get(options, "checkpointLocation") or None,
            state_dir=_get(options, "sinkStateDir") or None,
        )


def _check_offsets_spec(spec: str, name: str, *, batch: bool = True) -> None:
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
    for (topic, partition), offset in from_nested(parsed, name).items():
        _check_partition_id(partition, name)
        if name == "endingOffsets" and offset == EARLIEST:
            raise ConfigError(
                f"option endingOffsets: {topic}/{partition} is -2 (earliest), which is not "
                "allowed as an ending offset"
            )
        if batch and name == "startingOffsets" and offset == LATEST:
            raise ConfigError(
                f"option startingOffsets: {topic}/{partition} is -1 (latest), which is not "
                "allowed in a batch query"
            )


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
