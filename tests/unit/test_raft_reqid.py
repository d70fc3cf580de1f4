"""12-byte request ids: layout, counter, time and freshness checks."""

from __future__ import annotations

import random
import threading

import pytest

from dafka.raft.codec import (
    REQUEST_ID_TTL,
    RaftWireError,
    ReqIdGenerator,
    reqid_expired,
    reqid_time,
)
from dafka.raft.codec._reqid import (
    default_machine_id,
    parse_reqid,
    reqid_acceptable,
    reqid_hex,
)


def make(now: float = 0x5956DC88, start: int = 0xDCCCAB) -> ReqIdGenerator:
    class FixedRandom(random.Random):
        def randrange(self, *args, **kwargs):  # type: ignore[override]
            return start

    return ReqIdGenerator(
        clock=lambda: now, rng=FixedRandom(), machine_id=b"\x26\xf2\x7e", pid=0x10DC
    )


def test_layout_matches_the_spec_example() -> None:
    # the spec's example id 5956dc8826f27e10dcccab20 split into its four fields
    generator = make(start=0xCCAB20)
    generator_prefix = make()
    assert generator_prefix.next()[:9] == bytes.fromhex("5956dc8826f27e10dc")
    assert generator.next() == bytes.fromhex("5956dc8826f27e10dcccab20")


def test_counter_increments_and_wraps() -> None:
    generator = make(start=0xFFFFFE)
    ids = [generator() for _ in range(3)]
    assert [i[9:] for i in ids] == [b"\xff\xff\xfe", b"\xff\xff\xff", b"\x00\x00\x00"]
    assert len(set(ids)) == 3


def test_defaults_are_unique_and_timed() -> None:
    generator = ReqIdGenerator(clock=lambda: 1_700_000_000.9)
    first, second = generator(), generator()
    assert len(first) == 12 and first != second
    assert reqid_time(first) == 1_700_000_000
    assert first[4:7] == default_machine_id()


def test_thread_safe_uniqueness() -> None:
    generator = ReqIdGenerator(clock=lambda: 1.0)
    seen: list[bytes] = []

    def work() -> None:
        seen.extend(generator() for _ in range(2000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == 8000


def test_seeded_rng_is_reproducible() -> None:
    a = ReqIdGenerator(clock=lambda: 5, rng=random.Random(1), machine_id=b"abc", pid=1)
    b = ReqIdGenerator(clock=lambda: 5, rng=random.Random(1), machine_id=b"abc", pid=1)
    assert a() == b()


def test_expiry_and_acceptance() -> None:
    reqid = make(now=1000)()
    assert not reqid_expired(reqid, 1000 + REQUEST_ID_TTL - 1)
    assert reqid_expired(reqid, 1000 + REQUEST_ID_TTL)
    assert reqid_acceptable(reqid, 1000)
    assert reqid_acceptable(reqid, 1000 + 7 * 3600)
    assert not reqid_acceptable(reqid, 1000 + 7 * 3600 + 1)
    assert reqid_acceptable(reqid, 1000 - 15 * 60)
    assert not reqid_acceptable(reqid, 1000 - 15 * 60 - 1)


def test_hex_round_trip_and_errors() -> None:
    reqid = bytes.fromhex("5956dc8826f27e10dcccab20")
    assert reqid_hex(reqid) == "5956dc8826f27e10dcccab20"
    assert parse_reqid("5956dc8826f27e10dcccab20") == reqid
    for bad in ("xyz", "5956", ""):
        with pytest.raises(RaftWireError):
            parse_reqid(bad)
    with pytest.raises(RaftWireError):
        reqid_time(b"short")


def test_bad_machine_id() -> None:
    with pytest.raises(ValueError):
        ReqIdGenerator(machine_id=b"ab")
