"""``dafka console``: a web console of a Dafka cluster (docs/console.md).

:mod:`.model` (typed views and the pure functions that build them), :mod:`.render`
(peer bytes and user input, pure), :mod:`.metrics` (the cluster-side metrics, pure),
:mod:`.changes` (what a change form says), :mod:`.reader` (the only module with
cluster sockets), :mod:`.web` (tornado handlers and templates), :mod:`.serve` (the server).
"""
