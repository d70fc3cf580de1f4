"""Dafka: a decentralized streaming platform after ZeroMQ RFC 46/DAFKA."""

from .api.admin import AdminClient, PartitionMetadata, TopicMetadata
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

__version__ = "0.1.0"

__all__ = [
    "AdminClient",
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
