"""EarlierRuns (dafka.producer._runs) alone: a restart's recovery of an earlier run's
reserved range, the gap statements it makes (stamped with the time it is given, never
its own clock), and their repetition before HEADs."""

from __future__ import annotations

from dafka.core import messages as m
from dafka.core.effects import Publish
from dafka.producer._recovery import Recovery
from dafka.producer._runs import MAX_GAPS_REPEATED, EarlierRuns
from dafka.producer._serve import HeldTopic
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from tests.signing import FORGER, PRODUCER, P, blob, direct

STAMP = 1_234_567


def _runs(run: int | None = 3) -> EarlierRuns:
    profile = SignedProfile(PRODUCER, clock_ms=lambda: 99)  # its clock is never read here
    return EarlierRuns(P, profile, run=run, recovery_wait=1.0, head_interval=2.0, max_fetch=100)


def _records(out: list[Publish]) -> list[m.Record]:
    return [e.msg for e in out if isinstance(e.msg, m.Record)]


def test_a_range_nobody_holds_is_closed_by_a_gap_stamped_with_the_time_given() -> None:
    runs = _runs()
    rec = Recovery("t", 0, 5, paced=True)
    runs.add(rec)
    assert runs.holds_publishing is False  # signed, not a probe: new records may go on
    assert not runs.over(rec, 0.0)
    fetch = runs.fetch(rec, 0.0)
    assert fetch is not None and isinstance(fetch.msg, m.Fetch)
    assert (fetch.msg.offset, fetch.msg.count, fetch.msg.requester) == (0, 5, P)
    assert runs.over(rec, 1.0)  # out of time
    state = HeldTopic("t", 5, batched=True)
    out, size = runs.finish(rec, state, 1.0, STAMP)
    (gap,) = _records(out)
    header = signed.peek_batch(gap.content)
    assert header.is_gap and (header.first_offset, header.count) == (0, 5)
    assert header.timestamp_ms == STAMP and header.run == 3
    assert size == len(gap.content) == state.nbytes and state.base == 0
    assert runs.gap_offsets == 5 and runs.recovered == 0 and not runs.recoveries


def test_what_comes_back_signed_by_us_is_held_and_the_rest_closed() -> None:
    runs = _runs()
    rec = Recovery("t", 0, 6, paced=True)
    runs.add(rec)
    runs.over(rec, 0.0)
    out, complete = runs.on_recovered(direct(0, 2, to=P), 0.1)
    assert not complete and runs.recoveries
    forged, _ = runs.on_recovered(direct(2, 2, to=P, identity=FORGER), 0.1)
    assert forged == []  # another key's batch: never adopted (the gap below covers it)
    state = HeldTopic("t", 6, batched=True)
    out, _ = runs.finish(rec, state, 1.0, STAMP)
    (gap,) = _records(out)  # the batch a store holds is not published again
    assert (gap.offset, gap.count) == (2, 4)
    assert state.ends == [2, 6] and runs.recovered == 2 and runs.gap_offsets == 4


def test_a_complete_answer_ends_the_recovery_and_acked_offsets_are_never_a_gap() -> None:
    runs = _runs()
    rec = Recovery("t", 0, 4, paced=True)
    runs.add(rec)
    runs.over(rec, 0.0)
    _, complete = runs.on_recovered(direct(0, 4, to=P), 0.1)
    assert complete
    runs2 = _runs()
    rec2 = Recovery("t", 0, 4, paced=True)
    runs2.add(rec2)
    state = HeldTopic("t", 4, batched=True)
    state.acked = 2  # acknowledged meanwhile
    out, _ = runs2.finish(rec2, state, 1.0, STAMP)
    assert [(r.offset, r.count) for r in _records(out)] == [(3, 1)]


def test_gap_statements_are_repeated_before_heads_from_one_interval_on_until_forgotten() -> None:
    runs = _runs()
    rec = Recovery("t", 0, 3, paced=True)
    runs.add(rec)
    runs.over(rec, 0.0)
    runs.finish(rec, HeldTopic("t", 3, batched=True), 1.0, STAMP)
    assert runs.repeated("t", 2.9) == []  # published once already
    again = _records(runs.repeated("t", 3.0))
    assert [(r.offset, r.count) for r in again] == [(0, 3)]
    assert runs.repeated("u", 9.0) == []
    runs.forget("t")
    assert runs.repeated("t", 9.0) == [] and not runs.gaps


def test_the_producers_own_log_is_offered_first_and_published_again() -> None:
    runs = _runs()
    rec = Recovery("t", 0, 2, paced=True)
    runs.add(rec)
    runs.offer_logged([("t", 0, 2, blob(0, 2)), ("u", 0, 1, blob(0, 1, topic="u"))])
    assert rec.complete()
    out, _ = runs.finish(rec, HeldTopic("t", 2, batched=True), 0.0, STAMP)
    assert [(r.offset, r.count) for r in _records(out)] == [(0, 2)]  # from our log: again
    assert runs.recovered == 2 and runs.gap_offsets == 0


def test_gap_statements_kept_for_repeating_are_bounded() -> None:
    runs = _runs()
    rec = Recovery("t", 0, 10 * signed.MAX_GAP_OFFSETS * MAX_GAPS_REPEATED, paced=True)
    runs.add(rec)
    runs.over(rec, 0.0)
    state = HeldTopic("t", rec.reserved, batched=True)
    out, _ = runs.finish(rec, state, 1.0, STAMP)
    assert len(_records(out)) > MAX_GAPS_REPEATED == len(runs.gaps["t"])
