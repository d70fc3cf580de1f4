"""Transport security: ZMTP CURVE keys derived from a node's Ed25519 identity.

A node has one key (:class:`dafka.security.identity.Identity`, ``node.key``). CURVE needs a
Curve25519 key pair; it is derived from the Ed25519 one (the birational map
libsodium exposes as ``crypto_sign_ed25519_{pk,sk}_to_curve25519``), so the node's
one key, and so its node ID, also names its CURVE key. Anyone who knows a node's
Ed25519 public key (beacons carry it, see ``docs/wire.md`` §6) computes its CURVE
public key with :func:`curve_public_of`; nobody learns anything from the node ID
alone (it is a hash).

:class:`CurveConfig` says whether a node uses CURVE at all and which client keys
its servers accept (``None``: any client that completes the CURVE handshake).
:func:`make_server`, :func:`make_client` and :func:`start_authenticator` apply it to
pyzmq sockets and a context. Off by default: every socket is ZMTP NULL unless a
node is started with ``--curve`` (see ``docs/security.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import nacl.bindings
import nacl.exceptions
import zmq
from zmq.utils import z85

from ..errors import ConfigError

if TYPE_CHECKING:
    from zmq.auth.thread import ThreadAuthenticator

    from .identity import Identity

log = logging.getLogger(__name__)

__all__ = [
    "CURVE_KEY_BYTES",
    "CurveConfig",
    "curve_keys",
    "curve_public_of",
    "curve_public_z85",
    "make_client",
    "make_server",
    "node_ids_of_curve_key",
    "parse_public_key",
    "start_authenticator",
]

CURVE_KEY_BYTES: Final = 32
ZAP_DOMAIN: Final = "dafka"


def curve_keys(identity: Identity) -> tuple[bytes, bytes]:
    """``(public_z85, secret_z85)``: the CURVE key pair ``identity`` owns (40 bytes each)."""
    secret = nacl.bindings.crypto_sign_ed25519_sk_to_curve25519(identity._secret)
    public = nacl.bindings.crypto_sign_ed25519_pk_to_curve25519(identity.public_key)
    return z85.encode(public), z85.encode(secret)


def curve_public_of(ed25519_public: bytes) -> bytes:
    """The raw 32-byte CURVE public key of an Ed25519 public key.

    Raises :class:`ConfigError` when ``ed25519_public`` is not a 32-byte curve point.
    """
    if not isinstance(ed25519_public, bytes) or len(ed25519_public) != CURVE_KEY_BYTES:
        raise ConfigError("an Ed25519 public key is 32 bytes")
    try:
        return nacl.bindings.crypto_sign_ed25519_pk_to_curve25519(ed25519_public)
    except (nacl.exceptions.CryptoError, ValueError, TypeError) as exc:
        raise ConfigError("not an Ed25519 public key (not a curve point)") from exc


def curve_public_z85(ed25519_public: bytes) -> bytes:
    """:func:`curve_public_of` in Z85 (40 bytes), as pyzmq's socket options take it."""
    return z85.encode(curve_public_of(ed25519_public))


_P25519 = (1 << 255) - 19


def node_ids_of_curve_key(curve_public: bytes | str) -> frozenset[str]:
    """The node IDs whose Ed25519 key maps to this CURVE public key (Z85, 40 characters, as
    a ZAP ``User-Id`` gives it; or 32 raw bytes): the inverse of :func:`curve_public_of`.

    The map from Ed25519 (Edwards ``y``) to Curve25519 (Montgomery ``u = (1 + y) / (1 - y)``)
    forgets the sign of ``x``, so ``y = (u - 1) / (u + 1)`` names two Ed25519 keys, a point
    and its negation, and both node IDs are returned. Holding the CURVE secret of ``u`` is
    holding the scalar of one of them, and the negation's scalar follows from it, so no one
    gains a node ID whose key they do not own. Empty for a malformed key."""
    from zmq.utils import z85

    from .identity import node_id_for

    try:
        raw = z85.decode(curve_public) if len(curve_public) == 40 else bytes(curve_public)  # type: ignore[arg-type]
    except (ValueError, TypeError, KeyError, IndexError):
        return frozenset()
    if len(raw) != CURVE_KEY_BYTES:
        return frozenset()
    u = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    if u >= _P25519 or (u + 1) % _P25519 == 0:
        return frozenset()
    y = (u - 1) * pow(u + 1, -1, _P25519) % _P25519
    # guard: curve-key-maps-back-node
    return frozenset(node_id_for((y | sign << 255).to_bytes(32, "little")) for sign in (0, 1))


