"""Re-replication between stores (``dafka.store._replicate``): pure core, fake time.

A store asks the other stores for heads (GET-HEADS) at start and every round, fetches
what they hold and it lacks, continues from a trusted store's signed tail when what it
asks for was trimmed there, and counts what is held by fewer stores than min_acks. The
attacks: a store that lies about what it holds, signs tails it is not trusted for, or
floods us with partitions."""

from __future__ import annotations

import pytest

from dafka.core import messages as m
from dafka.core.read_guard import Sender
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.store import _replicate as r
from dafka.wire import rfc46
from dafka.wire.profiles import RFC46, SignedProfile
from tests.signing import FORGER, STORE, STORE2, P, direct, direct_head, record, sent

S = STORE.node_id
S2 = STORE2.node_id
S3 = FORGER.node_id  # a third store, not trusted
INTERVAL = 1.0


class From(list):  # type: ignore[type-arg]
    """Sources of a drained batch whose messages all came on ``node``'s connection."""

    def __init__(self, node: str, n: int) -> None:
        super().__init__([""] * n)
        self._node = node

    def sender(self, index: int) -> Sender:
        return Sender(self._node, True)


def store(
    topics: dict | None = None, stores: tuple[str, ...] = (), **kw: object
) -> tuple[StoreCore, MemoryStorage]:
    s = MemoryStorage()
    core = StoreCore(S, s, profile=SignedProfile(STORE), replicate_interval=INTERVAL, **kw)  # type: ignore[arg-type]
    core.set_policy(topics if topics is not None else {"t": {"min_acks": 2}}, stores)
    return core, s


def tick(core: StoreCore, now: float) -> list:
    """What the shell does each turn: a round when due, then the core's own tick."""
    return core.replicate(now) + core.tick(now)


def heard(core: StoreCore, msgs: list[m.Message], now: float, peer: str = S2) -> list[m.Message]:
    return sent(core.handle_batch(msgs, now, From(peer, len(msgs))))


def fetches(msgs: list[m.Message]) -> list[tuple[int, int]]:
    return [(x.offset, x.count) for x in msgs if isinstance(x, m.Fetch)]


def test_a_store_asks_the_other_stores_for_heads_at_start_and_every_round() -> None:
    core, _ = store({"t": {"min_acks": 2}, "u": {}})
    assert sent(tick(core, 0.0)) == [m.GetHeads("t", S), m.GetHeads("u", S)]
    assert sent(tick(core, 0.5)) == []
    assert sent(tick(core, 1.0)) == [m.GetHeads("t", S), m.GetHeads("u", S)]
    assert rfc46.direct_prefix(rfc46.Command.DIRECT_HEAD, S) in core.subscriptions()


def test_round_robin_bounds_the_topics_asked_per_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r, "MAX_ROUND_TOPICS", 2)
    core, _ = store({"a": {}, "b": {}, "c": {}})
    asked = [[x.topic for x in sent(tick(core, float(i)))] for i in range(3)]  # type: ignore[attr-defined]
    assert asked == [["a", "b"], ["c", "a"], ["b", "c"]]


def test_a_fresh_store_fetches_what_another_store_holds_of_a_stopped_producer() -> None:
    """Issue 33 point 1: no producer traffic at all, only another store's word."""
    core, s = store()
    tick(core, 0.0)
    out = heard(core, [direct_head(9, to=S)], 0.1)  # S2 holds 0..9 (no proof: restarted)
    assert fetches(out) == [(0, 10)]
    out = heard(core, [direct(0, 5, to=S), direct(5, 5, to=S)], 0.2)
    assert core.head("t", P) == 9 and s.heads()[("t", P)] == (9, 0)
    assert m.Ack(P, "t", 9) in out  # stored: acknowledged like any record


def test_the_producers_signed_head_passed_on_is_verified_and_kept() -> None:
    core, _ = store()
    out = heard(core, [direct_head(4, to=S, with_head=20)], 0.0)
    assert fetches(out) == [(0, 21)]  # the producer's own HEAD says 20 exist
    assert core.table.signed_heads[("t", P)].offset == 20


