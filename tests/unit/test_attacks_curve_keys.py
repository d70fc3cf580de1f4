"""Which CURVE client keys a node admits, from the metadata (``dafka.security.curve_policy``):
with ``curve_clients = metadata`` a key the metadata does not name fails the handshake,
and the set follows the metadata live (docs/security.md "Who may connect")."""

from __future__ import annotations

import pytest

from dafka.errors import ConfigError
from dafka.metadata.client import tower_curve
from dafka.metadata.state import check_cluster_settings
from dafka.security.curve_keys import curve_keys
from dafka.security.curve_policy import ClientGate, metadata_node_ids
from dafka.security.identity import Identity
from tests.admin import ADMIN, admin_sm, signed

STORE, PRODUCER, READER, TOWER, FRIEND, STRANGER = (
    Identity.from_seed(bytes([i]) * 32) for i in range(1, 7)
)


def z85(who: Identity) -> bytes:
    return curve_keys(who)[0]


def config(curve_clients: str = "metadata", clients: list[str] | None = None) -> dict:
    sm = admin_sm()
    for op, fields in [
        ("store.trust", {"store": STORE.node_id}),
        ("topic.create", {"topic": "w", "settings": {"producers": [PRODUCER.node_id]}}),
        ("topic.create", {"topic": "r", "settings": {"consumers": [READER.node_id]}}),
        ("topic.create", {"topic": "open", "settings": {}}),
        ("cluster.set", {"settings": {"curve_clients": curve_clients, "clients": clients}}),
    ]:
        assert sm.apply_data(signed(sm, op, **fields)) is None, sm.last_error
    return sm.view()


def test_metadata_mode_admits_only_the_keys_the_metadata_names() -> None:
    gate = ClientGate([TOWER.public_key])
    gate.update(config())
    for who in (STORE, PRODUCER, READER, ADMIN, TOWER):
        assert gate.admits(z85(who)), who.node_id
    assert not gate.admits(z85(STRANGER))
    assert not gate.callback("dafka", z85(STRANGER))
    assert gate.refused == 1
    assert not gate.admits(b"not a key")


def test_a_key_is_refused_once_the_metadata_stops_naming_it() -> None:
    gate = ClientGate()
    gate.update(config(clients=[FRIEND.node_id]))
    assert gate.admits(z85(FRIEND))
    gate.update(config(clients=None))
    assert not gate.admits(z85(FRIEND))


def test_open_mode_admits_any_key_unless_the_node_was_given_curve_allow() -> None:
    open_gate = ClientGate([TOWER.public_key])
    open_gate.update(config("open"))
    assert open_gate.admits(z85(STRANGER))
    listed = ClientGate([FRIEND.public_key], allow_given=True)
    listed.update(config("open"))
    assert listed.admits(z85(FRIEND)) and listed.admits(z85(STORE))
    assert not listed.admits(z85(STRANGER))


def test_a_node_that_follows_the_metadata_is_closed_until_it_loads() -> None:
    gate = ClientGate([TOWER.public_key])
    assert gate.admits(z85(STRANGER))  # a node that follows no metadata: as before
    gate.hold()
    assert not gate.admits(z85(STRANGER))
    assert gate.admits(z85(TOWER))


def test_the_named_ids_cover_stores_acls_admins_and_clients() -> None:
    ids = metadata_node_ids(config(clients=[FRIEND.node_id]))
    assert {STORE.node_id, PRODUCER.node_id, READER.node_id, ADMIN.node_id, FRIEND.node_id} <= ids
    assert STRANGER.node_id not in ids


def test_cluster_settings_are_validated() -> None:
    assert check_cluster_settings({"curve_clients": "metadata", "curve": True}) == {
        "curve_clients": "metadata",
        "curve": True,
    }
    with pytest.raises(ConfigError, match="curve_clients"):
        check_cluster_settings({"curve_clients": "closed"})
    with pytest.raises(ConfigError, match="client"):
        check_cluster_settings({"clients": ["nope"]})


def test_metadata_views_speak_curve_to_towers_given_with_a_key() -> None:
    from dafka.config import parse_towers

    assert tower_curve(parse_towers("127.0.0.1:7000")) is None
    curve = tower_curve(parse_towers(f"127.0.0.1:7000@{TOWER.public_key.hex()}"), READER)
    assert curve is not None
    assert curve.public_key == z85(READER)
    assert curve.server_keys == {
        "tcp://127.0.0.1:7002": z85(TOWER),
        "tcp://127.0.0.1:7003": z85(TOWER),
    }


def test_a_handshake_during_the_hold_waits_for_the_load_then_is_decided() -> None:
    gate = ClientGate()
    gate.hold_wait = 0.0
    gate.hold()
    assert not gate.callback("dafka", z85(STORE))  # never loaded: refused after the wait

    class LoadsWhileWaiting:
        """The metadata arrives while the handshake waits (no thread, no sleep)."""

        def __init__(self) -> None:
            self.waited: list[float] = []

        def wait(self, timeout: float) -> bool:
            self.waited.append(timeout)
            gate.update(config())
            return True

        def set(self) -> None:
            pass

        def clear(self) -> None:
            pass

    settled = LoadsWhileWaiting()
    gate._settled = settled  # type: ignore[assignment]
    gate.hold_wait = 10.0
    gate.hold()
    assert gate.callback("dafka", z85(STORE))
    assert len(settled.waited) == 1 and 0 < settled.waited[0] <= 10.0
