"""The keys of numbered partitions: one Dafka producer identity per Kafka partition.

Kafka partition ``i`` of topic ``T`` is written by one Dafka producer whose Ed25519 seed is
derived from a secret every listener of the cluster holds::

    seed = BLAKE3(key=secret, b"dafka-kafka partition v1\\0" + T (UTF-8) + b"\\0" + u32be(i))

so whichever listener holds the partition's lease signs with the same key, and its node ID
(the hash of the public key, :func:`dafka.security.identity.node_id_for`) is the same Dafka
partition: a takeover continues the partition, it never starts a new one.

The secret is a file of exactly 32 random bytes, mode 0600, made on first start when missing
(:func:`load_or_create_secret`). Each partition's producer keeps its state in
``<state dir>/partitions/<TOPIC-HASH>/<i>/`` (:func:`partition_dir`), where the key file is
written before the producer opens it (:func:`install_key`): the producer then loads that key
as it loads any node key, and recovers its offsets as a restarted producer does.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from functools import lru_cache
from pathlib import Path
from typing import Final

from blake3 import blake3

from ..errors import ConfigError
from ..security import identity as identity_module
from ..security.identity import Identity
from ..security.private_dirs import fsync_dir, make_private_dirs

log = logging.getLogger(__name__)

__all__ = [
    "DOMAIN",
    "MAX_PARTITION",
    "SECRET_BYTES",
    "SECRET_FILE",
    "install_key",
    "load_or_create_secret",
    "partition_dir",
    "partition_identity",
    "partition_seed",
    "secret_fingerprint",
]

DOMAIN: Final = b"dafka-kafka partition v1\0"
SECRET_BYTES: Final = 32
SECRET_FILE: Final = "kafka-partitions.secret"
"""The secret's file name in a listener's state directory (``--secret-file`` overrides)."""
MAX_PARTITION: Final = 2**32 - 1
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_SAFE_PREFIX = 48


def secret_fingerprint(secret: bytes) -> str:
    """A public name of ``secret`` (32 hex digits, a node ID's form), for the cluster setting
    ``kafka_secret``: listeners compare it, and it reveals nothing of the secret."""
    if len(secret) != SECRET_BYTES:
        raise ValueError(f"the partition secret is {SECRET_BYTES} bytes, not {len(secret)}")
    # no NUL after the domain, where every seed's input has one: never a partition's seed
    return blake3(DOMAIN + b"secret fingerprint", key=secret).digest()[:16].hex().upper()


def partition_seed(secret: bytes, topic: str, index: int) -> bytes:
    """The 32-byte Ed25519 seed of Kafka partition ``index`` of ``topic``."""
    if len(secret) != SECRET_BYTES:
        raise ValueError(f"the partition secret is {SECRET_BYTES} bytes, not {len(secret)}")
    if isinstance(index, bool) or not 0 <= index <= MAX_PARTITION:
        raise ValueError(f"partition index {index!r} is not a u32")
    data = DOMAIN + topic.encode() + b"\0" + index.to_bytes(4, "big")
    return blake3(data, key=secret).digest()


@lru_cache(maxsize=65536)
def partition_identity(secret: bytes, topic: str, index: int) -> Identity:
    """The identity (and so the Dafka partition, its ``node_id``) of partition ``index``."""
    return Identity.from_seed(partition_seed(secret, topic, index))


def partition_dir(state_dir: Path, topic: str, index: int) -> Path:
    """``<state_dir>/partitions/<TOPIC-HASH>/<index>``: the topic's name made safe for a
    file name (letters, digits, ``._-``; at most 48 of them) and a hash of the whole name,
    so no topic name, however hostile, names a path outside ``state_dir/partitions``."""
    # guard: partition-dir-safe-topic-name
    safe = _SAFE.sub("_", topic)[:_SAFE_PREFIX].lstrip(".") or "_"
    digest = hashlib.blake2b(topic.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return Path(state_dir) / "partitions" / f"{safe}-{digest}" / str(int(index))


def install_key(directory: Path, identity: Identity) -> None:
    """Make ``directory`` hold ``identity`` as its node key (``node.key``, 0600) before a
    producer opens it; a key already there must be the same one (:class:`ConfigError`
    otherwise: the directory belongs to another partition, or the secret changed)."""
    make_private_dirs(directory)
    key_file = directory / identity_module.KEY_FILE
    if key_file.exists() or key_file.is_symlink():
        held = identity_module.load(directory)
        if held != identity:
            raise ConfigError(
                f"{key_file} holds the key of partition {held.node_id}, not {identity.node_id}: "
                "the listener's partition secret changed, or the directory was moved; restore "
                "the secret or remove the directory"
            )
        return
    identity_module.create(directory, identity)


def load_or_create_secret(path: Path) -> bytes:
    """The 32-byte partition secret at ``path``, made (random, 0600) when missing.

    Refuses a file group or others may access, one that is not a regular file, and one
    that is not exactly 32 bytes: one :class:`ConfigError` line naming the file."""
    path = Path(path)
    if not (path.exists() or path.is_symlink()):
        make_private_dirs(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            return load_or_create_secret(path)  # made meanwhile by another listener
        except OSError as exc:
            raise ConfigError(f"cannot create {path}: {exc.strerror or exc}") from exc
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, os.urandom(SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(path.parent)
        log.info("kafka.secret.created path=%s", path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        raise ConfigError(
            f"cannot read the partition secret {path}: {exc.strerror or exc}"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path} is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
        # guard: partition-secret-private-file
        if mode & 0o077:
            raise ConfigError(
                f"{path} has mode {mode:04o}: group or others may read the partition secret "
                f"(whoever holds it can sign as every Kafka partition); chmod 600 {path}"
            )
        data = os.read(fd, SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        raise ConfigError(
            f"{path} holds {len(data)} bytes; a partition secret is exactly {SECRET_BYTES} "
            "random bytes (copy it from another listener of the cluster)"
        )
    return data
