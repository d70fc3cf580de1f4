"""A consumer never waits in silence for a range no store serves (issue 33, point 10),
and a store lying about its tail cannot make it skip what another store serves.

Real store cores over LMDB in ``tmp_path`` and a consumer core, exchanging messages as
they would on the wire (the store's DIRECT-HEADs go through its profile, so their tails
are signed), with fake time.
"""

from __future__ import annotations

from pathlib import Path

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import DataLoss, Deliver, Publish
from dafka.storage.lmdb_store import LmdbStorage
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.signing import (
    CONSUMER,
    FORGER,
    STORE,
    STORE2,
    WIRE,
    P,
    decoded,
    head,
    record,
)

S = STORE.node_id


def _trimmed_store(path: Path, identity=STORE) -> tuple[StoreCore, LmdbStorage]:  # type: ignore[no-untyped-def]
    """A store that held 0..9 of a stopped producer, trimmed by retention to 8..9, then
    restarted (so it has no producer-signed HEAD to pass on)."""
    storage = LmdbStorage(path, node_id=identity.node_id)
    core = StoreCore(identity.node_id, storage, profile=SignedProfile(identity))
    core.handle_batch([record(0, 4), record(4, 4), record(8, 2), head(9)], 0.0)
    core.set_policy({"t": {"retention_ms": 1}})
    core.apply_retention(10**15, 0)
    assert core.apply_retention(10**15 + 10, 10) == [("t", P, 8)]
    storage.close()
    storage = LmdbStorage(path, node_id=identity.node_id)
    return StoreCore(identity.node_id, storage, profile=SignedProfile(identity)), storage


class _Wire:
    """Carries a consumer's messages to stores and their answers back, in rounds."""

    def __init__(self, consumer: ConsumerCore, stores: list[StoreCore]) -> None:
        self.consumer = consumer
        self.stores = stores
        self.delivered: list[int] = []
        self.losses: list[DataLoss] = []

    def run(self, out: list, now: float, rounds: int = 8) -> None:
        for _ in range(rounds):
            to_stores = [e.msg for e in out if isinstance(e, Publish)]
            self._take(out)
            out = []
            for store in self.stores:
                for effect in store.handle_batch(to_stores, now):
                    if isinstance(effect, Publish):
                        msg = decoded(store.profile.encode(effect.msg))
                        out.extend(self.consumer.handle(msg, now))
            if not out:
                return

    def _take(self, effects: list) -> None:
        for e in effects:
            if isinstance(e, Deliver):
                self.delivered.extend(r.offset for r in e.records())
            elif isinstance(e, DataLoss):
                self.losses.append(e)

    def seconds(self, start: float, end: float, step: float = 0.5) -> None:
        now = start
        while now <= end:
            self.run(list(self.consumer.tick(now)), now)
            now += step


def test_a_default_consumer_after_retention_reports_the_loss_and_delivers_the_rest(
    tmp_path: Path,
) -> None:
    """No trusted stores (the README's default), the producer gone, the store restarted:
    the consumer used to fetch 0 for ever, told only the store's tail, which nothing it
    had verified backed. Now it fetches from the tail, the producer-signed records there
    back the claim, and after ``unserved_after`` seconds in which no store served 0..7 it
    reports the loss and delivers 8..9."""
    store, storage = _trimmed_store(tmp_path / "s")
    try:
        consumer = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
        wire = _Wire(consumer, [store])
        wire.run(
            list(consumer.subscribe("t", 0.0)) + [Publish(m.ConsumerHello(S, CONSUMER, ("t",)))],
            0.0,
        )
        wire.seconds(0.5, 30.0)
        assert wire.losses == [DataLoss("t", P, 0, 8)]
        assert wire.delivered == [8, 9]
        assert consumer.stats.tail_claims >= 1 and consumer.stats.data_lost == 8
    finally:
        storage.close()


def test_a_store_lying_about_its_tail_cannot_skip_what_another_store_serves(
    tmp_path: Path,
) -> None:
    """A store (validly signed, as any store's is; no trust list) says it holds only
    8..9; another store serves 0..9. The consumer keeps asking every store and delivers
    0..9, nothing skipped, whichever answer arrives first."""
    liar, liar_storage = _trimmed_store(tmp_path / "liar", STORE2)
    honest_storage = LmdbStorage(tmp_path / "honest", node_id=S)
    honest = StoreCore(S, honest_storage, profile=SignedProfile(STORE))
    honest.handle_batch([record(0, 4), record(4, 4), record(8, 2), head(9)], 0.0)
    try:
        consumer = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
        consumer.subscribe("t", 0.0)
        # the liar's answer comes first, with what the producer signed up to 9
        consumer.handle(head(9), 0.0)
        first = consumer.handle(decoded(liar.profile.encode(_tail_answer(liar))), 0.0)
        assert not [e for e in first if isinstance(e, DataLoss)]
        wire = _Wire(consumer, [liar, honest])
        wire.run(first, 0.0)
        wire.seconds(0.5, 30.0)
        assert wire.losses == [] and consumer.stats.data_lost == 0
        assert wire.delivered == list(range(10))
    finally:
        liar_storage.close()
        honest_storage.close()


def _tail_answer(store: StoreCore) -> m.DirectHead:
    (dh,) = [e.msg for e in store.handle_batch([m.GetHeads("t", CONSUMER)], 0.0)]
    assert isinstance(dh, m.DirectHead) and dh.tail == 8
    return dh


def test_an_untrusted_stores_tail_never_skips_but_the_wait_is_said(tmp_path: Path) -> None:
    """With a trust list, an unlisted store's tail skips nothing, however long; but the
    consumer does not wait in silence: the wait is counted (and logged)."""
    liar, storage = _trimmed_store(tmp_path / "s", FORGER)
    try:
        consumer = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE, trusted_stores=[S])
        wire = _Wire(consumer, [liar])
        hello = Publish(m.ConsumerHello(FORGER.node_id, CONSUMER, ("t",)))
        wire.run(list(consumer.subscribe("t", 0.0)) + [hello], 0.0)
        wire.seconds(0.5, 30.0)
        assert wire.losses == [] and wire.delivered == []
        assert consumer.stats.tail_waits > 0
    finally:
        storage.close()
