"""The profile adapters (frames <-> core messages), profile settings and records_of."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.config import ProducerConfig, parse_trusted_stores
from dafka.core import messages as m
from dafka.core.effects import PublishRecords
from dafka.errors import ConfigError, ProfileError, WireError
from dafka.security.identity import node_id_for
from dafka.storage.base import StoredBatch
from dafka.storage.state_dir import StateDir
from dafka.wire import profiles, rfc46, signed
from dafka.wire.profiles import (
    RFC46,
    OtherProfile,
    SignedProfile,
    make_profile,
    records_of,
)
from tests.signing import CONSUMER, FORGER, PRODUCER, STORE, P, blob, value
from tests.strategies import direct_records, offsets, records

S = STORE.node_id

SHARED = [
    m.Fetch(P, CONSUMER, "t", 5, 10),
    m.GetHeads("t", CONSUMER),
    m.ConsumerHello(S, CONSUMER, ("a", "b")),
    m.StoreHello(CONSUMER, S),
]


@pytest.mark.parametrize("msg", SHARED + [m.Head("t", P, 3), m.Ack(P, "t", 3)])
def test_signed_round_trips(msg: m.Message) -> None:
    producer, store = SignedProfile(PRODUCER), SignedProfile(STORE)
    sender = store if isinstance(msg, m.Ack) else producer
    back = SignedProfile().decode(sender.encode(msg))
    assert back == (m.Ack(P, "t", 3, S) if isinstance(msg, m.Ack) else msg)


@pytest.mark.parametrize(
    "msg",
    SHARED
    + [
        m.Record("t", P, 7, b"v"),
        m.DirectRecord(CONSUMER, "t", P, 7, b"v"),
        m.Head("t", P, 3),
        m.Ack(P, "t", 3),
        m.DirectHead(CONSUMER, "t", P, 9),
    ],
)
def test_rfc46_round_trips(msg: m.Message) -> None:
    assert RFC46.decode(RFC46.encode(msg)) == msg
    assert RFC46.encode(msg) == rfc46.encode(RFC46.to_wire(msg))


def test_each_profile_refuses_the_others_frames_as_other_profile() -> None:
    for msg in SHARED:
        with pytest.raises(OtherProfile):
            RFC46.decode(SignedProfile().encode(msg))
        with pytest.raises(OtherProfile):
            SignedProfile().decode(RFC46.encode(msg))
    with pytest.raises(WireError) as err:
        RFC46.decode([b"garbage"])
    assert not isinstance(err.value, OtherProfile)


def test_signed_records_are_encoded_verbatim() -> None:
    data = blob(0, 3)
    rec = m.Record("t", P, 0, data, 3)
    assert SignedProfile().encode(rec) == signed.encode(signed.Record.of(data))
    d = m.DirectRecord(CONSUMER, "t", P, 0, data, 3)
    assert SignedProfile().encode(d) == signed.encode(signed.DirectRecord.of(CONSUMER, data))


def test_signing_needs_the_right_identity() -> None:
    with pytest.raises(ProfileError, match="no key"):
        SignedProfile().encode(m.Head("t", P, 1))
    with pytest.raises(ProfileError, match="own partition"):
        SignedProfile(FORGER).encode(m.Head("t", P, 1))
    with pytest.raises(ProfileError):
        RFC46.encode(m.Record("t", P, 0, b"two", 2))  # rfc46 carries one record
    with pytest.raises(ProfileError):
        SignedProfile(PRODUCER).record_heads(PublishRecords("t", P, 0, (b"x",)))


def test_an_ack_names_the_store_that_signed_it() -> None:
    ack = SignedProfile().decode(SignedProfile(STORE).encode(m.Ack(P, "t", 1)))
    assert isinstance(ack, m.Ack) and ack.store == node_id_for(STORE.public_key) == S
    assert SignedProfile().check_ack(ack)
    assert not SignedProfile().check_ack(m.Ack(P, "t", 1, S))  # unsigned
    assert not SignedProfile().check_ack(m.Ack(P, "t", 2, S, ack.proof))  # another offset


def test_open_records_checks_the_messages_offsets_against_the_blob() -> None:
    data = blob(0, 2)
    wire = SignedProfile()
    assert wire.open_records(m.Record("t", P, 0, data, 2))[1] == [value(0), value(1)]
    for bad in (m.Record("t", P, 1, data, 2), m.Record("t", P, 0, data, 1)):
        with pytest.raises(WireError):
            wire.open_records(bad)
    with pytest.raises(signed.WrongTopic):
        wire.open_records(m.Record("u", P, 0, data, 2))


def test_records_of_refuses_what_does_not_match() -> None:
    data = blob(0, 2)
    with pytest.raises(WireError):
        records_of(StoredBatch("t", P, 0, 5, data, "signed"))
    with pytest.raises(WireError):
        records_of(StoredBatch("t", P, 0, 1, data[:-1], "signed"))
    with pytest.raises(WireError):
        records_of(StoredBatch("u", P, 0, 1, data, "signed"), verify=True)
    with pytest.raises(ConfigError):
        records_of(StoredBatch("t", P, 0, 1, data), "nope")


def test_make_profile() -> None:
    assert make_profile("rfc46") is RFC46
    assert make_profile("signed", PRODUCER).identity is PRODUCER  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="unknown wire profile"):
        make_profile("sign")


# ------------------------------------------------------------------ settings


def test_trusted_stores_accept_node_ids_and_public_keys() -> None:
    key = STORE.public_key.hex()
    assert parse_trusted_stores(f"{S.lower()}, {key},{S}") == (S,)
    assert parse_trusted_stores(None) == ()
    with pytest.raises(ConfigError, match="bad trusted store"):
        parse_trusted_stores("not-hex")


def test_producer_trust_settings() -> None:
    assert ProducerConfig().validate().trusts_any_store
    assert not ProducerConfig(trusted_stores=(S,)).validate().trusts_any_store
    with pytest.raises(ConfigError, match="no trusted stores"):
        ProducerConfig(trust_any_store=False).validate()
    with pytest.raises(ConfigError, match="not both"):
        ProducerConfig(trusted_stores=(S,), trust_any_store=True).validate()
    with pytest.raises(ConfigError, match="only 1 trusted"):
        ProducerConfig(trusted_stores=(S,), min_acks=2).validate()
    with pytest.raises(ConfigError, match="signed profile"):
        ProducerConfig(profile="rfc46", trusted_stores=(S,)).validate()
    with pytest.raises(ConfigError, match="unknown wire profile"):
        ProducerConfig(profile="x").validate()  # type: ignore[arg-type]


def test_a_state_directory_is_pinned_to_its_profile(tmp_path: Path) -> None:
    with StateDir(tmp_path / "s") as state:
        state.pin_profile("signed")
        identity = state.identity()
        state.pin_profile("signed")
    with StateDir(tmp_path / "s") as state:
        assert state.identity() == identity
        with pytest.raises(ConfigError, match="signed-profile node"):
            state.pin_profile("rfc46")


@settings(max_examples=300)
@given(
    st.one_of(records(wide=True), direct_records(wide=True)),
    offsets(),
    st.binary(max_size=9),
    st.binary(max_size=12),
)
def test_rfc46_records_decode_alike_from_remembered_headers(
    msg: rfc46.Record | rfc46.DirectRecord, other: int, trailing: bytes, garbage: bytes
) -> None:
    # the second record of a header is decoded from what the first one left remembered:
    # it must read what the full decoder reads, whatever follows or replaces the offset
    frames = rfc46.encode(msg)
    head = frames[0][:-8]
    for frame0 in (
        frames[0],
        head + other.to_bytes(8, "big"),
        frames[0] + trailing,
        head + garbage,
        frames[0][:-1],
    ):
        variant = [frame0, frames[1]]
        try:
            want: m.Message | type[WireError] = RFC46.to_core(rfc46.decode(variant))
        except WireError:
            want = WireError
        for _ in range(2):
            try:
                got: m.Message | type[WireError] = RFC46.decode(variant)
            except WireError:
                got = WireError
            assert got == want
            assert type(got) is type(want)
    assert len(profiles._headers) <= profiles._HEADERS_KEPT


def test_rfc46_remembers_a_bounded_number_of_headers() -> None:
    for i in range(3 * profiles._HEADERS_KEPT):
        frames = rfc46.encode(rfc46.Record(f"t{i}", P, i, b"v"))
        assert RFC46.decode(frames) == m.Record(f"t{i}", P, i, b"v")
        assert len(profiles._headers) <= profiles._HEADERS_KEPT
    frames = rfc46.encode(rfc46.Record("t", P, 7, b"v"))
    writable = [bytearray(frames[0]), frames[1]]  # decoded, never remembered
    assert RFC46.decode(writable) == RFC46.decode(frames) == m.Record("t", P, 7, b"v")


def test_rfc46_a_record_whose_subject_is_not_its_topic_is_refused_every_time() -> None:
    frame0 = b"Ma\x00\x01" + bytes([32]) + P.encode() + b"\x01b" + bytes(8)
    for _ in range(2):
        with pytest.raises(WireError):
            RFC46.decode([frame0, b"v"])


def test_a_gap_statement_is_stamped_with_the_time_its_caller_passes() -> None:
    def no_clock() -> int:
        raise AssertionError("the profile read its clock")

    wire = SignedProfile(PRODUCER, clock_ms=no_clock)
    made = wire.seal_gap("t", 4, 3, 1_700_000_000_123, 2)
    assert made == [(4, 3, signed.seal_gap(PRODUCER, "t", 4, 3, 1_700_000_000_123, 2))]
    assert signed.peek_batch(made[0][2]).timestamp_ms == 1_700_000_000_123
    assert wire.seal_gap("t", 4, 3, 77) == [(4, 3, signed.seal_gap(PRODUCER, "t", 4, 3, 77))]
    with pytest.raises(ProfileError):
        RFC46.seal_gap("t", 4, 3, 1)


def test_the_shell_finds_the_codec_where_it_always_did() -> None:
    from dafka.wire import profiles as shell_profiles

    for name in shell_profiles.__all__:
        assert getattr(shell_profiles, name) is getattr(profiles, name)
