"""Sealing makes the same bytes it always did: the producer's fast paths against a plain
reference.

:func:`reference_seal` is the sealing the producer used before the fast paths (each
batch laid out field by field as docs/wire.md §9.3 draws it, the cuts found record by
record). Ed25519 is deterministic, so the same records, cuts, timestamp and key give the
same blob, signature included: every blob :func:`seal_batches` makes is compared with it
byte for byte, for random records, keys (none, some, all), caps and both record formats.
"""

from __future__ import annotations

import hashlib
import struct

import pytest
from blake3 import blake3
from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.security.identity import Identity
from dafka.wire import signed
from dafka.wire.signed_batch import BATCH_CONTEXT, BATCH_CONTEXT_V3, seal_records
from dafka.wire.signed_builder import seal_batches
from dafka.wire.signed_checks import encode_topic

P_ID = Identity.from_seed(bytes(range(0x00, 0x20)))
TS = 1_700_000_000_000
NO_KEY = 0xFFFFFFFF


def reference_blob(
    topic: str, first: int, records: list[tuple[bytes | None, bytes]], ts: int, fmt: int
) -> bytes:
    """One batch, field by field (docs/wire.md §9.3)."""
    topic_raw = topic.encode()
    out = bytes((fmt, len(topic_raw))) + topic_raw + P_ID.node_id_bytes
    out += struct.pack(">QIQ", first, len(records), ts)
    out += b"".join(struct.pack(">I", NO_KEY if k is None else len(k)) for k, _ in records)
    out += b"".join(struct.pack(">I", len(v)) for _, v in records)
    out += b"".join(k for k, _ in records if k is not None)
    out += b"".join(v for _, v in records)
    out += P_ID.public_key
    if fmt == 3:
        return out + P_ID.sign(BATCH_CONTEXT_V3 + blake3(out).digest())
    return out + P_ID.sign(BATCH_CONTEXT + hashlib.blake2b(out, digest_size=32).digest())


def reference_seal(
    topic: str,
    first: int,
    records: list[tuple[bytes | None, bytes]],
    ts: int,
    max_records: int,
    max_bytes: int,
    fmt: int,
) -> list[tuple[int, int, bytes]]:
    """The cuts record by record: a record joins the open batch while the batch stays
    within ``max_records`` and ``max_bytes``; a record too big for any travels alone."""
    room = max_bytes - signed.batch_overhead(topic)
    batches: list[list[tuple[bytes | None, bytes]]] = []
    used = 0
    for key, value in records:
        size = 8 + len(value) + (0 if key is None else len(key))
        if not batches or len(batches[-1]) >= max_records or used + size > room:
            batches.append([])
            used = 0
        batches[-1].append((key, value))
        used += size
    out = []
    for batch in batches:
        out.append((first, len(batch), reference_blob(topic, first, batch, ts, fmt)))
        first += len(batch)
    return out


KEYS = st.one_of(st.none(), st.binary(max_size=40))
RECORDS = st.one_of(
    st.lists(st.tuples(st.none(), st.binary(max_size=300)), max_size=60),  # no keys
    st.lists(st.tuples(st.binary(max_size=40), st.binary(max_size=300)), max_size=60),  # all
    st.lists(st.tuples(KEYS, st.binary(max_size=300)), max_size=60),  # some
)


@settings(max_examples=300, deadline=None)
@given(
    records=RECORDS,
    max_records=st.integers(1, 20),
    max_bytes=st.integers(150, 3000),
    first=st.integers(0, 2**40),
    fmt=st.sampled_from(signed.BATCH_FORMATS),
    lengths=st.booleans(),
    keys_as_none=st.booleans(),
)
def test_seal_batches_makes_the_reference_blobs(
    records: list[tuple[bytes | None, bytes]],
    max_records: int,
    max_bytes: int,
    first: int,
    fmt: int,
    lengths: bool,
    keys_as_none: bool,
) -> None:
    keys: list[bytes | None] | None = [k for k, _ in records]
    if keys_as_none and all(k is None for k in keys or ()):
        keys = None  # how the producer says "no keys"
    values = [v for _, v in records]
    got = seal_batches(
        P_ID,
        "topic",
        first,
        keys,
        values,
        TS,
        max_records=max_records,
        max_bytes=max_bytes,
        fmt=fmt,
        value_lengths=list(map(len, values)) if lengths else None,
    )
    assert got == reference_seal("topic", first, records, TS, max_records, max_bytes, fmt)


def test_a_full_batch_of_the_producers_defaults_is_the_reference_blob() -> None:
    """The producer's common case: 100-byte records cut by count (8192), then the rest."""
    values = [b"%0100d" % i for i in range(10_000)]
    got = seal_batches(P_ID, "bench", 5, None, values, TS, value_lengths=[100] * 10_000)
    records: list[tuple[bytes | None, bytes]] = [(None, v) for v in values]
    assert [(f, n) for f, n, _ in got] == [(5, 8192), (8197, 1808)]
    assert got == reference_seal("bench", 5, records, TS, 8192, 1024 * 1024, 3)


def test_records_cut_by_size_then_by_count_are_the_reference_blobs() -> None:
    """Runs that are cut by size first (a bisection over running sizes), then fit again."""
    values = [b"b" * 500] * 10 + [b"s"] * 40 + [b"x" * 5000] + [b"t"] * 3
    records: list[tuple[bytes | None, bytes]] = [(None, v) for v in values]
    got = seal_batches(P_ID, "t", 0, None, values, TS, max_records=16, max_bytes=1200)
    assert got == reference_seal("t", 0, records, TS, 16, 1200, 3)
    assert [n for _, n, _ in got] == [2, 2, 2, 2, 7, 16, 16, 3, 1, 3]


@pytest.mark.parametrize("fmt", signed.BATCH_FORMATS)
def test_seal_records_takes_none_for_no_keys(fmt: int) -> None:
    values = [b"a", b"", b"ccc"]
    topic_raw = encode_topic("t")
    blob = seal_records(P_ID, topic_raw, 7, None, values, TS, fmt=fmt)
    assert blob == seal_records(P_ID, topic_raw, 7, [None] * 3, values, TS, fmt=fmt)
    assert blob == reference_blob("t", 7, [(None, v) for v in values], TS, fmt)


def test_value_lengths_must_match_the_values() -> None:
    with pytest.raises(ValueError, match="value lengths"):
        seal_batches(P_ID, "t", 0, None, [b"a", b"b"], TS, value_lengths=[1])
