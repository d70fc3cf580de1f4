"""A node's Ed25519 identity, and node IDs derived from public keys.

Under the ``signed`` wire profile a node ID is not random: it is derived from the
node's public key, so a partition name certifies the key that may write it. A
record batch for partition *P* is genuine only if it is signed by a key that hashes
to *P*; nobody needs a registry to check authorship.

Node ID derivation (:func:`node_id_for`)::

    digest  = BLAKE2b(public_key, digest_size=16, person=b"dafka-node-id")
    digest[6] = (digest[6] & 0x0F) | 0x80     # UUID version 8 (RFC 9562 §5.8)
    digest[8] = (digest[8] & 0x3F) | 0x80     # RFC 9562 variant (0b10)
    node_id = digest.hex().upper()            # 32 upper-case hex characters

so it is a UUIDv8 written like the reference's node IDs, and partition IDs look the
same under both profiles. 122 bits of the hash survive, so making a second key for
someone else's partition costs about 2**122 BLAKE2b evaluations. (The ``uuid6``
package's ``uuid8()`` is time-based and random, not derived from a value, so the
bits are set here.)

The key file ``<state dir>/node.key`` (mode 0600) holds the 32-byte Ed25519 seed::

    dafka-node-key-v1
    seed <64 hex characters>
    public <64 hex characters>
    node_id <32 hex characters>

The public key and node ID lines are redundant on purpose: they are checked
against the seed on every load, so a damaged file is an error rather than a
silently different identity, which would be a new partition. A key file that
group or others may access is refused, as ssh refuses a private key.

Ed25519 costs tens of microseconds per signature (see ``docs/wire.md`` §9), so
the wire signs one record *batch*, never one record.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from pathlib import Path
from typing import Final

import nacl.bindings
import nacl.exceptions

from ..errors import ConfigError
from .private_dirs import fsync_dir, make_private_dirs

log = logging.getLogger(__name__)

__all__ = [
    "KEY_FILE",
    "NODE_ID_PERSON",
    "Identity",
    "create",
    "create_file",
    "load",
    "load_file",
    "load_or_create",
    "node_id_bytes_for",
    "node_id_for",
    "verify",
]

KEY_FILE: Final = "node.key"
NODE_ID_PERSON: Final = b"dafka-node-id"
PUBLIC_KEY_BYTES: Final = 32
SEED_BYTES: Final = 32
SIGNATURE_BYTES: Final = 64

_MAGIC = "dafka-node-key-v1"
_MAX_KEY_FILE = 4096


def node_id_bytes_for(public_key: bytes) -> bytes:
    """The 16 raw octets of the node ID that ``public_key`` (32 bytes) owns."""
    if len(public_key) != PUBLIC_KEY_BYTES:
        raise ValueError(f"an Ed25519 public key is 32 bytes, not {len(public_key)}")
    digest = bytearray(hashlib.blake2b(public_key, digest_size=16, person=NODE_ID_PERSON).digest())
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    return bytes(digest)


def node_id_for(public_key: bytes) -> str:
    """The node ID (32 upper-case hex characters, a UUIDv8) that ``public_key`` owns."""
    return node_id_bytes_for(public_key).hex().upper()


def verify(public_key: bytes, data: bytes, signature: bytes) -> bool:
    """True if ``signature`` is ``public_key``'s Ed25519 signature of ``data``.

    Never raises: a key or signature of the wrong length or type, or a key that is
    not a curve point, is simply not a valid signature.
    """
    try:
        if len(public_key) != PUBLIC_KEY_BYTES or len(signature) != SIGNATURE_BYTES:
            return False
        nacl.bindings.crypto_sign_open(bytes(signature) + bytes(data), bytes(public_key))
    except (nacl.exceptions.CryptoError, ValueError, TypeError):
        return False
    return True


class Identity:
    """An Ed25519 key pair and the node ID it owns.

    Make one with :meth:`generate`, :meth:`from_seed` or :func:`load_or_create`.
    The secret never appears in ``repr``. Two identities are equal when their
    public keys are.
    """

    __slots__ = ("_secret", "_seed", "node_id", "node_id_bytes", "public_key")

    public_key: bytes
    """The 32-byte Ed25519 public key."""
    node_id: str
    """32 upper-case hex characters: :func:`node_id_for` of :attr:`public_key`."""
    node_id_bytes: bytes
    """The node ID as 16 raw octets (how the wire carries a partition)."""

    def __init__(self, seed: bytes) -> None:
        if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
            raise ValueError("an Ed25519 seed is 32 bytes")
        public_key, secret = nacl.bindings.crypto_sign_seed_keypair(seed)
        self._seed = seed
        self._secret = secret
        self.public_key = public_key
        self.node_id_bytes = node_id_bytes_for(public_key)
        self.node_id = self.node_id_bytes.hex().upper()

    @classmethod
    def generate(cls) -> Identity:
        """A fresh random identity (not persisted)."""
        return cls(os.urandom(SEED_BYTES))

    @classmethod
    def from_seed(cls, seed: bytes) -> Identity:
        """The identity of a 32-byte seed; deterministic, for tests and key files."""
        return cls(seed)

    def sign(self, data: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``data`` (deterministic)."""
        return nacl.bindings.crypto_sign(data, self._secret)[:SIGNATURE_BYTES]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Identity):
            return NotImplemented
        return self.public_key == other.public_key

    def __hash__(self) -> int:
        return hash(self.public_key)

    def __repr__(self) -> str:
        return f"Identity(node_id={self.node_id!r})"

    def _key_file_text(self) -> str:
        return (
            f"{_MAGIC}\nseed {self._seed.hex()}\npublic {self.public_key.hex()}\n"
            f"node_id {self.node_id}\n"
        )


