"""What ``dafka-consumer`` checks beside printing: kcat's ``-o`` values, regex topics, the
partitions that ``e@TIMESTAMP`` stopped, and whether ``-e`` ended where a user expects.

Every way of not being done is one line and a non-zero exit (docs/consumer.md "Exit
status"): a topic that nothing holds, a regex that matches nothing, ``-o N`` past the end.
Only click and the standard library are imported here; the node types are imported by the
command when it runs (start-up time, and Ctrl-C during it: exit 130, no traceback).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError, DafkaError

if TYPE_CHECKING:
    from ..consumer import Consumer
    from ..core.effects import ConsumedRecord

U64_LIMIT = 1 << 64
"""Offsets are u64 on the wire: an ``-o`` at or past this is a usage mistake."""

Start = Literal["earliest", "latest"] | int | float
"""Where each partition starts: a name, an offset (``-N``: before the end), or a time (s)."""


@dataclass(frozen=True, slots=True)
class Offsets:
    """The ``-o`` values given: where to start, and the time (ms) to stop at (``e@``)."""

    start: Start = "latest"
    end_ms: int | None = None


def parse_offset(text: str) -> Start:
    """kcat's -o: ``beginning``, ``end``, an offset ``N``, ``-N`` (``N`` before the end:
    a negative int) or ``s@MS`` (the first record whose time, its own or its batch's seal
    time, is at or after ``MS`` milliseconds since the epoch: a float, in seconds). ``e@MS`` is a stop, parsed by :func:`parse_offsets`."""
    low = text.lower()
    if low in ("beginning", "earliest"):
        return "earliest"
    if low in ("end", "latest"):
        return "latest"
    if text.isascii() and text.isdigit():
        return _below_u64(int(text), text)
    if text[:1] == "-" and text[1:].isascii() and text[1:].isdigit() and int(text[1:]) > 0:
        return -_below_u64(int(text[1:]), text)
    if low[:2] == "s@":
        return _timestamp_ms(text) / 1000.0
    if low == "stored":
        raise ConfigError("-o stored needs a group (-G GROUP), whose committed offsets it reads")
    raise ConfigError(
        f"bad offset {text!r}: use beginning, end, N, -N (N before the end), s@TIMESTAMP_MS "
        "or e@TIMESTAMP_MS"
    )


def parse_offsets(values: Iterable[str]) -> Offsets:
    """Every ``-o`` given (kcat takes two: a start and ``e@``): at most one of each."""
    start: Start | None = None
    end_ms: int | None = None
    for text in values:
        if text.lower()[:2] == "e@":
            if end_ms is not None:
                raise ConfigError("give e@TIMESTAMP_MS once")
            end_ms = _timestamp_ms(text)
        elif start is not None:
            raise ConfigError("give one start offset (-o), and at most one -o e@TIMESTAMP_MS")
        else:
            start = parse_offset(text)
    return Offsets("latest" if start is None else start, end_ms)


def _timestamp_ms(text: str) -> int:
    digits = text[2:]
    if not (digits.isascii() and digits.isdigit()):
        raise ConfigError(f"bad offset {text!r}: {text[:2]} takes milliseconds since the epoch")
    return _below_u64(int(digits), text)


def _below_u64(value: int, text: str) -> int:
    # guard: offset-timestamp-past-2-64
    if value >= U64_LIMIT:
        raise ConfigError(f"bad offset {text!r}: offsets and timestamps are below 2^64")
    return value


# ------------------------------------------------------------------------ regex topics


def split_topics(topics: Iterable[str]) -> tuple[list[str], list[re.Pattern[str]]]:
    """Named topics and regex patterns: as in kcat and Kafka, a topic starting with ``^``
    is a regular expression, matched (``re.match``) against the topics of the cluster
    metadata; internal topics (``__group.*``) only when the pattern says so."""
    named: list[str] = []
    patterns: list[re.Pattern[str]] = []
    for topic in topics:
        if not topic.startswith("^"):
            named.append(topic)
            continue
        try:
            patterns.append(re.compile(topic))
        except re.error as exc:
            raise ConfigError(f"bad topic regex {topic!r}: {exc}") from None
    return named, patterns


def matching(patterns: Iterable[re.Pattern[str]], topics: Iterable[str]) -> list[str]:
    """The topics any of ``patterns`` matches, sorted; ``__group.`` topics only when the
    pattern itself starts with ``^__``."""
    pats = list(patterns)
    out = []
    for topic in topics:
        for pat in pats:
            if topic.startswith("__") and not pat.pattern.startswith("^__"):
                continue
            if pat.match(topic):
                out.append(topic)
                break
    return sorted(out)


def registered_topics(consumer: Consumer, wait: float) -> Mapping[str, Any] | None:
    """The topics of the cluster metadata the consumer follows (None: no metadata)."""
    view = consumer.metadata
    if view is None or not view.wait_loaded(wait):
        return None
    config = view.config
    return None if config is None else config["topics"]


def deleted_topics(consumer: Consumer) -> Mapping[str, int]:
    """The metadata's tombstones: topic -> the revision that deleted it."""
    view = consumer.metadata
    config = None if view is None else view.config
    return {} if config is None else dict(config.get("deleted", {}))


