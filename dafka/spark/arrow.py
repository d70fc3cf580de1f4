"""Arrow record batches from READ replies: the source's columns, built on the executors.

Under ``rfc46`` a reply maps onto Arrow buffers with no per-record Python (a batch is one
record: its blob is the value); under ``signed`` each batch is verified first
(:mod:`~dafka.spark.arrow_columns`) and decoded into keyed, timestamped columns, which
point into the verified blobs rather than copy them. Either way only the columns the
read schema names are built: a query reading ``.schema("value binary")`` never makes keys,
offsets, timestamps or the topic's name once per row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ConfigError, DafkaError, ProfileError
from ..query.protocol import ReadReply
from .options import ReadOptions

__all__ = [
    "COLUMNS",
    "SCHEMA",
    "SCHEMA_WITH_HEADERS",
    "arrow_schema",
    "check_read_schema",
    "reply_batches",
]


def arrow_schema(schema):
    """The Arrow schema of a Spark ``StructType`` (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _rfc46_batch(reply: ReadReply, lo: int, hi: int, arrow_schema):
    """Arrow rows for offsets ``lo..hi-1`` of an rfc46 READ reply, without per-record Python
    (only the columns ``arrow_schema`` names are built)."""
    import pyarrow as pa

    n = reply.count
    first = reply.first
    assert first is not None
    # one record per batch: batch i holds offset first + i when the reply is contiguous
    if reply.next_offset != first + n:
        raise DafkaError(f"{reply.topic}/{reply.partition}: an rfc46 batch holds several offsets")
    lo_i, hi_i = max(0, lo - first), min(n, hi - first)
    count = hi_i - lo_i
    if count <= 0:
        return None

    def column(name: str):
        if name == "value":
            positions = pa.py_buffer(b"\0\0\0\0" + bytes(reply.ends))
            values = pa.Array.from_buffers(
                pa.binary(), n, [None, positions, pa.py_buffer(reply.data)]
            )
            return values.slice(lo_i, count)
        if name == "offset":
            lasts = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(reply.lasts)])
            return lasts.slice(lo_i, count)
        if name in ("topic", "partition"):
            return pa.repeat(pa.scalar(getattr(reply, name), pa.string()), count)
        if name == "headers":  # rfc46 records carry none
            from .arrow_columns import _no_headers

            return _no_headers(count)
        kinds = {"key": pa.binary(), "timestamp": pa.timestamp("us", tz="UTC")}
        return pa.nulls(count, kinds.get(name, pa.int32()))  # rfc46 records carry neither

    return _batch({field.name: column(field.name) for field in arrow_schema}, arrow_schema)


def _signed_batches(reply: ReadReply, lo: int, hi: int, arrow_schema) -> Iterator[object]:
    """Arrow batches of offsets ``lo..hi-1`` of a signed READ reply, every batch of the
    reply verified (once) before the first is given; only the columns the schema names."""
    from .arrow_columns import signed_reply_chunks

    for columns in signed_reply_chunks(reply, lo, hi, arrow_schema.names):
        yield _batch(columns, arrow_schema)


_TYPES = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "string",
    "offset": "bigint",
    "timestamp": "timestamp",
    "timestampType": "int",
    "headers": "array<struct<key:string,value:binary>>",
}
"""The source's columns and their Spark types (as ``DataType.simpleString`` names them);
``headers`` only with ``includeHeaders`` (as Spark's Kafka source)."""
COLUMNS = tuple(_TYPES)
SCHEMA = ", ".join(f"{name} {kind}" for name, kind in _TYPES.items() if name != "headers")
"""The source's schema (DDL), the one :func:`check_read_schema` checks a user's against."""
SCHEMA_WITH_HEADERS = SCHEMA + ", headers array<struct<key: string, value: binary>>"
"""The source's schema with ``includeHeaders=true``."""


def check_read_schema(schema, include_headers: bool = False) -> None:
    """Refuse a read schema (the user's, given with ``.schema(...)``) that names a column
    the source does not have, names one twice, or gives one another type: on the driver,
    before any task runs. A schema naming fewer columns is how a query reads only those:
    Spark prunes no columns for a Python data source."""
    seen: set[str] = set()
    for field in schema.fields:
        name, kind = field.name, field.dataType.simpleString()
        if name not in _TYPES:
            raise ConfigError(
                f"the dafka source has no column {name!r}: its columns are " + ", ".join(COLUMNS)
            )
        if name == "headers" and not include_headers:
            raise ConfigError(
                "the read schema names column 'headers': set option includeHeaders=true "
                "to read records' headers (as Spark's Kafka source)"
            )
        if name in seen:
            raise ConfigError(f"the read schema names column {name!r} twice")
        seen.add(name)
        if kind != _TYPES[name]:
            raise ConfigError(
                f"column {name!r} of the dafka source is {_TYPES[name]}, not {kind}: "
                "read it as it is and cast it in the query"
            )
    if not seen:
        raise ConfigError("the read schema names no column of the dafka source")


def _batch(columns: Mapping[str, Any], arrow_schema):
    """``columns`` (by name) as a batch of ``arrow_schema``: the fields it names (each
    built), cast to its types where they differ."""
    import pyarrow as pa

    fixed = []
    for field in arrow_schema:  # names checked on the driver (check_read_schema)
        col = columns[field.name]
        fixed.append(col if col.type == field.type else col.cast(field.type))
    return pa.RecordBatch.from_arrays(fixed, schema=arrow_schema)


def reply_batches(
    reply: ReadReply, lo: int, hi: int, arrow_schema, opts: ReadOptions, endpoint
) -> list[object]:
    """Arrow batches of a READ reply for offsets ``lo..hi-1``, per the profile the store
    names (none when it holds none of them). Signed batches are all verified here, before
    this returns: a reply that does not verify raises, and gives no row."""
    if reply.profile == "signed":
        return list(_signed_batches(reply, lo, hi, arrow_schema))
    if opts.profile == "signed":
        raise ProfileError(
            f"{endpoint} serves {reply.topic}/{reply.partition} as unsigned rfc46 records, "
            "but the query asked for profile=signed"
        )
    batch = _rfc46_batch(reply, lo, hi, arrow_schema)
    return [] if batch is None else [batch]
