"""Attacks with unsigned hints and signed tails at a consumer (issue 10, point 5).

A store's DIRECT-HEAD carries an unsigned ``sequence`` (what it holds) and a
tail (what retention deleted). Only a tail signed by a store the consumer
trusts may move delivery, and only as far as the producer's own signed
statements or ``max_head_lead`` allow; unsigned hints for unknown partitions
are bounded in number and rate and cost a bounded number of FETCHes.
"""

from __future__ import annotations

from dafka.consumer import _partition as consumer_mod
from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import DataLoss, Deliver
from dafka.security.identity import Identity
from tests.signing import (
    CONSUMER,
    FORGER,
    STORE,
    WIRE,
    P,
    direct,
    direct_head,
    record,
    sent,
)

S = STORE.node_id


def consumer(reset: object = "earliest", **kw: object) -> ConsumerCore:
    core = ConsumerCore(CONSUMER, offset_reset=reset, profile=WIRE, **kw)  # type: ignore[arg-type]
    core.subscribe("t", 0.0)
    return core


def delivered(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


def test_an_unsigned_tail_from_a_non_store_skips_nothing() -> None:
    """Defence: only a signed tail counts (``_tail_counts`` asks ``tail_store``)."""
    core = consumer()
    core.handle(record(0, 2), 0.0)
    out = core.handle(direct_head(2**62, tail=2**62, signer=None), 0.1)
    assert not [e for e in out if isinstance(e, DataLoss)]
    assert core.positions() == {("t", P): 2} and core.stats.data_lost == 0
    assert core.stats.ignored_tails == 1
    assert delivered(core.handle(record(2, 2), 0.2)) == [2, 3]
    # even an unsigned tail within what the producer signed moves nothing
    core.handle(record(7, 2), 0.3)  # 4..6 missing
    core.handle(direct_head(8, tail=7, signer=None), 0.4)
    assert core.positions() == {("t", P): 4} and core.stats.data_lost == 0
    # nor does it later, when no store served 4..6 for longer than unserved_after
    core.handle(direct_head(8, tail=7, signer=None), 20.0)
    core.handle(direct_head(8, tail=7, signer=None), 31.0)
    assert core.positions() == {("t", P): 4} and core.stats.data_lost == 0


def test_a_signed_tail_from_an_untrusted_store_skips_nothing() -> None:
    """Defence: with ``trusted_stores`` only their tails count."""
    core = consumer(trusted_stores=[S])
    core.handle(record(0, 2), 0.0)
    core.handle(record(5, 4), 0.0)  # 2..4 missing: a tail of 5 would skip them
    core.handle(direct_head(8, tail=5, signer=FORGER), 0.1)
    assert core.positions() == {("t", P): 2} and core.stats.data_lost == 0
    # the trusted store's signed tail does move it
    out = core.handle(direct_head(8, tail=5, signer=STORE), 0.2)
    assert [e for e in out if isinstance(e, DataLoss)] == [DataLoss("t", P, 2, 5)]
    assert core.positions() == {("t", P): 9}


def test_a_signed_tail_with_no_trust_list_stops_at_what_the_producer_signed() -> None:
    """Defence: without trusted stores, a tail moves delivery only below the end that the
    producer's own signed records and HEADs show; a far tail by any key skips nothing."""
    core = consumer()
    core.handle(record(0, 2), 0.0)
    core.handle(direct_head(2**62, tail=2**62, signer=FORGER), 0.1)
    assert core.positions() == {("t", P): 2} and core.stats.data_lost == 0
    # not even within max_head_lead
    core.handle(direct_head(1000, tail=900, signer=FORGER), 0.2)
    assert core.positions() == {("t", P): 2}
    assert delivered(core.handle(direct(2, 3), 0.3)) == [2, 3, 4]
    # nor later, when no store served 5.. for longer than unserved_after
    core.handle(direct_head(1000, tail=900, signer=FORGER), 20.0)
    core.handle(direct_head(1000, tail=900, signer=FORGER), 31.0)
    assert core.positions() == {("t", P): 5} and core.stats.data_lost == 0
    assert core.stats.tail_waits > 0  # said, not waited on in silence


def test_a_trusted_stores_tail_is_bounded_by_the_head_lead() -> None:
    core = consumer(trusted_stores=[S], fetch_window=10, max_head_lead=100)
    core.handle(record(0, 2), 0.0)
    core.handle(direct_head(2**62, tail=2**62, signer=STORE), 0.1)
    assert core.positions() == {("t", P): 2} and core.stats.data_lost == 0


def test_an_unsigned_hint_never_chooses_where_latest_starts() -> None:
    """Defence: a "latest" consumer starts a partition from a signed statement only."""
    core = consumer("latest")
    core.handle(direct_head(2**62), 0.0)
    assert core.positions() == {}
    assert delivered(core.handle(record(0, 2), 0.1)) == [0, 1]


def test_a_lying_store_hint_never_chooses_where_minus_n_starts() -> None:
    """Defence: with ``offset_reset=-N`` and no producer HEAD to pass on, a store's
    unsigned head only aims FETCHes; verified batches decide where delivery starts. A store
    claiming a far head must not make the consumer skip the last N records: the claim nobody
    serves costs ``unserved_after`` seconds, then delivery starts N before the verified end."""
    core = consumer(-3, unserved_after=5.0)
    out = core.handle(direct_head(1000, signer=None), 0.0)
    assert [(f.offset, f.count) for f in sent(out) if isinstance(f, m.Fetch)] == [(1000, 1)]
    assert delivered(core.handle(direct(5, 5), 0.1)) == []  # below what the store claims
    out = core.tick(5.1)
    assert [(f.offset, f.count) for f in sent(out) if isinstance(f, m.Fetch)] == [(7, 3)]
    assert delivered(core.handle(direct(5, 5), 5.2)) == [7, 8, 9]


def test_hints_for_unknown_partitions_are_bounded_in_state_and_fetches() -> None:
    """5,000 unsigned DIRECT-HEADs for unknown partitions, every second for 30 s: the
    partitions they make and the FETCHes they cause are bounded, and a real producer's
    records are still delivered."""
    core = consumer()
    fakes = [Identity.from_seed(i.to_bytes(32, "big")).node_id for i in range(1, 5001)]
    fetches = 0
    now = 0.0
    for second in range(30):
        now = float(second)
        for pid in fakes:
            fetches += len(sent(core.handle(direct_head(10, partition=pid), now)))
        fetches += len(core.tick(now + 0.5))
    assert len(core.positions()) <= consumer_mod.MAX_UNCONFIRMED
    # without the bounds: 5,000 partitions and about 5,000 FETCHes a second
    assert fetches < 30 * 500, fetches
    assert core.stats.limited_hints > 0
    assert delivered(core.handle(record(0, 3), now + 1)) == [0, 1, 2]


def test_an_unconfirmed_partition_is_forgotten_after_fruitless_fetches() -> None:
    core = consumer()
    core.handle(direct_head(10), 0.0)
    assert core.known_end("t", P) == 11
    for i in range(1, 10):
        core.tick(float(i) * 2)
    assert core.positions() == {}
    # what a store really serves confirms it
    core.handle(direct_head(10), 30.0)
    assert delivered(core.handle(direct(0, 2), 30.1)) == [0, 1]
    for i in range(1, 10):
        core.tick(30.0 + i * 2)
    assert core.positions() == {("t", P): 2}


def test_fetches_over_all_partitions_are_bounded() -> None:
    core = consumer(fetch_timeout=0.001)
    producers = [Identity.from_seed((9000 + i).to_bytes(32, "big")) for i in range(300)]
    for ident in producers:  # real partitions, each with a gap to fetch
        core.handle(record(5, 1, identity=ident), 0.0)
    total = 0
    for i in range(1, 101):
        total += len(core.tick(i * 0.01))  # 100 ticks in one second
    assert total <= consumer_mod.FETCH_BURST + consumer_mod.FETCH_RATE * 1.1
    assert core.stats.limited_fetches > 0


def test_a_signed_tail_message_round_trips_through_the_store_profile() -> None:
    from dafka.wire.profiles import SignedProfile

    sp = SignedProfile(STORE)
    frames = sp.encode(m.DirectHead(CONSUMER, "t", P, 9, tail=8))
    back = WIRE.decode(frames)
    assert isinstance(back, m.DirectHead) and back.tail == 8
    assert WIRE.tail_store(back) == S
    # a consumer's profile (no key) sends no signature, and nothing trusts it
    unsigned = WIRE.decode(WIRE.encode(m.DirectHead(CONSUMER, "t", P, 9, tail=8)))
    assert WIRE.tail_store(unsigned) is None


def test_a_genuine_store_tail_still_counts_after_unsigned_hints() -> None:
    """No trust list: the producer's signed HEAD that a store passes on backs its tail,
    even when the store's unsigned hint already told the consumer the same end."""
    core = consumer()
    core.handle(direct_head(49), 0.0)
    core.handle(direct_head(49, tail=20, with_head=49), 0.1)
    out = core.handle(direct_head(49, tail=20, with_head=49), 10.1)
    assert [e for e in out if isinstance(e, DataLoss)] == [DataLoss("t", P, 0, 20)]
