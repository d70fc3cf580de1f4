"""A signed store paces what it sends one requester (issue 10, point 6).

Its data XPUB keeps 16 messages per connection, so a subscriber that never reads costs
it a bounded queue; the core sends one requester at most 8 (``SendCredits``) before the
requester has taken them: by FETCHing on from where an answer ended, or once a hold has
passed. An honest reader is served at once; one that never reads gets 8 messages per
hold; nothing an honest reader was sent goes past the mark.
"""

from __future__ import annotations

import math

import pytest

from dafka.core import messages as m
from dafka.core.answers import ANSWER_BATCHES
from dafka.security.identity import Identity
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.store import _serve as serve
from dafka.store._credits import (
    ACK_HOLD,
    DEFAULT_SEND_CREDITS,
    HOLD,
    TAKE_RATE,
    SendCredits,
    credits_for_hwm,
)
from dafka.wire.profiles import SignedProfile
from tests.signing import CONSUMER, STORE, P, blob, from_blob, head, record, sent

S = STORE.node_id
KEY = ("t", P)


def store(**kw: object) -> StoreCore:
    return StoreCore(S, MemoryStorage(), profile=SignedProfile(STORE), **kw)  # type: ignore[arg-type]


def answers(out: list, to: str = CONSUMER) -> list[m.DirectRecord]:
    return [x for x in sent(out) if isinstance(x, m.DirectRecord) and x.recipient == to]


