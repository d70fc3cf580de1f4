"""CURVE keys derived from a node's Ed25519 identity (dafka.security.curve_keys)."""

from __future__ import annotations

import nacl.bindings
import pytest
from zmq.utils import z85

from dafka.errors import ConfigError
from dafka.security.curve_keys import (
    CurveConfig,
    curve_keys,
    curve_public_of,
    curve_public_z85,
    parse_public_key,
)
from dafka.security.identity import Identity


def test_curve_keys_are_z85_and_round_trip() -> None:
    identity = Identity.from_seed(bytes(range(32)))
    public, secret = curve_keys(identity)
    assert len(public) == 40 and len(secret) == 40
    assert z85.encode(z85.decode(public)) == public
    assert len(z85.decode(secret)) == 32


def test_both_derivations_name_the_same_curve_key() -> None:
    identity = Identity.from_seed(bytes(range(32)))
    public, secret = curve_keys(identity)
    # from the public Ed25519 key alone (what a beacon carries)
    assert curve_public_z85(identity.public_key) == public
    assert z85.encode(curve_public_of(identity.public_key)) == public
    # and the derived secret's own public half is that key
    assert nacl.bindings.crypto_scalarmult_base(z85.decode(secret)) == z85.decode(public)


def test_distinct_identities_have_distinct_curve_keys() -> None:
    one, two = Identity.from_seed(b"\x01" * 32), Identity.from_seed(b"\x02" * 32)
    assert curve_keys(one)[0] != curve_keys(two)[0]


@pytest.mark.parametrize("bad", [b"", b"\x00" * 31, "x" * 32])
def test_curve_public_of_refuses_non_keys(bad: object) -> None:
    with pytest.raises(ConfigError):
        curve_public_of(bad)  # type: ignore[arg-type]


def test_parse_public_key() -> None:
    identity = Identity.generate()
    assert parse_public_key(identity.public_key.hex()) == identity.public_key
    with pytest.raises(ConfigError):
        parse_public_key("zz")


def test_curve_config_defaults_off_and_lists_allowed_keys() -> None:
    assert CurveConfig().enabled is False
    assert CurveConfig().allowed_z85() is None
    identity = Identity.generate()
    config = CurveConfig(True).with_allowed([identity.public_key])
    assert config.allowed_z85() == [curve_keys(identity)[0]]
