"""One LMDB transaction that replaces a run of stored batches by one batch over exactly
their offsets (:meth:`LmdbStorage.rewrite <dafka.storage.lmdb_store.LmdbStorage.rewrite>`).

Batches are keyed by partition prefix and last offset, and each value starts with the
batch's first offset (``dafka.storage.lmdb_values``). The batches replaced must start at
``first`` and end at ``last`` exactly; otherwise nothing is written and StorageError says
why. Head and tail do not move: the batches after ``last`` stay as they are.
"""

from __future__ import annotations

import struct
from typing import Any

from ..errors import StorageError

_U64 = struct.Struct(">Q")


def rewrite_range(
    txn: Any, db: Any, prefix: bytes, first: int, last: int, value: bytes, what: str
) -> int:
    """Delete the batches of ``prefix`` that cover exactly ``first..last`` and put
    ``value`` (keyed at ``last``) in their place, inside ``txn``; how many were deleted.
    Raises StorageError (the caller aborts the transaction) if they do not line up."""
    cursor = txn.cursor(db=db)
    if not cursor.set_range(prefix + _U64.pack(first)) or cursor.key()[: len(prefix)] != prefix:
        raise StorageError(f"no batch of {what} holds offset {first}")
    (start,) = _U64.unpack_from(cursor.value())
    if start != first:
        raise StorageError(f"offset {first} of {what} is inside a batch")
    deleted = 0
    while True:
        key = cursor.key()
        if key[: len(prefix)] != prefix:
            raise StorageError(f"offset {last} of {what} is past its head")
        (end,) = _U64.unpack_from(key, len(prefix))
        if end > last:
            raise StorageError(f"offset {last} of {what} is inside a batch")
        deleted += 1
        if not cursor.delete():
            raise StorageError(f"offset {last} of {what} is past its head")
        if end == last:
            break
    txn.put(prefix + _U64.pack(last), value, db=db)
    return deleted
