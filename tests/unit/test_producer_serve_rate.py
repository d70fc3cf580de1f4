"""A producer's FETCH answers past its requester's bytes a second wait for them and are then
served, not dropped (:mod:`dafka.producer._serve`): dropped, a consumer catching up past
the burst from a producer no store had acknowledged asked again only after its 1 s timeout,
a second of stall about every 64 MiB (``docs/consumer.md``)."""

from __future__ import annotations

import pytest

from dafka.core import messages as m
from dafka.producer._core import ProducerCore
from dafka.producer._io import _ProducerHandler
from dafka.producer._serve import MAX_WAITING_FETCHES
from dafka.wire.profiles import SignedProfile
from tests.signing import CONSUMER, PRODUCER, STORE, P, ack, sent

RATE = 1024 * 1024  # a burst of 2 MiB a requester, 1 MiB a second
OTHER = "D0D0D0D0D0D0D0D0D0D0D0D0D0D0D0D0"


def _producer(batches: int = 8) -> ProducerCore:
    """``batches`` held batches of 10 values of 60,000 bytes (600 kB each), no store yet."""
    wire = SignedProfile(PRODUCER, max_batch_records=10, max_batch_bytes=1024 * 1024)
    core = ProducerCore(P, profile=wire, trusted_stores=[STORE.node_id], serve_rate=RATE)
    for _ in range(batches):
        core.publish("t", [b"x" * 60_000] * 10, 1.0, None, 1)  # HEADs due at 2.0
    assert core.unacked_count("t") == 10 * batches
    return core


def _served(out: list[object]) -> list[int]:
    return [x.offset for x in sent(out) if isinstance(x, m.DirectRecord)]


def test_a_fetch_past_its_requesters_bytes_waits_for_them_and_is_then_answered() -> None:
    core = _producer()
    assert _served(core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0)) == [0, 10, 20, 30]
    assert core.serve_at is None  # nothing waits
    # 2.4 MB sent against a 2 MiB burst: the next FETCH waits for a token to be paid back
    assert _served(core.handle(m.Fetch(P, CONSUMER, "t", 40, 40), 1.001)) == []
    assert core.stats.fetches_paced == 1 and core.stats.fetches_limited == 0
    due = core.serve_at
    assert due is not None and 1.001 < due < 1.5
    assert _served(core.tick(due - 0.001)) == []
    assert _served(core.tick(due)) == [40, 50, 60, 70]  # without being asked again
    assert core.serve_at is None and core.stats.fetches_served == 2


def test_a_waiting_fetch_asked_again_is_answered_once() -> None:
    """A requester whose timeout passed asks again: the FETCH is not queued twice, nor
    answered at once past the rate because its requester's bytes came back meanwhile."""
    core = _producer()
    core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0)
    core.handle(m.Fetch(P, CONSUMER, "t", 40, 40), 1.001)
    due = core.serve_at
    assert due is not None
    again = m.Fetch(P, CONSUMER, "t", 40, 40)
    assert _served(core.handle(again, due + 0.5)) == []  # it is still waiting
    assert core.stats.fetches_paced == 1
    assert _served(core.tick(due + 0.5)) == [40, 50, 60, 70]
    assert _served(core.tick(due + 5.0)) == []


def test_what_was_acknowledged_while_a_fetch_waited_is_not_sent() -> None:
    core = _producer()
    core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0)
    core.handle(m.Fetch(P, CONSUMER, "t", 40, 40), 1.001)
    core.handle(ack(59), 1.01)  # a store now holds 0..59: freed
    due = core.serve_at
    assert due is not None
    assert _served(core.tick(due)) == [60, 70]


def test_other_requesters_are_answered_while_one_waits() -> None:
    core = _producer()
    core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0)
    core.handle(m.Fetch(P, CONSUMER, "t", 40, 40), 1.001)
    assert _served(core.handle(m.Fetch(P, OTHER, "t", 0, 20), 1.002)) == [0, 10]
    assert core.stats.fetches_paced == 1


