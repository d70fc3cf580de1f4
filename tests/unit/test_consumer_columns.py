"""A signed consumer delivers batches as columns over the verified blobs: the same records
as each batch's own ``records`` (the per-record path), through the core's reorder
buffer, a batch cut where delivery already is, the IO thread's joining of runs and
``poll_batches``' cutting of runs to ``max_records``."""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.consumer._core import ConsumerCore
from dafka.consumer._facade import Consumer
from dafka.consumer._io import SHORT_RUN, _coalesce
from dafka.consumer._shared import ConsumerShared
from dafka.core.effects import Deliver, RecordBatch
from dafka.core.ready import Ready
from dafka.wire import signed
from dafka.wire.columns import Column
from tests.signing import CONSUMER, WIRE, P, blob, decoded


def _consumer() -> ConsumerCore:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    return core


def _batch(first: int, count: int, keyed: int) -> bytes:
    """Offsets ``first..first+count-1``; ``keyed``: 0 no keys, 1 every key, 2 some."""
    keys = {
        0: None,
        1: [b"k%d" % (first + i) for i in range(count)],
        2: [b"k%d" % (first + i) if i % 3 else None for i in range(count)],
    }[keyed]
    return blob(first, count, keys=keys, timestamp_ms=1_000 * (first + 1))


def _expected(blobs: list[bytes], start: int) -> list[tuple[int, bytes | None, bytes, float]]:
    """Every record of the batches from offset ``start``, read one record at a time
    (``Batch.records``: the per-record path, no columns)."""
    out = []
    for data in blobs:
        batch = signed.verify_batch(data)
        for i, (key, value) in enumerate(batch.records):
            if batch.first_offset + i >= start:
                out.append((batch.first_offset + i, key, value, batch.timestamp_ms / 1000))
    return sorted(out)


