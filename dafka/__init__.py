"""Dafka: a decentralized streaming platform after ZeroMQ RFC 46/DAFKA."""

from .config import NodeConfig, TowerAddress
from .consumer import Consumer
from .core.effects import ConsumedRecord, RecordBatch
from .errors import (
    BufferFullError,
    ClosedError,
    ConfigError,
    DafkaError,
    DafkaTimeout,
    DataLossError,
    InvalidTopic,
    NotLeader,
    ProducerError,
    ProfileError,
    ProposalDropped,
    ProtocolError,
    RaftError,
    StorageError,
    StoreFullError,
    WireError,
)
from .producer import Producer
from .store import Store

__version__ = "0.1.0"

__all__ = [
    "BufferFullError",
    "ClosedError",
    "ConfigError",
    "ConsumedRecord",
    "Consumer",
    "DafkaError",
    "DafkaTimeout",
    "DataLossError",
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
    "Store",
    "StorageError",
    "StoreFullError",
    "TowerAddress",
    "WireError",
    "__version__",
]