def test_fetches_wait_at_most_the_bound_and_the_rest_are_dropped_and_counted() -> None:
    core = _producer()
    # four requesters of 2.4 MB: the shared bucket (8 MiB) is spent
    for i in range(4):
        assert len(_served(core.handle(m.Fetch(P, f"{i:032X}", "t", 0, 40), 1.0))) == 4
    for i in range(MAX_WAITING_FETCHES + 10):
        assert _served(core.handle(m.Fetch(P, CONSUMER, "t", i % 80, 1 + i // 80), 1.0)) == []
    assert core.stats.fetches_paced == MAX_WAITING_FETCHES
    assert core.stats.fetches_limited == 10


@pytest.mark.parametrize("linger", [None, 5.0])
def test_the_io_loop_wakes_when_a_waiting_fetch_is_due(linger: float | None) -> None:
    """The shell's side: the loop's deadline is the earliest of the linger and the waiting
    FETCHes, and it turns (ticking the core) once they are due."""
    core = _producer()
    handler = _ProducerHandler.__new__(_ProducerHandler)
    handler.core = core
    handler.cut_short = False
    handler._unjournaled = {}
    now = [1.0]
    handler._clock = lambda: now[0]

    class _Linger:
        def deadline(self) -> float | None:
            return linger

    handler.linger = _Linger()  # type: ignore[assignment]
    assert handler.command_deadline() == linger and not handler.has_pending()
    core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0)
    core.handle(m.Fetch(P, CONSUMER, "t", 40, 40), 1.001)
    due = core.serve_at
    assert due is not None and handler.command_deadline() == due
    now[0] = due - 0.001
    assert not handler.has_pending()
    now[0] = due
    assert handler.has_pending()
    assert _served(handler.on_tick(due)) == [40, 50, 60, 70]
    assert not handler.has_pending() and handler.command_deadline() == linger


def test_rfc46_answers_are_charged_in_bytes_as_signed_ones_are() -> None:
    """An rfc46 FETCH is answered with every held record in its range, up to
    ``max_fetch_count`` of any size: their bytes count against the requester's rate too,
    so a requester cannot have more resent a second by asking an rfc46 producer."""
    core = ProducerCore(P, trusted_stores=[STORE.node_id], serve_rate=RATE)  # rfc46
    core.publish("t", [b"x" * 60_000] * 80, 1.0)
    assert _served(core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0)) == list(range(40))
    # 2.4 MB sent against a 2 MiB burst: the next FETCH waits for its bytes
    assert _served(core.handle(m.Fetch(P, CONSUMER, "t", 40, 40), 1.001)) == []
    assert core.stats.fetches_paced == 1
    due = core.serve_at
    assert due is not None and 1.001 < due < 1.5
    assert _served(core.tick(due)) == list(range(40, 80))


def test_a_waiting_fetch_asked_again_spends_no_fetch_token() -> None:
    """A FETCH already waiting for its bytes, asked again as its requester's timeout
    passes, is neither queued twice nor charged against the requester's FETCH rate."""
    wire = SignedProfile(PRODUCER, max_batch_records=10, max_batch_bytes=1024 * 1024)
    core = ProducerCore(
        P, profile=wire, trusted_stores=[STORE.node_id], serve_rate=RATE, fetch_burst=3
    )
    for _ in range(8):
        core.publish("t", [b"x" * 60_000] * 10, 1.0, None, 1)
    assert _served(core.handle(m.Fetch(P, CONSUMER, "t", 0, 40), 1.0)) == [0, 10, 20, 30]
    for _ in range(5):  # one token for the first, none for the four repeats
        assert _served(core.handle(m.Fetch(P, CONSUMER, "t", 40, 40), 1.0)) == []
    assert core.stats.fetches_paced == 1 and core.stats.fetches_limited == 0
    # the burst of 3 holds one token still: a new FETCH is taken (and waits)
    assert _served(core.handle(m.Fetch(P, CONSUMER, "t", 0, 10), 1.0)) == []
    assert core.stats.fetches_paced == 2 and core.stats.fetches_limited == 0
