"""seal_rich_columns (the producer's format-5 path) gives the very blob seal_rich gives."""

from __future__ import annotations

import pytest

from dafka.errors import WireError
from dafka.security.identity import Identity
from dafka.wire.signed_builder import RecordExtra, header_bytes, seal_rich_batches
from dafka.wire.signed_checks import LimitExceeded, encode_topic
from dafka.wire.signed_rich import Codec, RichRecord, seal_rich, seal_rich_columns

ID = Identity.from_seed(bytes(range(32)))
TOPIC = encode_topic("orders")
SEAL = 1_764_000_000_000
RECORDS = [
    RichRecord(None, b"plain", SEAL, ()),
    RichRecord(b"k1", b"keyed", SEAL - 5, ()),
    RichRecord(b"k2", None, SEAL + 7, ()),
    RichRecord(None, None, SEAL, (("trace", b"abc"), ("empty", None))),
    RichRecord(b"k3", b"v" * 300, SEAL, (("h", b""),)),
]


def _columns(records: list[RichRecord]) -> tuple[list, list, list, list]:
    return (
        [r.key for r in records],
        [r.value for r in records],
        [r.timestamp_ms for r in records],
        [r.headers for r in records],
    )


@pytest.mark.parametrize("codec", list(Codec))
def test_columns_seal_the_same_blob_as_records(codec: Codec) -> None:
    want = seal_rich(ID, TOPIC, 40, RECORDS, SEAL, codec)
    assert seal_rich_columns(ID, TOPIC, 40, *_columns(RECORDS), SEAL, codec) == want


def test_default_columns_mean_no_key_the_seal_time_no_headers() -> None:
    values = [b"a", b"bb", b"ccc"]
    want = seal_rich(ID, TOPIC, 0, [RichRecord(None, v, SEAL, ()) for v in values], SEAL)
    assert seal_rich_columns(ID, TOPIC, 0, None, values, None, None, SEAL) == want


def test_columns_of_other_lengths_are_refused() -> None:
    with pytest.raises(ValueError):
        seal_rich_columns(ID, TOPIC, 0, [None], [b"a", b"b"], None, None, SEAL)
    with pytest.raises(ValueError):
        seal_rich_columns(ID, TOPIC, 0, None, [b"a"], [SEAL, SEAL], None, SEAL)
    with pytest.raises(ValueError):
        seal_rich_columns(ID, TOPIC, 0, None, [b"a"], None, [(), ()], SEAL)


def test_columns_keep_the_checks() -> None:
    with pytest.raises(WireError):
        seal_rich_columns(ID, TOPIC, 0, None, [], None, None, SEAL)
    with pytest.raises(LimitExceeded):
        seal_rich_columns(ID, TOPIC, 0, [b"k" * 70_000], [b"v"], None, None, SEAL)
    with pytest.raises(WireError):
        seal_rich_columns(ID, TOPIC, 0, None, [b"v"], [-1], None, SEAL)


def test_batches_with_extras_seal_what_the_records_say() -> None:
    values = [b"one", b"", b"three", b"four"]
    keys = [b"a", b"b", None, b"d"]
    extras = {
        1: RecordExtra(tombstone=True),
        2: RecordExtra(SEAL - 9, (("x", b"1"),), False, header_bytes((("x", b"1"),))),
        99: RecordExtra(1, (), True),  # past the records: ignored
    }
    ((first, count, blob),) = seal_rich_batches(ID, "orders", 10, keys, values, SEAL, extras)
    want = [
        RichRecord(b"a", b"one", SEAL, ()),
        RichRecord(b"b", None, SEAL, ()),
        RichRecord(None, b"three", SEAL - 9, (("x", b"1"),)),
        RichRecord(b"d", b"four", SEAL, ()),
    ]
    assert (first, count) == (10, 4)
    assert blob == seal_rich(ID, TOPIC, 10, want, SEAL)
