"""The CURVE policy of the Raft ports (:mod:`dafka.raft.peer._curve`), without sockets."""

from __future__ import annotations

import nacl.bindings
import pytest
from zmq.utils import z85

from dafka.errors import ConfigError
from dafka.raft.peer import RaftCurve, curve_public_key, parse_public_hex, split_key
from dafka.raft.peer._curve import curve_secret_key
from dafka.security.identity import Identity

P1 = Identity.from_seed(b"\x01" * 32)
P2 = Identity.from_seed(b"\x02" * 32)
ADMIN = Identity.from_seed(b"\x03" * 32)
OTHER = Identity.from_seed(b"\x04" * 32)


def _key(identity: Identity) -> bytes:
    return curve_public_key(identity.public_key)


def _curve(client_keys: frozenset[bytes] | None = None) -> RaftCurve:
    keys = {"p1": _key(P1), "p2": _key(P2)}
    return RaftCurve.for_identity(P1, keys, [_key(ADMIN)], client_keys)


def test_the_derived_secret_and_public_keys_are_one_pair():
    secret = z85.decode(curve_secret_key(P1))
    public = nacl.bindings.crypto_scalarmult_base(secret)
    assert z85.encode(public) == _key(P1)
    assert len(_key(P1)) == 40 and _key(P1) != _key(P2)


def test_keys_in_peer_specs():
    assert split_key("tcp://h:1", "x") == ("tcp://h:1", None)
    assert split_key(f"tcp://h:1@{P2.public_key.hex()}", "x") == ("tcp://h:1", _key(P2))
    for bad in ("abcd", "zz" * 32, ""):
        with pytest.raises(ConfigError, match="64 hex"):
            parse_public_hex(bad, "--peer p2")


def test_a_peer_id_is_bound_to_its_key():
    curve = _curve()
    assert curve.peer_allowed(_key(P2), "p2")
    assert not curve.peer_allowed(_key(P1), "p2")  # another peer's key
    assert not curve.peer_allowed(_key(OTHER), "p2")  # a client's key
    assert not curve.peer_allowed(_key(OTHER), "ghost")  # an unknown peer
    assert not curve.peer_allowed(None, "p2")  # no ZAP user id at all


def test_zap_admits_peers_admins_and_clients_as_configured():
    assert _curve().admits(_key(OTHER))  # open reads by default
    closed = _curve(frozenset())
    assert closed.admits(_key(P2)) and closed.admits(_key(ADMIN))
    assert not closed.admits(_key(OTHER))


def test_config_updates_need_a_peer_or_admin_key_and_keyed_peers():
    curve = _curve()
    assert curve.config_problem(_key(ADMIN), ["p1", "p2"]) is None
    assert curve.config_problem(_key(P2), ["p1"]) is None
    assert "peer or admin" in (curve.config_problem(_key(OTHER), ["p1"]) or "")
    assert "peer or admin" in (curve.config_problem(None, ["p1"]) or "")
    assert "ghost" in (curve.config_problem(_key(ADMIN), ["p1", "ghost"]) or "")
