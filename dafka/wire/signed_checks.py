"""What every part of the ``signed`` profile checks the same way, and the errors it raises.

The batch format (:mod:`.signed_batch`), the signed claims (:mod:`.signed_claims`)
and the frame codec (:mod:`.signed`) share these field sizes, topic and u64 checks
and error classes; :mod:`dafka.wire.signed` re-exports the errors. Pure, no zmq
import; every check raises only :class:`~dafka.errors.WireError` (or ``TypeError``
for a topic that is not a string).
"""

from __future__ import annotations

from typing import Final

from ..errors import WireError

__all__ = [
    "PUBLIC_KEY_BYTES",
    "SIGNATURE_BYTES",
    "U64_MAX",
    "BadSignature",
    "LimitExceeded",
    "WrongPartition",
    "WrongTopic",
    "check_u64",
    "encode_topic",
]

U64_MAX: Final = 2**64 - 1
PUBLIC_KEY_BYTES: Final = 32
"""An Ed25519 public key."""
SIGNATURE_BYTES: Final = 64
"""An Ed25519 signature."""


class BadSignature(WireError):
    """A signature that does not verify."""


class WrongPartition(WireError):
    """A key that does not own the partition named, or not the partition expected."""


class WrongTopic(WireError):
    """A batch or head of another topic than the one it was sent or asked for."""


class LimitExceeded(WireError):
    """A count or size over the profile's bounds (records, key, value, blob, topics)."""


def encode_topic(topic: str) -> bytes:
    """``topic`` as UTF-8, checked: 1 to 255 bytes, no NUL."""
    if not isinstance(topic, str):
        raise TypeError(f"topic must be a string, not {type(topic).__name__}")
    try:
        raw = topic.encode()
    except UnicodeEncodeError as exc:
        raise WireError("topic is not encodable as UTF-8") from exc
    if not raw or len(raw) > 255:
        raise WireError(f"topic must be 1 to 255 bytes, not {len(raw)}")
    if b"\0" in raw:
        raise WireError("topic must not contain NUL")
    return raw


def check_u64(value: int, what: str) -> None:
    """Raise :class:`WireError` unless ``value`` is an int in 0..2**64-1."""
    if not isinstance(value, int) or not 0 <= value <= U64_MAX:
        raise WireError(f"{what} {value!r} out of range 0..2**64-1")
