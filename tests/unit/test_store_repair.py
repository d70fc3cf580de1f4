"""A store core on LMDB with one corrupt batch (issue 33, point 3): it asks the other
stores for exactly that batch, takes a copy only if its producer's signature verifies,
and a replay of that batch by its producer is a copy, not an equivocation.

Before, a replay of a batch the store held corrupt was counted as an equivocation (the
copy held could not be read, so the replay looked like a second batch for those offsets)
and nothing was ever written over the corrupt copy."""

from __future__ import annotations

from pathlib import Path

from dafka.core import messages as m
from dafka.storage.lmdb_store import LmdbStorage
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.signing import STORE, P, from_blob, head, record, sent, tampered

S = STORE.node_id


def corrupt_store(tmp_path: Path) -> tuple[StoreCore, LmdbStorage, m.Record]:
    storage = LmdbStorage(tmp_path / "db")
    core = StoreCore(S, storage, profile=SignedProfile(STORE))  # type: ignore[arg-type]
    middle = record(4, 4)
    assert sent(core.handle_batch([record(0, 4), middle, record(8, 2), head(9)], 0.0)) == [
        m.Ack(P, "t", 9)
    ]
    env, db = storage._env, storage._batches  # rot in the middle batch's value
    key = b"t\0" + bytes.fromhex(P) + (7).to_bytes(8, "big")
    with env.begin(write=True, db=db) as txn:
        value = bytearray(txn.get(key))
        value[40] ^= 0x01
        txn.put(key, bytes(value))
    assert [b.first_offset for b in storage.read("t", P, 0, 10)] == [0]
    assert list(storage.bad) == [("t", P, 4)]
    return core, storage, middle


def test_the_store_asks_for_exactly_the_corrupt_batch_and_takes_a_verified_copy(
    tmp_path: Path,
) -> None:
    core, storage, middle = corrupt_store(tmp_path)
    try:
        asked = sent(core.repair.ask(list(storage.bad.values()), 1.0))
        assert asked == [m.Fetch(P, S, "t", 4, 4)]
        assert sent(core.repair.ask(list(storage.bad.values()), 2.0)) == []  # not before 5 s
        forged = from_blob(tampered(middle.content), to=S)
        core.handle_batch([forged], 3.0)
        assert core.repair.take() == [] and core.stats.rejected == 1
        answer = from_blob(middle.content, to=S)
        core.handle_batch([answer], 3.0)
        copies = core.repair.take()
        assert [(c.first_offset, c.last_offset, c.blob) for c in copies] == [(4, 7, middle.content)]
        assert storage.replace(copies[0])
        assert [b.first_offset for b in storage.read("t", P, 0, 10)] == [0, 4, 8]
        assert core.stats.equivocations == 0
    finally:
        storage.close()


def test_a_replay_of_a_batch_held_corrupt_is_a_copy_not_an_equivocation(tmp_path: Path) -> None:
    core, storage, middle = corrupt_store(tmp_path)
    try:
        core.handle_batch([middle], 1.0)  # the producer sends it again
        assert core.stats.equivocations == 0
        assert [c.first_offset for c in core.repair.take()] == [4]
    finally:
        storage.close()
