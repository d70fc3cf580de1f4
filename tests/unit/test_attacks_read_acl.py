"""Attacks on a topic's read ACL (metadata ``consumers``) at a store: its data plane and its
query endpoint.

A node the ACL does not name asks a store for the topic: FETCH, GET-HEADS, CONSUMER-HELLO.
The store answers none of it and counts each refusal (``read_refused``); the named
consumer, the trusted stores and topics without an ACL are served as before. The
requester ID is only bound to its sender with ``--curve`` (docs/security.md "Read ACLs").
"""

from __future__ import annotations

from dafka.core import messages as m
from dafka.core import read_guard
from dafka.query import protocol as qp
from dafka.query.server import authorize
from dafka.security.curve_keys import curve_keys, node_ids_of_curve_key
from dafka.security.identity import Identity
from dafka.store import StoreCore
from tests.signing import CONSUMER, FORGER, STORE, STORE2, F, P, record, sent
from tests.unit.test_signed_cores import store

S = STORE.node_id
S2 = STORE2.node_id


def held(core: StoreCore) -> None:
    """Four one-record batches of ``t`` and ``open``."""
    core.handle_batch([record(i, 1, topic=t) for t in ("t", "open") for i in range(4)], 0.0)


def acl_store() -> StoreCore:
    core, _ = store()
    held(core)
    core.set_policy({"t": {"consumers": [CONSUMER]}, "open": {"consumers": None}}, [S2])
    return core


def test_a_fetch_from_a_node_the_acl_does_not_name_is_not_answered() -> None:
    core = acl_store()
    out = core.handle_batch([m.Fetch(P, F, "t", 0, 4)], 1.0)
    assert sent(out) == [] and core.stats.read_refused == 1
    assert sent(core.tick(2.0)) == []  # nothing was queued either


def test_get_heads_from_a_node_the_acl_does_not_name_is_not_answered() -> None:
    core = acl_store()
    assert sent(core.handle_batch([m.GetHeads("t", F)], 1.0)) == []
    assert core.stats.read_refused == 1


def test_consumer_hello_answers_only_the_topics_the_requester_may_read() -> None:
    core = acl_store()
    out = sent(core.handle_batch([m.ConsumerHello(S, F, ("t", "open"))], 1.0))
    assert {x.topic for x in out if isinstance(x, m.DirectHead)} == {"open"}
    assert core.stats.read_refused == 1
    assert sent(core.handle_batch([m.ConsumerHello(S, F, ("t",))], 2.0)) == []
    assert core.stats.read_refused == 2


def test_the_named_consumer_and_trusted_stores_are_served() -> None:
    core = acl_store()
    for requester in (CONSUMER, S2):
        out = sent(core.handle_batch([m.Fetch(P, requester, "t", 0, 4)], 1.0))
        assert [(x.recipient, x.offset) for x in out] == [(requester, i) for i in range(4)]
        heads = sent(core.handle_batch([m.GetHeads("t", requester)], 1.0))
        assert [type(x) for x in heads] == [m.DirectHead]
    assert core.stats.read_refused == 0


def test_an_open_topic_is_served_to_anyone() -> None:
    core = acl_store()
    out = sent(core.handle_batch([m.Fetch(P, F, "open", 0, 4)], 1.0))
    assert [x.offset for x in out] == [0, 1, 2, 3] and core.stats.read_refused == 0


def test_a_fetch_queued_before_the_acl_closed_is_not_served() -> None:
    core, _ = store(serve_chunk=1)
    held(core)
    first = sent(core.handle_batch([m.Fetch(P, F, "t", 0, 4)], 1.0))
    assert [x.offset for x in first] == [0]  # one batch per step: the rest waits
    core.set_policy({"t": {"consumers": [CONSUMER]}})
    assert sent(core.tick(2.0)) == [] and core.stats.read_refused == 1


# -- the query endpoint: authorize() decides before serve() ------------------------------

READER = Identity.from_seed(bytes(range(10, 42)))
HEADS = {("t", P): (3, 0), ("open", P): (3, 0)}


def readers(topic: str) -> frozenset[str] | None:
    return frozenset({READER.node_id}) if topic == "t" else None


def client_of(identity: Identity) -> frozenset[str]:
    """The node IDs the query endpoint derives from a client's CURVE key (its ZAP User-Id)."""
    return node_ids_of_curve_key(curve_keys(identity)[0].decode())


def decide(request: qp.Request, *, curve: bool, client: frozenset[str]) -> object:
    refused, visible = authorize(request, readers, HEADS, curve=curve, client=client)
    return refused.code if refused is not None else sorted(t for t, _ in visible)


def test_a_curve_client_key_maps_back_to_its_node_id() -> None:
    for seed in range(50):
        ident = Identity.from_seed(seed.to_bytes(32, "big"))
        assert ident.node_id in client_of(ident)
    assert node_ids_of_curve_key("not a key") == frozenset()


def test_a_query_for_an_acl_topic_needs_a_named_curve_key() -> None:
    read = qp.ReadRequest(1, "t", P, 0)
    assert decide(read, curve=True, client=client_of(READER)) == ["open", "t"]
    assert decide(read, curve=True, client=client_of(FORGER)) is qp.ErrorCode.FORBIDDEN
    assert decide(read, curve=True, client=frozenset()) is qp.ErrorCode.FORBIDDEN
    named = qp.HeadsRequest(2, ("t",))
    assert decide(named, curve=True, client=client_of(READER)) == ["open", "t"]
    assert decide(named, curve=True, client=client_of(FORGER)) is qp.ErrorCode.FORBIDDEN


def test_heads_of_every_topic_leave_out_those_the_client_may_not_read() -> None:
    every = qp.HeadsRequest(3)
    assert decide(every, curve=True, client=client_of(FORGER)) == ["open"]
    assert decide(every, curve=False, client=frozenset()) == ["open"]


def test_without_curve_an_acl_topic_is_not_served_at_all() -> None:
    """Fail closed: without CURVE nothing says who asks, so nobody is named."""
    refused, _ = authorize(
        qp.ReadRequest(1, "t", P, 0), readers, HEADS, curve=False, client=client_of(READER)
    )
    assert refused is not None and refused.code is qp.ErrorCode.FORBIDDEN
    assert "only to CURVE clients" in refused.message
    assert decide(qp.ReadRequest(1, "open", P, 0), curve=False, client=frozenset()) == [
        "open",
        "t",
    ]


def test_heartbeat_subscriptions_are_granted_to_any_key_and_nothing_more() -> None:
    """Peers' heartbeats (``Y``, issue 39) carry only node IDs: any authenticated key may
    have them; a prefix that merely starts with ``Y`` is not a heartbeat and is refused."""
    view, verdict, d = read_guard.ReadView(), read_guard.decide, read_guard.Decision
    assert verdict(frozenset({"A" * 32}), b"Y", view) is d.HEARTBEAT
    assert verdict(frozenset({"A" * 32}), b"Y", view).allowed
    assert verdict(frozenset(), b"Y", view) is d.NO_KEY
    assert verdict(frozenset({"A" * 32}), b"YX", view) is d.UNKNOWN_COMMAND