def test_what_a_lying_store_serves_is_verified_before_it_is_kept() -> None:
    core, _ = store()
    heard(core, [direct_head(9, to=S)], 0.0)
    forged = direct(0, 10, to=S, identity=FORGER)
    heard(core, [m.DirectRecord(S, "t", P, 0, forged.content, 10)], 0.1)
    assert core.head("t", P) is None and core.stats.rejected == 1


def test_a_lying_stores_claim_is_dropped_after_rounds_without_progress() -> None:
    """Attack: a store claims a partition reaches 500,000 and never serves it. We must
    not fetch it for ever: after MAX_STRIKES rounds without progress the claim and its
    gap are dropped, and the same claim is refused for CLAIM_PENALTY seconds."""
    core, _ = store()
    heard(core, [direct_head(500_000, to=S)], 0.0, peer=S3)
    now, sent_fetches = 0.0, 0
    while now < 30.0:
        now += 0.25
        sent_fetches += len(fetches(sent(tick(core, now))))
    assert core.stats.claims_dropped == 1
    assert ("t", P) not in core.gaps.open
    later = sent_fetches
    for _ in range(20):  # the liar repeats itself every round
        now += INTERVAL
        later += len(fetches(heard(core, [direct_head(500_000, to=S)], now, peer=S3)))
        later += len(fetches(sent(tick(core, now))))
    assert now < r.CLAIM_PENALTY
    assert later == sent_fetches  # not one more FETCH within the penalty
    assert sent_fetches <= 2 * r.MAX_STRIKES + 2  # backing off meanwhile


def test_a_claim_that_makes_progress_is_kept() -> None:
    core, _ = store()
    heard(core, [direct_head(99, to=S)], 0.0)
    now = 0.0
    for i in range(10):  # 10 records a round: slow, but moving
        now += INTERVAL
        heard(core, [direct(10 * i, 10, to=S)], now)
        tick(core, now)
    assert core.head("t", P) == 99 and core.stats.claims_dropped == 0


def test_claims_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: a store answers with heads for thousands of partitions of a kept topic."""
    monkeypatch.setattr(r, "MAX_CLAIMS", 3)
    core, _ = store()
    parts = [f"{i:032X}" for i in range(10)]
    heard(core, [direct_head(5, to=S, partition=p) for p in parts], 0.0)
    assert len(core.replication._claims) == 3


def test_heads_of_topics_not_kept_are_ignored() -> None:
    core, _ = store()
    heard(core, [direct_head(5, to=S, topic="other")], 0.0)
    assert core.replication._claims == {} and core.gaps.open == {}


def test_a_trusted_stores_signed_tail_lets_a_store_back_after_retention_continue() -> None:
    """Issue 33 point 7: down longer than the retention period, a store asks for a range
    the other store trimmed; it continues from that store's signed tail, says so, and
    stores and acknowledges again."""
    core, s = store({"t": {"min_acks": 2, "retention_ms": 10_000}}, stores=(S, S2))
    core.handle_batch([record(0, 5)], 0.0)  # held 0..4 before it went down
    out = sent(core.handle_batch([record(30, 1)], 100.0))  # back up: the producer is at 30
    assert fetches(out) == [(5, 25)]
    out = heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], 100.1)
    # what we hold is dropped only once we stored nothing there for a retention period
    assert core.stats.retention_skips == 0 and s.heads()[("t", P)] == (4, 0)
    heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], 109.0)
    assert core.stats.retention_skips == 0
    out = heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], 110.2)
    assert core.stats.retention_skips == 1
    assert ("t", P) not in s.heads()  # 0..4 dropped: trimmed at the store that signed
    assert fetches(sent(tick(core, 200.0))) == [(20, 10)]  # from the tail, not from 5
    out = heard(core, [direct(20, 10, to=S), direct(30, 1, to=S)], 200.1)
    assert core.head("t", P) == 30 and s.heads()[("t", P)] == (30, 20)
    assert m.Ack(P, "t", 30) in out


def test_a_tail_signed_by_a_store_not_trusted_moves_nothing() -> None:
    """Attack: a store not in the metadata's trusted stores signs a tail far ahead."""
    core, s = store({"t": {"min_acks": 2, "retention_ms": 1000}}, stores=(S, S2))
    core.handle_batch([record(0, 5), record(30, 1)], 0.0)
    for now in (0.1, 5.0):
        heard(core, [direct_head(30, tail=20, signer=FORGER, to=S)], now, peer=S3)
    assert core.stats.retention_skips == 0 and s.heads()[("t", P)] == (4, 0)


