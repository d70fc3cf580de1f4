"""Format-5 batches a hostile producer signs, given to the readers outside the nodes: the
query client (``dafka.query.records``) and Spark's Arrow decoding. A producer signs its
own lies, so these batches verify; opening one must fail the read with a WireError (a
decompression bomb, a stated size over the reader's bound, records that are not the
signed hash list), never give a row, and never cost the memory the lie claims. The
store's query endpoint serves such a blob as it stored it: it never opens one."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from dafka.errors import WireError  # noqa: E402
from dafka.query import protocol as qp  # noqa: E402
from dafka.query.client import records  # noqa: E402
from dafka.query.server import serve  # noqa: E402
from dafka.spark.arrow_columns import SIGNED_COLUMNS, signed_reply_chunks  # noqa: E402
from dafka.storage.base import StoredBatch  # noqa: E402
from dafka.storage.memory import MemoryStorage  # noqa: E402
from dafka.wire import signed_rich  # noqa: E402
from dafka.wire.signed_checks import LimitExceeded  # noqa: E402
from dafka.wire.signed_rich import (  # noqa: E402
    Codec,
    DecompressionBomb,
    RichRecord,
    RootMismatch,
    compact_rich,
)
from tests.rich_blobs import rich_blob, signed_lie, zstd_bomb  # noqa: E402
from tests.signing import PRODUCER  # noqa: E402

TOPIC = "t"
P = PRODUCER.node_id
HONEST = [
    RichRecord(b"k", b"v1", 7, (("traceparent", b"00-ab-cd-01"),)),
    RichRecord(b"k", None, 8),
]


def _reply(*blobs: bytes) -> qp.ReadReply:
    packed, offset = [], 0
    for blob in blobs:
        count = int.from_bytes(blob[2 + blob[1] + 24 : 2 + blob[1] + 28], "big")
        packed.append((offset, offset + count - 1, blob))
        offset += count
    f, lasts, ends, data = qp.pack_batches(packed)
    return qp.ReadReply(1, TOPIC, P, 0, offset - 1, f, lasts, ends, data, "signed")


def _honest(first: int = 0, codec: Codec = Codec.ZSTD) -> bytes:
    return rich_blob(PRODUCER, TOPIC, first, HONEST, codec=codec)


def _spark(reply: qp.ReadReply, **kw: object) -> list[dict]:
    return list(signed_reply_chunks(reply, 0, 10**6, SIGNED_COLUMNS, **kw))  # type: ignore[arg-type]


WHY = {  # what each lie fails with (every one a WireError) and what its message says
    "bomb": (WireError, "decompress"),
    "stated-over-any-bound": (LimitExceeded, "4294967295"),  # refused when verified
    "root-mismatch": (RootMismatch, "not the ones"),
    "root-mismatch-uncompressed": (RootMismatch, "not the ones"),
}


LIES = list(WHY)


@pytest.mark.parametrize("lie", LIES)
def test_spark_refuses_a_signed_lie_and_gives_no_row(lie: str) -> None:
    # the honest batch first: the lie after it fails the whole read, no row is given
    reply = _reply(_honest(), _lie_at(lie, 2))
    chunks = signed_reply_chunks(reply, 0, 4, SIGNED_COLUMNS, chunk_rows=1)
    with pytest.raises(WHY[lie][0], match=WHY[lie][1]):
        next(chunks)


def _lie_at(lie: str, first: int) -> bytes:
    """A batch from ``first`` its producer signed with the lie ``lie`` (a key of WHY)."""
    honest = rich_blob(PRODUCER, TOPIC, first, HONEST, codec=Codec.ZSTD)
    if lie == "bomb":
        return zstd_bomb(honest, PRODUCER)
    if lie == "stated-over-any-bound":
        return signed_lie(honest, PRODUCER, raw_len=2**32 - 1)
    if lie == "root-mismatch":
        return signed_lie(honest, PRODUCER, root=bytes(32))
    plain = rich_blob(PRODUCER, TOPIC, first, HONEST, codec=Codec.NONE)
    return signed_lie(plain, PRODUCER, root=bytes(32))


@pytest.mark.parametrize("lie", LIES)
def test_query_records_refuse_a_signed_lie(lie: str) -> None:
    reply = _reply(_lie_at(lie, 0))
    with pytest.raises(WHY[lie][0], match=WHY[lie][1]):
        list(records(reply))


def _big(codec: Codec) -> bytes:
    """An honest batch whose records are 2 MiB raw (a few KiB compressed)."""
    recs = [RichRecord(b"k%d" % i, bytes(256 * 1024), 1) for i in range(8)]
    return rich_blob(PRODUCER, TOPIC, 0, recs, codec=codec)


@pytest.mark.parametrize("codec", [Codec.ZSTD, Codec.LZ4], ids=["zstd", "lz4"])
def test_spark_decompresses_only_within_its_bound(codec: Codec) -> None:
    reply = _reply(_big(codec))
    with pytest.raises(DecompressionBomb, match="bound is 1048576"):  # the signed size
        _spark(reply, max_raw=1024 * 1024)
    assert len(_spark(reply, max_raw=4 * 1024 * 1024)[0]["value"]) == 8


def test_query_client_decompresses_only_within_its_bound() -> None:
    reply = _reply(_big(Codec.ZSTD))
    with pytest.raises(DecompressionBomb, match="bound is 1048576"):
        list(records(reply, max_raw=1024 * 1024))
    assert len(list(records(reply, max_raw=4 * 1024 * 1024))) == 8


def test_the_query_endpoint_serves_a_bomb_as_stored_and_never_opens_it(monkeypatch) -> None:
    bomb = _lie_at("bomb", 0)

    def refuse(*args: object) -> bytes:
        raise AssertionError("the store decompressed a blob to serve it")

    monkeypatch.setattr(signed_rich, "_decompress", refuse)
    storage = MemoryStorage()
    storage.append([StoredBatch(TOPIC, P, 0, 1, bomb)])
    reply = serve(storage, qp.ReadRequest(1, TOPIC, P, 0, 10, 10**6), profile="signed")
    assert isinstance(reply, qp.ReadReply)
    assert [blob for *_, blob in reply.batches()] == [bomb]
    assert len(bomb) < 64 * 1024  # what the store holds and sends: the bomb's wire size


def test_a_wire_error_not_a_crash_for_every_lie() -> None:
    for lie in LIES:
        with pytest.raises(WireError):
            list(records(_reply(_lie_at(lie, 0))))


def _store_altered_compacted() -> bytes:
    """A compacted batch (the producer's signature, offset 0 dropped) in which a store
    changed a kept record's value: the digest does not cover the entries, the root does."""
    full = rich_blob(PRODUCER, TOPIC, 0, [*HONEST, RichRecord(b"j", b"value", 9)])
    compacted = compact_rich(full, 2 + len(TOPIC) + 36, 0, 3, [0])
    at = compacted.rindex(b"value")
    return compacted[:at] + b"VALUE" + compacted[at + 5 :]


def test_spark_refuses_a_compacted_batch_a_store_changed() -> None:
    reply = _reply(_store_altered_compacted())
    with pytest.raises(RootMismatch):
        _spark(reply)
    with pytest.raises(RootMismatch):
        list(records(reply))
