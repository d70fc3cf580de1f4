"""MetadataClient's listener calls, against a state machine standing in for the towers."""

from __future__ import annotations

import pytest

from dafka.errors import ConfigError, NothingToChange
from dafka.metadata.client import MetadataClient
from dafka.metadata.state import MetadataStateMachine, decode_config
from dafka.security.identity import Identity
from tests.admin import ADMIN, admin_sm

LISTENER = Identity.from_seed(bytes(range(1, 33)))
NATIVE = "0123456789ABCDEF0123456789ABCDEF"


def _client(sm: MetadataStateMachine, key: Identity | None) -> MetadataClient:
    client = MetadataClient(raft_urls=["tcp://127.0.0.1:9"], admin=ADMIN, listener=key)
    client.config = lambda: decode_config(sm.query([b"config"]))  # type: ignore[method-assign]

    def update(data: bytes) -> int:
        sm.apply_data(data)  # committed (applied or refused, as the log would)
        return sm.revision

    client.raft.update = update  # type: ignore[method-assign]
    return client


def test_a_listener_takes_renews_releases_and_numbers_with_its_own_key() -> None:
    sm = admin_sm()
    admin = _client(sm, None)
    listener = _client(sm, LISTENER)
    try:
        admin.create_topic("t", {"partitions": 2})
        admin.add_listener(LISTENER.public_key.hex())
        with pytest.raises(NothingToChange):
            admin.add_listener(LISTENER.public_key.hex())
        with pytest.raises(ConfigError, match="only grow"):
            admin.alter_topic("t", {"partitions": 1})
        listener.take_lease("p/t/1", 1, 7, "127.0.0.1:9092")
        listener.renew_leases([("p/t/1", 1)])
        assert listener.leases()["p/t/1"] == {
            "holder": LISTENER.public_key.hex(),
            "epoch": 1,
            "broker": 7,
            "endpoint": "127.0.0.1:9092",
            "beat": 1,
        }
        with pytest.raises(ConfigError, match="a take names epoch 2"):
            listener.take_lease("p/t/1", 1, 7, "127.0.0.1:9092")
        listener.number_partitions("t", [NATIVE.lower()])
        assert listener.numbering("t") == {NATIVE: 2}
        listener.release_lease("p/t/1", 1)
        assert listener.leases()["p/t/1"]["holder"] is None
        with pytest.raises(ConfigError, match="this key cannot change the metadata"):
            listener._write(listener.config(), "topic.create", LISTENER, topic="x", settings={})
        admin.remove_listener(LISTENER.public_key.hex())
        assert admin.listeners() == []
    finally:
        admin.close()
        listener.close()
