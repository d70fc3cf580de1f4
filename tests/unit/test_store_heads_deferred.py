"""Head answers past a store's DIRECT-HEAD budget wait for it, not dropped.

A store answers GET-HEADS and CONSUMER-HELLO with one DIRECT-HEAD per partition, from one
budget over all requesters. A topic of an accepted request that met the budget spent was
dropped silently (``heads_limited``), and a consumer concluding the end of stream from the
stores' silence (``dafka-consumer -e``) exited 0 with records unread. It now waits in
:class:`~dafka.store._heads_deferred.DeferredHeads`, in turns over requesters, bounded, and
is answered as the budget refills. Driven with plain messages and a fake clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.core.effects import Publish
from dafka.core.limits import TokenBucket
from dafka.core.messages import ConsumerHello, DirectHead, GetHeads, Record
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.store._heads_deferred import (
    MAX_DEFERRED,
    MAX_DEFERRED_PER_REQUESTER,
    MAX_DEFERRED_PROXIED,
    Deferral,
    DeferredHeads,
)
from tests.unit.test_attacks_requesters import From  # a message from an unknown connection

NODE = "5707E0000000000000000000000000AA"
P = "0123456789ABCDEF0123456789ABCDEF"
A = "A0A0A0A0A0A0A0A0A0A0A0A0A0A0A0A0"
B = "B0B0B0B0B0B0B0B0B0B0B0B0B0B0B0B0"


def node(i: int) -> str:
    return f"{i:032X}"


def make(rate: float, burst: float, topics: Sequence[str] = ()) -> StoreCore:
    """An rfc46 store (answers go out at once, no credit) holding one record of each topic."""
    core = StoreCore(NODE, MemoryStorage(), heads_answer_rate=rate, heads_answer_burst=burst)
    if topics:
        core.handle_batch([Record(t, P, 0, b"x") for t in topics], 0.0)
    return core


def heads(out: list[Publish], to: str | None = None) -> list[DirectHead]:
    return [
        e.msg
        for e in out
        if isinstance(e.msg, DirectHead) and (to is None or e.msg.recipient == to)
    ]


def drain(core: StoreCore, now: float, until: float) -> tuple[list[DirectHead], float]:
    """Let the clock run as the shell would: to each ``serve_at`` while something is pending."""
    got: list[DirectHead] = []
    for _ in range(100_000):
        if not core.has_pending():
            break
        now = max(now, core.serve_at)
        if now > until:
            break
        got += heads(core.tick(now))
    return got, now


# -- the bug -------------------------------------------------------------------------------


def test_a_request_that_meets_the_budget_spent_is_answered_once_it_refills() -> None:
    """One requester's 100 topics spend the budget (100 tokens; 2 a topic); another's
    request for 3 topics got nothing and its ``-e`` ended with their records unread."""
    mine = [f"a{i}" for i in range(100)]
    theirs = ["b0", "b1", "b2"]
    core = make(100, 100, mine + theirs)
    first = heads(core.handle_batch([ConsumerHello(NODE, A, tuple(mine))], 1.0))
    assert 0 < len(first) < 100
    out = heads(core.handle_batch([ConsumerHello(NODE, B, tuple(theirs))], 1.0))
    assert out == [] and core.stats.heads_deferred > 0
    got, now = drain(core, 1.0, 10.0)
    got += out
    assert sorted(h.topic for h in got if h.recipient == B) == theirs
    assert sorted(h.topic for h in first + got if h.recipient == A) == sorted(mine)
    assert core.stats.heads_limited == 0 and now < 3.0
    assert not core.has_pending() and core.serve_at == math.inf


def test_one_requesters_many_topics_do_not_hold_anothers_one() -> None:
    """Round-robin over requesters: B's topic goes before A's 10th after B came (a single
    FIFO held it behind A's 470 topics waiting, a second)."""
    mine = [f"a{i}" for i in range(500)]  # (a store takes on 1,000 new partitions at once)
    core = make(1000, 10, [*mine, "b"])
    core.handle_batch([ConsumerHello(NODE, A, tuple(mine))], 1.0)
    got, now = drain(core, 1.0, 1.05)  # some of A's answered, most wait
    assert len(core.serving._deferred) > 400
    order = heads(core.handle_batch([GetHeads("b", B)], now))
    for _ in range(1000):
        if any(h.recipient == B for h in order):
            break
        now = max(now, core.serve_at)
        order += heads(core.tick(now))
    before = [h for h in order[: [h.recipient for h in order].index(B)] if h.recipient == A]
    assert len(before) < 10, len(before)


# -- bounds --------------------------------------------------------------------------------


def test_a_flood_of_made_up_requesters_and_topics_holds_the_queue_at_its_bound() -> None:
    core = make(1, 1)  # nothing stored: every topic is made up
    asked = 0
    for i in range(12):  # 12 requesters x 1,024 topics, more than the queue holds
        topics = tuple(f"r{i}-t{j}" for j in range(1024))
        core.handle_batch([ConsumerHello(NODE, node(i + 1), topics)], 1.0)
        asked += len(topics)
    deferred = core.serving._deferred
    assert len(deferred) == MAX_DEFERRED
    stats = core.stats
    assert stats.heads_deferred == MAX_DEFERRED
    assert stats.heads_deferred + stats.heads_limited + 1 == asked  # one answered at once


def test_one_requester_holds_at_most_its_share() -> None:
    core = make(1, 1)
    for k in range(3):
        topics = tuple(f"t{k}-{j}" for j in range(1000))
        core.handle_batch([ConsumerHello(NODE, A, topics)], 1.0 + k * 0.1)
    assert core.serving._deferred.waiting(A) == MAX_DEFERRED_PER_REQUESTER
    assert core.stats.heads_limited == 3000 - 1 - MAX_DEFERRED_PER_REQUESTER
    # another requester still gets in
    core.handle_batch([GetHeads("x", B)], 1.5)
    assert core.serving._deferred.waiting(B) == 1


def test_requests_made_in_another_nodes_name_hold_at_most_half() -> None:
    core = make(1, 1)
    for i in range(20):  # 20 names x PROXIED_PER_REQUESTER (128) would be 2,560
        topics = tuple(f"p{i}-{j}" for j in range(1024))
        core.handle_batch([ConsumerHello(NODE, node(i + 1), topics)], 1.0, From(1, "", False))
    deferred = core.serving._deferred
    assert core.stats.requests_proxied == 20
    assert len(deferred) == deferred.proxied == MAX_DEFERRED_PROXIED
    # the other half is still there for requesters on their own connection
    for i in range(2):
        topics = tuple(f"o{i}-{j}" for j in range(1024))
        core.handle_batch([ConsumerHello(NODE, node(100 + i), topics)], 1.0)
    assert len(deferred) == MAX_DEFERRED and deferred.proxied == MAX_DEFERRED_PROXIED


def test_a_topic_asked_again_while_it_waits_is_answered_once() -> None:
    core = make(10, 2, ["spend", "t"])
    core.handle_batch([GetHeads("spend", A)], 1.0)  # the budget spent
    for i in range(5):
        assert heads(core.handle_batch([GetHeads("t", B)], 1.0 + i * 0.01)) == []
    assert len(core.serving._deferred) == 1 and core.stats.heads_deferred == 1
    got, _ = drain(core, 1.0, 5.0)
    assert [h.topic for h in got if h.recipient == B] == ["t"]


def test_topics_waiting_past_their_age_are_dropped_and_counted() -> None:
    """A requester gone, or a flood ebbed: what waits is answered within 2 s or not at all,
    so a burst of requests does not keep later readers waiting for minutes."""
    core = make(1, 1, ["t"])
    topics = tuple(f"x{j}" for j in range(50))  # 50 s of budget at 1 a second
    core.handle_batch([ConsumerHello(NODE, A, topics)], 1.0)
    out = heads(core.handle_batch([GetHeads("t", B)], 10.0))
    assert [h.recipient for h in out] == [B]  # not behind A's 49 stale topics
    assert core.stats.heads_limited == 49 and len(core.serving._deferred) == 0


# -- what drops pending state drops what waits -----------------------------------------------


def test_a_read_acl_closed_while_a_topic_waits_drops_it() -> None:
    core = make(10, 2, ["spend", "t", "open"])
    core.handle_batch([GetHeads("spend", A)], 1.0)
    core.handle_batch([ConsumerHello(NODE, B, ("t", "open"))], 1.0)
    assert len(core.serving._deferred) == 2
    core.set_policy({"t": {"consumers": [A]}})
    assert core.stats.read_refused == 1 and len(core.serving._deferred) == 1
    got, _ = drain(core, 1.0, 5.0)
    assert [h.topic for h in got if h.recipient == B] == ["open"]


def test_a_deleted_topic_waiting_is_forgotten() -> None:
    core = make(10, 2, ["spend", "t", "keep"])
    core.handle_batch([GetHeads("spend", A)], 1.0)
    core.handle_batch([ConsumerHello(NODE, B, ("t", "keep"))], 1.0)
    core.apply_deletions({"t": 3}, ["keep"])
    assert len(core.serving._deferred) == 1
    got, _ = drain(core, 1.0, 5.0)
    assert [h.topic for h in got] == ["keep"]


def test_a_waiting_answer_is_current_when_it_goes() -> None:
    """The partitions and heads are read when the answer goes, not when it was deferred."""
    core = make(10, 2, ["spend", "t"])
    core.handle_batch([GetHeads("spend", A)], 1.0)
    core.handle_batch([GetHeads("t", B)], 1.0)
    core.handle_batch([Record("t", P, i, b"y") for i in range(1, 6)], 1.05)
    got, _ = drain(core, 1.05, 5.0)
    assert [(h.topic, h.offset) for h in got if h.recipient == B] == [("t", 5)]


# -- the shell comes back when the budget refills, and does not spin ----------------------------


def test_after_a_deferral_the_shell_waits_for_the_budget_then_comes_back() -> None:
    core = make(100, 40, ["spend", "t"])
    core.handle_batch([GetHeads("spend", A)], 1.0)
    core.serving._heads_out.charge(39)  # spent: 40 tokens owed back at 100 a second
    core.handle_batch([GetHeads("t", B)], 1.0)
    assert len(core.serving._deferred) == 1
    at = core.serve_at
    assert 1.0 < at < math.inf  # in the future: the loop sleeps until then
    assert not core.has_pending(1.0) and not core.has_pending(at - 1e-3)
    assert core.has_pending()  # something waits (the shell arms its deadline)
    assert core.has_pending(at)
    assert [h.topic for h in heads(core.tick(at))] == ["t"]
    assert not core.has_pending() and core.serve_at == math.inf


def test_ticks_before_the_budget_refills_send_nothing_and_keep_the_deadline() -> None:
    core = make(100, 40, ["spend", "t"])
    core.handle_batch([GetHeads("spend", A)], 1.0)
    core.serving._heads_out.charge(139)  # owes 101: a token again after 1.02 s
    core.handle_batch([GetHeads("t", B)], 1.0)
    at = core.serve_at
    assert at > 2.0
    for i in range(5):
        assert heads(core.tick(1.0 + i * 0.2)) == []
        assert core.serve_at == at or abs(core.serve_at - at) < 1e-6


def test_token_bucket_says_when_it_holds_a_token_again() -> None:
    bucket = TokenBucket(10, 5)
    assert bucket.ready_at(0.0) == 0.0  # untouched: full
    assert bucket.allow(0.0, 5)
    assert bucket.ready_at(0.0) > 0.0
    assert abs(bucket.ready_at(0.0) - 0.1) < 1e-5
    assert abs(bucket.ready_at(0.0, 3) - 0.3) < 1e-5
    assert abs(bucket.ready_at(0.0, 99) - 0.5) < 1e-5  # at most the burst
    bucket.charge(10)  # owes 10
    at = bucket.ready_at(0.0)
    assert abs(at - 1.1) < 1e-5
    assert not bucket.allow(at - 0.01) and bucket.allow(at)


# -- properties ----------------------------------------------------------------------------

TOPICS = [f"t{i}" for i in range(6)]
REQUESTERS = [node(i + 1) for i in range(4)]

_ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("ask"),
            st.integers(0, len(REQUESTERS) - 1),
            st.lists(st.sampled_from(TOPICS), min_size=1, max_size=6, unique=True),
        ),
        st.tuples(st.just("wait"), st.floats(0.0, 0.1), st.just([])),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_every_accepted_topic_is_answered_exactly_once(ops: list) -> None:
    """Over random requests and clock steps: each (requester, topic) asked is answered once,
    or not again while it waits (asked again then: answered once for both)."""
    core = make(100, 4, TOPICS)
    now = 1.0
    outstanding: set[tuple[str, str]] = set()

    def seen(got: list[DirectHead]) -> None:
        for h in got:
            key = (h.recipient, h.topic)
            assert key in outstanding, key  # never twice, never unasked
            outstanding.discard(key)

    for kind, who, topics in ops:
        if kind == "wait":
            now += who
            seen(heads(core.tick(now)))
            continue
        seen(heads(core.tick(now)))  # what is due goes before the request is read
        limited = core.stats.fetches_limited
        requester = REQUESTERS[who]
        out = core.handle_batch([ConsumerHello(NODE, requester, tuple(topics))], now)
        if core.stats.fetches_limited == limited:  # accepted
            outstanding.update((requester, t) for t in topics)
        seen(heads(out))
        assert len(core.serving._deferred) <= len(TOPICS) * len(REQUESTERS)
    got, _ = drain(core, now, now + 5.0)
    seen(got)
    assert outstanding == set() and core.stats.heads_limited == 0


