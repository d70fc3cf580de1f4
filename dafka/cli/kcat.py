"""kcat's other modes and its JSON envelope, for ``dafka-consumer`` (``docs/consumer.md``,
"kcat's -J, -L and -Q"):

* ``-J``: one JSON object per record with kcat's field names (``topic``, ``partition``,
  ``offset``, ``tstype``, ``ts``, ``broker``, ``headers`` when it has some, ``key``,
  ``payload``), so jq scripts written
  for kcat read Dafka; ``--json`` keeps its own names.
* ``-L``: one-shot metadata listing (the towers, the stores they relay, each topic the
  stores hold with its partitions, their offsets and holders), then exit.
* ``-Q TOPIC:PARTITION:TS ...``: the offset of each partition's first record stamped at or
  after ``TS`` (ms since the epoch), kcat's query mode (``-Q -t TOPIC:PARTITION:TS``; here
  ``-t`` is ``--tower``, so the specs are the arguments), then exit.

The consumer itself is not started for ``-L`` and ``-Q``: they ask the stores' query
endpoints (:class:`~dafka.api.cluster.StoreQueries`) and the metadata when there is one.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..core.effects import ConsumedRecord
from ..errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["kcat_json", "kcat_options", "parse_topic_time", "run_mode"]


def kcat_options(f: F) -> F:
    """``-J``, ``-L`` and ``-Q`` on ``dafka-consumer``."""
    for option in reversed(
        [
            click.option(
                "-J",
                "json_envelope",
                is_flag=True,
                help="One JSON object per record with kcat's -J field names: topic, "
                "partition, offset, tstype, ts (ms, -1: none), broker (-1), key, payload "
                "(null when absent; key_base64 / payload_base64 when not UTF-8).",
            ),
            click.option(
                "-L",
                "--list",
                "list_metadata",
                is_flag=True,
                help="List the towers, the stores they relay, and each topic the stores hold "
                "(TOPICS, or all) with its partitions, then exit (kcat -L; -J: as JSON).",
            ),
            click.option(
                "-Q",
                "--query-times",
                "query_times",
                is_flag=True,
                help="TOPICS are TOPIC:PARTITION:TS: print 'TOPIC [PARTITION] offset N', the "
                "first offset stamped at or after TS ms (-1: none), for each, then exit "
                "(kcat -Q -t TOPIC:PARTITION:TS; -t is --tower here).",
            ),
        ]
    ):
        f = option(f)
    return f


def text_or_b64(name: str, value: bytes | None) -> dict[str, object]:
    """``{name: text}`` for UTF-8 bytes, else ``{name: None, name_base64: ...}`` (also
    ``--json``'s rule, dafka.cli.consumer)."""
    if value is None:
        return {name: None}
    try:
        return {name: value.decode()}
    except UnicodeDecodeError:
        return {name: None, f"{name}_base64": base64.b64encode(value).decode()}


def kcat_json(r: ConsumedRecord) -> bytes:
    """kcat's ``-J`` envelope of one record, on one line. ``tstype`` is ``create`` (the
    record's own time, or its batch's seal time) or ``unknown`` with ``ts`` -1 (rfc46 records carry no
    time); ``broker`` is -1 (records come from producers and stores, not a broker)."""
    obj: dict[str, object] = {"topic": r.topic, "partition": r.partition, "offset": r.offset}
    if r.timestamp is None:
        obj.update(tstype="unknown", ts=-1)
    else:
        obj.update(tstype="create", ts=round(r.timestamp * 1000))
    obj["broker"] = -1
    if r.headers:  # kcat: a flat array of names and values, only when there are headers
        flat: list[object] = []
        for key, value in r.headers:
            flat.append(key)
            flat.append(_header_value(value))
        obj["headers"] = flat
    obj.update(text_or_b64("key", r.key))
    obj.update(text_or_b64("payload", r.value))
    return json.dumps(obj).encode() + b"\n"


def _header_value(value: bytes | None) -> object:
    """A header value in ``-J``'s flat array: its text, ``null``, or ``{"base64": ...}``
    when it is not UTF-8 (kcat would write the bytes, not JSON)."""
    if value is None:
        return None
    try:
        return value.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode()}


