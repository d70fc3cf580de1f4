"""The shell's half of :mod:`dafka.core.ready`: the durability order, written once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.effects import Outgoing
from ..core.ready import Persister, Ready, ReadyCore, Resolve
from ..errors import StorageError

__all__ = ["resolve_all", "run_ready"]

MAX_READIES = 1_000
"""Readies run by one :func:`run_ready` call (a core that never runs dry cannot stall the loop)."""


def resolve_all(resolutions: Sequence[Resolve]) -> None:
    """Complete each future; one already done (cancelled by its caller) is skipped."""
    for r in resolutions:
        fut = r.future
        if fut.done():
            continue
        if r.error is not None:
            fut.set_exception(r.error)
        else:
            fut.set_result(r.result)


def run_ready(
    core: ReadyCore,
    persister: Persister | None,
    send: Callable[[Sequence[Outgoing]], None],
    deliver: Callable[[Sequence[Any]], None] | None = None,
) -> int:
    """Execute the core's Readies in order: persist, then publish, then deliver/resolve.

    Returns how many ran. A persist that raises :class:`StorageError` is reported to
    the core (``advance(rd, failed=...)``) and nothing else of that Ready happens.
    """
    ran = 0
    while ran < MAX_READIES and core.has_ready():
        rd: Ready = core.ready()
        ran += 1
        if rd.persist:
            if persister is None:
                raise StorageError("a core asked to persist, and its shell has no storage")
            try:
                persister.persist(rd.persist, rd.must_sync)
            except StorageError as exc:
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
