"""A store that serves compacted forms of a topic that is NOT compacted (issue 36, red team
t3): any store may rewrite a format-5 batch into its compacted form (same digest, same
signature: it verifies), dropping keyed records, the newest of each key included. On a
topic whose cleanup_policy does not contain ``compact`` that is silent data loss, so:

* a consumer refuses such a batch as it does a forged one (not delivered, counted in
  ``unopened["compacted"]``) unless the topic is known to be compacted, and takes the
  full batch afterwards (from any store);
* a store refuses it wherever it comes from (a RECORD, a DIRECT-RECORD answering its
  FETCH: replication and repair), so an honest replica does not spread the loss.

Pure: cores, no sockets, fake time.
"""

from __future__ import annotations

from types import SimpleNamespace

from dafka.consumer._core import ConsumerCore
from dafka.consumer._facade import Consumer
from dafka.core.effects import Deliver
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed_batch import _BATCH_FIXED
from dafka.wire.signed_rich import Codec, RichRecord, compact_rich, is_compacted_form, seal_rich
from tests.signing import CONSUMER, PRODUCER, STORE, P, from_blob

T0 = 1_800_000_000_000


def _full() -> bytes:
    recs = [
        RichRecord(b"key-0", b"value-0", T0, (("h", b"x"),)),
        RichRecord(b"key-1", b"value-1", T0, (("h", b"x"),)),
        RichRecord(None, b"keyless", T0, (("h", b"y"),)),
    ]
    return seal_rich(PRODUCER, b"t", 0, recs, T0, Codec.ZSTD)


def _compacted(full: bytes) -> bytes:
    """What the malicious store serves: every keyed record dropped (the newest of each)."""
    at = 2 + full[1] + _BATCH_FIXED.size
    return compact_rich(full, at, 0, 3, [0, 1])


def test_the_compacted_form_is_told_apart_by_its_form_byte() -> None:
    full = _full()
    assert not is_compacted_form(full)
    assert is_compacted_form(_compacted(full))
    assert not is_compacted_form(signed.encode_batch(PRODUCER, "t", 0, [(b"k", b"v")], T0))
    assert not is_compacted_form(b"") and not is_compacted_form(b"\x05")


def _consumer(compacted: bool) -> ConsumerCore:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=SignedProfile())
    if compacted:
        core.delivery.compacted_ok = lambda topic: topic == "t"
    core.subscribe("t", 0.0)
    return core


def _offsets(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


def test_a_consumer_refuses_a_compacted_form_of_a_topic_not_known_compacted() -> None:
    full = _full()
    core = _consumer(compacted=False)
    assert _offsets(core.handle(from_blob(_compacted(full)), 0.0)) == []
    stats = core.stats
    assert stats.unopened["compacted"] == 1 and stats.compacted == 0
    assert core.positions() == {}  # nothing passed: the offsets are still to be read
    # the genuine full batch (from an honest store) delivers every record
    assert _offsets(core.handle(from_blob(full), 1.0)) == [0, 1, 2]
    # as a DIRECT-RECORD answering a FETCH too
    other = _consumer(compacted=False)
    assert _offsets(other.handle(from_blob(_compacted(full), to=CONSUMER), 0.0)) == []
    assert other.stats.unopened["compacted"] == 1


def test_a_consumer_takes_a_compacted_form_of_a_compacted_topic() -> None:
    core = _consumer(compacted=True)
    assert _offsets(core.handle(from_blob(_compacted(_full())), 0.0)) == [2]
    assert core.stats.compacted == 2 and core.stats.unopened["compacted"] == 0


def test_the_facade_knows_a_compacted_topic_only_from_its_metadata() -> None:
    settings = {"t": {"cleanup_policy": "compact"}, "d": {"cleanup_policy": "delete"}}
    view = SimpleNamespace(topic=settings.get)
    assert Consumer._compacted_in_metadata(SimpleNamespace(metadata=view), "t")  # type: ignore[arg-type]
    assert not Consumer._compacted_in_metadata(SimpleNamespace(metadata=view), "d")  # type: ignore[arg-type]
    assert not Consumer._compacted_in_metadata(SimpleNamespace(metadata=view), "x")  # type: ignore[arg-type]
    assert not Consumer._compacted_in_metadata(SimpleNamespace(metadata=None), "t")  # type: ignore[arg-type]


def _store(policy: str) -> StoreCore:
    core = StoreCore(STORE.node_id, MemoryStorage(), profile=SignedProfile(STORE))  # type: ignore[arg-type]
    core.set_policy({"t": {"cleanup_policy": policy}})
    return core


def test_a_store_refuses_a_compacted_form_of_a_topic_not_compacted() -> None:
    full = _full()
    evil = _compacted(full)
    for msg in (from_blob(evil), from_blob(evil, to=STORE.node_id)):  # RECORD, FETCH answer
        core = _store("delete")
        core.handle_batch([msg], 0.0)
        assert core.storage.heads() == {} and core.stats.compact_refused == 1
        core.handle_batch([from_blob(full, to=STORE.node_id)], 1.0)  # the genuine one is taken
        assert [b.blob for b in core.storage.read("t", P, 0, 10)] == [full]
    compact = _store("compact,delete")  # where compaction is the topic's policy: kept
    compact.handle_batch([from_blob(evil, to=STORE.node_id)], 0.0)
    assert [b.blob for b in compact.storage.read("t", P, 0, 10)] == [evil]
