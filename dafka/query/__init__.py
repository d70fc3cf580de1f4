"""Pull reads from stores: the query protocol, the store-side service, a client and a locator.

See ``docs/query.md``. Spark's ``format("dafka")`` reads through this package.
"""

from .client import (
    BelowTailError,
    QueryClient,
    QueryError,
    QueryRecord,
    records,
    verified_batches,
)
from .locator import StoreLocator, locate_stores
from .protocol import PartitionInfo, ReadReply

__all__ = [
    "BelowTailError",
    "PartitionInfo",
    "QueryClient",
    "QueryError",
    "QueryRecord",
    "ReadReply",
    "StoreLocator",
    "locate_stores",
    "records",
    "verified_batches",
]
