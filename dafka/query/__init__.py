"""Pull reads from stores: the query protocol, the store-side service, a client and a locator.

See ``docs/query.md``. Spark's ``format("dafka")`` reads through this package.
"""

from .client import (
    BelowTailError,
    OpenedBatch,
    QueryClient,
    QueryError,
    QueryRecord,
    opened_batches,
    records,
    verified_batches,
)
from .locator import StoreLocator, locate_stores
from .protocol import PartitionInfo, ReadReply

__all__ = [
    "BelowTailError",
    "OpenedBatch",
    "PartitionInfo",
    "QueryClient",
    "QueryError",
    "QueryRecord",
    "ReadReply",
    "StoreLocator",
    "locate_stores",
    "opened_batches",
    "records",
    "verified_batches",
]
