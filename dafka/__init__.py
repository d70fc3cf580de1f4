"""Dafka: a decentralized streaming platform after ZeroMQ RFC 46/DAFKA."""

import logging

from .api.aio import AsyncConsumer, AsyncProducer
from .api.consumer import Consumer
from .api.producer import CloseResult, Producer
from .api.store import Store
from .config import NodeConfig, TowerAddress
from .core.effects import ConsumedRecord, RecordBatch
from .errors import (
    BufferFullError,
    ClosedError,
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

# A library logs, the application decides where to: without a handler of ours, an
# application that configured no logging had our warnings on stderr (logging's last resort).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

__all__ = [
    "AsyncConsumer",
    "AsyncProducer",
    "BufferFullError",
    "CloseResult",
    "ClosedError",
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
    "TowerAddress",
    "WireError",
    "__version__",
]