def test_with_no_trusted_stores_no_tail_moves_a_store() -> None:
    """Attack (a red-team pass): with the default trust (none configured), a node with a
    key of its own signs a tail over records two stores acknowledged, relaying the
    producer's genuine signed HEAD as proof that far exists. Before, the honest store
    dropped what it held below the tail; with two such rounds every copy was gone."""
    core, s = store({"t": {"min_acks": 2, "retention_ms": 1000}})
    core.handle_batch([record(0, 5)], 0.0)
    for now in (0.1, 5.0, 50.0):
        heard(core, [direct_head(900, tail=800, signer=STORE2, to=S, with_head=900)], now)
    assert core.stats.retention_skips == 0 and s.heads()[("t", P)] == (4, 0)


def test_a_trusted_tail_over_held_records_needs_retention_by_age_and_a_quiet_period() -> None:
    """A trusted store's tail drops what we hold only on a topic with retention by age,
    and only after we stored nothing in the partition for that long (our own retention
    would trim it then); a write in between starts the period again. Holding nothing, a
    trusted tail moves us at once (a fresh store after a lost disk)."""
    core, s = store({"t": {"min_acks": 2}}, stores=(S, S2))
    core.handle_batch([record(0, 5)], 0.0)
    for now in (0.1, 1000.0, 5000.0):  # no retention by age: never
        heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], now)
    assert core.stats.retention_skips == 0
    core, s = store({"t": {"min_acks": 2, "retention_ms": 10_000}}, stores=(S, S2))
    core.handle_batch([record(0, 5)], 0.0)
    heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], 1.0)
    core.handle_batch([record(5, 2)], 8.0)  # stored in the partition: quiet again from here
    heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], 12.0)
    heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], 15.0)
    assert core.stats.retention_skips == 0 and s.heads()[("t", P)] == (6, 0)
    heard(core, [direct_head(30, tail=20, signer=STORE2, to=S)], 22.5)
    assert core.stats.retention_skips == 1 and ("t", P) not in s.heads()
    fresh, _ = store({"t": {"min_acks": 2}}, stores=(S, S2))
    heard(fresh, [direct_head(30, tail=20, signer=STORE2, to=S)], 0.1)
    assert fresh.stats.retention_skips == 1


def test_under_replication_is_counted_from_the_heads_other_stores_said() -> None:
    core, _ = store({"t": {"min_acks": 2}, "one": {"min_acks": 1}})
    core.handle_batch([record(0, 10), record(0, 3, topic="one")], 0.0)
    for now in (0.0, 1.0):  # what exists is judged two rounds later
        tick(core, now)
        assert core.under_replicated == r.UnderReplication(0, 0)
    tick(core, 2.0)
    assert core.under_replicated == r.UnderReplication(1, 10)  # nobody else said a word
    heard(core, [direct_head(4, to=S)], 2.5)
    tick(core, 3.0)
    assert core.under_replicated == r.UnderReplication(1, 5)  # 5..9 on this store alone
    heard(core, [direct_head(9, to=S)], 3.5)
    tick(core, 4.0)
    assert core.under_replicated == r.UnderReplication(0, 0)
    for now in range(5, 9):  # S2 stops answering: its word is forgotten after a few rounds
        tick(core, float(now))
    assert core.under_replicated == r.UnderReplication(1, 10)


def test_records_still_on_their_way_are_not_counted_under_replicated() -> None:
    """A live partition: each round this store holds a little more than the other store
    said it held when it answered. Those newest records are not under-replicated."""
    core, _ = store()
    now, last = 0.0, -1
    for _ in range(6):
        if last >= 0:  # the other store answers what it held then
            heard(core, [direct_head(last, to=S)], now + 0.1)
        core.handle_batch([record(last + 1, 10)], now + 0.5)
        last += 10
        tick(core, now + 1.0)
        now += 1.0
    assert core.under_replicated == r.UnderReplication(0, 0)


def test_peer_heads_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r, "MAX_PEER_KEYS", 4)
    core, _ = store()
    parts = [f"{i:032X}" for i in range(10)]
    heard(core, [direct_head(5, to=S, partition=p) for p in parts], 0.0)
    assert sum(len(p) for p in core.replication._peer_heads.values()) == 4