def test_credits_follow_the_xpub_mark_and_libzmq_low_water_mark() -> None:
    # libzmq hears of reads in steps of its low-water mark, (hwm + 1) // 2
    assert credits_for_hwm(16) == DEFAULT_SEND_CREDITS == 8 == ANSWER_BATCHES
    assert credits_for_hwm(4) == 2 and credits_for_hwm(1) == 1
    assert all(c + (h + 1) // 2 <= h for h in range(2, 2049) for c in [credits_for_hwm(h)])


def test_credits_are_spent_freed_by_a_fetch_on_and_by_their_hold() -> None:
    c = SendCredits(8)
    assert c.room("R", 0.0) == 8 and c.free_at("R") == -math.inf
    c.spend("R", 5, 0.0, 1_000_000, KEY, 100)  # an answer: held longer for its bytes
    c.spend("R", 2, 0.0)  # two DIRECT-HEADs
    assert c.room("R", 0.0) == 1 and c.room("other", 0.0) == 8
    assert c.free_at("R") == HOLD
    c.taken("R", KEY, 99)  # a FETCH from before the answer's end frees nothing
    assert c.room("R", 0.001) == 1
    c.taken("R", ("t", "another"), 100)
    assert c.room("R", 0.001) == 1
    c.taken("R", KEY, 100)  # FETCHed on from where it ended: it arrived
    assert c.room("R", 0.001) == 6
    assert c.room("R", HOLD) == 8 and len(c) == 0  # the heads' hold passed
    c.spend("R", 5, 1.0, 3 * TAKE_RATE // 100, KEY, 10)
    c.spend("R", 3, 1.0, 0, KEY, 20)  # the same answer goes on: one entry
    assert c.room("R", 1.0) == 0 and c.free_at("R") == pytest.approx(1.0 + HOLD + 0.03)
    assert c.room("R", 1.0 + HOLD + 0.029) == 0 and c.room("R", 1.0 + HOLD + 0.031) == 8
    c.spend("R", 8, 2.0, 0, KEY, 30)
    c.taken("R", KEY, 30)
    assert c.room("R", 2.0) == 8
    with pytest.raises(ValueError):
        SendCredits(0)


def test_credits_track_a_bounded_number_of_requesters(monkeypatch: pytest.MonkeyPatch) -> None:
    from dafka.store import _credits as credits

    monkeypatch.setattr(credits, "MAX_REQUESTERS", 10)
    c = SendCredits(8)
    for i in range(25):
        c.spend(f"R{i}", 1, 0.0, 0, KEY, 1)
        assert len(c) <= 10
    assert c.room("R24", 0.0) == 7  # the newest is kept
    for i in range(25, 30):  # the old ones have expired: forgotten first
        c.spend(f"R{i}", 1, 1.0, 0, KEY, 1)
    assert len(c) <= 10 and c.room("R29", 1.0) == 7


def _stored(core: StoreCore, batches: int) -> None:
    big = [b"x" * 1000]
    core.handle_batch([from_blob(blob(i, 1, values=big)) for i in range(batches)], 0.0)
    assert core.head("t", P) == batches - 1


def test_a_requester_that_never_takes_gets_its_credit_once_per_hold() -> None:
    """FETCH from 0 with count 2^32 - 1, again and again, and never FETCH on: 8 messages
    go out per hold, however often it asks (the XPUB's 16 would drop the rest)."""
    core = store()
    _stored(core, 200)
    fetch = m.Fetch(P, CONSUMER, "t", 0, 2**32 - 1)
    now = 1.0
    sent_at: list[float] = []
    for step in range(100):  # 100 ms, a FETCH every millisecond
        now = 1.0 + step * 0.001
        out = core.handle_batch([fetch], now) + core.tick(now)
        sent_at += [now] * len(answers(out))
    assert sent_at, "nothing was served"
    for t in sent_at:  # within any hold, at most one credit's worth
        assert sum(1 for u in sent_at if t <= u < t + HOLD) <= 8
    assert len(sent_at) <= 8 * (1 + int(0.1 / HOLD))


def test_an_honest_reader_that_fetches_on_is_served_at_once() -> None:
    """Each answer is 8 batches; FETCHing on from where it ended frees them, so a reader
    catches up without waiting for any hold."""
    core = store()
    _stored(core, 100)
    offset, now, got = 0, 1.0, []
    for _ in range(20):
        out = core.handle_batch([m.Fetch(P, CONSUMER, "t", offset, 2**32 - 1)], now)
        batch = answers(out)
        assert 0 < len(batch) <= 8
        got += batch
        offset = batch[-1].last_offset + 1
        if offset == 100:
            break
    assert [x.offset for x in got] == list(range(100))  # no time passed: nothing waited


def test_fetches_for_many_partitions_share_the_requester_credit() -> None:
    """Answers for several partitions to one requester: never more than 8 messages in
    flight to it, and each partition's answer arrives in full as credit comes back."""
    producers = [Identity.from_seed((90_000 + i).to_bytes(32, "big")) for i in range(5)]
    core = store()
    core.handle_batch(
        [record(i, 1, identity=p) for p in producers for i in range(20)],
        0.0,
    )
    fetches = [m.Fetch(p.node_id, CONSUMER, "t", 0, 2**32 - 1) for p in producers]
    out = core.handle_batch(fetches, 1.0)
    assert len(answers(out)) == 8
    now, got = 1.0, answers(out)
    for _ in range(50):
        if not core.has_pending():
            break
        assert not core.has_pending(now) and core.serve_at > now  # waits for the hold
        now = core.serve_at
        out = core.tick(now)
        assert len(answers(out)) <= 8
        got += answers(out)
    per_partition = {
        p.node_id: sorted(x.offset for x in got if x.partition == p.node_id) for p in producers
    }
    assert all(v == list(range(8)) for v in per_partition.values())  # one answer each


def test_heads_in_answer_to_a_hello_are_paced_and_none_is_dropped() -> None:
    """A CONSUMER-HELLO for 60 partitions: 8 DIRECT-HEADs go at once, the rest each hold
    after (a 16-message XPUB dropped all past the 16th when they went at once)."""
    producers = [Identity.from_seed((80_000 + i).to_bytes(32, "big")) for i in range(60)]
    core = store()
    core.handle_batch([record(0, 1, identity=p) for p in producers], 0.0)
    out = core.handle_batch([m.ConsumerHello(S, CONSUMER, ("t",))], 1.0)
    heads = [x for x in sent(out) if isinstance(x, m.DirectHead)]
    assert len(heads) == 8
    now = 1.0
    for _ in range(20):
        if not core.has_pending():
            break
        now = core.serve_at
        more = [x for x in sent(core.tick(now)) if isinstance(x, m.DirectHead)]
        assert len(more) <= 8
        heads += more
    assert sorted(h.partition for h in heads) == sorted(p.node_id for p in producers)
    assert now <= 1.0 + 8 * HOLD + 1e-9
    assert core.stats.heads_sent == 60


def test_heads_waiting_for_credit_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "MAX_HELD_HEADS", 50)
    producers = [Identity.from_seed((80_000 + i).to_bytes(32, "big")) for i in range(60)]
    core = store()
    core.handle_batch([record(0, 1, identity=p) for p in producers], 0.0)
    spoofed = [Identity.from_seed((70_000 + i).to_bytes(32, "big")).node_id for i in range(10)]
    core.handle_batch([m.GetHeads("t", r) for r in spoofed], 1.0)
    assert core.serving._held_count <= 50  # the rest left out and counted
    assert core.stats.heads_limited > 0


def test_rfc46_stores_are_not_paced() -> None:
    """rfc46 answers one record per message (interop): its XPUB keeps its message count."""
    from dafka.store._state import StoreConfig

    core = StoreCore(S, MemoryStorage())
    assert not core.paces_requesters and isinstance(core.config, StoreConfig)
    paced = store()
    assert paced.paces_requesters
    assert not store(send_credits=None).paces_requesters


def acks(out: list) -> list[m.Ack]:
    return [x for x in sent(out) if isinstance(x, m.Ack)]


def test_acks_of_many_topics_of_one_producer_are_paced_and_none_is_dropped() -> None:
    """A producer of 30 topics: one drain advances 30 of its partitions. 8 ACKs go at once,
    the rest each hold after (sent at once, a 16-message XPUB dropped those past the mark,
    and the producer's flush waited a second or two for its HEADs to be answered)."""
    core = store()
    topics = [f"t{i}" for i in range(30)]
    out = core.handle_batch([record(0, 1, topic=t) for t in topics], 0.0)
    got = acks(out)
    assert len(got) == 8 and all(a.partition == P and a.offset == 0 for a in got)
    assert core.has_pending(core.serve_at) and not core.has_pending(core.serve_at - 1e-6)
    now = 0.0
    for _ in range(20):
        if not core.has_pending():
            break
        now = core.serve_at
        more = acks(core.tick(now))
        assert len(more) <= 8
        got += more
    assert sorted(a.topic for a in got) == sorted(topics)
    assert now <= 3 * ACK_HOLD + 1e-9
    assert core.stats.acks_sent == 30


def test_a_held_ack_is_replaced_by_its_partitions_later_head() -> None:
    """What waits for credit is one ACK per partition, at its latest committed head."""
    core = store()
    topics = [f"t{i}" for i in range(12)]
    first = acks(core.handle_batch([record(0, 1, topic=t) for t in topics], 0.0))
    assert len(first) == 8
    held = set(topics) - {a.topic for a in first}
    later = [record(1, 2, topic=t) for t in sorted(held)]
    assert acks(core.handle_batch(later, 0.0005)) == []  # no credit before the hold ends
    rest = acks(core.tick(core.serve_at))
    assert sorted((a.topic, a.offset) for a in rest) == [(t, 2) for t in sorted(held)]
    assert core.stats.acks_sent == 12 and not core.has_pending()


def test_rfc46_acks_go_at_once() -> None:
    core = StoreCore(S, MemoryStorage())
    out = core.handle_batch([m.Record(f"t{i}", P, 0, b"v") for i in range(30)], 0.0)
    assert len(acks(out)) == 30


def test_a_producer_waiting_for_each_ack_is_not_capped_at_the_hold_of_large_answers() -> None:
    """One record, its ACK, the next: with the 10 ms hold of FETCH answers, 8 ACKs a 10 ms
    window, 800 a second; ACKs hold 1 ms (some 70 bytes, moved to the kernel at once)."""
    core = store()
    now, acked = 0.0, 0
    for i in range(40):  # the next record half a millisecond after each ACK
        out = core.handle_batch([record(i, 1)], now)
        if core.has_pending(now + 0.0005):
            out += core.tick(now + 0.0005)
        acked = max([acked, *(a.offset + 1 for a in acks(out))])
        assert acked == i + 1, f"record {i} not acknowledged within 0.5 ms"
        now += 0.0005


def fetches(out: list) -> list[m.Fetch]:
    return [x for x in sent(out) if isinstance(x, m.Fetch)]


def _drain_held(core: StoreCore, now: float, steps: int = 50) -> tuple[list[list], float]:
    """Tick at each :attr:`serve_at` until nothing is held; each step's effects."""
    taken: list[list] = []
    for _ in range(steps):
        if not core.has_pending():
            break
        assert not core.has_pending(now) and core.serve_at > now  # waits for a hold
        now = core.serve_at
        taken.append(core.tick(now))
    assert not core.has_pending(), "still held after every step"
    return taken, now


def _paced_fetches(core: StoreCore, msgs: list[m.Message]) -> tuple[list[m.Fetch], float]:
    """The FETCHes of the drain of ``msgs`` at 0 and of the steps until none is held (8 at
    the drain and at most 8 a step); when the last went."""
    got = fetches(core.handle_batch(msgs, 0.0))
    assert len(got) == 8
    steps, now = _drain_held(core, 0.0)
    for step in steps:
        assert len(fetches(step)) <= 8
        got += fetches(step)
    return got, now


def test_gap_fetches_of_many_topics_of_one_producer_are_paced_and_none_waits_the_retry() -> None:
    """A fresh store hears one producer's HEADs for 100 topics in one drain: 100 gaps.
    8 FETCHes go at once, the rest 8 a hold after, all within 13 holds (sent at once,
    those past the data XPUB's mark of 16 were dropped and asked again after
    ``fetch_retry``, 0.5 s, doubling while they were dropped again)."""
    core = store(fetch_retry=0.5)
    topics = [f"t{i}" for i in range(100)]
    got, now = _paced_fetches(core, [head(0, topic=t) for t in topics])
    assert sorted(f.topic for f in got) == sorted(topics)  # each gap FETCHed once
    assert all((f.partition, f.requester, f.offset, f.count) == (P, S, 0, 1) for f in got)
    assert now <= 13 * HOLD + 1e-9  # 100 / 8 holds, not fetch_retry
    assert core.stats.fetches_sent == 100
    assert fetches(core.tick(0.3)) == []  # and none is asked again before its retry


def test_gap_fetches_of_many_producers_share_one_credit_for_every_store() -> None:
    """A FETCH goes to its producer and to every store (all subscribe to ``F``): gaps in
    one partition of each of 30 producers send at most 8 FETCHes a hold, not 30 at once,
    which another store's connection (the one that can answer once the producers have
    freed what was ACKed) dropped past 16."""
    producers = [Identity.from_seed((60_000 + i).to_bytes(32, "big")) for i in range(30)]
    core = store()
    got, now = _paced_fetches(core, [head(4, identity=p) for p in producers])
    assert sorted(f.partition for f in got) == sorted(p.node_id for p in producers)
    assert now <= 4 * HOLD + 1e-9


def test_gap_fetches_and_acks_to_one_producer_share_its_credit() -> None:
    """ACKs and FETCHes for one producer's partitions go down the same connection to it:
    together at most 8 a hold, and every one of both goes."""
    core = store()
    acked = [f"a{i}" for i in range(20)]
    gapped = [f"g{i}" for i in range(20)]
    out = core.handle_batch(
        [record(0, 1, topic=t) for t in acked] + [head(3, topic=t) for t in gapped], 0.0
    )
    assert len(sent(out)) == 8
    steps, _ = _drain_held(core, 0.0)
    for step in steps:
        assert len([x for x in sent(step) if isinstance(x, m.Ack | m.Fetch)]) <= 8
    every = [out, *steps]
    assert sorted(a.topic for s in every for a in acks(s)) == sorted(acked)
    assert sorted(f.topic for s in every for f in fetches(s)) == sorted(gapped)


def test_a_held_gap_fetch_is_forgotten_when_its_gap_closes() -> None:
    """Gaps in 20 topics: 12 FETCHes wait for credit; the live records that fill 5 of
    those gaps arrive first, and those 5 are never sent."""
    core = store()
    topics = [f"t{i}" for i in range(20)]
    first = {f.topic for f in fetches(core.handle_batch([head(0, topic=t) for t in topics], 0.0))}
    filled = sorted(set(topics) - first)[:5]
    core.handle_batch([record(0, 1, topic=t) for t in filled], 0.001)
    assert all(core.head(t, P) == 0 for t in filled)
    steps, _ = _drain_held(core, 0.001)
    later = [f.topic for s in steps for f in fetches(s)]
    assert sorted(first | set(later)) == sorted(set(topics) - set(filled))
    assert len(later) == 20 - 8 - 5 and core.stats.fetches_sent == 15


def test_one_producer_with_many_gaps_does_not_hold_back_anothers_fetch() -> None:
    """The credit for every store goes round the producers in turns: a gap of a second
    producer, opened while 92 FETCHes of the first wait, is FETCHed in the second hold, not
    after all of them (a producer that kept opening gaps would starve the others)."""
    many = Identity.from_seed((50_000).to_bytes(32, "big"))
    other = Identity.from_seed((50_001).to_bytes(32, "big"))
    core = store()
    out = core.handle_batch([head(0, topic=f"t{i}", identity=many) for i in range(100)], 0.0)
    assert len(fetches(out)) == 8
    assert fetches(core.handle_batch([head(0, identity=other)], 0.001)) == []  # no credit
    steps, _ = _drain_held(core, 0.001)
    when = [i for i, s in enumerate(steps) for f in fetches(s) if f.partition == other.node_id]
    assert when == [1], when  # the hold after the next, not step 12 after the first's 92
    assert sum(len(fetches(s)) for s in steps) == 93
