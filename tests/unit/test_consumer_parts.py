"""The consumer core's parts, each alone (rfc46 messages, fake time), and the contract the
core speaks to its shell: ``step`` queues, ``ready`` hands over, ``advance`` clears.

The behaviour of the whole is in ``test_consumer_core.py`` and the attack tests; here each
part's own state and its edits."""

from __future__ import annotations

import pytest

from dafka.consumer._buffer import ReorderBuffers
from dafka.consumer._core import ConsumerCore
from dafka.consumer._delivery import Delivery
from dafka.consumer._fetch import FetchPlanning
from dafka.consumer._heads import HeadTracking
from dafka.consumer._io import _ConsumerHandler
from dafka.consumer._partition import FETCH_BURST, MAX_UNCONFIRMED, PartitionState
from dafka.consumer._shared import ConsumerShared
from dafka.consumer._table import ConsumerSettings, PartitionTable
from dafka.core.effects import DataLoss, Deliver, Publish, RecordBatch
from dafka.core.messages import DirectHead, Fetch, GetHeads, Head, Record
from dafka.errors import ConfigError, DataLossError, TopicDeletedError
from dafka.io.ready_shell import run_ready

C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
P = "0123456789ABCDEF0123456789ABCDEF"
P2 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


def parts(
    reset: object = "earliest", **kw: object
) -> tuple[ConsumerSettings, PartitionTable, ReorderBuffers, FetchPlanning, Delivery, HeadTracking]:
    """The parts wired as the core wires them, topic ``t`` subscribed."""
    settings = ConsumerSettings(C, offset_reset=reset, **kw)  # type: ignore[arg-type]
    table = PartitionTable(settings)
    table.subscribe("t")
    buffers = ReorderBuffers(settings.max_held, settings.max_held_part)
    fetch = FetchPlanning(settings, table, buffers)
    delivery = Delivery(settings, table, buffers, fetch)
    heads = HeadTracking(settings, table, fetch, delivery)
    return settings, table, buffers, fetch, delivery, heads


