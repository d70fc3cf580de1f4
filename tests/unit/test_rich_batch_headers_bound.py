"""A batch's headers are bounded in all, not only per record (issue 36, red team): 64 MiB
of records with 256 empty headers each passed every per-record bound, and cost a reader
12 s of CPU and ten times their bytes in memory to parse. Readers refuse a batch with
more than MAX_BATCH_HEADERS headers before parsing past them; producers cut batches so
that none has more."""

from __future__ import annotations

import time

import pytest

from dafka.security.identity import Identity
from dafka.wire.signed_batch import open_batch, verify_batch
from dafka.wire.signed_builder import RecordExtra, header_bytes, seal_rich_batches
from dafka.wire.signed_checks import LimitExceeded, encode_topic
from dafka.wire.signed_rich import (
    MAX_BATCH_HEADERS,
    MAX_HEADERS,
    Codec,
    RichRecord,
    seal_rich,
)

EMPTY = tuple(("", b"") for _ in range(MAX_HEADERS))


def test_a_producer_cannot_seal_more_headers_than_a_batch_holds() -> None:
    records = [RichRecord(None, b"", 0, EMPTY)] * (MAX_BATCH_HEADERS // MAX_HEADERS + 1)
    with pytest.raises(LimitExceeded, match="headers in one batch"):
        seal_rich(Identity.generate(), encode_topic("t"), 0, records, 0)


def test_a_batch_with_too_many_headers_is_refused_before_they_are_parsed() -> None:
    """A producer signing one anyway (the bound lifted while it seals): a reader refuses it
    at the first header past the bound, in far less time than parsing them all takes."""
    n = 4 * MAX_BATCH_HEADERS // MAX_HEADERS
    honest = seal_rich(
        Identity.generate(), encode_topic("t"), 0, [RichRecord(None, b"", 0, ())] * n, 0
    )
    bomb = _sealed_over_the_bound(n)
    verify_batch(honest)
    started = time.process_time()
    with pytest.raises(LimitExceeded, match="headers in one batch"):
        open_batch(verify_batch(bomb))
    assert time.process_time() - started < 2.0
    assert len(open_batch(verify_batch(honest))) == n


def _sealed_over_the_bound(n: int) -> bytes:
    import dafka.wire.signed_rich as rich

    bound = rich.MAX_BATCH_HEADERS
    rich.MAX_BATCH_HEADERS = 1 << 30  # a producer that does not keep it
    try:
        records = [RichRecord(None, b"", 0, EMPTY)] * n
        return seal_rich(Identity.generate(), encode_topic("t"), 0, records, 0, Codec.ZSTD)
    finally:
        rich.MAX_BATCH_HEADERS = bound


def test_the_producer_cuts_batches_at_the_headers_bound() -> None:
    n = 3 * MAX_BATCH_HEADERS // MAX_HEADERS
    extra = RecordExtra(None, EMPTY, False, header_bytes(EMPTY))
    blobs = seal_rich_batches(
        Identity.generate(), "t", 0, None, [b"v"] * n, 0, dict.fromkeys(range(n), extra)
    )
    assert len(blobs) >= 3
    assert sum(count for _first, count, _blob in blobs) == n
    for _first, _count, blob in blobs:
        recs = open_batch(verify_batch(blob))
        assert sum(map(len, recs.headers)) <= MAX_BATCH_HEADERS
