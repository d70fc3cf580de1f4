"""Data-plane floods against the store core (issue 10, point 6).

Each flood must stay bounded in the work and the output it causes, and real
clients must still be served once it ebbs.
"""

from __future__ import annotations

import logging

import pytest

from dafka.core import messages as m
from dafka.security.identity import Identity
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.signing import CONSUMER, STORE, P, blob, from_blob, record, sent

S = STORE.node_id


def store(**kw: object) -> tuple[StoreCore, MemoryStorage]:
    s = MemoryStorage()
    return StoreCore(S, s, profile=SignedProfile(STORE), **kw), s  # type: ignore[arg-type]


def spoofed(n: int) -> list[str]:
    return [Identity.from_seed((70_000 + i).to_bytes(32, "big")).node_id for i in range(n)]


def test_get_heads_from_spoofed_requesters_is_bounded_in_answers() -> None:
    """One GET-HEADS answer is a DIRECT-HEAD per partition: the shared request bucket alone
    let 640 spoofed requests out as 640 x partitions DIRECT-HEADs in one second."""
    core, _ = store(heads_answer_rate=1000, heads_answer_burst=2000)
    producers = [Identity.from_seed((50_000 + i).to_bytes(32, "big")) for i in range(200)]
    core.handle_batch([record(0, 1, identity=p) for p in producers], 0.0)
    flood = [m.GetHeads("t", r) for r in spoofed(1000)]
    out = core.handle_batch(flood, 1.0)
    heads = [x for x in sent(out) if isinstance(x, m.DirectHead)]
    assert len(heads) <= 2000 + 200  # the burst, plus at most one topic's worth
    assert core.stats.heads_deferred > 0  # the rest wait for the budget, at most 2 s
    # later, a real consumer's request is answered in full, paced by its credit: the flood's
    # topics waited past their age bound and are dropped, not answered before it
    out = core.handle_batch([m.GetHeads("t", CONSUMER)], 4.0)

    def mine(out: list) -> list[m.DirectHead]:
        return [x for x in sent(out) if isinstance(x, m.DirectHead) and x.recipient == CONSUMER]

    got = mine(out)
    now = 4.0
    for _ in range(100):
        if len(got) >= 200 or not core.has_pending():
            break
        now = max(now, core.serve_at)
        got += mine(core.tick(now))
    assert len({x.partition for x in got}) == 200 and now < 4.5


class _PartitionReads(MemoryStorage):
    """Counts the topic reads a head answer makes (each walks the topic's partitions)."""

    reads = 0

    def partitions(self, topic: str) -> list[tuple[str, int]]:
        self.reads += 1
        return super().partitions(topic)


def test_spoofed_get_heads_cost_a_bounded_number_of_topic_reads() -> None:
    """What the DIRECT-HEAD budget bounds is the work of building answers: the credit and
    the held-head cap bound what is sent, but without the budget each of the 640 spoofed
    requests the request buckets let through read the topic and built 200 heads."""
    storage = _PartitionReads()
    core = StoreCore(
        S, storage, profile=SignedProfile(STORE), heads_answer_rate=1000, heads_answer_burst=2000
    )
    producers = [Identity.from_seed((50_000 + i).to_bytes(32, "big")) for i in range(200)]
    core.handle_batch([record(0, 1, identity=p) for p in producers], 0.0)
    storage.reads = 0
    core.handle_batch([m.GetHeads("t", r) for r in spoofed(1000)], 1.0)
    # the burst (2,000) over a topic's cost (one for reading it, one per partition): 10
    assert 0 < storage.reads <= 2000 // 201 + 1, storage.reads


def test_hello_naming_many_topics_is_charged_per_topic() -> None:
    core, _ = store(heads_answer_rate=10, heads_answer_burst=10)
    for i in range(40):
        core.handle_batch([record(0, 1, topic=f"t{i}")], 0.0)
    hello = m.ConsumerHello(S, CONSUMER, tuple(f"t{i}" for i in range(40)))
    out = core.handle_batch([hello], 1.0)
    # (the 40 partitions' ACKs, paced by the producer's credit, may go out here too)
    assert len([x for x in sent(out) if isinstance(x, m.DirectHead)]) <= 10
    assert core.stats.heads_deferred >= 30  # the rest wait for the budget to refill