def parse_topic_time(text: str) -> tuple[str, str, int]:
    """``TOPIC:PARTITION:TS`` (the topic may hold ``:``; the last two fields are split off)."""
    topic, sep1, rest = text.rpartition(":")
    topic, sep2, partition = topic.rpartition(":")
    ts = rest
    if not (sep1 and sep2 and topic and partition) or not ts.isdigit():
        raise ConfigError(
            f"-Q {text!r}: give TOPIC:PARTITION:TIMESTAMP_MS (the partition is its "
            "producer's node ID, as -f %p prints it)"
        )
    return topic, partition.upper(), int(ts)


def run_mode(
    *,
    topics: Sequence[str],
    tower: str,
    key: Any,
    list_metadata: bool,
    query_times: bool,
    json_envelope: bool,
    timeout: float,
) -> bool:
    """Run ``-L`` or ``-Q`` if asked (True: done, exit), else check ``-t`` was not given."""
    if list_metadata and query_times:
        raise ConfigError("give -L or -Q, not both")
    if query_times:
        if not topics:
            raise ConfigError("-Q needs at least one TOPIC:PARTITION:TIMESTAMP_MS")
        _query(tower, key, [parse_topic_time(t) for t in topics], json_envelope, timeout)
        return True
    if list_metadata:
        _list(tower, key, list(topics) or None, json_envelope, timeout)
        return True
    if not topics:
        raise click.UsageError("Missing argument 'TOPICS...'.")
    return False


def _query(
    tower: str, key: Any, asks: list[tuple[str, str, int]], as_json: bool, timeout: float
) -> None:
    from ..api.cluster import StoreQueries

    times: dict[tuple[str, str], int] = {}
    for topic, partition, ts in asks:
        if (topic, partition) in times:
            raise ConfigError(f"-Q names {topic}:{partition} twice (kcat: once each)")
        times[(topic, partition)] = ts
    with StoreQueries(tower, key=key, timeout=timeout) as q:
        found = q.offsets_for_times(times)
    for (topic, partition), offset in found.items():
        n = -1 if offset is None else offset
        if as_json:
            click.echo(json.dumps({"topic": topic, "partition": partition, "offset": n}))
        else:
            click.echo(f"{topic} [{partition}] offset {n}")


def _list(tower: str, key: Any, topics: list[str] | None, as_json: bool, timeout: float) -> None:
    from ..api.cluster import StoreQueries

    with StoreQueries(tower, key=key, timeout=timeout) as q:
        stores = q.locator.stores()
        listed = q.list_topics(topics)
        towers = [str(t) for t in q.locator.towers]
    if as_json:
        doc = {
            "towers": [{"address": t} for t in towers],
            "stores": [{"id": i, "query": e} for i, e in stores.items()],
            "topics": [
                {
                    "topic": name,
                    "partitions": [
                        {
                            "partition": p.partition,
                            "low": p.low,
                            "high": p.high,
                            "stores": list(p.stores),
                        }
                        for p in t.partitions.values()
                    ],
                }
                for name, t in listed.items()
            ],
        }
        click.echo(json.dumps(doc))
        return
    which = "all topics" if topics is None else ", ".join(topics)
    click.echo(f"Metadata for {which} (from towers {', '.join(towers)}):")
    click.echo(f" {len(towers)} towers:")
    for address in towers:
        click.echo(f"  tower {address}")
    click.echo(f" {len(stores)} stores:")
    for node_id, endpoint in stores.items():
        click.echo(f"  store {node_id} at {endpoint}")
    click.echo(f" {len(listed)} topics:")
    for name, t in listed.items():
        click.echo(f'  topic "{name}" with {len(t.partitions)} partitions:')
        for p in t.partitions.values():
            click.echo(
                f"    partition {p.partition}, low {p.low}, high {p.high}, "
                f"stores: {','.join(p.stores)}"
            )
