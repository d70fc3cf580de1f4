"""A topic's read ACL (metadata ``consumers``) on a store's query endpoint, with real
processes on 127.0.0.1 (docs/security.md "Read ACLs"): over CURVE only the keys of the named
node IDs read the topic; without CURVE nobody does (fail closed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from dafka import identity
from dafka.metadata import MetadataClient
from dafka.query import protocol as qp
from dafka.transport_security import CurveConfig, make_client
from tests.integration.test_attacks_curve import CurveTower, Store, keys, produce
from tests.procs import Tower, wait_until


@pytest.fixture
def curve_tower() -> Iterator[CurveTower]:
    tower = CurveTower()
    yield tower
    tower.proc.kill()


def ask(endpoint: str, store_key: bytes, me: identity.Identity | None, req: qp.Request) -> qp.Reply:
    """One request to a query endpoint, over CURVE as ``me`` (NULL when None); 5 s at most."""
    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        if me is not None:
            make_client(sock, CurveConfig(True), me, store_key)
        sock.connect(endpoint)
        sock.send_multipart(qp.encode_request(req))
        assert sock.poll(5000), "no reply in 5 s"
        reply = qp.decode_reply(sock.recv_multipart())
        sock.close(0)
        return reply
    finally:
        ctx.term()


def test_only_the_named_consumers_key_reads_an_acl_topic_over_curve(
    curve_tower: CurveTower, tmp_path: Path
) -> None:
    k = keys(tmp_path, "store", "reader")
    reader = identity.load(k["reader"][0])
    stranger = identity.Identity.generate()
    store = Store(k["store"][0], curve_tower.address, "--curve")
    try:
        produce(curve_tower.address, "sealed")
        store_key = bytes.fromhex(k["store"][1])
        heads = ask(store.query_endpoint, store_key, stranger, qp.HeadsRequest(1))
        assert isinstance(heads, qp.HeadsReply)
        (part,) = [p.partition for p in heads.partitions if p.topic == "sealed"]
        with MetadataClient(curve_tower.plain) as admin:
            admin.alter_topic("sealed", {"consumers": [reader.node_id]})
        read = qp.ReadRequest(2, "sealed", part, 0)

        def refused() -> bool:
            reply = ask(store.query_endpoint, store_key, stranger, read)
            return isinstance(reply, qp.ErrorReply) and reply.code is qp.ErrorCode.FORBIDDEN

        wait_until(refused, 20, what="the store refusing a key the ACL does not name")
        mine = ask(store.query_endpoint, store_key, reader, read)
        assert isinstance(mine, qp.ReadReply) and mine.head == 49, mine
        assert list(mine.batches())
        every = ask(store.query_endpoint, store_key, stranger, qp.HeadsRequest(3))
        assert isinstance(every, qp.HeadsReply)
        assert all(p.topic != "sealed" for p in every.partitions)
        named = ask(store.query_endpoint, store_key, stranger, qp.HeadsRequest(4, ("sealed",)))
        assert isinstance(named, qp.ErrorReply) and named.code is qp.ErrorCode.FORBIDDEN
    finally:
        store.kill()


def test_without_curve_an_acl_topic_is_not_served_on_the_query_endpoint(
    tmp_path: Path,
) -> None:
    tower = Tower()
    try:
        store = Store(tmp_path / "store", tower.address)
        try:
            with MetadataClient(tower.address) as admin:
                admin.create_topic("sealed", {"consumers": ["0" * 32]})
            read = qp.ReadRequest(1, "sealed", "1" * 32, 0)

            def refused() -> qp.ErrorReply | None:
                reply = ask(store.query_endpoint, b"", None, read)
                return reply if isinstance(reply, qp.ErrorReply) else None

            reply = wait_until(refused, 20, what="the store refusing the ACL topic")
            assert isinstance(reply, qp.ErrorReply) and reply.code is qp.ErrorCode.FORBIDDEN
            assert "only to CURVE clients" in reply.message
        finally:
            store.kill()
    finally:
        tower.stop()
