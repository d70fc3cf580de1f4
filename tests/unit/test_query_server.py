"""The store's query logic (``dafka.query.server.serve``) on an in-memory storage."""

from __future__ import annotations

from dafka.query import protocol as qp
from dafka.query.client import records
from dafka.query.server import serve
from dafka.storage.base import StoredBatch
from dafka.storage.memory import MemoryStorage
from tests.counting_storage import CountingStorage

P = "3F2504E04F8911D39A0C0305E82C3301"
Q = "0123456789ABCDEF0123456789ABCDEF"


def storage() -> MemoryStorage:
    s = MemoryStorage()
    s.append([StoredBatch("events", P, i, i, f"v{i}".encode()) for i in range(100)])
    s.append([StoredBatch("events", Q, i, i, b"x" * 10) for i in range(50, 60)])  # tail 50
    s.append([StoredBatch("other", P, 0, 0, b"o")])
    return s


def read(s: MemoryStorage, partition: str, offset: int, n: int = 1000, size: int = 10**6):
    return serve(s, qp.ReadRequest(1, "events", partition, offset, n, size))


def test_heads_of_some_topics_or_all() -> None:
    s = storage()
    reply = serve(s, qp.HeadsRequest(4, ("events",)))
    assert isinstance(reply, qp.HeadsReply) and reply.request_id == 4
    assert reply.partitions == (  # sorted by (topic, partition)
        qp.PartitionInfo("events", Q, 50, 59),
        qp.PartitionInfo("events", P, 0, 99),
    )
    everything = serve(s, qp.HeadsRequest(5, None))
    assert isinstance(everything, qp.HeadsReply)
    assert {p.topic for p in everything.partitions} == {"events", "other"}
    assert serve(s, qp.HeadsRequest(6, ("nothing",))) == qp.HeadsReply(6, ())


def test_read_a_range_in_order() -> None:
    reply = read(storage(), P, 10, n=5)
    assert isinstance(reply, qp.ReadReply)
    assert (reply.tail, reply.head, reply.first, reply.next_offset) == (0, 99, 10, 15)
    got = list(records(reply))
    assert [(r.offset, r.value) for r in got] == [(i, f"v{i}".encode()) for i in range(10, 15)]


def test_read_is_bounded_by_bytes_but_returns_at_least_one_batch() -> None:
    reply = read(storage(), Q, 50, size=25)
    assert isinstance(reply, qp.ReadReply) and reply.count == 2  # 10 + 10 <= 25 < 30
    reply = read(storage(), Q, 50, size=1)
    assert isinstance(reply, qp.ReadReply) and reply.count == 1


def test_below_tail_is_an_explicit_error() -> None:
    reply = read(storage(), Q, 49)
    assert isinstance(reply, qp.ErrorReply)
    assert (reply.code, reply.tail, reply.head) == (qp.ErrorCode.BELOW_TAIL, 50, 59)


def test_past_the_head_and_unknown_partitions_are_empty_answers() -> None:
    reply = read(storage(), P, 100)
    assert isinstance(reply, qp.ReadReply) and reply.count == 0 and reply.head == 99
    reply = read(storage(), "F" * 32, 0)
    assert isinstance(reply, qp.ReadReply) and reply.tail is None and reply.head is None


def test_read_to_the_head_in_chunks_covers_everything_once() -> None:
    s = storage()
    got = []
    offset = 0
    while True:
        reply = read(s, P, offset, n=7)
        assert isinstance(reply, qp.ReadReply)
        if reply.next_offset is None:
            break
        got.extend(r.offset for r in records(reply))
        offset = reply.next_offset
    assert got == list(range(100))


def test_a_closed_storage_is_unavailable_not_a_crash() -> None:
    s = storage()
    heads = s.heads()
    s.close()
    reply = serve(s, qp.ReadRequest(1, "events", P, 0), heads)
    assert isinstance(reply, qp.ErrorReply) and reply.code is qp.ErrorCode.UNAVAILABLE


def test_signed_batches_are_served_verbatim_and_verified_by_the_reader() -> None:
    import pytest

    from dafka.errors import WireError
    from dafka.security.identity import Identity
    from dafka.wire import signed

    producer = Identity.from_seed(bytes(range(32)))
    part = producer.node_id
    first = signed.encode_batch(
        producer, "s", 0, [(b"k0", b"v0"), (None, b"v1")], 1_700_000_000_000
    )
    second = signed.encode_batch(producer, "s", 2, [(b"k2", b"v2")], 1_700_000_001_000)
    s = MemoryStorage()
    s.append([StoredBatch("s", part, 0, 1, first), StoredBatch("s", part, 2, 2, second)])

    reply = serve(s, qp.ReadRequest(1, "s", part, 1), profile="signed")
    assert isinstance(reply, qp.ReadReply) and reply.profile == "signed"
    decoded = qp.decode_reply(qp.encode_reply(reply))
    assert isinstance(decoded, qp.ReadReply)
    got = [(r.offset, r.key, r.value, r.timestamp_ms) for r in records(decoded, start=1)]
    assert got == [(1, None, b"v1", 1_700_000_000_000), (2, b"k2", b"v2", 1_700_000_001_000)]

    # a store that alters a byte cannot pass it off as the producer's
    forged = bytearray(second)
    forged[forged.index(b"v2")] ^= 1
    bad = MemoryStorage()
    bad.append([StoredBatch("s", part, 2, 2, bytes(forged))])
    reply = serve(bad, qp.ReadRequest(1, "s", part, 2), profile="signed")
    assert isinstance(reply, qp.ReadReply)
    with pytest.raises(WireError):
        list(records(reply))


