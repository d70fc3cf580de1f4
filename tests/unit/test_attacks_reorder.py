"""The consumer's reorder buffer is bounded in bytes, not only in offsets (issue 13 point 4).

A batch ahead of the delivery point waits in the reorder buffer until the gap before it
is filled. Bounded in offsets only (``max_buffered``, 100,000 a partition), anyone with a
fresh key could pin 64 self-signed 1 MiB batches that skip offset 0 (a partition of its
own, validly signed) for ever: 64 MiB, and up to 100,000 offsets x 16 MiB a partition.
Defence: ``max_buffered_bytes_per_partition`` and ``max_buffered_bytes`` (over all
partitions), checked before a batch is buffered; a batch over them is not kept and is
fetched again when delivery reaches it. Pure core: no sockets, no clock.
"""

from __future__ import annotations

import random
from collections import deque

import pytest

from dafka.config import ConsumerConfig
from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import Deliver, Effect, Publish
from dafka.errors import ConfigError
from dafka.security.identity import Identity
from tests.signing import CONSUMER, WIRE, blob, from_blob

MIB = 1024 * 1024


def consumer(**kw: object) -> ConsumerCore:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE, **kw)  # type: ignore[arg-type]
    core.subscribe("t", 0.0)
    return core


def held_values(core: ConsumerCore) -> dict[str, int]:
    """Bytes of the values each partition holds out of order (read from the buffers)."""
    return {
        p.partition: sum(len(v) for batch in p.buffer.values() for v in batch[2])
        for p in core._parts.values()
        if p.buffer
    }


def test_self_signed_batches_skipping_offset_0_pin_at_most_the_byte_bounds() -> None:
    core = consumer()  # defaults: 16 MiB a partition, 64 MiB over all
    payload = b"x" * MIB
    keys = [Identity.from_seed(bytes([200 + k]) * 32) for k in range(6)]
    for key in keys:  # fresh keys, each its own partition, never sending offset 0
        for offset in range(1, 21):
            data = blob(offset, 1, identity=key, values=[payload])
            core.handle(from_blob(data), 0.0)
    held = held_values(core)
    assert held, "nothing was buffered at all: the attack did not reach the buffer"
    assert max(held.values()) <= 16 * MIB
    assert sum(held.values()) <= 64 * MIB
    assert core.stats.beyond_buffer >= 6 * 20 - 64  # the rest was not kept
    assert core.buffered_bytes >= sum(held.values())  # the core counts at least the values
    assert core.buffered_bytes <= 64 * MIB


def collect(effects: list[Effect], out: list[tuple[int, bytes]], fetches: list[m.Fetch]) -> None:
    for e in effects:
        if isinstance(e, Deliver):
            out.extend((r.offset, r.value) for r in e.records())
        elif isinstance(e, Publish) and isinstance(e.msg, m.Fetch):
            fetches.append(e.msg)


def test_an_out_of_order_stream_larger_than_the_bounds_is_delivered_in_order() -> None:
    """Liveness: batches dropped for the bounds are fetched again and delivered in order."""
    per_part, total = 8 * 1024, 16 * 1024
    core = consumer(
        max_buffered_bytes=total, max_buffered_bytes_per_partition=per_part, fetch_window=200
    )
    rng = random.Random(46)
    batch, n_batches = 4, 150  # 600 records of 100 bytes: 60 KB, several times the bounds
    blobs = {
        first: blob(first, batch, values=[bytes([first % 251]) * 100 for _ in range(batch)])
        for first in range(0, batch * n_batches, batch)
    }
    expected = [(f + i, bytes([f % 251]) * 100) for f in blobs for i in range(batch)]
    live = [from_blob(b) for b in blobs.values()]
    rng.shuffle(live)  # the live stream arrives out of order, offset 0 among the last
    inbox: deque[m.Message] = deque(live)
    got: list[tuple[int, bytes]] = []
    now = 0.0
    for _ in range(20_000):  # bounded: every step handles one message or moves time on
        if len(got) == len(expected):
            break
        fetches: list[m.Fetch] = []
        if inbox:
            collect(core.handle(inbox.popleft(), now), got, fetches)
        else:
            now += 1.0  # nothing in flight: the stall retry (fetch_timeout) asks again
            collect(core.tick(now), got, fetches)
        assert core.buffered_bytes <= total
        assert all(v <= per_part for v in held_values(core).values())
        for f in fetches:  # a store answers with the whole batches covering the range
            answer = [
                from_blob(b, CONSUMER)
                for first, b in blobs.items()
                if first + batch > f.offset and first < f.offset + f.count
            ]
            if rng.random() < 0.5:
                answer.reverse()  # and sometimes out of order too
            inbox.extend(answer)
    assert got == expected
    assert now == 0.0, "a batch not kept waited for the stall retry instead of a FETCH"
    assert core.stats.beyond_buffer > 0  # the bounds were reached
    assert core.buffered_bytes == 0


def test_a_per_partition_bound_above_the_total_is_refused() -> None:
    with pytest.raises(ConfigError, match="max_buffered_bytes_per_partition"):
        consumer(max_buffered_bytes=1024, max_buffered_bytes_per_partition=2048)
    with pytest.raises(ConfigError, match="max_buffered_bytes_per_partition"):
        ConsumerConfig(max_buffered_bytes=1024, max_buffered_bytes_per_partition=2048).validate()


def test_a_partition_a_group_takes_away_gives_back_its_buffered_bytes() -> None:
    """Group mode forgets a revoked partition: what it held out of order must leave the
    byte count too, or the bound would shrink for good with every rebalance."""
    core = consumer()
    key = Identity.from_seed(bytes([77]) * 32)
    core.assign({("t", key.node_id): 0})
    for offset in range(1, 5):  # ahead of offset 0: buffered
        core.handle(from_blob(blob(offset, 1, identity=key, values=[b"v" * 1000])), 0.0)
    assert core.buffered_bytes > 4000
    core.assign({}, remove=[("t", key.node_id)])
    assert core.buffered_bytes == 0
