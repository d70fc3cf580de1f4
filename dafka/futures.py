"""A Future for one record that costs little until someone waits on it.

:class:`concurrent.futures.Future` builds a ``threading.Condition`` in its
constructor, which is most of the cost of ``Producer.send`` at high rates.
:class:`RecordFuture` is a real ``concurrent.futures.Future`` (so
``concurrent.futures.wait``, ``as_completed`` and ``asyncio.wrap_future``
work) that creates its condition only when first used: by a waiter, a
callback, or ``done()``. Resolving a future nobody has touched is then two
attribute stores under one module-wide lock.

Why the private ``_base`` module and no ``super().__init__()``: the states
(``PENDING``, ``FINISHED``) and the attribute names a ``Future`` keeps are
not public API, and skipping the constructor is the whole point. So the
assumption is checked once, at import (:data:`LAZY`): a plain ``Future``
must carry exactly the attributes set below plus ``_condition``, and the
states must be the strings CPython has used since 3.2. If a future Python
changes either, :class:`RecordFuture` falls back to the ordinary
constructor: slower, never wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import _base as futures_base
from typing import TypeVar

T = TypeVar("T")
_LAZY = threading.Lock()
_FINISHED: str = getattr(futures_base, "FINISHED", "")
_PENDING: str = getattr(futures_base, "PENDING", "")
_OWN_FIELDS = frozenset({"_state", "_result", "_exception", "_waiters", "_done_callbacks"})


def _lazy_construction_holds() -> bool:
    """True when a plain Future keeps exactly the fields RecordFuture sets, plus its condition."""
    if (_PENDING, _FINISHED) != ("PENDING", "FINISHED"):
        return False
    probe: Future[int] = Future()
    return set(vars(probe)) == _OWN_FIELDS | {"_condition"} and vars(probe)["_state"] == _PENDING


LAZY = _lazy_construction_holds()


class LazyFuture(Future[T]):
    """A Future whose condition is made on first use; resolved from the IO thread."""

    def __init__(self) -> None:
        if not LAZY:  # the private layout changed: build a Future the ordinary way
            super().__init__()
            return
        # deliberately no super().__init__(): no Condition yet
        self._state = _PENDING
        self._result = None
        self._exception = None
        self._waiters = []
        self._done_callbacks: list[Callable[[Future[T]], object]] = []

    def __getattr__(self, name: str) -> threading.Condition:
        # Only reached when ``_condition`` was never created.
        if name != "_condition":
            raise AttributeError(name)
        with _LAZY:
            cond = self.__dict__.get("_condition")
            if cond is None:
                cond = self.__dict__["_condition"] = threading.Condition()
        return cond

    def resolve(self, value: T) -> None:
        """Set the result (IO thread); cheap when nobody waits or listens yet."""
        with _LAZY:
            if "_condition" not in self.__dict__:
                if self._state == _PENDING:
                    self._result = value
                    self._state = _FINISHED
                return
        if not self.done():
            self.set_result(value)

    def fail(self, exc: BaseException) -> None:
        """Set an exception unless already resolved."""
        with self._condition:
            if self._state != _PENDING:
                return
        self.set_exception(exc)


class RecordFuture(LazyFuture[int]):
    """Resolves to a record's offset once the record is acknowledged (``Producer.send``)."""


class BatchFuture(LazyFuture[range]):
    """Resolves to the ``range`` of offsets of records sent together (``Producer.send_many``).

    It resolves once every one of them is acknowledged; one future instead of
    one per record is what makes ``send_many`` cheap.
    """