def test_a_read_takes_from_storage_about_the_batches_its_bytes_hold() -> None:
    # 1,000 batches of 10 kB and a READ of 100 kB: 10 batches fit; storage.read copies
    # every batch it returns, so asking it for 4,096 at a time copied the whole partition
    s = CountingStorage()
    s.append([StoredBatch("events", P, i, i, b"x" * 10_000) for i in range(1000)])
    reply = read(s, P, 0, n=10**6, size=100_000)
    assert isinstance(reply, qp.ReadReply) and reply.count == 10
    assert s.returned <= 20
    s.returned = 0
    # small batches: a few reads, each sized by the batches seen so far, none past the bytes
    s.append([StoredBatch("events", P, i, i, b"y" * 10) for i in range(1000, 6000)])
    reply = read(s, P, 1000, n=10**6, size=20_000)
    assert isinstance(reply, qp.ReadReply) and reply.count == 2000
    assert s.returned <= 2 * 2000


def test_small_batches_before_big_ones_do_not_make_a_read_copy_thousands_of_big_ones() -> None:
    # sized by the small batches seen first, a READ asked storage for READ_CHUNK (4,096)
    # batches, each a copy: behind 10-byte batches, 1 MB ones cost it gigabytes
    s = CountingStorage()
    s.append([StoredBatch("events", P, i, i, b"s" * 10) for i in range(20)])
    s.append([StoredBatch("events", P, i, i, b"B" * 1_000_000) for i in range(20, 120)])
    reply = read(s, P, 0, n=10**6, size=3_000_000)
    assert isinstance(reply, qp.ReadReply) and reply.count == 22  # 20 small, 2 big fit
    assert s.returned_bytes <= 3_000_000 + 1_000_000  # at most one batch past the bytes


def test_storage_reads_stop_at_their_byte_budget_but_return_one_batch(tmp_path) -> None:
    from dafka.storage.lmdb_store import LmdbStorage

    for s in (MemoryStorage(), LmdbStorage(tmp_path)):
        s.append([StoredBatch("events", P, i, i, b"x" * 100) for i in range(10)])
        assert len(s.read("events", P, 0, 10, None, 350)) == 3
        assert len(s.read("events", P, 0, 10, None, 300)) == 3
        assert len(s.read("events", P, 0, 10, None, 299)) == 2
        assert len(s.read("events", P, 0, 10, None, 1)) == 1  # the first, whatever its size
        assert len(s.read("events", P, 0, 10, 4, 10**6)) == 4
        s.close()


def test_format_5_records_carry_headers_times_and_tombstones() -> None:
    import pytest

    from dafka.errors import WireError
    from dafka.query.client import opened_batches, verified_batches
    from dafka.wire.signed_batch import seal_records
    from dafka.wire.signed_rich import Codec, RichRecord, compact_rich
    from tests.rich_blobs import rich_blob
    from tests.signing import PRODUCER

    part = PRODUCER.node_id
    plain = seal_records(PRODUCER, b"r", 0, None, [b"a"], 1_000)
    rich = rich_blob(
        PRODUCER,
        "r",
        1,
        [
            RichRecord(b"k", b"v", 5, (("traceparent", b"00-1-2-01"), ("k", None))),
            RichRecord(b"k", None, 6),
            RichRecord(b"j", b"w", 7),
        ],
        2_000,
        Codec.LZ4,
    )
    rich = compact_rich(rich, 2 + 1 + 36, 1, 3, [1])  # a store compacted offset 1 away
    s = MemoryStorage()
    s.append([StoredBatch("r", part, 0, 0, plain), StoredBatch("r", part, 1, 3, rich)])
    reply = serve(s, qp.ReadRequest(1, "r", part, 0, 10, 10**6), profile="signed")
    assert isinstance(reply, qp.ReadReply)
    got = [(r.offset, r.key, r.value, r.timestamp_ms, r.headers) for r in records(reply)]
    assert got == [(0, None, b"a", 1_000, ()), (2, b"k", None, 6, ()), (3, b"j", b"w", 7, ())]
    assert [r.offset for r in records(reply, 2, 3)] == [2]
    assert [o.records.dropped[0].offset for o in opened_batches(reply) if o.records.dropped] == [1]
    (_, stamp0, pairs0), (_, stamp, pairs) = verified_batches(reply)
    assert list(pairs0) == [(None, b"a")] and stamp0 == 1_000
    assert (stamp, len(pairs)) == (2_000, 3)  # its seal time and count, but no bare pairs
    with pytest.raises(WireError, match="opened_batches"):
        list(pairs)
