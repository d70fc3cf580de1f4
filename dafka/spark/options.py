"""The options of ``format("dafka")``: what each means, checked before anything is read or
written, with no Spark and no sockets.

:class:`ReadOptions` follow Spark's Kafka source where a name exists there, and refuse
anything unknown or misspelled with one error naming the option; :class:`WriteOptions`
are the sink's. Offsets and their arithmetic are :mod:`dafka.spark.offsets`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..config import parse_towers
from ..errors import ConfigError
from ..ids import is_group_topic
from ..query.client import load_client_key as load_key
from ..security.curve_keys import parse_public_key
from ..wire.signed_rich import codec_named
from .offsets import EARLIEST, LATEST, TP, from_nested

__all__ = ["READ_OPTIONS", "ReadOptions", "WriteOptions", "include_headers"]


def include_headers(options: Mapping[str, str]) -> bool:
    """Whether the source's options ask for its ``headers`` column (``includeHeaders``)."""
    return _bool(options, "includeHeaders", False)


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
    include_headers: bool = False
    """``includeHeaders``: the source has a ``headers`` column (as Spark's Kafka source)."""

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
            include_headers=_bool(options, "includeHeaders", False),
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
        if self.pattern is not None:  # a consumer group's topic is not a user topic
            return not is_group_topic(topic) and re.fullmatch(self.pattern, topic) is not None
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
    compression: str | None = None
    """``compression``: ``none``, ``zstd`` or ``lz4`` (Kafka's ``compression.type``);
    None: the topic's setting (none without one)."""

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
            compression=_compression(options),
        )


def _compression(options: Mapping[str, str]) -> str | None:
    value = _get(options, "compression")
    if value is None:
        value = _get(options, "kafka.compression.type")
    if value is None or not value.strip():
        return None
    try:
        return codec_named(value).name.lower()
    except ValueError:
        raise ConfigError(f"option compression must be none, zstd or lz4, not {value!r}") from None


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