def parse_public_key(text: str) -> bytes:
    """An Ed25519 public key given as 64 hex characters (``dafka-keys show``)."""
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) != CURVE_KEY_BYTES:
        raise ConfigError(f"{text!r} is not a public key (64 hex characters)")
    curve_public_of(key)
    return key


@dataclass(frozen=True, slots=True)
class CurveConfig:
    """Whether a node speaks CURVE, and which clients its servers accept.

    ``allowed`` holds Ed25519 public keys (32 bytes each); ``None`` lets any client
    that completes a CURVE handshake connect (what a client may then *read* is the
    stores' read ACL's business).
    """

    enabled: bool = False
    allowed: frozenset[bytes] | None = None

    @classmethod
    def off(cls) -> CurveConfig:
        return cls(False, None)

    def with_allowed(self, keys: Iterable[bytes] | None) -> CurveConfig:
        return CurveConfig(self.enabled, None if keys is None else frozenset(keys))

    def allowed_z85(self) -> list[bytes] | None:
        if self.allowed is None:
            return None
        return [curve_public_z85(key) for key in sorted(self.allowed)]


def make_server(sock: zmq.Socket, config: CurveConfig, identity: Identity) -> None:
    """Make ``sock`` (before it binds) a CURVE server under ``identity``'s key, if on."""
    # guard: curve-servers
    if not config.enabled:
        return
    public, secret = curve_keys(identity)
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.zap_domain = ZAP_DOMAIN.encode()
    sock.curve_server = True


def make_client(
    sock: zmq.Socket, config: CurveConfig, identity: Identity, server_ed25519_public: bytes
) -> None:
    """Make ``sock`` (before it connects) a CURVE client of the server that owns
    ``server_ed25519_public``, authenticating as ``identity``, if on."""
    if not config.enabled:
        return
    public, secret = curve_keys(identity)
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_serverkey = curve_public_z85(server_ed25519_public)


class _Allowed:
    """The ZAP credentials callback: the client CURVE keys (Z85) a node accepts."""

    def __init__(self) -> None:
        self.keys: frozenset[bytes] | None = None

    def callback(self, domain: str, client_key: bytes) -> bool:
        keys = self.keys
        allowed = keys is None or client_key in keys
        if not allowed:
            log.warning("curve.refused domain=%s client_key=%s", domain, client_key.decode())
        return allowed


def start_authenticator(
    ctx: zmq.Context, config: CurveConfig, provider: Any = None
) -> ThreadAuthenticator | None:
    """Start the ZAP handler of ``ctx`` (one per node context), if CURVE is on.

    Clients whose key is not in ``config.allowed`` (when given) fail the handshake; a
    ``provider`` (``callback(domain, client_key) -> bool``, e.g. a node's
    :class:`dafka.security.curve_policy.ClientGate`) decides instead when given.
    The handler sets each connection's ``User-Id`` to the client's CURVE public key
    in Z85 (``frame.get("User-Id")`` on a received frame). Stop it with ``.stop()``
    before the context terminates.
    """
    if not config.enabled:
        return None
    from zmq.auth.thread import ThreadAuthenticator

    auth = ThreadAuthenticator(ctx, log=logging.getLogger(__name__ + ".zap"))
    auth.start()
    if provider is not None:
        auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=provider)
        return auth
    auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=_Allowed())
    update_allowed(auth, config)
    return auth


def update_allowed(auth: ThreadAuthenticator, config: CurveConfig) -> None:
    """Replace the set of client keys ``auth`` accepts (e.g. after a metadata change)."""
    provider = auth.credentials_providers[ZAP_DOMAIN]
    allowed = config.allowed_z85()
    provider.keys = None if allowed is None else frozenset(allowed)
    log.info("curve.allowed count=%s", "any" if allowed is None else len(allowed))