def test_rfc46_stores_replicate_what_other_stores_serve() -> None:
    """Under rfc46 nothing is signed: the claim is followed as above (bounded by strikes),
    and a tail is never told, so nothing is ever skipped."""
    s = MemoryStorage()
    core = StoreCore(S, s, profile=RFC46, replicate_interval=INTERVAL)
    core.set_policy({"t": {}})
    part = "AB" * 16
    out = sent(core.handle_batch([m.DirectHead(S, "t", part, 2)], 0.0))
    assert fetches(out) == [(0, 3)]
    recs = [m.DirectRecord(S, "t", part, i, b"x%d" % i) for i in range(3)]
    core.handle_batch(recs, 0.1)
    assert core.head("t", part) == 2


def test_a_lying_stores_claims_take_no_partition_slots() -> None:
    """Attack: a store claims partitions that do not exist up to the topic's partition
    cap. They must not keep a real producer's new partition out: a partition is taken on
    when a verified batch of it arrives, not on another store's word."""
    core, _ = store(max_partitions_per_topic=3)
    fakes = [f"{i:032X}" for i in range(10)]
    heard(core, [direct_head(5, to=S, partition=p) for p in fakes], 0.0, peer=S3)
    assert m.Ack(P, "t", 0) in sent(core.handle_batch([record(0, 1)], 0.1))


def test_a_peer_connecting_brings_the_next_round_forward_once_per_early_round() -> None:
    """A store replaced after a lost disk asks the others as soon as they connect to it,
    not a whole interval later (the fault suite replaces a second disk seconds after the
    first); a flood of connections brings at most one extra round per ``EARLY_ROUND``."""
    core = StoreCore(S, MemoryStorage(), profile=SignedProfile(STORE), replicate_interval=60.0)
    core.set_policy({"t": {"min_acks": 2}})
    assert sent(tick(core, 0.0)) == [m.GetHeads("t", S)]  # the round at start, peers unknown
    assert sent(tick(core, 5.0)) == []
    hello = rfc46.Subscription(True, rfc46.Command.DIRECT_HEAD.value, S2.encode())
    for _ in range(100):
        assert core.on_subscription(hello, 5.0) == []
    assert sent(tick(core, 5.0 + r.EARLY_ROUND / 2)) == []
    assert sent(tick(core, 5.0 + r.EARLY_ROUND)) == [m.GetHeads("t", S)]
    assert sent(tick(core, 5.0 + 2 * r.EARLY_ROUND)) == []  # not again without a connection
    core.on_subscription(hello, 5.0 + 2 * r.EARLY_ROUND)
    assert sent(tick(core, 5.0 + 3 * r.EARLY_ROUND)) == [m.GetHeads("t", S)]
    assert sent(tick(core, 5.0 + 4 * r.EARLY_ROUND)) == []


def test_with_trusted_stores_an_untrusted_stores_claim_is_no_copy() -> None:
    """Attack (a red-team pass): with S and S2 trusted and S2 gone, a liar (S3) tells S
    it holds everything; S's gauge said 0 under-replicated. Only trusted stores' heads
    count as copies when some are configured."""
    core, _ = store({"t": {"min_acks": 2}}, stores=(S, S2))
    core.handle_batch([record(0, 10)], 0.0)
    for now in (0.0, 1.0, 2.0):
        tick(core, now)
        heard(core, [direct_head(9, to=S)], now + 0.5, peer=S3)
    tick(core, 3.0)
    assert core.under_replicated == r.UnderReplication(1, 10)
    heard(core, [direct_head(9, to=S)], 3.5, peer=S2)
    tick(core, 4.0)
    assert core.under_replicated == r.UnderReplication(0, 0)


def test_a_store_the_metadata_does_not_trust_counts_without_failing() -> None:
    """Found by the suite: a revoked store left no trusted head to count for its
    partitions, and its count raised IndexError on its loop thread. It counts nothing."""
    core, _ = store({"t": {"min_acks": 2}}, stores=(S2,))  # we (S) are not trusted
    core.handle_batch([record(0, 10)], 0.0)
    for now in (0.0, 1.0, 2.0, 3.0):
        tick(core, now)
    assert core.under_replicated == r.UnderReplication(0, 0)