def offsets(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


# ------------------------------------------------------------------ settings


def test_settings_are_checked_once() -> None:
    with pytest.raises(ConfigError):
        ConsumerSettings(C, fetch_window=0)
    with pytest.raises(ConfigError):
        ConsumerSettings(C, max_head_lead=10, fetch_window=100)
    with pytest.raises(ConfigError):
        ConsumerSettings(C, start_offsets={("t", P): -1})
    assert ConsumerSettings(C).starts_at_latest()
    assert not ConsumerSettings(C, offset_reset="earliest").starts_at_latest()


# ------------------------------------------------------------- partition table


@pytest.mark.parametrize(("reset", "start"), [("earliest", 0), ("latest", 7), (3, 3), (-2, 9)])
def test_a_new_partition_starts_where_the_reset_says(reset: object, start: int) -> None:
    _, table, *_ = parts(reset)
    p = table.create("t", P, 7, 0.0, end=10)
    assert p is not None and p.next == start
    assert table.positions() == {("t", P): start}
    if reset == -2:  # -N: nothing proven yet, N remembered until the end is found
        assert p.from_end == 2 and p.known_end == 10 and p.seen_end == 0


def test_start_offsets_override_the_reset_and_bad_partitions_are_refused() -> None:
    _, table, *_ = parts("latest", start_offsets={("t", P): 4})
    p = table.create("t", P, 9, 0.0)
    assert p is not None and p.next == 4
    assert table.create("t", "not-a-node-id", 0, 0.0) is None
    assert table.refused == 1
    assert table.refuses("t", "nope") and table.refused == 2
    assert not table.refuses("t", P2)


def test_partitions_from_hints_are_counted_confirmed_and_forgotten() -> None:
    _, table, *_ = parts()
    p = table.create("t", P, 5, 0.0, confirmed=False)
    assert p is not None and not p.confirmed and table.unconfirmed == 1
    table.confirm(p)
    assert p.confirmed and table.unconfirmed == 0
    q = table.create("t", P2, 5, 0.0, confirmed=False)
    assert q is not None and table.unconfirmed == 1
    assert table.forget(("t", P2)) is q and table.unconfirmed == 0
    assert table.forget(("t", P2)) is None


def test_hints_are_bounded_by_a_rate() -> None:
    _, table, *_ = parts()
    made = 0
    for i in range(MAX_UNCONFIRMED + 10):
        if table.create("t", f"{i:032X}", 0, 0.0, confirmed=False) is not None:
            made += 1
    assert 0 < made < MAX_UNCONFIRMED + 10  # the burst, then the rate
    assert table.unconfirmed == made


def test_the_acl_counts_what_it_refuses() -> None:
    _, table, *_ = parts()
    table.set_acl({"t": [P], "open": None})
    assert table.allowed("t", P) and table.allowed("open", P2)
    assert not table.allowed("t", P2) and table.unauthorized == 1
    assert table.never_read("t", P2) and not table.never_read("t", P)
    assert table.unauthorized == 1  # never_read counts nothing


# ------------------------------------------------------------ reorder buffers


def test_reorder_buffers_count_bytes_over_all_partitions() -> None:
    buffers = ReorderBuffers(max_held=100, max_held_part=60)
    p, q = PartitionState("t", P, 0, 0.0), PartitionState("t", P2, 0, 0.0)
    assert buffers.room(p, 60) and not buffers.room(p, 61)
    buffers.hold(p, 5, 6, (2, None, [b"a", b"b"], None, 50))
    assert buffers.held_bytes == 50 and p.held_bytes == 50 and p.buffer_ends == {6: 5}
    assert not buffers.room(p, 11)  # the partition's bound
    buffers.hold(q, 3, 3, (1, None, [b"c"], None, 45))
    assert not buffers.room(q, 6)  # the bound over all partitions
    held = buffers.unbuffer(p, 5)
    assert held is not None and held[0] == 2 and buffers.held_bytes == 45 and not p.buffer_ends
    assert buffers.unbuffer(p, 5) is None
    buffers.drop(q)
    assert buffers.held_bytes == 0 and not q.buffer and q.held_bytes == 0


def test_prune_forgets_what_starts_below_delivery() -> None:
    buffers = ReorderBuffers(max_held=1000, max_held_part=1000)
    p = PartitionState("t", P, 0, 0.0)
    buffers.hold(p, 2, 3, (2, None, [b"a", b"b"], None, 10))
    buffers.hold(p, 8, 8, (1, None, [b"c"], None, 10))
    p.next = 5
    buffers.prune(p)
    assert list(p.buffer) == [8] and buffers.held_bytes == 10


# ------------------------------------------------------------- fetch planning


def test_fetching_aims_at_the_known_end_bounded_by_the_lead() -> None:
    _, table, _, fetch, *_ = parts(fetch_window=10, max_head_lead=50)
    p = table.create("t", P, 0, 0.0)
    assert p is not None
    p.known_end = 1_000
    assert fetch.end(p) == 50 and fetch.known_end("t", P) == 50
    out = fetch.pump(p, 0.0)
    assert out is not None and out.msg == Fetch(P, C, "t", 0, 10)
    assert (p.req_start, p.req_end) == (0, 10) and fetch.fetches == 1
    assert fetch.pump(p, 0.1) is None  # the window in flight covers it
    assert fetch.fetch(p, 0, 0.2) is None  # not repeated within fetch_timeout
    assert fetch.fetch(p, 0, 1.5) is not None


def test_a_window_is_cut_back_or_restarted_only_by_the_planner() -> None:
    _, table, _, fetch, *_ = parts(fetch_window=10)
    p = table.create("t", P, 0, 0.0)
    assert p is not None
    p.known_end = 100
    assert fetch.pump(p, 0.0) is not None and (p.req_mid, p.req_end) == (5, 10)
    fetch.cut_back(p, 3)  # a batch at 3 not kept: asked again when delivery gets there
    assert (p.req_mid, p.req_end) == (3, 3)
    fetch.cut_back(p, 7)  # beyond the window: nothing to cut
    assert p.req_end == 3
    fetch.restart(p, 40)
    assert (p.req_start, p.req_mid, p.req_end) == (40, 40, 40) and not p.recent


def test_fetches_over_all_partitions_are_rate_bounded() -> None:
    _, table, _, fetch, *_ = parts(fetch_window=1)
    p = table.create("t", P, 0, 0.0)
    assert p is not None
    p.known_end = 100_000
    sent = sum(fetch.fetch(p, i, 0.0) is not None for i in range(int(FETCH_BURST) + 10))
    assert sent == FETCH_BURST and fetch.limited == 10


def test_minus_n_aims_at_the_claimed_end_then_n_before_the_proven_one() -> None:
    _, table, _, fetch, *_ = parts(-3)
    p = table.create("t", P, 20, 0.0, end=21)
    assert p is not None
    fetch.aim_from_end(p)  # a claim of 21, nothing proven: fetch the batch holding it
    assert p.next == 20 and not p.settled
    p.seen_end = 21
    fetch.aim_from_end(p)
    assert p.settled and p.next == 18


# ------------------------------------------------------------------ delivery


def test_delivery_holds_what_comes_early_and_delivers_in_order() -> None:
    _, table, buffers, _, delivery, _ = parts()
    assert offsets(delivery.on_records(Record("t", P, 0, b"v0"), 0.0)) == [0]
    out = delivery.on_records(Record("t", P, 2, b"v2"), 0.0)
    assert offsets(out) == [] and buffers.held_bytes > 0
    assert offsets(delivery.on_records(Record("t", P, 1, b"v1"), 0.0)) == [1, 2]
    assert buffers.held_bytes == 0 and delivery.delivered == 3
    delivery.on_records(Record("t", P, 1, b"v1"), 0.0)
    assert delivery.duplicates == 1 and table.positions() == {("t", P): 3}


def test_a_tail_skips_what_a_store_deleted_as_a_data_loss() -> None:
    _, table, _, _, delivery, _ = parts()
    delivery.on_records(Record("t", P, 5, b"v5"), 0.0)  # held: 0..4 missing
    out = delivery.on_tail("t", P, 5, 1.0, [])
    assert [e for e in out if isinstance(e, DataLoss)] == [DataLoss("t", P, 0, 5, "retention")]
    assert offsets(out) == [5] and delivery.data_lost == 5
    assert table.positions() == {("t", P): 6}


# --------------------------------------------------------------------- heads


def test_store_heads_hold_the_end_until_delivered() -> None:
    _, table, _, _, delivery, heads = parts()
    heads.note_store_head(DirectHead(C, "t", P, 1))
    assert not heads.caught_up()
    table.create("t", P, 0, 0.0)
    delivery.on_records(Record("t", P, 0, b"v0"), 0.0)
    delivery.on_records(Record("t", P, 1, b"v1"), 0.0)
    assert heads.caught_up()
    assert heads.watermarks() == {("t", P): (0, 2)}
    heads.forget(("t", P))
    assert heads.watermarks() == {("t", P): (0, 2)}  # what the records showed stays


def test_a_head_moves_the_known_end_and_asks_for_the_gap() -> None:
    _, table, _, _, _, heads = parts()
    out = heads.on_head("t", P, 4, 0.0, Head("t", P, 4))
    assert [e.msg for e in out if isinstance(e, Publish)] == [Fetch(P, C, "t", 0, 5)]
    p = table.parts[("t", P)]
    assert p.known_end == 5 and p.signed_end == 5


# ------------------------------------------------------- the core's contract


def test_the_core_queues_what_a_step_causes_for_one_ready() -> None:
    core = ConsumerCore(C, offset_reset="earliest")
    core.push(core.subscribe("t", 0.0))
    core.step(Record("t", P, 0, b"v0"), 0.0)
    core.step(Head("t", P, 3), 0.0)
    assert core.has_ready()
    rd = core.ready()
    assert [e.msg for e in rd.publish] == [GetHeads("t", C), Fetch(P, C, "t", 1, 3)]
    assert offsets(list(rd.deliver)) == [0] and not rd.persist
    core.step(Record("t", P, 1, b"v1"), 0.1)  # between ready and advance: kept
    core.advance(rd)
    assert core.has_ready() and offsets(list(core.ready().deliver)) == [1]
    core.advance(core.ready())
    assert not core.has_ready() and not core.ready()


def test_the_handler_runs_the_cores_ready_publish_then_deliver() -> None:
    shared = ConsumerShared(["t"])
    core = ConsumerCore(C, offset_reset="earliest")
    core.subscribe("t", 0.0)
    handler = _ConsumerHandler(shared, core)
    out = handler.on_messages([Record("t", P, 1, b"v1"), Record("t", P, 0, b"v0")], 0.0)
    assert [e.msg for e in out] == [Fetch(P, C, "t", 0, 1)]
    assert shared.count == 2 and [r.offset for r in shared.ready] == [0]  # one joined run
    assert run_ready(core, None, send=lambda _: None) == 0  # nothing left


# --------------------------------------------------------------- shared state


def run(partition: str, offset: int, n: int) -> RecordBatch:
    return RecordBatch("t", partition, offset, [b"v%d" % i for i in range(n)])


def test_shared_state_takes_drops_and_reports_positions() -> None:
    shared = ConsumerShared(max_backlog=5)
    shared.deliver([run(P, 0, 3), run(P2, 10, 3)])
    assert shared.count == 6 and not shared.accepting() and shared.unpolled()
    with shared.cond:
        (first,) = shared.take(2)
        assert (first.offset, len(first.values)) == (0, 2)
        assert shared.polled_positions({("t", P): 3, ("t", P2): 13}) == {
            ("t", P): 2,
            ("t", P2): 10,
        }
    assert shared.drop("t", P) == 1 and shared.count == 3
    assert shared.topic_deleted("t", 7) == 3 and shared.count == 0
    assert isinstance(shared.errors.popleft(), TopicDeletedError)
    shared.data_loss(DataLoss("t", P, 0, 5, "retention"))
    assert isinstance(shared.errors[0], DataLossError) and shared.unpolled()


def test_shared_state_keeps_only_partitions_read() -> None:
    shared = ConsumerShared()
    shared.held = {("t", P)}
    assert [r.partition for r in shared.keep([run(P, 0, 1), run(P2, 0, 1)])] == [P]
    shared.held = None
    shared.paused = {("t", P): None}
    assert shared.keep([run(P, 4, 1), run(P2, 0, 1)])[0].partition == P2
    assert shared.paused == {("t", P): 4}
    shared.reseek_paused("t", None)
    assert shared.paused == {("t", P): None}
