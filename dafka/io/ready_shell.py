"""The shell's half of :mod:`dafka.core.ready`: the durability order, written once."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..core.effects import Outgoing
from ..core.ready import Persister, Ready, ReadyCore, Resolve
from ..errors import StorageError
from ..futures import settle

__all__ = ["resolve_all", "run_ready"]

log = logging.getLogger(__name__)

MAX_READIES = 1_000
"""Readies run by one :func:`run_ready` call (a core that never runs dry cannot stall the loop)."""


def resolve_all(resolutions: Sequence[Resolve]) -> None:
    """Complete each future; one already done (cancelled by its caller, even while this
    runs) is skipped."""
    for r in resolutions:
        settle(r.future, r.result, r.error)


def run_ready(
    core: ReadyCore,
    persister: Persister | None,
    send: Callable[[Sequence[Outgoing]], None],
    deliver: Callable[[Sequence[Any]], None] | None = None,
) -> int:
    """Execute the core's Readies in order: persist, then publish, then deliver/resolve.

    Returns how many ran. A persist that raises (:class:`StorageError`, or anything
    else: an ``OSError`` from below, a bug) is reported to the core
    (``advance(rd, failed=...)``), as :class:`~dafka.io.ready_writer.ReadyWriter` does,
    and nothing else of that Ready happens: a Ready is never taken and then lost.
    """
    ran = 0
    while ran < MAX_READIES and core.has_ready():
        rd: Ready = core.ready()
        ran += 1
        if rd.persist:
            if persister is None:  # a bug in the node's wiring: said, and reported as a failure
                log.error("ready.no_storage writes=%d", len(rd.persist))
                core.advance(
                    rd, failed=StorageError("a core asked to persist; its shell has no storage")
                )
                continue
            try:
                persister.persist(rd.persist, rd.must_sync)
            # guard: run-ready-reports-any-persist-failure
            except Exception as exc:
                core.advance(rd, failed=exc)
                continue
        if rd.publish:
            send(rd.publish)
        if rd.deliver and deliver is not None:
            deliver(rd.deliver)
        if rd.resolve:
            resolve_all(rd.resolve)
        core.advance(rd)
    return ran
