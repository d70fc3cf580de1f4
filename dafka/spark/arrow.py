"""Arrow record batches from READ replies: the source's columns, built on the executors.

Under ``rfc46`` a reply maps onto Arrow buffers with no per-record Python (a batch is one
record: its blob is the value); under ``signed`` each batch is verified first
(:mod:`~dafka.spark.arrow_columns`) and decoded into keyed, timestamped columns.
"""

from __future__ import annotations

from ..errors import ConfigError, DafkaError, ProfileError
from ..query.protocol import ReadReply
from .options import ReadOptions

__all__ = ["COLUMNS", "CREATE_TIME", "SCHEMA", "arrow_schema", "check_read_schema", "reply_batch"]

CREATE_TIME = 0
"""``timestampType`` of a record stamped by its producer (Kafka's CreateTime)."""


def arrow_schema(schema):
    """The Arrow schema of a Spark ``StructType`` (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _rfc46_batch(reply: ReadReply, lo: int, hi: int, arrow_schema):
    """Arrow rows for offsets ``lo..hi-1`` of an rfc46 READ reply, without per-record Python."""
    import pyarrow as pa

    n = reply.count
    first = reply.first
    assert first is not None
    lasts = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(reply.lasts)])
    positions = pa.py_buffer(b"\0\0\0\0" + bytes(reply.ends))
    values = pa.Array.from_buffers(pa.binary(), n, [None, positions, pa.py_buffer(reply.data)])
    # one record per batch: batch i holds offset first + i when the reply is contiguous
    if reply.next_offset != first + n:
        raise DafkaError(f"{reply.topic}/{reply.partition}: an rfc46 batch holds several offsets")
    lo_i, hi_i = max(0, lo - first), min(n, hi - first)
    count = hi_i - lo_i
    if count <= 0:
        return None
    columns = [
        pa.nulls(count, pa.binary()),
        values.slice(lo_i, count),
        pa.repeat(pa.scalar(reply.topic, pa.string()), count),
        pa.repeat(pa.scalar(reply.partition, pa.string()), count),
        lasts.slice(lo_i, count),
        pa.nulls(count, pa.timestamp("us", tz="UTC")),
        pa.nulls(count, pa.int32()),
    ]
    return _batch(columns, arrow_schema)


def _signed_batch(reply: ReadReply, lo: int, hi: int, arrow_schema):
    """Arrow rows for offsets ``lo..hi-1`` of a signed READ reply, every batch verified first."""
    import pyarrow as pa

    from .arrow_columns import signed_reply_columns

    columns = signed_reply_columns(reply, lo, hi)
    if columns is None:
        return None
    n = len(columns[0])
    # every signed batch carries its producer's time: Kafka's CreateTime
    columns.append(pa.repeat(pa.scalar(CREATE_TIME, pa.int32()), n))
    return _batch(columns, arrow_schema)


_TYPES = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "string",
    "offset": "bigint",
    "timestamp": "timestamp",
    "timestampType": "int",
}
"""The source's columns and their Spark types (as ``DataType.simpleString`` names them)."""
COLUMNS = tuple(_TYPES)
SCHEMA = ", ".join(f"{name} {kind}" for name, kind in _TYPES.items())
"""The source's schema (DDL), the one :func:`check_read_schema` checks a user's against."""


def check_read_schema(schema) -> None:
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


def _batch(columns, arrow_schema):
    """The columns (in :data:`COLUMNS` order) as a batch of ``arrow_schema``: the fields it
    names, cast to its types (a schema given with fewer columns takes only those)."""
    import pyarrow as pa

    by_name = dict(zip(COLUMNS, columns, strict=True))
    fixed = []
    for field in arrow_schema:  # names checked on the driver (check_read_schema)
        col = by_name[field.name]
        fixed.append(col if col.type == field.type else col.cast(field.type))
    return pa.RecordBatch.from_arrays(fixed, schema=arrow_schema)


def reply_batch(reply: ReadReply, lo: int, hi: int, arrow_schema, opts: ReadOptions, endpoint):
    """Arrow rows of a READ reply for offsets ``lo..hi-1``, per the profile the store names."""
    if reply.profile == "signed":
        return _signed_batch(reply, lo, hi, arrow_schema)
    if opts.profile == "signed":
        raise ProfileError(
            f"{endpoint} serves {reply.topic}/{reply.partition} as unsigned rfc46 records, "
            "but the query asked for profile=signed"
        )
    return _rfc46_batch(reply, lo, hi, arrow_schema)
