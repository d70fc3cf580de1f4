"""A consumer asks the stores for the heads soon after a peer joins (HEADS_AFTER_PEER).

A producer that came and went before our subscription reached it (our loop late or
paused when its beacon came) left its records only at the stores; before, only the
60 s refresh told the consumer of them (CI once waited 30 s for 2,000 records in vain).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.consumer._asks import (
    ASK_ANSWERS_RATE,
    ASK_STORES,
    ASK_TOPICS,
    HEADS_AFTER_PEER,
    HEADS_REFRESH,
    HeadsAsks,
)
from dafka.consumer._core import ConsumerCore
from dafka.core.effects import Publish
from dafka.core.messages import (
    ConsumerHello,
    DirectHead,
    GetHeads,
    Record,
    StoreHello,
    Subscription,
)
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire.signed import MAX_HELLO_TOPICS as HELLO_TOPICS

C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
P = "0123456789ABCDEF0123456789ABCDEF"
STORES = ["5707E0000000000000000000000000AA", "5707E0000000000000000000000000BB"]
FIRST, AGAIN = HEADS_AFTER_PEER
STEP = 0.1
SOON = 2 * FIRST + STEP + 1e-9  # the ask after a join comes within this (its delay is drawn)


def consumer(reset: str = "earliest") -> ConsumerCore:
    core = ConsumerCore(C, offset_reset=reset)  # type: ignore[arg-type]
    core.subscribe("t", 0.0)
    return core


def asks(core: ConsumerCore, now: float) -> int:
    return sum(
        isinstance(e, Publish) and isinstance(e.msg, GetHeads) and e.msg.topic == "t"
        for e in core.tick(now)
    )


def run(core: ConsumerCore, joins: list[float], until: float) -> list[float]:
    """Tick every STEP seconds, telling the core of each join at its time: when it asked."""
    asked: list[float] = []
    pending = sorted(joins)
    now = 0.0
    while now <= until:
        while pending and pending[0] <= now:
            core.peer_joined(pending.pop(0))
        if asks(core, now):
            asked.append(now)
        now = round(now + STEP, 6)
    return asked


def test_a_join_asks_soon_and_once_more_later_and_leaves_the_refresh_where_it_was() -> None:
    core = consumer()
    asked = run(core, [5.0], 2 * HEADS_REFRESH + 1)
    assert len(asked) == 4, asked
    assert 5.0 + FIRST <= asked[0] <= 5.0 + 2 * FIRST + STEP
    assert 5.0 + AGAIN <= asked[1] <= 5.0 + 1.5 * AGAIN + STEP
    # the refresh stays on its minute from the first tick: consumers a join reached together
    # would otherwise refresh together for good
    assert asked[2:] == [HEADS_REFRESH, 2 * HEADS_REFRESH]


def test_a_steady_stream_of_joins_asks_every_few_seconds_not_never() -> None:
    """Each join must not put off the ask a join before it scheduled: peers joining every
    half second (a churning cluster) would otherwise keep the ask away for good."""
    asked = run(consumer(), [0.5 * i for i in range(1, 61)], 30.0)
    assert asked, "never asked"
    assert asked[0] <= 0.5 + SOON
    gaps = [b - a for a, b in zip(asked, asked[1:], strict=False)]
    assert max(gaps) <= SOON, gaps
    assert len(asked) <= 30.0 / FIRST + 2  # and no more often than every first delay


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 40.0).map(lambda t: round(t, 1)), min_size=1, max_size=40))
def test_every_join_is_followed_by_an_ask_soon_and_one_after_the_second_delay(
    joins: list[float],
) -> None:
    asked = run(consumer(), joins, max(joins) + 1.5 * AGAIN + 1.0)
    for j in joins:
        assert any(j < a <= j + SOON for a in asked), (j, asked)
        assert any(a >= j + AGAIN - 1e-9 for a in asked), (j, asked)
    for a in asked:  # bounded: about one ask a first delay, plus the later ones
        assert sum(a <= b < a + AGAIN for b in asked) <= AGAIN / FIRST + 2


def test_consumers_a_join_reaches_together_do_not_all_ask_at_once() -> None:
    """The red team's: 60 consumers of a topic, a producer joins all their meshes at once,
    and with one delay they all asked in the same instant, twice (960 GET-HEADS against a
    store's shared burst of 640: a third refused)."""
    times: list[float] = []
    for i in range(60):
        core = ConsumerCore(f"{i:032X}", offset_reset="earliest")
        core.subscribe("t", 0.0)
        times.extend(run(core, [100.0], 100.0 + 1.5 * AGAIN + 1))
    soon = sorted(t for t in times if 100.0 <= t < 100.0 + AGAIN)
    assert len(soon) == 60
    assert max(sum(a <= b < a + 0.5 for b in soon) for a in soon) <= 25  # 15 expected


def test_a_consumer_at_latest_asks_nothing_when_peers_join() -> None:
    core = consumer(reset="latest")
    core.peer_joined(0.0)
    assert run(core, [1.0, 2.0], 20.0) == []


# ------------------------------------------------- the asks go as one HELLO a store


def greet(core: ConsumerCore, store: str, now: float = 0.0) -> None:
    """``store`` hears us (its W subscription) and we hear it (its STORE-HELLO)."""
    core.on_subscription(Subscription(True, b"W", store.encode()), now)
    core.handle(StoreHello(C, store), now)


def many(n: int = 100) -> tuple[ConsumerCore, list[str]]:
    core = ConsumerCore(C, offset_reset="earliest")  # type: ignore[arg-type]
    topics = [f"t{i:04d}" for i in range(n)]
    for t in topics:
        core.subscribe(t, 0.0)
    return core, topics


def test_few_topics_are_asked_by_get_heads_whatever_stores_we_know() -> None:
    """Every store hears a GET-HEADS; a HELLO reaches only a store we know, and peers choose
    those (a made-up store greets us; a real one's STORE-HELLO was lost)."""
    core, topics = many(ASK_TOPICS)
    greet(core, STORES[0])
    core.tick(0.0)
    assert [e.msg for e in core.tick(HEADS_REFRESH)] == [GetHeads(t, C) for t in topics]


def test_many_topics_are_get_heads_for_some_in_turn_then_one_hello_to_each_store() -> None:
    core, topics = many(100)
    for store in STORES:
        greet(core, store)
    core.tick(0.0)
    for n in range(1, 9):
        out = [e.msg for e in core.tick(n * HEADS_REFRESH)]
        start = (n - 1) * ASK_TOPICS % 100
        turn = [topics[(start + i) % 100] for i in range(ASK_TOPICS)]
        assert out[:ASK_TOPICS] == [GetHeads(t, C) for t in turn]
        # the HELLOs name every topic, from where the GET-HEADS stopped
        rest = (start + ASK_TOPICS) % 100
        named = tuple(topics[rest:] + topics[:rest])
        assert out[ASK_TOPICS:] == [ConsumerHello(s, C, named) for s in STORES]


def test_hellos_name_at_most_hello_topics_each() -> None:
    core, topics = many(HELLO_TOPICS + 5)
    greet(core, STORES[0])
    core.tick(0.0)
    out = [e.msg for e in core.tick(HEADS_REFRESH)]
    hellos = [h for h in out if isinstance(h, ConsumerHello)]
    assert [len(h.topics) for h in hellos] == [HELLO_TOPICS, 5]
    assert sorted(t for h in hellos for t in h.topics) == topics


def test_a_hello_that_overruns_the_stores_budget_leaves_no_topic_unanswered_for_good() -> None:
    """The red team's: 100 topics of 120 partitions. A HELLO for all costs a store 12,100
    answers against a burst of 10,000, and when it went first, naming the topics in one
    order, the GET-HEADS after it and its own last 17 topics were never answered. Now the
    GET-HEADS go first (16 topics, 1,936 answers) and the HELLO names the topics from where
    they stopped (67 more answered an ask): all 100 within 3 asks."""
    store = StoreCore(STORES[0], MemoryStorage())
    core, topics = many(100)
    records = [Record(t, f"{i:032X}", 0, b"x") for t in topics for i in range(120)]
    store.handle_batch(records, 0.0, [f"10.0.{i}.1" for _ in topics for i in range(120)])
    assert sum(len(store._storage.partitions(t)) for t in topics) == 12_000
    greet(core, STORES[0])
    core.tick(0.0)
    answered: set[str] = set()
    for n in range(1, 4):
        asks = [e.msg for e in core.tick(n * HEADS_REFRESH)]
        answers = store.handle_batch(asks, n * HEADS_REFRESH)
        answered |= {e.msg.topic for e in answers if isinstance(e.msg, DirectHead)}
    assert answered == set(topics), sorted(set(topics) - answered)


def test_made_up_stores_get_a_bounded_share_and_a_real_one_still_answers_every_topic() -> None:
    """The red team's: 1,024 made-up stores greet the consumer and subscribe for its HELLOs
    (every slot of StoreAnswers), and the real store's STORE-HELLO was lost. The HELLOs of
    an ask go to ASK_STORES of them, and the GET-HEADS in turn reach the real store: it has
    answered every topic within ceil(100 / ASK_TOPICS) asks (before: never)."""
    store = StoreCore(STORES[0], MemoryStorage())
    core, topics = many(100)
    store.handle_batch([Record(t, P, 0, b"x") for t in topics], 0.0)
    for i in range(1024):
        greet(core, f"{i:032X}")
    core.tick(0.0)
    answered: set[str] = set()
    asks = -(-100 // ASK_TOPICS)
    for n in range(1, asks + 1):
        out = [e.msg for e in core.tick(n * HEADS_REFRESH)]
        assert sum(isinstance(h, ConsumerHello) for h in out) == ASK_STORES
        answers = store.handle_batch(out, n * HEADS_REFRESH)
        answered |= {e.msg.topic for e in answers if isinstance(e.msg, DirectHead)}
    assert answered == set(topics)


def test_a_consumer_of_many_partitions_waits_longer_after_a_join() -> None:
    """An ask costs a store an answer a topic and one a partition; the red team's two
    consumers of a topic of 6,000 partitions asked every 2 s under joins."""
    asks = HeadsAsks("seed")
    assert asks.due(0.0) is False
    asks.joined(1.0, 6000)
    wait = 6000 / ASK_ANSWERS_RATE
    assert not any(asks.due(1.0 + t) for t in (FIRST, wait / 2, wait - 0.01))
    assert any(asks.due(1.0 + wait + t) for t in (0.0, wait / 2, wait - 0.01))


def test_the_core_counts_its_topics_and_partitions_for_the_pace() -> None:
    core, topics = many(2000)
    for i in range(500):  # from as many hosts (each may bring a few new partitions)
        core.handle(DirectHead(C, topics[0], f"{i:032X}", 0), 0.0, f"10.0.{i % 250}.{i // 250}")
    assert len(core._parts) == 500
    core.tick(0.0)
    core.peer_joined(1.0)
    wait = 2500 / ASK_ANSWERS_RATE  # 4 s for the topics alone
    assert not any(sent_at(core, 1.0 + t) for t in (FIRST, 4.5, wait - 0.01))
    assert any(sent_at(core, 1.0 + wait + t) for t in (0.0, wait / 2, wait - 0.01))


def sent_at(core: ConsumerCore, now: float) -> bool:
    return any(isinstance(e.msg, (GetHeads, ConsumerHello)) for e in core.tick(now))


def test_a_store_answers_every_topic_of_a_refresh_not_the_first_forty() -> None:
    """End to end over the two cores: a consumer of 100 topics, one record in each at the
    store. A refresh of one GET-HEADS a topic had 40 answered (the store's per-requester
    burst) and the other 60 never, at every refresh."""
    store = StoreCore(STORES[0], MemoryStorage())
    core, topics = many(100)
    store.handle_batch([Record(t, P, 0, b"x") for t in topics], 0.0)
    greet(core, STORES[0])
    core.tick(0.0)
    for n in (1, 2):
        asks = [e.msg for e in core.tick(n * HEADS_REFRESH)]
        answers = store.handle_batch(asks, n * HEADS_REFRESH)
        heads = {e.msg.topic for e in answers if isinstance(e.msg, DirectHead)}
        assert heads == set(topics), (n, len(heads))
