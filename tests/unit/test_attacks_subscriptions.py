"""Attacks on a topic's read ACL through subscriptions: who may receive what a node
publishes on its data XPUB (``dafka.core.read_guard``, docs/security.md "Read ACLs").

With CURVE a subscription comes with its connection's key; a node with a valid key of
its own subscribes to a topic it may not read, to a bare command (every topic), to
everything, or to what is addressed to another node. Each is refused; readers, trusted
stores and the addressee are granted. No sockets here; the process-level attack is in
``tests/integration/test_attacks_read_acl.py``.
"""

from __future__ import annotations

import logging

import pytest

from dafka.core.read_guard import Decision, ReadView, SubscriptionGuard, decide
from dafka.security.curve_keys import curve_keys
from dafka.security.identity import Identity
from tests.signing import FORGER, PRODUCER, STORE

READER = Identity.from_seed(bytes(range(10, 42)))
R, S, F, P = READER.node_id, STORE.node_id, FORGER.node_id, PRODUCER.node_id
VIEW = ReadView({"sealed": frozenset({R})}, frozenset({S}))
NO_ACL = ReadView({}, frozenset({S}))


def verdict(who: str, prefix: bytes, view: ReadView = VIEW) -> Decision:
    return decide(frozenset({who}), prefix, view)


def allowed(who: str, prefix: bytes, view: ReadView = VIEW) -> bool:
    return verdict(who, prefix, view).allowed


@pytest.mark.parametrize("cmd", [b"M", b"H", b"G"])
def test_a_topic_with_a_read_acl_is_subscribed_by_its_readers_and_trusted_stores_only(
    cmd: bytes,
) -> None:
    for prefix in (cmd + b"sealed\0", cmd + b"sealed\0\x02"):
        assert verdict(R, prefix) is Decision.READER
        assert verdict(S, prefix) is Decision.STORE
        assert verdict(F, prefix) is Decision.NOT_A_READER
    assert verdict(F, cmd + b"open\0") is Decision.OPEN
    assert verdict(F, cmd + b"\xff\0") is Decision.OPEN  # no topic has that name


@pytest.mark.parametrize("cmd", [b"M", b"H", b"G", b"F"])
def test_a_prefix_matching_every_topic_needs_a_trusted_store_once_a_topic_has_an_acl(
    cmd: bytes,
) -> None:
    assert verdict(F, cmd) is Decision.ALL_TOPICS
    assert verdict(R, cmd) is Decision.ALL_TOPICS  # a reader of one topic, not of all
    assert verdict(S, cmd) is Decision.STORE
    assert verdict(F, cmd, NO_ACL) is Decision.NO_ACL


def test_a_topic_without_its_nul_is_a_prefix_of_other_topics() -> None:
    """``Mseal`` matches ``sealed``, ``Msealed`` matches ``sealed2``: every topic rule."""
    assert verdict(F, b"Mseal") is Decision.ALL_TOPICS
    assert verdict(R, b"Msealed") is Decision.ALL_TOPICS
    assert allowed(S, b"Mseal")


@pytest.mark.parametrize("cmd", [b"D", b"E", b"K", b"L", b"W"])
def test_an_addressed_prefix_is_granted_to_its_addressee_only(cmd: bytes) -> None:
    assert verdict(R, cmd + R.encode()) is Decision.OWN_ADDRESS
    assert verdict(R, cmd + R.encode() + b"\0\x02") is Decision.OWN_ADDRESS
    for who in (F, S):  # not even a trusted store reads what is sent to a consumer
        assert verdict(who, cmd + R.encode()) is Decision.NOT_OWN_ADDRESS
    assert verdict(F, cmd) is Decision.NOT_OWN_ADDRESS  # every node's
    assert verdict(R, cmd + R[:8].encode()) is Decision.NOT_OWN_ADDRESS  # IDs sharing a start
    assert verdict(R, cmd + b"\xff" * 32) is Decision.NOT_OWN_ADDRESS


def test_fetches_go_to_their_partition_and_to_trusted_stores() -> None:
    assert verdict(P, b"F" + P.encode()) is Decision.OWN_ADDRESS
    assert verdict(F, b"F" + P.encode()) is Decision.ALL_TOPICS
    assert verdict(S, b"F" + P.encode()) is Decision.STORE
    assert verdict(F, b"F" + P.encode(), NO_ACL) is Decision.NO_ACL


