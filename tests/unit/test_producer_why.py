"""Why records wait: :func:`dafka.producer._why.explain` tells each cause apart, and what
peers put into the evidence is bounded (issue 34, point 5)."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from dafka.config import ProducerConfig, TowerAddress
from dafka.core import messages as m
from dafka.core.messages import Subscription
from dafka.errors import (
    ConfigError,
    DafkaTimeout,
    NotAcknowledged,
    ProducerError,
    UnackedCause,
)
from dafka.producer._core import MAX_UNTRUSTED_NAMED, ProducerCore
from dafka.producer._io import MAX_STORES_NAMED, _ProducerHandler
from dafka.producer._state import ProducerState
from dafka.producer._why import AckEvidence, TopicAcks, check_towers_resolve, explain
from dafka.security.identity import Identity
from dafka.wire.profiles import SignedProfile
from dafka.wire.rfc46 import Command

A, B, C = "A" * 32, "B" * 32, "C" * 32

BASE = AckEvidence(
    profile="signed",
    towers=("127.0.0.1:5556",),
    welcomed=True,
    stores=(A,),
    trusted=None,
    untrusted=(),
    topics=(TopicAcks("t", 1, False, ()),),
)


def cause(e: AckEvidence, profiles: dict[str, str] | None = None) -> UnackedCause:
    return explain(e, profiles).cause


def test_no_tower_answered() -> None:
    d = explain(replace(BASE, welcomed=False, stores=()))
    assert d.cause is UnackedCause.TOWER_UNREACHABLE
    assert "no tower answered at 127.0.0.1:5556" in d.text


def test_a_topic_min_acks_above_the_trusted_stores() -> None:
    e = replace(BASE, trusted=frozenset({A}), topics=(TopicAcks("t", 2, True, (A,)),))
    d = explain(e)
    assert d.cause is UnackedCause.TOPIC_MIN_ACKS
    assert d.text == (
        f"topic 't' needs ACKs from 2 stores (its min_acks in the cluster metadata), "
        f"but only 1 store is trusted ({A})"
    )


def test_the_producers_min_acks_above_the_trusted_stores() -> None:
    e = replace(BASE, trusted=frozenset({A}), topics=(TopicAcks("t", 2, False, ()),))
    assert cause(e) is UnackedCause.TOO_FEW_STORES


def test_acks_only_from_untrusted_stores() -> None:
    e = replace(BASE, stores=(A, B), trusted=frozenset({C}), untrusted=(A, B))
    d = explain(e)
    assert d.cause is UnackedCause.UNTRUSTED_STORES
    assert d.text.startswith(f"2 stores ({A}, {B}) acknowledged, but they are not trusted")


def test_fewer_stores_acknowledged_than_min_acks() -> None:
    e = replace(BASE, topics=(TopicAcks("t", 2, False, (A,)),))
    d = explain(e)
    assert d.cause is UnackedCause.TOO_FEW_STORES
    assert "--min-acks" in d.text and f"only 1 store ({A})" in d.text
    e = replace(BASE, topics=(TopicAcks("t", 3, True, (A, B)),))
    d = explain(e)
    assert d.cause is UnackedCause.TOPIC_MIN_ACKS
    assert "its min_acks in the cluster metadata" in d.text


def test_stores_of_the_other_profile_are_told_by_a_probe() -> None:
    assert cause(BASE) is UnackedCause.NO_ACK  # connected, silent: without a probe, unsure
    d = explain(BASE, {A: "rfc46"})
    assert d.cause is UnackedCause.OTHER_PROFILE
    assert d.text == (
        f"the 1 store running ({A}) speaks the rfc46 wire profile; this producer speaks "
        "signed (--profile)"
    )
    assert cause(BASE, {A: "rfc46", B: "signed"}) is UnackedCause.NO_ACK  # one of ours


def test_no_store() -> None:
    assert cause(replace(BASE, stores=())) is UnackedCause.NO_STORE
    assert cause(replace(BASE, stores=()), {}) is UnackedCause.NO_STORE


def test_a_state_directory_that_cannot_be_written_comes_first() -> None:
    d = explain(replace(BASE, welcomed=False, state_dir="the producer cannot write"))
    assert d.cause is UnackedCause.STATE_DIR


def test_many_stores_are_named_up_to_three() -> None:
    many = tuple(f"{i:032X}" for i in range(10))
    d = explain(replace(BASE, stores=many, trusted=frozenset({C}), untrusted=many))
    assert "and 7 more" in d.text and len(d.text) < 400


def test_a_tower_name_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(ConfigError, match="'no-such-tower.invalid' does not resolve"):
        check_towers_resolve([TowerAddress("no-such-tower.invalid", 5556)])
    # one tower that resolves is enough: the others may come later
    check_towers_resolve(
        [TowerAddress("no-such-tower.invalid", 5556), TowerAddress("127.0.0.1", 1)]
    )


def test_not_acknowledged_is_a_timeout_of_the_producer_and_pickles() -> None:
    err = NotAcknowledged("1 record", unacknowledged=1, cause=UnackedCause.NO_STORE)
    assert isinstance(err, DafkaTimeout) and isinstance(err, ProducerError)
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.cause, back.unacknowledged) == ("1 record", "no_store", 1)


def test_acks_naming_many_untrusted_stores_are_remembered_boundedly() -> None:
    """Attack: a peer floods ACKs naming a new store each time; the producer names at most
    MAX_UNTRUSTED_NAMED of them (no signature is checked for an untrusted ACK)."""
    me = Identity.generate()
    core = ProducerCore(me.node_id, profile=SignedProfile(me), trusted_stores=[A], min_acks=1)
    core.publish("t", [b"x"], 0.0)
    for i in range(1000):
        core.handle(m.Ack(me.node_id, "t", 0, store=f"{i:032X}"), 0.0)
    assert len(core.untrusted_from) == MAX_UNTRUSTED_NAMED
    assert core.stats.untrusted_acks == 1000


def test_subscriptions_naming_many_stores_are_remembered_boundedly() -> None:
    """Attack: a peer subscribes to CONSUMER-HELLOs for ever new node IDs (or junk); the
    producer remembers at most MAX_STORES_NAMED connected stores, node IDs only."""
    me = Identity.generate()
    core = ProducerCore(me.node_id, profile=SignedProfile(me))
    handler = _ProducerHandler(
        ProducerState(ProducerConfig().validate(), None),  # type: ignore[arg-type]  # no budget
        core,
    )
    hello = Command.CONSUMER_HELLO.value
    handler.on_subscription(Subscription(True, hello, b"not a node id\n"), 0.0)
    handler.on_subscription(Subscription(True, Command.ACK.value, A.encode()), 0.0)
    assert handler.stores == set()
    handler.on_subscription(Subscription(True, hello, A.encode()), 0.0)
    handler.on_subscription(Subscription(False, hello, A.encode()), 0.0)
    assert handler.stores == set()  # gone again
    for i in range(1000):
        handler.on_subscription(Subscription(True, hello, b"%032X" % i), 0.0)
    assert len(handler.stores) == MAX_STORES_NAMED
