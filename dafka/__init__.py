"""Dafka: a decentralized streaming platform after ZeroMQ RFC 46/DAFKA.

The names below are imported when first used (PEP 562), not with the package: a command
line tool (``dafka-consumer``, ``dafka``) imports ``dafka.cli.*``, which imports this
package first, and importing every node type here cost it 0.35 to 2.5 s of start-up (and
a ``KeyboardInterrupt`` traceback when Ctrl-C came in meanwhile). The errors are light and
imported at once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .errors import (
    BufferFullError,
    ClosedError,
    CommitFailedError,
    ConfigError,
    DafkaError,
    DafkaTimeout,
    DataLossError,
    DeliveryError,
    InvalidTopic,
    NotLeader,
    ProducerError,
    ProfileError,
    ProposalDropped,
    ProtocolError,
    RaftError,
    RecordTooLargeError,
    StorageError,
    StoreFullError,
    WireError,
)
from .lazy import lazy_exports

if TYPE_CHECKING:
    from .api.admin import AdminClient, PartitionMetadata, TopicMetadata
    from .api.aio import AsyncConsumer, AsyncProducer
    from .config import NodeConfig, TowerAddress
    from .consumer import Consumer
    from .core.effects import ConsumedRecord, RecordBatch
    from .producer import CloseResult, Producer
    from .store import Store

_LAZY = {
    "AdminClient": ".api.admin",
    "PartitionMetadata": ".api.admin",
    "TopicMetadata": ".api.admin",
    "AsyncConsumer": ".api.aio",
    "AsyncProducer": ".api.aio",
    "Consumer": ".consumer._facade",
    "CloseResult": ".producer._facade",
    "Producer": ".producer._facade",
    "Store": ".store._facade",
    "NodeConfig": ".config",
    "TowerAddress": ".config",
    "ConsumedRecord": ".core.effects",
    "RecordBatch": ".core.effects",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


# A library logs, the application decides where to: without a handler of ours, an
# application that configured no logging had our warnings on stderr (logging's last resort).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "AdminClient",
    "AsyncConsumer",
    "AsyncProducer",
    "BufferFullError",
    "CloseResult",
    "ClosedError",
    "CommitFailedError",
    "ConfigError",
    "ConsumedRecord",
    "Consumer",
    "DafkaError",
    "DafkaTimeout",
    "DataLossError",
    "DeliveryError",
    "InvalidTopic",
    "NodeConfig",
    "NotLeader",
    "PartitionMetadata",
    "Producer",
    "ProducerError",
    "ProfileError",
    "ProposalDropped",
    "ProtocolError",
    "RaftError",
    "RecordBatch",
    "RecordTooLargeError",
    "Store",
    "StorageError",
    "StoreFullError",
    "TopicMetadata",
    "TowerAddress",
    "WireError",
    "__version__",
]
