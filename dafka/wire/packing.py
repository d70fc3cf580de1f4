"""MessagePack in and out, for values a peer may have written.

One place for the two settings every user needs (binary kept apart from
text on the way out, no raw bytes for strings and integer map keys allowed
on the way in) and for the one error a bad value raises: msgpack itself
raises a zoo of types (``ExtraData``, ``FormatError``, ``ValueError``...).
"""

from __future__ import annotations

from typing import Any

import msgpack

from ..errors import WireError


def pack(value: Any) -> bytes:
    """``value`` as MessagePack (bytes stay bin, str stays str)."""
    return bytes(msgpack.packb(value, use_bin_type=True))


def unpack(data: bytes) -> Any:
    """The one MessagePack value filling ``data``; anything else is a :class:`WireError`."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises many types
        raise WireError(f"bad MessagePack: {type(exc).__name__}") from exc
