"""kafka-python's record batch codec, imported without the DeprecationWarning its package
raises at import (``importlib.resources.read_text``, which the test settings make an error)."""

from __future__ import annotations

import importlib
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    kafka_codec = importlib.import_module("kafka.codec")
    _default = importlib.import_module("kafka.record.default_records")
    _legacy = importlib.import_module("kafka.record.legacy_records")
    _memory = importlib.import_module("kafka.record.memory_records")

DefaultRecordBatch = _default.DefaultRecordBatch
DefaultRecordBatchBuilder = _default.DefaultRecordBatchBuilder
LegacyRecordBatchBuilder = _legacy.LegacyRecordBatchBuilder
MemoryRecords = _memory.MemoryRecords
