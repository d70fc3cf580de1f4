"""A consumer asks the stores for the heads soon after a peer joins (HEADS_AFTER_PEER).

A producer that came and went before our subscription reached it (our loop late or
paused when its beacon came) left its records only at the stores; before, only the
60 s refresh told the consumer of them (CI once waited 30 s for 2,000 records in vain).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.consumer._core import (
    ASK_STORES,
    ASK_TOPICS,
    ASK_TOPICS_RATE,
    HEADS_AFTER_PEER,
    HEADS_REFRESH,
    HELLO_TOPICS,
    ConsumerCore,
)
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

C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
P = "0123456789ABCDEF0123456789ABCDEF"
STORES = ["5707E0000000000000000000000000AA", "5707E0000000000000000000000000BB"]
FIRST, AGAIN = HEADS_AFTER_PEER
STEP = 0.1


def consumer(reset: str = "earliest") -> ConsumerCore:
    core = ConsumerCore(C, offset_reset=reset)  # type: ignore[arg-type]
    core.subscribe("t", 0.0)
    return core


def asks(core: ConsumerCore, now: float) -> int:
    return sum(isinstance(e, Publish) and e.msg == GetHeads("t", C) for e in core.tick(now))


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


def test_a_join_asks_soon_and_once_more_later_then_the_minute_refresh_goes_on() -> None:
    core = consumer()
    assert asks(core, 0.0) == 0  # the first tick times the refresh
    core.peer_joined(5.0)
    assert asks(core, 5.0 + FIRST - 0.01) == 0
    assert asks(core, 5.0 + FIRST) == 1
    assert asks(core, 5.0 + FIRST + 0.5) == 0  # once
    assert asks(core, 5.0 + AGAIN - 0.01) == 0
    assert asks(core, 5.0 + AGAIN) == 1
    assert asks(core, 5.0 + AGAIN + 1) == 0
    # the regular refresh counts from the last ask
    assert asks(core, 5.0 + AGAIN + HEADS_REFRESH - 0.01) == 0
    assert asks(core, 5.0 + AGAIN + HEADS_REFRESH) == 1


def test_a_steady_stream_of_joins_asks_every_two_seconds_not_never() -> None:
    """Each join must not put off the ask a join before it scheduled: peers joining every
    half second (a churning cluster) would otherwise keep the ask away for good."""
    asked = run(consumer(), [0.5 * i for i in range(1, 61)], 30.0)
    assert asked, "never asked"
    assert asked[0] <= 0.5 + FIRST + STEP
    gaps = [b - a for a, b in zip(asked, asked[1:], strict=False)]
    assert max(gaps) <= FIRST + STEP + 1e-9, gaps
    assert len(asked) <= 30.0 / FIRST + 2  # and no more often than that


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 40.0).map(lambda t: round(t, 1)), min_size=1, max_size=40))
def test_every_join_is_followed_by_an_ask_within_the_first_delay_and_one_after_the_second(
    joins: list[float],
) -> None:
    asked = run(consumer(), joins, max(joins) + AGAIN + 1.0)
    for j in joins:
        assert any(j < a <= j + FIRST + STEP + 1e-9 for a in asked), (j, asked)
        assert any(a >= j + AGAIN - 1e-9 for a in asked), (j, asked)
    # bounded: at most one first ask per FIRST seconds, plus the later ones
    for a in asked:
        assert sum(a <= b < a + AGAIN for b in asked) <= AGAIN / FIRST + 2


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


def test_many_topics_are_one_hello_to_each_store_and_get_heads_for_some_in_turn() -> None:
    core, topics = many(100)
    for store in STORES:
        greet(core, store)
    core.tick(0.0)
    for n in range(1, 9):
        out = [e.msg for e in core.tick(n * HEADS_REFRESH)]
        assert out[:2] == [ConsumerHello(s, C, tuple(topics)) for s in STORES]
        start = (n - 1) * ASK_TOPICS % 100
        turn = [topics[(start + i) % 100] for i in range(ASK_TOPICS)]
        assert out[2:] == [GetHeads(t, C) for t in turn]


def test_hellos_name_at_most_hello_topics_each() -> None:
    core, topics = many(HELLO_TOPICS + 5)
    greet(core, STORES[0])
    core.tick(0.0)
    out = [e.msg for e in core.tick(HEADS_REFRESH)]
    hellos = [h for h in out if isinstance(h, ConsumerHello)]
    assert [len(h.topics) for h in hellos] == [HELLO_TOPICS, 5]
    assert [t for h in hellos for t in h.topics] == topics


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


def test_a_consumer_of_many_topics_waits_longer_after_a_join() -> None:
    core, _ = many(1000)
    core.tick(0.0)
    core.peer_joined(1.0)
    wait = 1000 / ASK_TOPICS_RATE
    assert all(not sent_at(core, 1.0 + t) for t in (FIRST, wait / 2, wait - 0.01))
    assert sent_at(core, 1.0 + wait)


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