# ------------------------------------------------------------------ key file


def _key_path(state_dir: str | os.PathLike[str]) -> Path:
    return Path(state_dir) / KEY_FILE


def _parse_key_file(path: Path, text: str, what: str = "node key") -> Identity:
    corrupt = ConfigError(
        f"{path} is not a valid Dafka {what}; restore it from a backup, or remove it to "
        + ("start a new identity (a new partition)" if what == "node key" else "make a new one")
    )
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != 4 or lines[0] != _MAGIC or not lines[1].startswith("seed "):
        raise corrupt
    try:
        seed = bytes.fromhex(lines[1][5:])
    except ValueError:
        raise corrupt from None
    if len(seed) != SEED_BYTES:
        raise corrupt
    identity = Identity(seed)
    if identity._key_file_text() != "\n".join(lines) + "\n":
        # the public key or node ID line disagrees with the seed: the file is damaged
        raise corrupt
    return identity


def load(state_dir: str | os.PathLike[str]) -> Identity:
    """Read the identity kept in ``state_dir``.

    Raises :class:`ConfigError` (one line, naming the file) when there is no key
    file, when group or others may access it, or when it is damaged.
    """
    path = _key_path(state_dir)
    if not (path.exists() or path.is_symlink()):
        raise ConfigError(
            f"no node key in {path.parent}; create one with: dafka-keys create --state-dir "
            f"{path.parent}"
        )
    return load_file(path)


def load_file(path: Path, what: str = "node key") -> Identity:
    """Read a key file at ``path`` (the format above); one ConfigError naming the file
    when it is missing, group or others may access it, or it is damaged."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(f"no {what} at {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path} is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            raise ConfigError(
                f"{path} has mode {mode:04o}: group or others may read it; "
                f"make it private with: chmod 600 {path}"
            )
        if st.st_size > _MAX_KEY_FILE:
            raise ConfigError(f"{path} is {st.st_size} bytes long; a {what} file is far smaller")
        data = os.read(fd, _MAX_KEY_FILE + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    return _parse_key_file(path, text, what)


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist) with mode 0600, write ``data``, fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)  # exactly 0600, whatever the umask
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def create(state_dir: str | os.PathLike[str], identity: Identity | None = None) -> Identity:
    """Make a new identity (or persist ``identity``) in ``state_dir``; never replace one.

    The key is written to a temporary file created with ``O_CREAT | O_EXCL`` and
    mode 0600, fsynced, then hard-linked to ``node.key`` (which fails if the name
    exists) and the directory fsynced: a crash leaves either no key file or a
    complete one, and an existing key is never overwritten. Raises
    :class:`ConfigError` if the key file already exists or cannot be written.
    """
    return create_file(Path(state_dir) / KEY_FILE, identity)


def create_file(path: Path, identity: Identity | None = None, what: str = "node key") -> Identity:
    """:func:`create` for a key file at any ``path`` (its directory is made 0700)."""
    directory = path.parent
    identity = identity if identity is not None else Identity.generate()
    try:
        make_private_dirs(directory)
        if path.exists() or path.is_symlink():
            raise FileExistsError(path)
        data = identity._key_file_text().encode("ascii")
        tmp = directory / f".{path.name}.{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
        _write_new(tmp, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:
            # No hard links here (some network or FUSE file systems): create the
            # key file itself exclusively. A crash mid-write then leaves a short
            # file, which load() refuses as damaged rather than replacing it.
            _write_new(path, data)
        finally:
            tmp.unlink(missing_ok=True)
        fsync_dir(directory)
    except FileExistsError:
        why = " (it is the node's partition identity)" if what == "node key" else ""
        raise ConfigError(f"{path} already exists; refusing to replace a {what}{why}") from None
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
    log.info("identity.created path=%s what=%s node_id=%s", path, what, identity.node_id)
    return identity


def load_or_create(state_dir: str | os.PathLike[str]) -> Identity:
    """The identity kept in ``state_dir``, made and persisted on first use.

    A key file that exists but cannot be used (unreadable, too permissive,
    damaged) raises :class:`ConfigError`; it is never silently replaced, since a
    new key would be a new node ID and so a new partition. Call it on a
    directory the caller holds (``dafka.storage.state_dir.StateDir`` locks it).
    """
    path = _key_path(state_dir)
    if not (path.exists() or path.is_symlink()):
        try:
            return create(state_dir)
        except ConfigError:
            if not path.exists():
                raise
            # Someone created it between our check and our link: use theirs.
    return load(state_dir)