sizes_st = st.lists(st.tuples(st.integers(1, 40), st.integers(0, 2)), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(sizes_st, st.randoms(use_true_random=False), st.integers(0, 30))
def test_a_consumer_delivers_the_records_of_its_batches_as_columns(sizes, rng, start) -> None:  # type: ignore[no-untyped-def]
    """Batches in any order (held in the reorder buffer until their turn), from an offset
    that may fall inside a batch (which is then cut): what is delivered, read back as
    records, is every record of the batches from there, as the batch itself reads them;
    and the runs' values and keys are columns, not lists."""
    blobs, first = [], 0
    for count, keyed in sizes:
        blobs.append(_batch(first, count, keyed))
        first += count
    start = min(start, first - 1)
    core = _consumer()
    core.seek("t", P, start, 0.0)
    order = list(blobs)
    rng.shuffle(order)
    runs = []
    for data in order:
        msg = decoded(signed.encode(signed.Record.of(data)))
        runs.extend(e for e in core.handle(msg, 1.0) if isinstance(e, Deliver))
    assert core.stats.rejected == 0
    got = [(r.offset, r.key, r.value, r.timestamp) for run in runs for r in run.records()]
    assert got == _expected(blobs, start)
    for run in runs:
        assert isinstance(run.values, Column)
        assert run.keys is None or (isinstance(run.keys, Column) and len(run.keys) == run.count)
        assert run.value_bytes == sum(map(len, run.values))


def _run(first: int, count: int, keyed: int = 0) -> RecordBatch:
    batch = signed.verify_batch(_batch(first, count, keyed))
    keys, values = batch.columns()
    return RecordBatch("t", P, first, values, keys, 1.0)


def test_the_io_thread_does_not_copy_batches_of_columns_into_one_list() -> None:
    """Joining continuing runs copies their values into one list: worth it for rfc46's one
    record a run, not for a signed batch's columns (a bytes object per record)."""
    long = [_run(0, SHORT_RUN + 1), _run(SHORT_RUN + 1, SHORT_RUN + 1)]
    assert _coalesce(long) == long
    assert all(isinstance(run.values, Column) for run in _coalesce(long))
    short = [_run(0, 2), _run(2, 3)]
    joined = _coalesce(short)
    assert len(joined) == 1 and joined[0].values == [b"value %d" % i for i in range(5)]


def _taker(runs: list[RecordBatch]) -> Consumer:
    """A Consumer with ``runs`` ready, and no node behind it: enough for ``take``."""
    c = Consumer.__new__(Consumer)
    c._shared = ConsumerShared()
    c._shared.ready = deque(runs)
    c._shared.count = sum(len(r.values) for r in runs)
    return c


def test_poll_batches_cuts_runs_of_columns_to_max_records() -> None:
    """``poll_batches(max_records)`` hands out part of a run when it must: a slice of its
    columns, with the same records as the run read whole."""
    runs = [_run(0, 10, keyed=2), _run(10, 5)]
    want = [r for run in runs for r in run.records()]
    c = _taker(runs)
    got: list[RecordBatch] = []
    with c._shared.cond:
        for n in (3, 4, 5, 1, 100):
            got.extend(c._shared.take(n))
    assert [(r.offset, len(r.values)) for r in got] == [
        (0, 3),
        (3, 4),
        (7, 3),
        (10, 2),
        (12, 1),
        (13, 2),
    ]
    assert [r for run in got for r in run.records()] == want
    for run in got:
        assert isinstance(run.values, Column)
        assert run.keys is None or len(run.keys) == len(run.values)


class _StubCore:
    """Delivers ``runs`` for every message, through the Ready contract."""

    node_id = "C" * 32

    def __init__(self, runs: list[RecordBatch]) -> None:
        self.runs = runs
        self.pending: list[RecordBatch] = []

    def step(self, msg: object, now: float, source: str = "") -> None:
        self.pending.extend(self.runs)

    def has_ready(self) -> bool:
        return bool(self.pending)

    def ready(self) -> Ready:
        return Ready(deliver=tuple(self.pending))

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        self.pending.clear()


def test_a_reader_of_records_gets_runs_made_into_lists_on_the_io_thread() -> None:
    """poll / poll_batch make every value anyway: the IO thread makes them right after
    verification (cache-hot, a tenth less CPU); poll_batches gets the columns."""
    from types import SimpleNamespace

    from dafka.consumer._io import _ConsumerHandler
    from dafka.core import messages as m

    runs = [_run(0, 10, keyed=2), _run(10, 5)]
    delivered: list[RecordBatch] = []
    shared = SimpleNamespace(deliver=delivered.extend)
    handler = _ConsumerHandler(shared, _StubCore(runs))  # type: ignore[arg-type]
    handler.on_messages([m.Head("t", P, 1)], 0.0)
    assert all(isinstance(r.values, Column) for r in delivered)
    columns = list(delivered)
    delivered.clear()
    handler.lists = True
    handler.on_messages([m.Head("t", P, 1)], 0.0)
    assert delivered == columns  # the same runs, the same records
    for run in delivered:
        assert type(run.values) is list and (run.keys is None or type(run.keys) is list)
    assert [r.records() for r in delivered] == [r.records() for r in columns]

    c = _taker([])
    c._handler = handler
    c._poll = lambda max_records, timeout: []  # type: ignore[method-assign]
    c.poll_batches(10, 0)
    assert handler.lists is False
    c.poll_batch(10, 0)
    assert handler.lists is True
    c.poll_batches(10, 0)
    c.poll(0)
    assert handler.lists is True


def test_a_run_cut_from_a_big_batch_does_not_keep_the_batch_alive_while_it_waits() -> None:
    """A consumer that delivered all but the last record of a batch, sent a 1 MiB batch
    again (a store's answer starts at the batch holding the offset; a hostile producer can
    resend ever longer batches), delivers one record: the run waiting to be polled must
    hold about that record's bytes, not the whole batch (runs are counted in records)."""
    from types import SimpleNamespace

    from dafka.consumer._io import _ConsumerHandler
    from dafka.core import messages as m

    big = [b"v" * 4096] * 255 + [b"last"]
    data = blob(0, 256, keys=[b"k%d" % i for i in range(256)], values=big)
    batch = signed.verify_batch(data)
    keys, values = batch.columns()
    cut = RecordBatch("t", P, 255, values[255:], keys[255:] if keys else None, 1.0)
    whole = RecordBatch("t", P, 0, values, keys, 1.0)
    delivered: list[RecordBatch] = []
    handler = _ConsumerHandler(
        SimpleNamespace(deliver=delivered.extend),  # type: ignore[arg-type]
        _StubCore([cut, whole]),  # type: ignore[arg-type]
    )
    handler.on_messages([m.Head("t", P, 1)], 0.0)
    small, full = delivered
    assert small.values == [b"last"] and small.keys == [b"k255"]
    assert isinstance(small.values, Column) and small.values.held_bytes < 1024
    assert isinstance(small.keys, Column) and small.keys.held_bytes < 1024
    assert small.records() == cut.records()
    assert full.values is values  # a run that uses its batch is not copied