def check_not_refused(consumer: Consumer, topics: Iterable[str], wait: float) -> None:
    """Raise :class:`DafkaError` (exit 1) when a topic of ``topics`` (none of whose
    partitions reached this consumer) has a read ACL and the stores refuse this consumer:
    a store serves such a topic only to the CURVE keys the ACL names, and says nothing to
    others, so "no partition" would read as "empty" (the red team's F1: ``-e`` exited 0
    with a store holding 1,000 records). Only topics whose metadata has a read ACL are
    asked about (a query to every store)."""
    from ..metadata.state import topic_settings
    from ..query import protocol as qp
    from ..query.client import QueryError

    view = consumer.metadata
    config = None if view is None else view.config
    registered = {} if config is None else config.get("topics", {})
    guarded = sorted(
        t for t in set(topics) if t in registered and topic_settings(registered[t])["consumers"]
    )
    if not guarded:
        return
    with consumer.store_queries(timeout=max(wait, 1.0)) as q:  # its towers and key
        for topic in guarded:
            try:
                q.holders([topic])
            except QueryError as exc:
                # guard: e-watermarks-report-read-acl
                if exc.code is qp.ErrorCode.FORBIDDEN:
                    raise DafkaError(
                        f"topic {topic!r} has a read ACL and the stores refuse this consumer: {exc}"
                    ) from None
            except DafkaError:
                continue  # no store answered the query: nothing proven either way


# ------------------------------------------------------------------------------ e@


@dataclass(slots=True)
class StopAt:
    """kcat's ``-o e@MS``: each partition stops (prints nothing more) at its first record
    stamped at or after ``end_ms``; the consumer is done when every partition it knows
    has stopped. A record without a timestamp (rfc46) never stops one."""

    end_ms: int
    stopped: set[tuple[str, str]] = field(default_factory=set)

    def keep(self, records: list[ConsumedRecord]) -> tuple[list[ConsumedRecord], bool]:
        """The records to print, and whether a partition stopped in this batch."""
        out = []
        newly = False
        for r in records:
            key = (r.topic, r.partition)
            if key in self.stopped:
                continue
            if r.timestamp is not None and round(r.timestamp * 1000) >= self.end_ms:
                self.stopped.add(key)
                newly = True
                continue
            out.append(r)
        return out, newly

    def done(self, known: Iterable[tuple[str, str]]) -> bool:
        keys = set(known)
        return bool(keys) and keys <= self.stopped


# ---------------------------------------------------------------- -e: the end reached


def check_end(
    consumer: Consumer,
    topics: Iterable[str],
    start: Start,
    wait: float,
) -> list[str]:
    """At ``-e``'s end: raise :class:`DafkaError` (exit 1) when a topic read does not exist
    (not registered in the cluster metadata, and no store answers with a partition of it:
    an empty registered topic is fine) or ``-o N`` started past the end of a partition
    (it would print nothing there, ever, and exit 0). Returns notes for stderr."""
    notes: list[str] = []
    positions = consumer.positions()
    known = {t for t, _ in positions}
    missing = [t for t in topics if t not in known]
    if missing:
        registered = registered_topics(consumer, wait)
        unregistered = [t for t in missing if registered is None or t not in registered]
        if unregistered:
            # from the end (-o end), the stores were not asked: ask them now
            held = {t for t, _ in consumer.watermarks(unregistered, timeout=wait)}
            absent = [t for t in unregistered if t not in held]
            # guard: dafka-consumer-e-says-topic
            if absent:
                where = (
                    "no store holds it and the towers hold no cluster metadata"
                    if registered is None
                    else "not in the cluster metadata, and no store holds it"
                )
                deleted = deleted_topics(consumer)
                if len(absent) == 1 and absent[0] in deleted:
                    where = (
                        f"deleted at metadata revision {deleted[absent[0]]}, and no store holds it"
                    )
                names = ", ".join(repr(t) for t in absent)
                noun = "topic" if len(absent) == 1 else "topics"
                verb = "does" if len(absent) == 1 else "do"
                raise DafkaError(f"{noun} {names} {verb} not exist ({where})")
        check_not_refused(consumer, [t for t in missing if t not in unregistered], wait)
        if start != "latest":
            notes += [f"% topic {t!r} has no records yet" for t in missing if t not in unregistered]
    if isinstance(start, int) and not isinstance(start, bool) and start > 0:
        marks = consumer.watermarks([t for t in topics if t in known], timeout=wait)
        past = sorted((key, high) for key, (_low, high) in marks.items() if start > high)
        # guard: dafka-consumer-e-says-o
        if past:
            (topic, partition), high = past[0]
            more = f" and {len(past) - 1} more partition(s)" if len(past) > 1 else ""
            raise DafkaError(
                f"-o {start} is past the end of {topic}/{partition}{more} (high watermark "
                f"{high}: the next offset to be written); nothing there to read"
            )
    return notes
