"""The consumer: one package holding its core, its facade and its IO-thread half.

* the facade, :class:`Consumer` (``_facade.py``), on the application's threads:
  subscriptions, ``poll`` and ``poll_batches``, positions, seeking, watermarks, ``at_end``;
  Kafka's controls (``_control.py``) and the consumer-group half (``_group.py``);
* the state both halves share, :class:`~dafka.consumer._shared.ConsumerShared`
  (``_shared.py``): the runs ready to poll, the errors, the paused and assigned sets;
* the IO-thread half, ``_ConsumerHandler`` (``_io.py``): messages stepped through the core,
  whose :class:`~dafka.core.ready.Ready` (FETCHes out, verified runs delivered) it runs
  with :func:`~dafka.io.ready_shell.run_ready`;
* the core, :class:`ConsumerCore` (``_core.py``), sans IO, composed of parts that each
  own their state: settings and the partition table (``_table.py``), the reorder buffers
  (``_buffer.py``), FETCH planning (``_fetch.py``), in-order delivery and data loss
  (``_delivery.py``), HEADs and stores' heads and tails (``_heads.py``), the stores asked
  for the end of stream (``_end.py``); the per-partition state is ``_partition.py``;
* the table view (``Consumer.table()``): the fold and the compaction proof, pure
  (``_kv_table.py``), and the read that feeds it (``_kv_read.py``).

The names below are imported when first used (PEP 562), as ``dafka``'s are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ._core import ConsumerCore
    from ._facade import Consumer
    from ._kv_read import read_table
    from ._kv_table import CompactionError, TableTooLarge

__all__ = ["CompactionError", "Consumer", "ConsumerCore", "TableTooLarge", "read_table"]

_LAZY = {
    "CompactionError": "._kv_table",
    "Consumer": "._facade",
    "ConsumerCore": "._core",
    "TableTooLarge": "._kv_table",
    "read_table": "._kv_read",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