_queue_ops = st.lists(  # mostly adds (0-6), so that the bounds are reached; pops, drops
    st.tuples(st.integers(0, 9), st.integers(0, 5), st.integers(0, 9), st.booleans()),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(_queue_ops)
def test_the_queue_keeps_its_bounds_and_gives_each_entry_once(ops: list) -> None:
    q = DeferredHeads(max_size=8, max_per_requester=3, max_proxied=4, max_age=math.inf)
    model: set[tuple[str, str, bool]] = set()  # entries held: (requester, topic, proxied)
    for op, r, t, proxied in ops:
        kind = "add" if op < 7 else "pop" if op < 9 else "drop"
        requester, topic = node(r + 1), f"t{t}"
        if kind == "add":
            verdict = q.add(requester, topic, proxied, 0.0)
            if verdict is Deferral.ADDED:
                assert (requester, topic, proxied) not in model
                model.add((requester, topic, proxied))
            elif verdict is Deferral.DUPLICATE:
                assert (requester, topic, proxied) in model
        elif kind == "pop":
            before = q.proxied
            got = q.pop(0.0)
            assert (got is None) == (not model)
            if got is not None:
                lane = (*got, q.proxied < before)  # which lane it came from
                assert lane in model
                model.discard(lane)
        else:
            n = q.drop(lambda _, x, topic=topic: x == topic)
            gone = {k for k in model if k[1] == topic}
            assert n == len(gone)
            model -= gone
        assert len(q) == len(model) <= 8
        assert q.proxied == sum(k[2] for k in model) <= 4
        assert all(q.waiting(node(i + 1), False) <= 3 for i in range(6))
        assert all(q.waiting(node(i + 1), True) <= 1 for i in range(6))  # 3 // 8, at least 1
    while model:
        before = q.proxied
        got = q.pop(0.0)
        assert got is not None
        lane = (*got, q.proxied < before)
        assert lane in model
        model.discard(lane)
    assert q.pop(0.0) is None and len(q) == 0


def test_requesters_on_their_own_connection_go_before_those_asked_for_in_their_name() -> None:
    """A flood of made-up requester IDs from unknown connections gets one turn in 8."""
    q = DeferredHeads()
    for i in range(100):
        assert q.add(node(1000 + i), "t", True, 0.0) is Deferral.ADDED  # proxied, first
    for i in range(14):
        assert q.add(node(i + 1), "t", False, 0.0) is Deferral.ADDED
    order = [q.pop(0.0) for _ in range(16)]
    own = [x for x in order if x is not None and int(x[0], 16) < 1000]
    assert len(own) == 14  # all of them within 16 turns, behind 100 proxied


def test_a_request_in_a_nodes_name_does_not_swallow_the_nodes_own() -> None:
    """Anyone may ask in R's name from elsewhere (proxied, the slow lane, then expired at
    2 s): R's own request for the same topic waits in its own lane and is answered."""
    q = DeferredHeads(max_age=2.0)
    r = node(1)
    assert q.add(r, "t", True, 0.0) is Deferral.ADDED  # in R's name, from elsewhere
    for i in range(20):  # own-connection readers ahead of it, so the proxied one waits
        q.add(node(100 + i), "t", False, 0.0)
    assert q.add(r, "t", False, 1.0) is Deferral.ADDED  # R itself: not a duplicate
    assert q.add(r, "t", False, 1.5) is Deferral.DUPLICATE
    got = []
    while (turn := q.pop(2.5)) is not None:  # the proxied one (since 0.0) has expired
        got.append(turn)
    assert got.count((r, "t")) == 1 and q.take_expired() >= 1


def test_requests_in_a_nodes_name_do_not_fill_its_own_share() -> None:
    """The red team's attack: one HELLO of 1,024 made-up topics in C's name, from an unknown
    connection, filled C's share, and C's own GET-HEADS was refused (never answered). The
    two lanes have shares of their own, and the one in C's name is 8 times smaller."""
    core = make(10, 2, ["spend", "t"])
    core.handle_batch([GetHeads("spend", A)], 1.0)  # the budget spent
    made_up = tuple(f"x{j}" for j in range(1024))
    core.handle_batch([ConsumerHello(NODE, B, made_up)], 1.0, From(1, "", False))
    deferred = core.serving._deferred
    assert deferred.waiting(B, True) == MAX_DEFERRED_PER_REQUESTER // 8
    limited = core.stats.heads_limited
    assert limited == 1024 - MAX_DEFERRED_PER_REQUESTER // 8  # the rest counted at once
    core.handle_batch([GetHeads("t", B)], 1.01)  # B itself, on its own connection
    assert deferred.waiting(B, False) == 1 and core.stats.heads_limited == limited
    got, _ = drain(core, 1.01, 4.0)
    assert [h.topic for h in got if h.recipient == B and h.topic == "t"] == ["t"]


def test_asking_again_never_keeps_an_entry_waiting_past_its_first_ask() -> None:
    """The second red team's attack: requesters asking for a big topic again every 1.5 s kept
    their entries forever when a repeat restarted the age (a turn over ten of them cost 4 s
    of the budget, and honest asks expired first). The age runs from the first ask."""
    q = DeferredHeads(max_age=2.0)
    assert q.add(A, "t", False, 1.0) is Deferral.ADDED
    for at in (2.5, 2.9):
        assert q.add(A, "t", False, at) is Deferral.DUPLICATE
    assert q.pop(3.01) is None and q.take_expired() == 1
    assert q.add(A, "t", False, 3.02) is Deferral.ADDED  # asked after: a new entry
    assert q.pop(3.5) == (A, "t")


def test_a_request_past_the_bounds_is_counted_at_once_and_its_held_topics_kept() -> None:
    """Past a bound, the rest of a 1,024-topic HELLO is one verdict (the red team measured
    4-5 times the CPU of the code before when each topic was tried); a topic of it that
    waits already is still a repeat (its first ask's age kept)."""
    core = make(10, 2, ["spend"])
    core.handle_batch([GetHeads("spend", A)], 1.0)
    first = tuple(f"a{j}" for j in range(MAX_DEFERRED_PER_REQUESTER))
    core.handle_batch([ConsumerHello(NODE, B, first)], 1.0)
    deferred = core.serving._deferred
    assert deferred.waiting(B) == MAX_DEFERRED_PER_REQUESTER and core.stats.heads_limited == 0
    again = ("new-0", first[-1], *(f"new-{j}" for j in range(1, 100)))
    core.handle_batch([ConsumerHello(NODE, B, again)], 2.5)
    # the turn answered a couple of B's first (the budget refilled): as many new ones got in
    added = core.stats.heads_deferred - MAX_DEFERRED_PER_REQUESTER
    assert 0 <= added <= 3 and core.stats.heads_limited == 100 - added  # none of the held
    assert deferred.waiting(B) == MAX_DEFERRED_PER_REQUESTER
    assert deferred.holds(B, first[-1], False)  # still waiting, once
    assert deferred._entries[(B, first[-1], False)].since == 1.0  # from its first ask
