"""Spark reads format-5 batches (issue 36): ``includeHeaders`` and the ``headers`` column,
the record's own ``timestamp``, tombstones as null values, a compacted batch's dropped
records absent, compressed batches opened; a signed lie fails the read with a WireError.

The batches are served by :class:`~tests.spark.fake_store.FakeStore` (the store's own
request logic over an in-memory storage), given with the ``stores`` option."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from dafka.security.identity import Identity
from dafka.wire.signed_batch import seal_records
from dafka.wire.signed_rich import Codec, RichRecord, compact_rich
from tests.rich_blobs import rich_blob, signed_lie, zstd_bomb
from tests.spark.fake_store import FakeStore

ME = Identity.from_seed(bytes(range(7, 39)))
P = ME.node_id
SEAL = 1_700_000_000_000
TRACE = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture(scope="module")
def store() -> Iterator[FakeStore]:
    s = FakeStore()
    plain = seal_records(ME, b"h.read", 0, [b"k0", None], [b"v0", b"v1"], SEAL)
    rich = rich_blob(
        ME,
        "h.read",
        2,
        [
            RichRecord(b"k2", b"v2", 1_600_000_000_123, (("traceparent", TRACE), ("n", None))),
            RichRecord(b"k0", None, SEAL + 5, (("a", b"1"), ("a", b"2"))),  # a tombstone
        ],
        SEAL + 10,
        Codec.ZSTD,
    )
    full = rich_blob(
        ME,
        "h.read",
        4,
        [RichRecord(b"k4", b"old", 1), RichRecord(b"k4", b"new", 2)],
        SEAL,
        Codec.LZ4,
    )
    compacted = compact_rich(full, 2 + len(b"h.read") + 36, 4, 2, [4])
    s.put("h.read", P, [(0, 1, plain), (2, 3, rich), (4, 5, compacted)])
    honest = rich_blob(ME, "h.bomb", 0, [RichRecord(b"k", b"v", 1)], SEAL, Codec.ZSTD)
    s.put("h.bomb", P, [(0, 0, zstd_bomb(honest, ME))])
    s.put(
        "h.root", P, [(0, 0, signed_lie(honest.replace(b"h.bomb", b"h.root"), ME, root=bytes(32)))]
    )
    yield s
    s.close()


def _read(spark, store: FakeStore, topic: str, **options: str):
    r = spark.read.format("dafka").option("stores", store.endpoint).option("subscribe", topic)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def _ms(stamp: dt.datetime) -> int:
    return round(stamp.replace(tzinfo=stamp.tzinfo or dt.UTC).timestamp() * 1000)


def test_headers_times_tombstones_and_compacted_holes(spark, store) -> None:
    df = _read(spark, store, "h.read", includeHeaders="true")
    assert df.schema.simpleString().endswith("headers:array<struct<key:string,value:binary>>>")
    rows = sorted(df.collect(), key=lambda r: r.offset)
    assert [r.offset for r in rows] == [0, 1, 2, 3, 5]  # 4 compacted away
    assert [None if r.value is None else bytes(r.value) for r in rows] == [
        b"v0",
        b"v1",
        b"v2",
        None,  # the tombstone
        b"new",
    ]
    assert [
        [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers] for r in rows
    ] == [
        [],
        [],
        [("traceparent", TRACE), ("n", None)],
        [("a", b"1"), ("a", b"2")],
        [],
    ]
    assert [_ms(r.timestamp) for r in rows] == [SEAL, SEAL, 1_600_000_000_123, SEAL + 5, 2]


def test_without_include_headers_there_is_no_headers_column(spark, store) -> None:
    df = _read(spark, store, "h.read")
    assert "headers" not in df.columns
    assert sorted(r.offset for r in df.select("offset").collect()) == [0, 1, 2, 3, 5]
    with pytest.raises(Exception, match="includeHeaders=true"):
        spark.read.format("dafka").schema(
            "value binary, headers array<struct<key:string,value:binary>>"
        ).option("stores", store.endpoint).option("subscribe", "h.read").load().collect()


@pytest.mark.parametrize(("topic", "why"), [("h.bomb", "decompress"), ("h.root", "not the ones")])
def test_a_signed_lie_fails_the_read(spark, store, topic: str, why: str) -> None:
    with pytest.raises(Exception, match=why):
        _read(spark, store, topic, includeHeaders="true").collect()
