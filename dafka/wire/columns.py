"""Byte strings stored back to back in one buffer, read as a sequence without copying.

A signed batch blob (``docs/wire.md`` §9.3) is already columnar: ``count`` lengths,
then the keys back to back, then the values back to back. :class:`Column` is one of
those columns over the blob as it came off the wire: it holds the blob, where its
first element starts and the lengths (an ``array('I')``, unpacked in C), and makes a
``bytes`` object only when an element is read. So a consumer hands a verified batch
to the application without a Python object per record, and an application that reads
the column as a whole (:attr:`Column.buffer`, :attr:`Column.lengths`) never makes
one. Slicing shares the buffer (no copy of the data).

Pure, no zmq import. A :class:`Column` is immutable. It keeps its whole buffer alive
(the batch blob, up to 16 MiB), as long as it or any slice of it is referenced; copy
out the elements (``list(column)``) to keep a few records for longer.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate, pairwise, starmap
from operator import eq
from typing import Final, Generic, TypeVar, overload

__all__ = ["ABSENT", "Column"]

ABSENT: Final = 0xFFFFFFFF
"""The length that marks an absent element (a record without a key) in a column of keys."""

T = TypeVar("T", bound="bytes | None")

_REPR_ITEMS = 4


class Column(Sequence[T], Generic[T]):
    """A read-only sequence of byte strings kept back to back in one ``bytes`` buffer.

    ``column[i]`` is ``buffer[start of i : end of i]`` as ``bytes`` (``None`` for an
    absent key); iteration, ``len``, negative indexes and slices work as on a list, and a
    column equals any list or tuple (or column) of the same elements. A slice with
    step 1 is a :class:`Column` over the same buffer; other steps copy what they pick.

    For columnar readers, without a Python object per element: :attr:`buffer` (the
    elements' bytes, back to back), :attr:`lengths` (each element's length) and
    :attr:`nbytes` (their total).

    Made by the batch readers (:meth:`dafka.wire.signed_batch.Batch.columns`) after
    they checked that the lengths add up; the constructor trusts its arguments.
    """

    __slots__ = ("_data", "_lengths", "_nullable", "_offsets", "_start", "_stop")

    _data: bytes
    _lengths: array[int]
    _start: int
    _stop: int
    _nullable: bool
    _offsets: list[int] | None

    def __init__(
        self, data: bytes, lengths: array[int], start: int, stop: int, nullable: bool = False
    ) -> None:
        """``lengths[i]`` bytes for element ``i``, back to back in ``data[start:stop]``;
        with ``nullable``, a length of :data:`ABSENT` is an element ``None`` (no bytes)."""
        self._data = data
        self._lengths = lengths
        self._start = start
        self._stop = stop
        self._nullable = nullable
        self._offsets = None

    # ------------------------------------------------------------ columnar view

    @property
    def buffer(self) -> memoryview:
        """The elements' bytes back to back (read-only, no copy)."""
        return memoryview(self._data)[self._start : self._stop]

    @property
    def lengths(self) -> memoryview:
        """Each element's length, as unsigned 32-bit integers in native byte order
        (read-only, format ``"I"``); :data:`ABSENT` for an absent key."""
        return memoryview(self._lengths).toreadonly()

    @property
    def nbytes(self) -> int:
        """The elements' total length in bytes (``len(buffer)``)."""
        return self._stop - self._start

    @property
    def held_bytes(self) -> int:
        """The bytes this column keeps alive: its whole buffer (a batch blob), of which a
        slice may use little."""
        return len(self._data)

    def detached(self) -> Column[T]:
        """The same elements over a buffer of their own (one copy of :attr:`buffer`), so a
        slice stops keeping the rest of its batch alive."""
        data = bytes(self.buffer)
        return Column(data, self._lengths, 0, len(data), self._nullable)

    # ----------------------------------------------------------------- sequence

    def __len__(self) -> int:
        return len(self._lengths)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Column[T]: ...

    def __getitem__(self, index: int | slice) -> T | Column[T]:
        if isinstance(index, slice):
            return self._slice(index)
        n = len(self._lengths)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("column index out of range")
        length = self._lengths[index]
        if length == ABSENT and self._nullable:
            return None  # type: ignore[return-value]  # T includes None when nullable
        at = self._positions()[index]
        return self._data[at : at + length]  # type: ignore[return-value]

    def __iter__(self) -> Iterator[T]:
        if self._has_absent():
            return self._iter_absent()
        spans: Iterator[slice]
        if self._offsets is not None:
            offs = self._offsets
            spans = map(slice, offs, offs[1:])
        else:
            spans = starmap(slice, pairwise(accumulate(self._lengths, initial=self._start)))
        return map(self._data.__getitem__, spans)  # type: ignore[arg-type]  # bytes is T here

    def _iter_absent(self) -> Iterator[T]:
        data = self._data
        at = self._start
        for length in self._lengths:
            if length == ABSENT:
                yield None  # type: ignore[misc]  # T includes None when nullable
            else:
                yield data[at : at + length]  # type: ignore[misc]
                at += length

    def _positions(self) -> list[int]:
        """Where each element starts (and, last, where the final one ends); built once,
        on the first element read by index."""
        offs = self._offsets
        if offs is None:
            offs = list(accumulate(self._present(self._lengths), initial=self._start))
            self._offsets = offs
        return offs

    def _has_absent(self) -> bool:
        return self._nullable and ABSENT in self._lengths

    def _present(self, lengths: array[int]) -> array[int]:
        """``lengths`` with absent elements counted as 0 bytes."""
        if self._nullable and ABSENT in lengths:
            return array("I", (0 if n == ABSENT else n for n in lengths))
        return lengths

    def _slice(self, index: slice) -> Column[T]:
        lo, hi, step = index.indices(len(self._lengths))
        if step != 1:
            picked = [self[i] for i in range(lo, hi, step)]
            data = b"".join(filter(None, picked))
            lengths = array("I", (ABSENT if b is None else len(b) for b in picked))
            return Column(data, lengths, 0, len(data), self._nullable)
        hi = max(lo, hi)
        lengths = self._lengths
        present = self._present
        if self._offsets is not None:
            start, stop = self._offsets[lo], self._offsets[hi]
        else:  # start from the front, stop from the back: a consumer cuts a head or a tail
            start = self._start + sum(present(lengths[:lo]))
            stop = self._stop - sum(present(lengths[hi:]))
        return Column(self._data, lengths[lo:hi], start, stop, self._nullable)

    # --------------------------------------------------------------- comparison

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Column | list | tuple):
            return NotImplemented
        if len(self) != len(other):
            return False
        if isinstance(other, Column) and not self._has_absent() and not other._has_absent():
            return self._lengths == other._lengths and self.buffer == other.buffer
        return all(map(eq, self, other))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        shown = list(self[:_REPR_ITEMS])
        more = len(self) - len(shown)
        return f"Column({shown!r}{f' + {more} more' if more > 0 else ''})"
