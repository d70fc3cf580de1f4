"""Kafka's client calls against real processes (issue 34 point 10): ``offsets_for_times``,
``list_topics`` and ``dafka.AdminClient``, ``pause``/``resume``, ``assign``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dafka import AdminClient, Consumer, Producer
from dafka.query import QueryClient, records
from tests.procs import StoreProc, Tower, wait_until

pytestmark = pytest.mark.integration

BATCHES = 6
PER_BATCH = 5


def produce_batches(towers: str, topic: str) -> str:
    """BATCHES signed batches of PER_BATCH records each, stamped at distinct milliseconds."""
    with Producer(topic, towers=towers, linger_ms=0) as p:
        for b in range(BATCHES):
            p.send_many([f"{b}-{i}".encode() for i in range(PER_BATCH)])
            p.flush(30)
            time.sleep(0.003)  # the next batch is stamped at a later millisecond
        return p.partition


def stamps(store: StoreProc, topic: str, partition: str) -> list[tuple[int, int]]:
    """``(offset, timestamp_ms)`` of every stored record, read from the store itself."""

    def read() -> list[tuple[int, int]] | None:
        with QueryClient(store.query_endpoint) as c:
            out = [
                (r.offset, r.timestamp_ms or 0)
                for reply in c.read_range(topic, partition, 0, BATCHES * PER_BATCH)
                for r in records(reply)
            ]
        return out if len(out) == BATCHES * PER_BATCH else None

    got = wait_until(read, 20, what="the store holding every record")
    assert isinstance(got, list)
    return got


def expected(stored: list[tuple[int, int]], ts: int) -> int | None:
    return next((o for o, t in stored if t >= ts), None)


def test_offsets_for_times_and_list_topics(tower: Tower, start_store) -> None:
    store = start_store()
    part = produce_batches(tower.address, "times")
    stored = stamps(store, "times", part)
    times = sorted({t for _, t in stored})
    assert len(times) >= 3, times  # several batches, several stamps
    asks = [0, *times, *(t + 1 for t in times), times[-1] + 10_000]
    with Consumer("times", towers=tower.address, metadata=False) as c:
        for ts in asks:
            assert c.offsets_for_times({("times", part): ts}) == {
                ("times", part): expected(stored, ts)
            }, ts
        listed = c.list_topics()
    assert listed["times"].partitions[part].low == 0
    assert listed["times"].partitions[part].high == BATCHES * PER_BATCH  # exclusive
    assert listed["times"].partitions[part].stores == (store.node_id,)
    with AdminClient(tower.address) as admin:
        assert admin.offsets_for_times({("times", part): times[1]}) == {
            ("times", part): expected(stored, times[1])
        }
        topics = admin.list_topics(["times"])
    assert list(topics) == ["times"]
    assert topics["times"].partitions[part].high == BATCHES * PER_BATCH


def test_pause_resume_and_assign(tower: Tower, start_store) -> None:
    start_store()
    a = produce_batches(tower.address, "ctl")
    b = produce_batches(tower.address, "ctl")
    total = BATCHES * PER_BATCH
    with Consumer("ctl", towers=tower.address, offset_reset="earliest", metadata=False) as c:
        c.pause([("ctl", a)])
        assert c.paused() == [("ctl", a)]
        got: dict[str, list[int]] = {a: [], b: []}

        def read_b() -> bool:
            for r in c.poll_batch(1000, timeout=0.2):
                got[r.partition].append(r.offset)
            return len(got[b]) >= total

        wait_until(read_b, 30, what="every record of the partition not paused")
        assert got[a] == [], "a paused partition's records were returned"
        c.resume([("ctl", a)])
        assert c.paused() == []

        def read_a() -> bool:
            for r in c.poll_batch(1000, timeout=0.2):
                got[r.partition].append(r.offset)
            return len(got[a]) >= total

        wait_until(read_a, 30, what="the resumed partition's records")
        assert got[a] == list(range(total))  # from where it was paused: none lost, none twice
        assert got[b] == list(range(total))

    with Consumer(towers=tower.address, metadata=False) as c:
        c.assign([("ctl", b, 7)])
        assert c.assignment() == [("ctl", b)]
        seen: list[tuple[str, int]] = []

        def read() -> bool:
            seen.extend((r.partition, r.offset) for r in c.poll_batch(1000, timeout=0.2))
            return len(seen) >= total - 7

        wait_until(read, 30, what="the assigned partition from offset 7")
        assert seen == [(b, o) for o in range(7, total)]
        assert not c.poll_batch(1000, timeout=0.5)  # nothing of the partition not assigned


def test_a_consumer_the_read_acl_does_not_name_learns_no_offset(tmp_path: Path) -> None:
    """Attack: a topic with a read ACL, a store without CURVE (so it serves the topic to
    nobody): ``offsets_for_times`` raises the store's ``forbidden``, never an offset."""
    from dafka.metadata import MetadataClient
    from dafka.query import QueryError

    tower = Tower()
    try:
        store = StoreProc(tmp_path / "store", tower.address)
        try:
            part = produce_batches(tower.address, "sealed")
            stamps(store, "sealed", part)
            with MetadataClient(tower.address) as admin:
                admin.alter_topic("sealed", {"consumers": ["0" * 32]})
            with Consumer("other", towers=tower.address) as c:

                def refused() -> QueryError | None:
                    try:
                        c.offsets_for_times({("sealed", part): 0}, timeout=5)
                    except QueryError as exc:
                        return exc
                    return None

                exc = wait_until(refused, 20, what="the store refusing the ACL topic")
                assert "forbidden" in str(getattr(exc, "code", "")) or "ACL" in str(exc)
                with pytest.raises(QueryError):
                    c.list_topics(["sealed"], timeout=5)
                # every topic: the metadata names it, but no store shows its partitions
                assert c.list_topics(timeout=5)["sealed"].partitions == {}
        finally:
            store.kill()
    finally:
        tower.stop()


