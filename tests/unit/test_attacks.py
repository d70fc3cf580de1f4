"""Attacks on the signed profile, against the node cores with real signatures.

Each test names the defence it checks; removing that defence makes it fail
(checked by hand when they were written: see the comment on each). Accepted
forgeries: none. The oversized-frame attack on a real socket is in
``tests/integration/test_attacks_io.py``.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest
from blake3 import blake3

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.answers import FETCH_COUNT
from dafka.core.effects import Deliver
from dafka.errors import WireError
from dafka.producer._core import ProducerCore
from dafka.security.identity import Identity
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from tests.signing import (
    CONSUMER,
    FORGER,
    PRODUCER,
    STORE,
    WIRE,
    F,
    P,
    ack,
    blob,
    direct,
    forged_for,
    forged_head,
    from_blob,
    head,
    record,
    sent,
    tampered,
    value,
)

S = STORE.node_id


def store(**kw: object) -> tuple[StoreCore, MemoryStorage]:
    s = MemoryStorage()
    return StoreCore(S, s, profile=SignedProfile(STORE), **kw), s  # type: ignore[arg-type]


def consumer(reset: object = "earliest", **kw: object) -> ConsumerCore:
    core = ConsumerCore(CONSUMER, offset_reset=reset, profile=WIRE, **kw)  # type: ignore[arg-type]
    core.subscribe("t", 0.0)
    return core


def delivered(effects: list) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value) for e in effects if isinstance(e, Deliver) for r in e.records()]


def held(s: MemoryStorage, partition: str = P) -> list[bytes]:
    return [b.blob for b in s.read("t", partition, 0, 10**6)]


# --------------------------------------------- 1. records forged for another producer's partition
# Defence: verify_batch's key-to-partition binding (node_id_for(key) == partition).


def test_records_forged_for_another_partition_are_never_stored() -> None:
    core, s = store()
    forged = forged_for(P, 0, 3)
    out = core.handle_batch([from_blob(forged), from_blob(forged, S)], 0.0)
    assert sent(out) == [] and held(s) == []
    assert core.stats.rejected == 2
    # the genuine producer's records are still taken afterwards
    assert sent(core.handle_batch([record(0, 3)], 1.0)) == [m.Ack(P, "t", 2)]


def test_records_forged_for_another_partition_are_never_delivered() -> None:
    core = consumer()
    forged = forged_for(P, 0, 3)
    assert delivered(core.handle(from_blob(forged), 0.0)) == []
    assert delivered(core.handle(from_blob(forged, CONSUMER), 0.0)) == []
    assert core.stats.rejected == 2 and core.positions() == {}
    assert delivered(core.handle(record(0, 1), 0.0)) == [(0, value(0))]


def test_a_forgery_cannot_pass_as_the_forgers_own_batch_either() -> None:
    """Relabelled to the forger's partition, the batch is genuine, but it is the forger's."""
    with pytest.raises(signed.WrongPartition):
        signed.verify_batch(forged_for(P, 0, 1), partition=P)


# ------------------------------------------------------------ 2. tampered content
# Defence: the Ed25519 signature over the digest of the whole blob (BLAKE3 for format 3,
# BLAKE2b for format 1).


@pytest.mark.parametrize("at", [-100, 60, 46])  # a value, a length, the first offset
def test_tampered_batches_are_rejected_by_stores_and_consumers(at: int) -> None:
    bad = tampered(blob(0, 3), at)
    core, s = store()
    try:
        msg = from_blob(bad)
    except WireError:
        return  # the change broke the blob's shape: the codec already refuses it
    core.handle_batch([msg], 0.0)
    assert held(s) == [] and core.stats.rejected == 1
    c = consumer()
    assert delivered(c.handle(msg, 0.0)) == [] and c.stats.rejected == 1


def _other_constructions(body: bytes) -> list[bytes]:
    """What the producer's key may have signed for ``body`` (a blob without its signature)
    other than what its format says (docs/wire.md §9.3): the other format's digest, or its
    context, or both."""
    digests = {1: hashlib.blake2b(body, digest_size=32).digest(), 3: blake3(body).digest()}
    contexts = {1: b"dafka-batch-v1\0", 3: b"dafka-batch-v3\0"}
    fmt = body[0]
    return [contexts[c] + digests[d] for c in (1, 3) for d in (1, 3) if (c, d) != (fmt, fmt)]


# Defence: the format byte is signed and picks both the digest (BLAKE3 for format 3,
# BLAKE2b for format 1) and the signing context, so a signature over one format never
# verifies as the other.


@pytest.mark.parametrize("fmt", [1, 3])
def test_a_batch_relabelled_to_the_other_format_is_rejected_by_stores_and_consumers(
    fmt: int,
) -> None:
    genuine = blob(0, 3, fmt=fmt)
    relabelled = bytes((4 - fmt,)) + genuine[1:]  # 1 <-> 3, the signature kept
    forgeries = [relabelled]
    for body in (genuine[:-64], relabelled[:-64]):
        forgeries += [body + PRODUCER.sign(other) for other in _other_constructions(body)]
    for bad in forgeries:
        msg = from_blob(bad)
        core, s = store()
        core.handle_batch([msg], 0.0)
        assert held(s) == [] and core.stats.rejected == 1
        c = consumer()
        assert delivered(c.handle(msg, 0.0)) == [] and c.stats.rejected == 1
    core, s = store()  # the genuine one is taken
    core.handle_batch([from_blob(genuine)], 0.0)
    assert held(s) == [genuine]


def test_a_tampered_record_spoils_its_whole_batch() -> None:
    c = consumer()
    assert delivered(c.handle(from_blob(tampered(blob(0, 5))), 0.0)) == []
    assert c.positions() == {}  # not one record of it was delivered


# ------------------------------------------------------------ 3. a replayed old batch
# Defence: offsets. A batch at offsets already held is a duplicate (stores compare
# bytes and re-ACK, consumers drop it by offset), never stored or delivered twice.


def test_replayed_batch_is_neither_stored_nor_delivered_again() -> None:
    old = record(0, 4)
    core, s = store()
    core.handle_batch([old, record(4, 4)], 0.0)
    out = core.handle_batch([old, old], 1.0)
    assert sent(out) == [m.Ack(P, "t", 7)]  # a harmless re-ACK of what is held
    assert len(held(s)) == 2
    assert core.stats.duplicates == 2 and core.stats.equivocations == 0
    c = consumer()
    c.handle(old, 0.0)
    c.handle(record(4, 4), 0.0)
    assert delivered(c.handle(old, 1.0)) == []
    assert delivered(c.handle(direct(0, 4), 1.0)) == []
    assert c.stats.delivered == 8


def test_a_replay_of_what_was_delivered_costs_no_signature_check() -> None:
    # A flood of replays (a store, or anyone on the data plane, sending old batches again)
    # must cost no Ed25519 check each: the offsets alone say they were delivered. Shown by
    # a copy with a flipped byte: verified, it would be counted as rejected.
    c = consumer()
    c.handle(record(0, 4), 0.0)
    c.handle(record(4, 4), 0.0)
    old = record(0, 4)
    broken = replace(old, content=tampered(old.content))
    assert delivered(c.handle(broken, 1.0)) == []
    assert c.stats.rejected == 0 and c.stats.delivered == 8


def test_replayed_batch_under_another_topic_is_refused() -> None:
    frames = [b"Mother\x00\x02", blob(0, 2)]  # topic "t" replayed on "other"
    with pytest.raises(signed.WrongTopic):
        WIRE.decode(frames)


# ------------------------------------------------------------ 4. a forged ACK
# Defences: the trusted-store check, then Ack.verify (the store's signature).


def producer(**kw: object) -> ProducerCore:
    core = ProducerCore(P, profile=SignedProfile(PRODUCER), trusted_stores=[S], **kw)  # type: ignore[arg-type]
    core.publish("t", [value(i) for i in range(10)], 0.0, None, 0)
    return core


def test_ack_from_an_untrusted_store_frees_nothing() -> None:
    core = producer()
    assert core.handle(ack(9, store=FORGER), 0.0) == []
    assert core.unacked_count("t") == 10 and core.stats.untrusted_acks == 1


def test_ack_naming_a_trusted_store_with_a_bad_signature_frees_nothing() -> None:
    core = producer()
    genuine = signed.sign_ack(STORE, P, "t", 9)
    forged = signed.Ack(P, "t", 9, STORE.public_key, FORGER.sign(b"anything"))
    msg = WIRE.decode(signed.encode(forged))
    assert isinstance(msg, m.Ack) and msg.store == S
    assert core.handle(msg, 0.0) == []
    # nor does a genuine signature replayed onto another offset or topic
    moved = signed.Ack(P, "t", 5, genuine.store_key, genuine.signature)
    assert core.handle(WIRE.decode(signed.encode(moved)), 0.0) == []
    unsigned = m.Ack(P, "t", 9, S)  # no proof at all
    assert core.handle(unsigned, 0.0) == []
    assert core.unacked_count("t") == 10 and core.stats.forged_acks == 3
    assert core.last_acked("t") is None


# ------------------------------------------------------------ 5. equivocation
# Defence: stores compare a batch at held offsets with what they hold; a different,
# validly signed batch is equivocation: the first is kept, counted and reported.


def test_two_signed_batches_for_the_same_offsets_keep_the_first() -> None:
    first = record(0, 3)
    second = from_blob(blob(0, 3, values=[b"x", b"y", b"z"]))
    core, s = store()
    core.handle_batch([first], 0.0)
    core.handle_batch([second], 1.0)
    assert held(s) == [first.content]
    assert core.stats.equivocations == 1
    (report,) = core.equivocations
    assert (report.partition, report.first_offset, report.last_offset) == (P, 0, 2)
    assert (report.kept_first, report.kept_last) == (0, 2)


def test_equivocation_within_one_drained_batch_and_in_the_buffer() -> None:
    core, s = store()
    a, b = record(0, 2), from_blob(blob(0, 2, values=[b"p", b"q"]))
    core.handle_batch([a, b], 0.0)  # both in one drain: compared with the uncommitted one
    assert held(s) == [a.content] and core.stats.equivocations == 1
    ahead, other = record(5, 2), from_blob(blob(5, 2, values=[b"r", b"s"]))
    core.handle_batch([ahead, other], 1.0)  # buffered ahead of a gap
    assert core.stats.equivocations == 2
    core.handle_batch([record(2, 3)], 2.0)
    assert held(s)[-1] == ahead.content


def test_a_different_cut_of_held_offsets_is_equivocation_too() -> None:
    core, s = store()
    core.handle_batch([record(0, 4)], 0.0)
    core.handle_batch([record(2, 4)], 1.0)  # overlaps 2..3 and runs on to 5
    assert core.stats.equivocations == 1 and core.head("t", P) == 3


def test_a_forged_second_batch_is_a_forgery_not_equivocation() -> None:
    core, s = store()
    core.handle_batch([record(0, 3)], 0.0)
    core.handle_batch([from_blob(tampered(blob(0, 3)))], 1.0)
    assert core.stats.equivocations == 0 and core.stats.rejected == 1


# ------------------------------------------------------------ 6. a HEAD far in the future
# Defences: Head.verify (binding and signature) before a head moves anything; and a
# genuine head moves the fetch target at most max_head_lead past what was seen.


def test_forged_far_head_for_someone_elses_partition_is_ignored() -> None:
    c = consumer()
    assert c.handle(forged_head(P, 10**12), 0.0) == []
    assert c.known_end("t", P) is None and c.stats.rejected_heads == 1
    core, _ = store()
    assert core.handle_batch([forged_head(P, 10**12)], 0.0) == []
    assert core.stats.rejected_heads == 1
    # the genuine partition goes on as if nothing happened
    assert delivered(c.handle(record(0, 2), 0.0)) == [(0, value(0)), (1, value(1))]


def test_a_genuine_far_head_for_the_forgers_own_partition_is_bounded() -> None:
    lead = 50_000
    c = consumer(max_head_lead=lead, fetch_window=1_000)
    out = c.handle(head(10**15, identity=FORGER), 0.0)
    fetches = [x for x in sent(out) if isinstance(x, m.Fetch)]
    # signed: a FETCH asks for what one answer may hold (FETCH_COUNT, whatever the window),
    # up to the lead; it costs one answer of at most 8 batches and 8 MiB (dafka.core.answers)
    assert [(f.offset, f.count) for f in fetches] == [(0, min(lead, FETCH_COUNT))]
    assert c.known_end("t", F) == lead  # not 10**15 + 1
    for t in range(1, 20):  # retries stay one bounded FETCH a timeout
        for f in sent(c.tick(float(t))):
            assert isinstance(f, m.Fetch) and f.count <= lead
    core, _ = store(max_fetch_count=1_000, max_head_lead=10_000)
    (fetch,) = sent(core.handle_batch([head(10**15, identity=FORGER)], 0.0))
    assert isinstance(fetch, m.Fetch) and (fetch.offset, fetch.count) == (0, 1_000)
    assert core.gaps.open[("t", F)].target == 9_999  # the gap it chases is bounded too


# ------------------------------------------------------------ 7. oversized frames
# Defence (codec): a blob over MAX_BLOB_BYTES, a batch over MAX_BATCH_RECORDS, a HELLO
# over MAX_HELLO_TOPICS are refused before anything else reads them. The socket-level
# cap (ZMQ_MAXMSGSIZE) is tested on a real socket in tests/integration.


def test_oversized_blobs_and_counts_are_refused_by_the_codec() -> None:
    big = b"\x01\x01t" + bytes(signed.MAX_BLOB_BYTES)
    with pytest.raises(signed.LimitExceeded):
        WIRE.decode([b"Mt\x00\x02", big])
    header = bytearray(blob(0, 1))
    header[3 + 16 + 8 : 3 + 16 + 8 + 4] = (signed.MAX_BATCH_RECORDS + 1).to_bytes(4, "big")
    with pytest.raises(signed.LimitExceeded):
        WIRE.decode([b"Mt\x00\x02", bytes(header)])
    topics = tuple(f"t{i}" for i in range(signed.MAX_HELLO_TOPICS + 1))
    frame = signed._with_version(signed.rfc46.encode(signed.ConsumerHello(S, CONSUMER, topics))[0])
    with pytest.raises(signed.LimitExceeded):
        WIRE.decode([frame])


# ------------------------------------------------------------ 8. FETCH floods
# Defences: per-requester (and shared) rate limits on FETCHes and head requests, the
# pending-fetch cap, FETCH counts clamped, and serving in bounded chunks.


def stocked_store(**kw: object) -> StoreCore:
    core, _ = store(**kw)
    core.handle_batch([record(i * 100, 100) for i in range(50)], 0.0)  # 5,000 records
    return core


def test_a_fetch_flood_from_one_requester_is_rate_limited() -> None:
    core = stocked_store(fetch_rate=10, fetch_burst=20)
    flood = [m.Fetch(P, CONSUMER, "t", i, 5_000) for i in range(5_000)]
    out = core.handle_batch(flood, 1.0)
    assert core.stats.fetches_queued == 20
    assert core.stats.fetches_limited == 5_000 - 20
    served = sum(x.count for x in sent(out) if isinstance(x, m.DirectRecord))
    assert served <= 2_000 + 100  # one serving step: serve_chunk records (whole batches)
    core.handle_batch(flood, 2.0)  # a second later: 10 more tokens, not 5,000
    assert core.stats.fetches_queued == 30


def test_one_serving_step_sends_at_most_its_chunk_over_many_requesters() -> None:
    """40 requesters FETCH all 5,000 records at once: each has its own credit (8 batches),
    so only the serving step's bound (``serve_chunk`` records, whole batches) keeps one
    step from answering them all at once (40 x 8 batches of 100 records)."""
    core = stocked_store()
    many = [
        m.Fetch(P, Identity.from_seed((90_000 + i).to_bytes(32, "big")).node_id, "t", 0, 5_000)
        for i in range(40)
    ]
    out = core.handle_batch(many, 1.0)
    assert core.stats.fetches_queued == 40
    served = sum(x.count for x in sent(out) if isinstance(x, m.DirectRecord))
    assert 0 < served <= 2_000 + 100  # serve_chunk, and at most one batch past it
    assert core.has_pending()  # the rest in the steps after


def test_a_fetch_flood_under_spoofed_requesters_is_bounded() -> None:
    core = stocked_store(max_pending_fetches=64)
    spoofed = [
        m.Fetch(P, Identity.from_seed(i.to_bytes(32, "big")).node_id, "t", 0, 5_000)
        for i in range(300)
    ]
    out = core.handle_batch(spoofed, 1.0)
    assert core.stats.fetches_queued <= 64
    assert core.stats.fetches_refused + core.stats.fetches_limited >= 300 - 64
    steps = 0
    while core.has_pending():
        out = core.tick(1.0)
        served = sum(x.count for x in sent(out) if isinstance(x, m.DirectRecord))
        assert served <= 2_000 + 100  # every step bounded
        steps += 1
    assert steps <= 64 * 5_000 // 2_000 + 64


def test_head_request_floods_are_rate_limited() -> None:
    core = stocked_store(heads_rate=1, heads_burst=3)
    out = core.handle_batch([m.GetHeads("t", CONSUMER)] * 1_000, 1.0)
    assert len(sent(out)) == 3


def test_a_fetch_flood_at_a_producer_is_rate_limited() -> None:
    core = ProducerCore(P, profile=SignedProfile(PRODUCER), fetch_rate=5, fetch_burst=10)
    core.publish("t", [value(i) for i in range(100)], 0.0, None, 0)
    served = 0
    for _ in range(10_000):
        served += len(sent(core.handle(m.Fetch(P, CONSUMER, "t", 0, 100), 1.0)))
    assert core.stats.fetches_served == 10 and core.stats.fetches_limited == 10_000 - 10
    assert served == 10  # one held blob per answer
    spoofed = 0
    for i in range(2_000):
        who = Identity.from_seed(i.to_bytes(32, "big")).node_id
        spoofed += len(sent(core.handle(m.Fetch(P, who, "t", 0, 100), 2.0)))
    assert spoofed <= 10 * 16  # the shared bucket: 16 requesters' worth of burst


def test_fetch_counts_are_clamped() -> None:
    core = ProducerCore(P, profile=SignedProfile(PRODUCER), max_fetch_count=5)
    for i in range(100):  # one batch each, so the answer's size follows the count served
        core.publish("t", [value(i)], 0.0, None, 0)
    answers = sent(core.handle(m.Fetch(P, CONSUMER, "t", 0, 2**32 - 1), 0.0))
    assert all(isinstance(a, m.DirectRecord) for a in answers)
    # not 100: clamped to 5 (below ANSWER_BATCHES, dafka.core.answers, which bounds it too)
    assert [a.offset for a in answers] == list(range(5))


# ------------------------------------------------------------ nothing forged gets through


def test_accepted_forgeries_zero() -> None:
    """Every forgery above, at once, into a store and a consumer: nothing of it lands."""

    def attacks(to: str) -> list[m.Message]:
        return [
            from_blob(forged_for(P, 0, 2)),
            from_blob(forged_for(P, 0, 2), to),
            from_blob(tampered(blob(0, 2))),
            forged_head(P, 10**9),
        ]

    core, s = store()
    core.handle_batch(attacks(S), 0.0)
    c = consumer()
    deliveries = [d for a in attacks(CONSUMER) for d in delivered(c.handle(a, 0.0))]
    assert held(s) == [] and deliveries == []
    assert core.stats.rejected + core.stats.rejected_heads == 4
    assert c.stats.rejected + c.stats.rejected_heads == 4
    assert head(1).partition == P  # the helpers build what they say