def test_equivocation_is_counted_each_time_but_logged_at_a_bounded_rate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core, _ = store()
    core.handle_batch([record(0, 1)], 0.0)
    caplog.set_level(logging.WARNING, logger="dafka.store")
    for i in range(500):
        core.handle_batch([from_blob(blob(0, 1, values=[b"other %d" % i]))], i * 0.001)
    assert core.stats.equivocations == 500
    lines = [r for r in caplog.records if "store.equivocation" in r.getMessage()]
    assert len(lines) == 1
    core.handle_batch([from_blob(blob(0, 1, values=[b"later"]))], 10.0)
    lines = [r for r in caplog.records if "store.equivocation" in r.getMessage()]
    assert len(lines) == 2 and "total=501" in lines[-1].getMessage()


def test_fetch_with_a_huge_count_is_served_at_a_bounded_byte_rate() -> None:
    """FETCH count 2^32-1, again and again, from a requester that never reads: what the
    store queues for it on its data PUB grows at most ``serve_rate`` bytes a second."""
    mib = 1024 * 1024
    core, _ = store(serve_rate=mib, serve_total_rate=4 * mib)
    big = [b"x" * 60_000]
    core.handle_batch([from_blob(blob(i, 1, values=big)) for i in range(200)], 0.0)
    assert core.head("t", P) == 199
    served = 0
    now = 1.0
    for step in range(200):  # two seconds
        now = 1.0 + step * 0.01
        out = core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 2**32 - 1)], now)
        out += core.tick(now)
        served += sum(len(x.content) for x in sent(out) if isinstance(x, m.DirectRecord))
    # the burst (2 MiB), 1 MiB a second for 2 s, and at most one step's overshoot
    assert served <= 4 * mib + 16 * mib, served
    assert core.stats.fetches_paced > 0  # the FETCH waited for its bytes, not dropped
    # other requesters are still served
    other = "D0D0D0D0D0D0D0D0D0D0D0D0D0D0D0D0"
    out = core.handle_batch([m.Fetch(P, other, "t", 0, 1)], now + 0.01)
    out += core.tick(now + 0.02)
    assert [x.recipient for x in sent(out) if isinstance(x, m.DirectRecord)][:1] == [other]


def test_fetch_floods_at_a_producer_are_bounded_in_bytes() -> None:
    """A producer answers a FETCH with every held blob in its range: the bytes it resends to
    one requester are bounded per second, whatever the FETCH count and rate."""
    from dafka.producer._core import ProducerCore
    from tests.signing import PRODUCER

    mib = 1024 * 1024
    wire = SignedProfile(PRODUCER, max_batch_records=1, max_batch_bytes=64 * 1024)
    core = ProducerCore(P, profile=wire, trusted_stores=[S], serve_rate=mib)
    core.publish("t", [b"x" * 60_000] * 100, 0.0, None, 1)  # 100 held blobs, ~6 MB
    resent = 0
    for step in range(200):  # two seconds
        out = core.handle(m.Fetch(P, CONSUMER, "t", 0, 2**32 - 1), 1.0 + step * 0.01)
        resent += sum(len(x.content) for x in sent(out) if isinstance(x, m.DirectRecord))
    # the burst, 1 MiB a second for 2 s, and at most one answer's overshoot (~6 MB)
    assert resent <= 4 * mib + 7 * mib, resent


def test_fetches_waiting_at_a_producer_for_their_bytes_are_bounded() -> None:
    """A FETCH past its requester's bytes a second waits for them at the producer: FETCHes
    under fresh (spoofed) IDs once all requesters' bytes are spent wait in a bounded queue,
    and the rest are dropped and counted."""
    from dafka.producer._core import ProducerCore
    from dafka.producer._serve import MAX_WAITING_FETCHES
    from tests.signing import PRODUCER

    mib = 1024 * 1024
    wire = SignedProfile(PRODUCER, max_batch_records=10, max_batch_bytes=mib)
    core = ProducerCore(P, profile=wire, trusted_stores=[S], serve_rate=mib)
    for _ in range(8):
        core.publish("t", [b"x" * 60_000] * 10, 0.0, None, 1)  # 8 held blobs of 600 kB
    flood = [m.Fetch(P, who, "t", 0, 80) for who in spoofed(4 * MAX_WAITING_FETCHES)]
    served = sum(len(sent(core.handle(f, 1.0))) for f in flood)
    assert served <= 8 * 3 + 8  # 8 MiB over all requesters, and one answer's overshoot
    assert core.stats.fetches_paced == MAX_WAITING_FETCHES
    assert core.stats.fetches_limited == len(flood) - MAX_WAITING_FETCHES - served // 8
    # they wait, and are answered as the shared bucket is paid back (4 MiB a second)
    assert len(sent(core.tick(2.0))) <= 8 * 2 + 8
