"""A Future for one record that costs little until someone waits on it.

:class:`concurrent.futures.Future` builds a ``threading.Condition`` and two lists in
its constructor, which is most of the cost of ``Producer.send`` at high rates: the
time to build them, and the garbage collector's time to walk every one of them while
a million records wait for their acknowledgement. :class:`RecordFuture` is a real
``concurrent.futures.Future`` (so ``concurrent.futures.wait``, ``as_completed`` and
``asyncio.wrap_future`` work) that sets nothing in its constructor: its state, result
and exception start as class attributes, and its condition and its lists of waiters
and callbacks are made when first used, by a waiter, a callback, or ``done()``.
Resolving a future nobody has touched is then two attribute stores under one
module-wide lock, and :func:`resolve_each` resolves a run of them under one taking of
that lock.

The producer keeps a future only while someone else holds it too (:data:`UNHELD`): a
future whose caller dropped it can never be seen to resolve, so its record is
acknowledged all the same but nothing waits in memory for it. (A weak reference alone
does not count as holding it.)

Why the private ``_base`` module and no ``super().__init__()``: the states
(``PENDING``, ``FINISHED``) and the attribute names a ``Future`` keeps are
not public API, and skipping the constructor is the whole point. So the
assumption is checked once, at import (:data:`LAZY`): a plain ``Future``
must carry exactly the attributes made lazily here plus the three that start
as class attributes, and the states must be the strings CPython has used since
3.2. If a future Python changes either, :class:`RecordFuture` falls back to the
ordinary constructor: slower, never wrong.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import _base as futures_base
from typing import Any, TypeVar

T = TypeVar("T")
_LAZY = threading.Lock()
_FINISHED: str = getattr(futures_base, "FINISHED", "")
_PENDING: str = getattr(futures_base, "PENDING", "")
_MADE_ON_USE: dict[str, Callable[[], Any]] = {
    "_condition": threading.Condition,
    "_waiters": list,
    "_done_callbacks": list,
}
"""What a plain Future builds in its constructor and a LazyFuture on first use."""
_CLASS_DEFAULTS = frozenset({"_state", "_result", "_exception"})


def _lazy_construction_holds() -> bool:
    """True when a plain Future keeps exactly the fields LazyFuture makes lazily or
    starts as class attributes."""
    if (_PENDING, _FINISHED) != ("PENDING", "FINISHED"):
        return False
    probe: Future[int] = Future()
    return set(vars(probe)) == _CLASS_DEFAULTS | set(_MADE_ON_USE) and (
        vars(probe)["_state"],
        vars(probe)["_result"],
        vars(probe)["_exception"],
    ) == (_PENDING, None, None)


LAZY = _lazy_construction_holds()


def _unheld_count() -> int:
    """What ``sys.getrefcount`` says of a future only a local variable holds (0: the
    interpreter does not count references so; nothing is then taken as unheld)."""
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        return 0  # free-threaded: counts are split between threads
    probe = object()
    alone = sys.getrefcount(probe)
    also = [probe]
    return alone if sys.getrefcount(probe) == alone + 1 and also else 0


UNHELD = _unheld_count()
"""``sys.getrefcount(fut) == UNHELD`` for a future held by one local variable and nothing
else: its caller dropped it, so nobody can ever see it resolve (see ``producer_io``)."""


class LazyFuture(Future[T]):
    """A Future whose condition and lists are made on first use; resolved from the IO thread."""

    # what a plain Future's constructor sets, as class attributes: an instance stores
    # its own only when it changes (resolved, failed)
    _state = _PENDING
    _result = None
    _exception = None
    _used = False
    """True once the condition exists (someone waits or listens): resolve the slow way."""

    def __init__(self) -> None:
        if not LAZY:  # the private layout changed: build a Future the ordinary way
            super().__init__()
            self._used = True
        # deliberately no super().__init__() otherwise: nothing to build yet

    def __getattr__(self, name: str) -> Any:
        # Only reached when the attribute was never made (never for the lazy=False path).
        make = _MADE_ON_USE.get(name)
        if make is None:
            raise AttributeError(name)
        with _LAZY:
            made = self.__dict__.get(name)
            if made is None:
                made = self.__dict__[name] = make()
                if name == "_condition":
                    self._used = True
        return made

    def resolve(self, value: T) -> None:
        """Set the result (IO thread); cheap when nobody waits or listens yet."""
        with _LAZY:
            if not self._used:
                if self._state == _PENDING:
                    self._result = value
                    self._state = _FINISHED
                return
        settle(self, value)

    def fail(self, exc: BaseException) -> None:
        """Set an exception unless already resolved; cheap when nobody waits yet."""
        with _LAZY:
            if not self._used:
                if self._state == _PENDING:
                    self._exception = exc
                    self._state = _FINISHED
                return
        settle(self, error=exc)


def settle(fut: Future[Any], value: Any = None, error: BaseException | None = None) -> None:
    """Set ``fut``'s result (or ``error``) unless it is done, in one step: the caller may
    cancel it on its own thread at any moment, between a ``done()`` check and the
    ``set_result`` after it, and a resolution that then raised ``InvalidStateError`` on
    the IO thread killed the node (the red team's cancel race, issue 35)."""
    try:
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)
    # guard: settle-a-future-cancelled-meanwhile
    except InvalidStateError:
        pass  # cancelled (or resolved) meanwhile: nobody waits for this answer


def resolve_each(futures: Sequence[LazyFuture[int] | None], first: int) -> None:
    """Resolve ``futures[i]`` to ``first + i`` (IO thread): one taking of the lock for the
    lot, then the usual way for those someone waits on. ``None``: nobody to tell."""
    used: list[tuple[LazyFuture[int], int]] = []
    with _LAZY:
        for offset, fut in enumerate(futures, first):
            if fut is None:
                continue
            if fut._used:
                used.append((fut, offset))
            elif fut._state == _PENDING:
                fut._result = offset
                fut._state = _FINISHED
    for fut, offset in used:
        settle(fut, offset)


def fail_each(futures: Sequence[LazyFuture[Any] | None], exc: BaseException) -> None:
    """Fail every one of ``futures`` not already resolved (IO thread), as :meth:`fail`."""
    used: list[LazyFuture[Any]] = []
    with _LAZY:
        for fut in futures:
            if fut is None:
                continue
            if fut._used:
                used.append(fut)
            elif fut._state == _PENDING:
                fut._exception = exc
                fut._state = _FINISHED
    for fut in used:
        fut.fail(exc)


class RecordFuture(LazyFuture[int]):
    """Resolves to a record's offset once the record is acknowledged (``Producer.send``)."""


class BatchFuture(LazyFuture[range]):
    """Resolves to the ``range`` of offsets of records sent together (``Producer.send_many``).

    It resolves once every one of them is acknowledged; one future instead of
    one per record is what makes ``send_many`` cheap.
    """
