"""CURVE on the Raft ports: peer keys, the ZAP policy, and the binding of a peer ID to its key.

Off by default: a peer without a :class:`RaftCurve` speaks NULL, as the ØMQ RAFT
reference server does. With one:

* the ROUTER and the StateBroadcast PUB are CURVE servers with the peer's key; a ZAP
  handler (:class:`zmq.auth.thread.ThreadAuthenticator` on the peer's own context, domain
  :data:`ZAP_DOMAIN`) admits the configured peers' keys, the admin keys, and client keys
  (any key by default: reads are open, metadata writes are signed by admin keys anyway;
  or only ``client_keys``). NULL connections are refused at the handshake.
* each DEALER to another peer is a CURVE client that expects the key configured for that
  peer, so every response read on it comes from that key. A peer without a configured
  key gets no DEALER.
* every peer RPC read on the ROUTER (RequestVote, AppendEntries, InstallSnapshot,
  TimeoutNow) must carry, as its ZAP ``User-Id``, the key configured for the peer ID it
  names (candidate or leader id): anything else is dropped and counted before the core
  sees it (:meth:`RaftCurve.peer_allowed`).
* a ConfigUpdate is accepted only from a peer or admin key, and each peer it names must
  have a configured key (:meth:`RaftCurve.config_problem`).

Keys are Curve25519, derived from Ed25519 identities (a tower's node key, or a
``dafka-node-key-v1`` key file) by :mod:`dafka.security.curve_keys` (libsodium's
``crypto_sign_ed25519_*_to_curve25519``), and carried in Z85 (40 characters) as pyzmq's socket options and ZAP user ids are. Peer
lists give a peer's Ed25519 public key in hex after its URL: ``ID=URL@PUBHEX``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import zmq
from zmq.auth.thread import ThreadAuthenticator

from ...errors import ConfigError
from ...security.curve_keys import curve_keys, curve_public_z85
from ...security.identity import Identity

__all__ = [
    "ZAP_DOMAIN",
    "ClientCurve",
    "RaftCurve",
    "RaftZap",
    "curve_public_key",
    "curve_secret_key",
    "parse_public_hex",
    "split_key",
]

log = logging.getLogger(__name__)

ZAP_DOMAIN = "dafka-raft"


def curve_public_key(ed25519_public: bytes) -> bytes:
    """The Z85 Curve25519 public key of a 32-byte Ed25519 public key."""
    return curve_public_z85(ed25519_public)


def curve_secret_key(identity: Identity) -> bytes:
    """The Z85 Curve25519 secret key of an Ed25519 identity."""
    return curve_keys(identity)[1]


def parse_public_hex(text: str, what: str) -> bytes:
    """A 64-hex Ed25519 public key as its Z85 Curve25519 key; :class:`ConfigError` if not."""
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ConfigError(f"{what}: a public key is 64 hex characters, got {text!r}")
    return curve_public_key(raw)


def split_key(spec: str, what: str) -> tuple[str, bytes | None]:
    """``URL@PUBHEX`` → (URL, Z85 Curve25519 key); ``URL`` → (URL, None)."""
    url, sep, key = spec.rpartition("@")
    if not sep:
        return spec, None
    return url, parse_public_hex(key, what)


@dataclass(frozen=True, slots=True)
class RaftCurve:
    """A peer's CURVE settings (Z85 keys). See the module docstring."""

    public_key: bytes
    secret_key: bytes
    peer_keys: Mapping[str, bytes]
    """PEER ID → Curve25519 key of every peer that is or may become a member (ours too)."""
    admin_keys: frozenset[bytes] = frozenset()
    """Client keys that may send ConfigUpdate (besides the peers' keys)."""
    client_keys: frozenset[bytes] | None = None
    """Client keys admitted at all; None: any key (open reads)."""
    _by_key: Mapping[bytes, frozenset[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_key: dict[bytes, set[str]] = {}
        for peer_id, key in self.peer_keys.items():
            by_key.setdefault(key, set()).add(peer_id)
        object.__setattr__(self, "_by_key", {k: frozenset(v) for k, v in by_key.items()})

    @classmethod
    def for_identity(
        cls,
        identity: Identity,
        peer_keys: Mapping[str, bytes],
        admin_keys: Iterable[bytes] = (),
        client_keys: Iterable[bytes] | None = None,
    ) -> RaftCurve:
        """Settings for a peer whose Ed25519 identity is ``identity``."""
        return cls(
            curve_public_key(identity.public_key),
            curve_secret_key(identity),
            dict(peer_keys),
            frozenset(admin_keys),
            None if client_keys is None else frozenset(client_keys),
        )

    def admits(self, key: bytes) -> bool:
        """The ZAP decision for a connecting Z85 key."""
        if key in self._by_key or key in self.admin_keys:
            return True
        return self.client_keys is None or key in self.client_keys

    def peer_allowed(self, user_id: bytes | None, peer_id: str) -> bool:
        """Whether a peer RPC naming ``peer_id`` may come from the key ``user_id``."""
        # guard: raft-curve-key-binding-compares
        return user_id is not None and self.peer_keys.get(peer_id) == user_id

    def config_problem(self, user_id: bytes | None, peer_ids: Iterable[str]) -> str | None:
        """Why a ConfigUpdate from ``user_id`` naming ``peer_ids`` is refused (None: not)."""
        # guard: raft-configupdate-needs-peer-admin
        if user_id is None or (user_id not in self._by_key and user_id not in self.admin_keys):
            return "ConfigUpdate needs a peer or admin CURVE key"
        missing = sorted(p for p in peer_ids if p not in self.peer_keys)
        # guard: raft-configupdate-peers-need-curve
        if missing:
            return f"no CURVE key configured for peer(s) {', '.join(missing)}"
        return None

    def server(self, sock: zmq.Socket[Any]) -> None:
        """Make ``sock`` (ROUTER or PUB) a CURVE server checked by our ZAP handler."""
        sock.curve_secretkey = self.secret_key
        sock.curve_publickey = self.public_key
        sock.curve_server = True
        sock.zap_domain = ZAP_DOMAIN.encode()

    def client(self, sock: zmq.Socket[Any], server_key: bytes) -> None:
        """Make ``sock`` a CURVE client with our key, expecting ``server_key``."""
        sock.curve_secretkey = self.secret_key
        sock.curve_publickey = self.public_key
        sock.curve_serverkey = server_key


@dataclass(frozen=True, slots=True)
class ClientCurve:
    """A Raft client's CURVE settings: its key pair and the peers' keys by URL. A peer
    whose key is not known here is not reachable (the client does not fall back to NULL)."""

    public_key: bytes
    secret_key: bytes
    server_keys: Mapping[str, bytes]

    @classmethod
    def ephemeral(cls, server_keys: Mapping[str, bytes]) -> ClientCurve:
        """A fresh key pair (a reader that needs no identity)."""
        public, secret = zmq.curve_keypair()
        return cls(public, secret, dict(server_keys))

    @classmethod
    def for_identity(cls, identity: Identity, server_keys: Mapping[str, bytes]) -> ClientCurve:
        """The key pair of an Ed25519 identity (an admin's, for ConfigUpdate)."""
        return cls(
            curve_public_key(identity.public_key), curve_secret_key(identity), dict(server_keys)
        )

    def apply(self, sock: zmq.Socket[Any], url: str) -> None:
        """Make ``sock`` (about to connect to ``url``) a CURVE client."""
        server = self.server_keys.get(url)
        if server is None:
            log.warning("raft.curve.no_server_key url=%s", url)
            return
        sock.curve_secretkey = self.secret_key
        sock.curve_publickey = self.public_key
        sock.curve_serverkey = server


class _Policy:
    """ZAP credentials provider: asks the :class:`RaftCurve`."""

    def __init__(self, curve: RaftCurve) -> None:
        self.curve = curve
        self.refused = 0

    def callback(self, domain: str, key: bytes) -> bool:
        if domain == ZAP_DOMAIN and self.curve.admits(key):
            return True
        self.refused += 1
        log.warning("raft.curve.refused key=%s count=%d", key.decode("ascii"), self.refused)
        return False


class RaftZap:
    """The ZAP handler of one context (the peer's own): start, then stop at teardown."""

    def __init__(self, context: zmq.Context[Any], curve: RaftCurve) -> None:
        self._auth = ThreadAuthenticator(context, log=logging.getLogger(__name__ + ".zap"))
        self.policy = _Policy(curve)

    def start(self) -> RaftZap:
        self._auth.start()
        self._auth.configure_curve_callback(domain=ZAP_DOMAIN, credentials_provider=self.policy)
        return self

    def stop(self) -> None:
        self._auth.stop()