def test_async_consumer_seeks_pauses_and_commits(tower: Tower, start_store) -> None:
    import asyncio

    from dafka import AsyncConsumer

    start_store()
    part = produce_batches(tower.address, "aio")
    total = BATCHES * PER_BATCH
    key = ("aio", part)

    async def take(c: AsyncConsumer, n: int) -> list[int]:
        got: list[int] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            got.extend(r.offset for r in await c.poll_batch(1000, timeout=0.2))
        return got

    async def main() -> None:
        kw = dict(towers=tower.address, offset_reset="earliest", metadata=False)
        async with AsyncConsumer("aio", group="ag", enable_auto_commit=False, **kw) as c:
            assert await take(c, total) == list(range(total))
            assert await c.positions() == {key: total}
            await c.seek("aio", part, 4)
            assert await take(c, total - 4) == list(range(4, total))
            await c.seek("aio", part, 10)
            assert await c.commit() == {key: 10}
            assert await c.committed() == {key: 10}
            await c.pause([key])
            assert not await c.poll_batch(1000, timeout=0.5)
            await c.resume([key])
            assert await take(c, total - 10) == list(range(10, total))
            when = await c.offsets_for_times({key: 0})
            assert when == {key: 0}

    asyncio.run(main())


def test_over_curve_only_the_key_the_read_acl_names_learns_offsets(tmp_path: Path) -> None:
    """Attack: over CURVE, a consumer under a key the topic's read ACL does not name asks
    for a time's offset: ``forbidden``. The named reader's consumer, asking under its own
    key (the consumer's identity, not a fresh one), gets the offset."""
    from dafka.api.common import node_config
    from dafka.metadata import MetadataClient
    from dafka.query import QueryError
    from dafka.security import identity
    from tests.integration.test_attacks_curve import CurveTower, Store, keys
    from tests.integration.test_attacks_curve import produce as produce_curve

    ctower = CurveTower()
    try:
        k = keys(tmp_path, "store", "reader")
        reader = identity.load(k["reader"][0])
        store = Store(k["store"][0], ctower.address, "--curve")
        try:
            produce_curve(ctower.address, "sealed")
            with MetadataClient(ctower.address) as admin:
                admin.alter_topic("sealed", {"consumers": [reader.node_id]})

            def consumer(me: identity.Identity) -> Consumer:
                return Consumer("sealed", node=node_config(ctower.address, curve=True), identity=me)

            with consumer(identity.Identity.generate()) as stranger:

                def refused() -> QueryError | None:
                    try:
                        stranger.list_topics(["sealed"], timeout=5)
                    except QueryError as exc:
                        return exc
                    return None  # served: the store has not applied the ACL yet

                wait_until(refused, 20, what="the store refusing a key the ACL does not name")
                with pytest.raises(QueryError):
                    stranger.offsets_for_times({("sealed", "0" * 32): 0}, timeout=5)
            with consumer(reader) as mine:
                (part,) = mine.list_topics(["sealed"], timeout=10)["sealed"].partitions
                assert mine.offsets_for_times({("sealed", part): 0}, timeout=10) == {
                    ("sealed", part): 0
                }
        finally:
            store.kill()
    finally:
        ctower.proc.kill()