def test_everything_unknown_commands_and_keyless_connections_are_refused() -> None:
    assert verdict(S, b"") is Decision.EVERYTHING
    assert verdict(S, b"", NO_ACL) is Decision.EVERYTHING
    assert verdict(S, b"Zsealed\0") is Decision.UNKNOWN_COMMAND
    assert decide(frozenset(), b"Mopen\0", NO_ACL) is Decision.NO_KEY


def test_the_guard_maps_a_connections_curve_key_to_its_node_and_counts() -> None:
    guard = SubscriptionGuard(VIEW)
    reader_key = curve_keys(READER)[0].decode()
    forger_key = curve_keys(FORGER)[0].decode()
    assert R in guard.node_ids(reader_key)
    assert guard.check(reader_key, b"Msealed\0") is Decision.READER
    assert guard.check(reader_key, b"D" + R.encode()) is Decision.OWN_ADDRESS
    assert guard.check(forger_key, b"Msealed\0") is Decision.NOT_A_READER
    assert guard.check(forger_key, b"D" + R.encode()) is Decision.NOT_OWN_ADDRESS
    assert guard.check(None, b"Mopen\0") is Decision.NO_KEY
    assert guard.check("not a key", b"Mopen\0") is Decision.NO_KEY
    assert (guard.granted, guard.refused) == (2, 4)


def test_refusals_are_logged_at_most_every_5_s(caplog: pytest.LogCaptureFixture) -> None:
    guard = SubscriptionGuard(VIEW)
    stranger = curve_keys(FORGER)[0].decode()
    with caplog.at_level(logging.WARNING, logger="dafka.core.read_guard"):
        for now in (0.0, 1.0, 4.9, 5.0, 6.0):
            guard.check(stranger, b"Msealed\0", now, S)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and guard.refused == 5
    assert F in lines[0] and "reason=not-a-reader" in lines[0]  # with the other ID of its key
    assert lines[1].endswith("total=4")


def test_a_new_view_cuts_the_grants_it_would_refuse_and_only_those() -> None:
    """A stranger subscribed to every RECORD while no topic had a read ACL, and to a topic
    before it got one: a view that refuses either says so (the shell then closes every
    connection); a view that refuses nothing granted does not."""
    stranger = curve_keys(FORGER)[0].decode()
    guard = SubscriptionGuard(None)
    assert not guard.set_view(NO_ACL)  # the first view: nothing was granted before
    assert guard.check(stranger, b"Msealed\0").allowed
    assert not guard.set_view(ReadView({"other": frozenset({R})}, frozenset({S})))
    assert guard.set_view(VIEW)  # "sealed" gained a read ACL without the stranger
    guard.forget_grants()  # the connections were closed
    assert guard.check(stranger, b"Msealed\0") is Decision.NOT_A_READER
    assert not guard.set_view(NO_ACL)

    guard = SubscriptionGuard(NO_ACL)
    assert guard.check(stranger, b"M") is Decision.NO_ACL
    assert guard.set_view(VIEW)  # every topic, now one with a read ACL
    guard.forget_grants()
    assert guard.check(stranger, b"M") is Decision.ALL_TOPICS

    guard = SubscriptionGuard(VIEW)
    store = curve_keys(STORE)[0].decode()
    assert guard.check(store, b"M") is Decision.STORE
    assert guard.check(store, b"M") is Decision.STORE  # a second connection of it
    guard.release(store, b"M")
    assert guard.set_view(ReadView(VIEW.readers, frozenset()))  # the store was revoked
    guard.release(store, b"M")
    assert not guard.set_view(ReadView(VIEW.readers, frozenset()))  # it unsubscribed


def test_narrows_tells_a_view_that_may_refuse_more_from_one_that_widens() -> None:
    """What a guard judges by once it remembers too many grants to list them."""
    assert VIEW.narrows(NO_ACL)  # a topic gained a read ACL
    assert ReadView({"sealed": frozenset({R})}, frozenset({S})).narrows(
        ReadView({"sealed": frozenset({R, F})}, frozenset({S}))
    )
    assert ReadView(VIEW.readers, frozenset()).narrows(VIEW)  # a store revoked
    assert not NO_ACL.narrows(VIEW)
    assert not ReadView({"sealed": frozenset({R, F})}, frozenset({S, F})).narrows(VIEW)


def test_a_view_from_metadata_settings_keeps_only_topics_with_a_read_acl() -> None:
    view = ReadView.of(
        {"sealed": {"consumers": [R], "min_acks": 1}, "open": {"consumers": None}}, [S]
    )
    assert view == ReadView({"sealed": frozenset({R})}, frozenset({S}))
