"""Signed metadata commands: the envelope an admin key signs, admin key files.

A change to the metadata is a RequestUpdate whose data is an *envelope*::

    {"v": 1, "op": "signed", "cmd": <command bytes>, "by": <32-byte Ed25519 public key>,
     "sig": <64-byte signature>}

``cmd`` is the MessagePack command of :mod:`.state` (``{"v": 1, "op": "topic.create",
...}``) plus ``base`` (the revision the admin read before writing) and ``id`` (16 random
bytes). ``sig`` signs ``b"dafka-meta-v1\\0" + cluster + b"\\0" + cmd`` (:func:`signed_bytes`),
so a command signed for one cluster, or any other signed Dafka object, is worth nothing
elsewhere. The state machine verifies the signature and that ``by`` is one of the
metadata's admins when it applies the entry (every peer and every follower decides alike).

Admin key files use the node key format of :mod:`dafka.security.identity` (mode 0600, the seed,
public key and node ID lines), at any path: ``dafka-keys create-admin FILE`` makes one,
``dafka-local`` keeps one in ``.dafka/admin.key`` (:data:`DEFAULT_ADMIN_KEY`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgpack

from ..errors import ConfigError
from ..security import identity

__all__ = [
    "ADMIN_KEY_ENV",
    "MAX_COMMAND_BYTES",
    "DEFAULT_ADMIN_KEY",
    "DOMAIN",
    "Envelope",
    "admin_key_path",
    "check_public_key",
    "create_admin_key",
    "load_admin_key",
    "open_envelope",
    "seal",
    "signed_bytes",
]

DOMAIN: Final = b"dafka-meta-v1\0"
ADMIN_KEY_ENV: Final = "DAFKA_ADMIN_KEY"
DEFAULT_ADMIN_KEY: Final = ".dafka/admin.key"
ID_BYTES: Final = 16
MAX_COMMAND_BYTES: Final = 1 << 20
"""The largest metadata command (the RequestUpdate data, a signed envelope whole) a
replica applies: the Raft log's default entry cap. Every replica refuses a larger one alike,
so that every signed command the state keeps as a proof fits in a snapshot's proof table
(:mod:`.proofs`), whatever entry cap a tower was configured with."""


@dataclass(frozen=True)
class Envelope:
    """A signed command as it arrived: nothing in it is checked yet."""

    command: bytes
    signer: bytes
    signature: bytes


def signed_bytes(cluster: str, command: bytes) -> bytes:
    """What an admin key signs for ``command`` in ``cluster``."""
    return DOMAIN + cluster.encode() + b"\0" + command


def seal(admin: identity.Identity, cluster: str, command: bytes) -> bytes:
    """RequestUpdate data: ``command`` signed by ``admin`` for ``cluster``."""
    return bytes(
        msgpack.packb(
            {
                "v": 1,
                "op": "signed",
                "cmd": command,
                "by": admin.public_key,
                "sig": admin.sign(signed_bytes(cluster, command)),
            },
            use_bin_type=True,
        )
    )


def open_envelope(obj: dict[str, Any]) -> Envelope:
    """The parts of a decoded envelope; ConfigError when one is missing or mistyped."""
    cmd, by, sig = obj.get("cmd"), obj.get("by"), obj.get("sig")
    if not isinstance(cmd, bytes) or not isinstance(by, bytes) or not isinstance(sig, bytes):
        raise ConfigError("a signed command needs cmd, by and sig (bytes)")
    if len(by) != identity.PUBLIC_KEY_BYTES or len(sig) != identity.SIGNATURE_BYTES:
        raise ConfigError("a signed command has a 32-byte key and a 64-byte signature")
    return Envelope(cmd, by, sig)


def check_public_key(text: object) -> str:
    """An admin public key as 64 lower-case hex characters; ConfigError otherwise."""
    if isinstance(text, bytes) and len(text) == identity.PUBLIC_KEY_BYTES:
        return text.hex()
    key = text.strip().lower() if isinstance(text, str) else ""
    try:
        raw = bytes.fromhex(key)
    except ValueError:
        raw = b""
    if len(raw) != identity.PUBLIC_KEY_BYTES:
        raise ConfigError(
            f"bad admin key {text!r}: an Ed25519 public key, 64 hex characters "
            "(dafka-keys show-admin FILE prints it)"
        )
    return raw.hex()


def admin_key_path(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$DAFKA_ADMIN_KEY``, else ``.dafka/admin.key``."""
    return Path(path or os.environ.get(ADMIN_KEY_ENV) or DEFAULT_ADMIN_KEY)


def load_admin_key(path: str | os.PathLike[str] | None = None) -> identity.Identity:
    """The admin key kept at :func:`admin_key_path` (``path``); one clear ConfigError when
    there is none or it cannot be used."""
    where = admin_key_path(path)
    if not (where.exists() or where.is_symlink()):
        raise ConfigError(
            f"no admin key at {where}: give --admin-key FILE or set {ADMIN_KEY_ENV} "
            "(dafka-local writes .dafka/admin.key; dafka-keys create-admin FILE makes one)"
        )
    return identity.load_file(where, what="admin key")


def create_admin_key(path: str | os.PathLike[str]) -> identity.Identity:
    """A new admin key written to ``path`` (mode 0600); never replaces a file."""
    return identity.create_file(Path(path), what="admin key")
